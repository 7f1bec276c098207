"""Issue 30, points 2 and 7 on the pages: a run's other metrics (top-3 accuracy) are curves
on the Training page and a choice on the Runs page, at 1-based epochs; an old run folder
(0-based events) shows at the same epochs; the Jobs panel counts 1-based epochs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import open_project

from guiapp.core.project import RunEntry
from guiapp.core.train.history import RunHistory
from guiapp.ui.jobs.cli_job import training_progress
from guiapp.ui.pages.training.training_plots import TrainingPlots


def events(old: bool = False) -> list[dict]:
    """A run of 2 epochs of 10 steps with top-3 accuracy (``old``: as written before epochs
    counted from 1)."""
    base = 0 if old else 1
    started = {"event": "started", "epochs": 2, "steps_per_epoch": 10,
               "metrics": ["accuracy", "top3_accuracy"]}  # fmt: skip
    if not old:
        started["epochs_from"] = 1
    out: list[dict] = [started]
    for e in range(2):
        for s in (5, 10):
            g = e * 10 + s
            out.append({"event": "batch", "epoch": e + base, "step": s, "steps": 10,
                        "global_step": g, "loss": 1 / g, "accuracy": 0.5, "top3_accuracy": 0.8,
                        "rows_per_s": 100.0, "input_wait": 0.01})  # fmt: skip
        out.append({"event": "epoch", "epoch": e + base, "loss": 0.2, "accuracy": 0.6,
                    "top3_accuracy": 0.85, "val_loss": 0.3, "val_accuracy": (0.7, 0.8)[e],
                    "val_top3_accuracy": (0.9, 0.95)[e]})  # fmt: skip
    out.append({"event": "finished", "best_val_accuracy": 0.8, "duration_s": 3.0})
    return [{**e, "time": time.time()} for e in out]


def test_training_page_plots_the_runs_other_metrics(qtbot) -> None:
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    history = RunHistory()
    plots.set_history(history)
    for e in events():
        history.feed(e)
    plots.refresh()
    curves = plots.curves  # (the data set, not what clipping to the view leaves)
    assert list(curves["top3_accuracy_smooth"].yData) == pytest.approx([0.8] * 4)
    x, y = curves["val_top3_accuracy_epoch"].xData, curves["val_top3_accuracy_epoch"].yData
    assert list(y) == [0.9, 0.95] and list(x) == [10.0, 20.0]  # at each epoch's last step
    assert "top-3 accuracy" in plots.legend.text()
    assert curves["top5_accuracy_smooth"].yData is None  # not computed: no curve, no legend
    assert "top-5" not in plots.legend.text()


def test_runs_page_offers_each_metric_at_one_based_epochs(qtbot, tmp_path: Path) -> None:
    refs = []
    for name, old in (("new", False), ("old", True)):
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"config": {"out": str(folder)}}))
        lines = "".join(json.dumps(e) + "\n" for e in events(old))
        (folder / "events.jsonl").write_text(lines)
        refs.append(RunEntry(str(folder), name=name, dataset="d", model="m"))
    window = open_project(qtbot, tmp_path, "Runs", {}, refs)
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: runs.table.rowCount() == 2 and len(runs.runs) == 2, timeout=10_000)
    labels = [runs.metric_combo.itemText(i) for i in range(runs.metric_combo.count())]
    assert "validation top-3 accuracy" in labels and "training top-3 accuracy" in labels
    runs.metric_combo.setCurrentIndex(labels.index("validation top-3 accuracy"))
    runs.table.selectAll()
    qtbot.waitUntil(lambda: len(runs.curves.listDataItems()) == 2, timeout=10_000)
    for item in runs.curves.listDataItems():  # the old folder at the same epochs 1 and 2
        x, y = item.xData, item.yData
        assert list(x) == [1.0, 2.0] and list(y) == [0.9, 0.95]


def test_jobs_progress_counts_one_based_epochs() -> None:
    """Steps done: epoch 2 step 5 of 2 x 10 is 15 (1-based events), and an old run's
    0-based epoch 1 step 5 is the same point."""
    started = {"event": "started", "epochs": 2, "steps_per_epoch": 10, "epochs_from": 1}
    assert training_progress(started, {"epoch": 2, "step": 5, "steps": 10}) == (15, 20)
    old = {k: v for k, v in started.items() if k != "epochs_from"}
    assert training_progress(old, {"epoch": 1, "step": 5, "steps": 10}) == (15, 20)
