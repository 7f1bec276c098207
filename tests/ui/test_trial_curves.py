"""Issue 34.7: during k-fold and data-scaling experiments each trial is a curve of its own:
the Training page's plots never join the points of two folds and label where each starts;
the Runs chart gives each trial its own legend entry (events as ``guiapp train --folds``
writes them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyqtgraph as pg
from conftest import open_project

from guiapp.core.project import RunEntry
from guiapp.core.train.history import RunHistory
from guiapp.ui.pages.training.training_plots import TrainingPlots

FOLDS = ("fold-0", "fold-1", "fold-2")


def kfold_events(epochs: int = 3, steps: int = 10) -> list[dict[str, object]]:
    """A 3-fold experiment's events: each fold's steps and epochs start again."""
    out: list[dict[str, object]] = [
        {"event": "experiment", "trials": [{"id": t} for t in FOLDS], "varied": ["fold"]}
    ]
    for k, trial in enumerate(FOLDS):
        out.append({"event": "trial", "status": "started", "trial": trial, "index": k})
        out.append({"event": "started", "trial": trial, "epochs": epochs,
                    "steps_per_epoch": steps})  # fmt: skip
        for e in range(1, epochs + 1):
            for s in (5, 10):
                g = (e - 1) * steps + s
                out.append({"event": "batch", "trial": trial, "epoch": e, "step": s,
                            "steps": steps, "global_step": g, "loss": 1 / g, "accuracy": 0.5})  # fmt: skip
            acc = 0.5 + 0.1 * e  # each fold climbs from 0.6: joined, fold k+1 dips from 0.8
            out.append({"event": "epoch", "trial": trial, "epoch": e, "loss": 1 - acc,
                        "accuracy": acc, "val_loss": 1 - acc, "val_accuracy": acc})  # fmt: skip
        out.append({"event": "finished", "trial": trial, "best_val_accuracy": 0.8})
    return out


def subpaths(item: pg.PlotDataItem) -> int:
    """How many separate lines the curve draws (a MoveTo starts each)."""
    path = item.curve.getPath()
    return sum(path.elementAt(i).isMoveTo() for i in range(path.elementCount()))


def test_training_plots_draw_each_fold_apart_and_label_it(qtbot) -> None:
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    qtbot.waitExposed(plots)
    history = RunHistory()
    for event in kfold_events():
        history.feed(event)
    plots.set_history(history)
    val = plots.curves["val_accuracy_epoch"]
    qtbot.waitUntil(lambda: plots.points("val_accuracy_epoch") == 9, timeout=5_000)
    assert subpaths(val) == 3  # one line per fold, none from fold-0's last epoch down
    assert subpaths(plots.curves["loss_raw"]) == 3
    plots.acc_plot.setXRange(0, 120, padding=0)  # a redraw for a new range keeps the breaks
    plots.loss_plot.setXRange(0, 120, padding=0)
    assert subpaths(val) == 3 and subpaths(plots.curves["loss_raw"]) == 3
    labels = [
        item.label.format
        for item in plots.loss_plot.items
        if isinstance(item, pg.InfiniteLine) and item.label is not None
    ]
    assert labels == list(FOLDS)
    single = RunHistory()  # a plain run: one line, no marks
    for event in kfold_events()[2:9]:
        single.feed({k: v for k, v in event.items() if k != "trial"})
    plots.set_history(single)
    qtbot.waitUntil(lambda: plots.points("val_accuracy_epoch") == 2, timeout=5_000)
    assert subpaths(plots.curves["val_accuracy_epoch"]) == 1
    assert not [i for i in plots.loss_plot.items if isinstance(i, pg.InfiniteLine)]


def test_runs_chart_gives_each_trial_a_legend_entry(qtbot, tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "cv"
    folder.mkdir(parents=True)
    now = time.time()
    lines = [json.dumps({**e, "time": now + i}) for i, e in enumerate(kfold_events())]
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    ref = RunEntry(str(folder), name="cv", dataset="d", model="m")
    window = open_project(qtbot, tmp_path, "Runs", {}, [ref])
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: str(folder) in runs.runs, timeout=10_000)
    runs._selection_changed()
    curves = runs.curves.getPlotItem().listDataItems()
    assert len(curves) == 3
    assert [c.name() for c in curves] == [f"cv · {t}" for t in FOLDS]
    assert all(len(c.getData()[0]) == 3 for c in curves)
    for t in FOLDS:
        assert f"cv · {t}" in runs.curves_legend.text()
