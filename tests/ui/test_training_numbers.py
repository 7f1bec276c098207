"""Issue 17.6 and 17.8: Start refuses a model that does not fit the dataset (the CLI's own
checks); the plots and numbers of the Training and Runs pages do not mislead."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import open_project
from PySide6.QtWidgets import QMessageBox

from guiapp.core.project import RunEntry
from guiapp.core.train.history import RunHistory
from guiapp.core.train.run_files import checkpoint_text, read_run
from guiapp.ui.pages.training.training_plots import TrainingPlots, centred_mean
from guiapp.ui.widgets.formatting import format_duration, format_rate


def test_start_refuses_a_model_that_does_not_fit_the_dataset(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "genomes.h5", 300, shape=(40,), classes=3)
    models = {"images": _cnn2d()}
    window = open_project(qtbot, tmp_path, "Fit", {"genomes": data}, models=models, shown=False)
    project = window.project
    training = window.page("Training")
    assert training.form.select_model("images")
    assert training.start() is None  # type: ignore[attr-defined]
    message = training.message.text()  # type: ignore[attr-defined]
    assert "does not fit" in message and "genomes.h5" in message
    assert project.runs == [] and not (tmp_path / "runs").exists()
    assert training.form.select_model("cnn2d-small")  # a template is fitted (or refused)
    assert training.start() is None  # type: ignore[attr-defined]
    assert "Conv2D: needs a 3-D input" in training.message.text()  # type: ignore[attr-defined]
    assert project.runs == []


def _cnn2d() -> dict:
    from guiapp.core.model import fit_template

    return dict(fit_template("cnn2d-small", [25, 25], 3))


def test_smoothed_curve_follows_the_raw_one_and_legends_cover_nothing(qtbot) -> None:
    truth = 0.1 + 1.0 / (1.0 + np.arange(0, 200, 5) / 15.0)  # a loss falling fast
    noise = np.random.default_rng(0).normal(0, 0.02, len(truth))
    history = RunHistory()
    history.feed({"event": "started", "epochs": 1, "steps_per_epoch": 200})
    for i, step in enumerate(range(0, 200, 5)):
        loss = float(truth[i] + noise[i])
        history.feed({"event": "batch", "epoch": 0, "global_step": step, "loss": loss})
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.set_history(history)
    _x, smooth = plots.curves["loss_smooth"].getData()
    at = 140 // 5
    assert abs(smooth[at] - truth[at]) < 0.02  # step 140: no lag
    ema = history.smooth["loss"].view()  # the long moving average the page showed before
    assert abs(ema[at] - truth[at]) > 2 * abs(smooth[at] - truth[at])
    ramp = np.arange(30, dtype=np.float64)
    assert np.allclose(centred_mean(ramp), ramp)  # a straight line is left as it is
    raw_pen = plots.curves["loss_raw"].opts["pen"]
    assert raw_pen.color().alpha() >= 150 and raw_pen.color().lightness() > 120
    for plot in (plots.loss_plot, plots.acc_plot):
        assert plot.legend is None  # no box over the points: a line above the plots
    assert "epoch: validation" in plots.legend.text() and "smoothed" in plots.legend.text()


def event(kind: str, t: float, **fields: object) -> str:
    return json.dumps({"event": kind, "time": t, **fields}) + "\n"


def resumed_run(folder: Path) -> Path:
    """3 epochs, stopped after the first and resumed 100 s later; best epoch 2."""
    folder.mkdir(parents=True)
    scores = [(0.9, 0.6, 0.5), (0.5, 0.8, 0.3), (0.4, 0.7, 0.35)]
    lines = [event("started", 1000.0, epochs=3, steps_per_epoch=10)]
    lines.append(event("epoch", 1004.0, epoch=0, loss=0.9, val_accuracy=0.6, val_loss=0.5))
    lines.append(event("stopped", 1005.0, epoch=1, step=0))
    lines.append(event("started", 1105.0, epochs=3, steps_per_epoch=10, resumed={"epoch": 1}))
    for e, (loss, acc, vloss) in enumerate(scores[1:], start=1):
        t = 1108.0 + 3 * (e - 1)
        lines.append(event("epoch", t, epoch=e, loss=loss, val_accuracy=acc, val_loss=vloss))
    lines.append(event("finished", 1111.0, duration_s=6.0))
    (folder / "events.jsonl").write_text("".join(lines))
    (folder / "config.json").write_text(json.dumps({"config": {}, "dataset": {}}))
    return folder


def test_runs_numbers_duration_overlay_and_export_checkpoint(qtbot, tmp_path: Path) -> None:
    run = resumed_run(tmp_path / "runs" / "r1")
    info = read_run(str(run))
    assert info["duration_s"] == 11.0  # 5 s + 6 s: both segments, not the gap
    text = checkpoint_text(info["best"])
    assert "best epoch 2 (val accuracy 0.8000, loss 0.3000)" in text
    assert "last epoch 3 scored val accuracy 0.7000" in text

    entry = RunEntry(str(run), name="r1", status="finished")
    window = open_project(qtbot, tmp_path, "Runs", runs=[entry], shown=False)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: runs.table.item(0, 5).text() == "0:00:11", timeout=10_000)
    assert "best epoch 2" in runs.export_button.toolTip()
    runs.table.selectRow(0)
    runs.metric_combo.setCurrentText("validation loss")
    items = runs.curves.getPlotItem().listDataItems
    qtbot.waitUntil(lambda: len(items()) == 1 and len(items()[0].getData()[0]) == 3, timeout=10_000)
    (item,) = items()
    x, y = item.getData()
    assert list(x) == [1, 2, 3]  # epochs 1-based, as every message says them
    assert np.allclose(y, [0.5, 0.3, 0.35])
    assert runs.curves.getPlotItem().getAxis("left").labelText == "validation loss"
    assert "r1" in runs.curves_legend.text() and runs.curves.getPlotItem().legend is None
    runs.open_button.click()  # offscreen: no file manager, so the page says where the run is
    box = runs.findChild(QMessageBox, "open_folder_message")
    assert box is not None and str(run) in box.text()
    box.close()


def test_one_formatter_for_rows_per_second_durations_and_1_based_epochs() -> None:
    assert format_rate(3405.4) == "3,405" and format_rate(40_211) == "40,211"
    assert format_rate(None) == "" and format_rate(float("nan")) == ""
    assert format_duration(3725) == "1:02:05" and format_duration(None) == ""
    history = RunHistory()
    history.feed({"event": "started", "epochs": 3})
    history.feed({"event": "batch", "epoch": 1, "step": 4, "steps": 10, "global_step": 14})
    assert history.progress_text().startswith("epoch 2/3")
