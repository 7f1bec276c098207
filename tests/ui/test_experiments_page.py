"""The Experiments page with real ``guiapp train`` children: live k-fold trials, the mean ±
std, the scaling plot, and stop/resume of a k-fold run with a test split, augmentation and
class weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import open_project

from guiapp.ui.main_window import MainWindow

LONG = 180_000


def _window(qtbot, tmp_path: Path, make_dataset) -> MainWindow:
    data = make_dataset(tmp_path / "d.h5", 2400, shape=(25, 25), classes=3)
    return open_project(qtbot, tmp_path, "Experiments", {"d": data}, saved=True)


def _form(window: MainWindow, folds: int, steps: int) -> object:
    training = window.page("Training")
    form = training.form
    assert form.select_model("cnn2d-small")
    form.split.setCurrentIndex(1)
    form.folds.setValue(folds)
    form.batch.setValue(16)
    form.epochs.setValue(1)
    form.max_steps.setValue(steps)
    return training


@pytest.mark.timeout(400)
def test_live_kfold_trials_mean_std_and_scaling_plot(qtbot, tmp_path: Path, make_dataset) -> None:
    window = _window(qtbot, tmp_path, make_dataset)
    training = _form(window, folds=2, steps=3)
    training.form.experiment.fractions.setText("0.5,1.0")
    job = training.start()
    assert job is not None, training.message.text()
    window.set_page(5)
    page = window.page("Experiments")
    assert page.chooser.currentData() == training.run.path
    seen: list[int] = []

    def four_points() -> bool:
        seen.append(page.plots.val_points())
        return seen[-1] == 4

    qtbot.waitUntil(four_points, timeout=LONG)
    assert any(0 < n < 4 for n in seen), "the folds' points arrive one by one, live"
    qtbot.waitUntil(lambda: not job.is_running(), timeout=LONG)
    assert job.status == "finished", job.message
    qtbot.waitUntil(lambda: page.history.status == "finished", timeout=LONG)
    page._tick()
    assert page.table.rowCount() == 4
    assert page.table.column_values("trial") == [
        "fraction-0.5-fold-0",
        "fraction-0.5-fold-1",
        "fraction-1.0-fold-0",
        "fraction-1.0-fold-1",
    ]
    assert all(v for v in page.table.column_values("final val accuracy"))
    assert "±" in page.summary.text() and "over 2 folds" in page.summary.text()
    assert page.plots.scaling_points() == 2
    x, _ = page.plots.band_mean.getData()
    assert x is not None and len(x) == 1
    # sortable: by final validation accuracy, every trial kept
    headers = [page.table.horizontalHeaderItem(c).text() for c in range(page.table.columnCount())]
    page.table.sortItems(headers.index("final val accuracy"))
    values = [float(v) for v in page.table.column_values("final val accuracy")]
    assert values == sorted(values) and len(values) == 4
    # open a trial: the Runs page shows that trial's run folder
    page.table.select_trial("fraction-1.0-fold-1")
    page.open_trial()
    runs = window.page("Runs")
    assert window.current_page() is runs
    qtbot.waitUntil(lambda: runs.selected_paths() != [], timeout=LONG)
    assert runs.selected_paths()[-1].endswith("fraction-1.0-fold-1")


@pytest.mark.timeout(500)
def test_stop_and_resume_kfold_with_test_augment_and_class_weights(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    window = _window(qtbot, tmp_path, make_dataset)
    training = _form(window, folds=2, steps=30)
    training.form.test.setValue(0.1)
    training.form.augment.setText('{"flip_h": true}')
    training.form.class_weights.setChecked(True)
    job = training.start()
    assert job is not None, training.message.text()
    qtbot.waitUntil(lambda: training.history.last_batch.get("step", 0) >= 5, timeout=LONG)
    page = window.page("Experiments")
    window.set_page(5)
    qtbot.waitUntil(lambda: page.stop_button.isEnabled(), timeout=LONG)
    page.stop()  # the Training page's own child, stopped by its pid
    qtbot.waitUntil(lambda: not job.is_running(), timeout=LONG)
    assert job.status == "stopped", job.message
    folder = Path(training.run.path)
    assert not (folder / "fold-1").exists()
    qtbot.waitUntil(lambda: page.resume_button.isEnabled(), timeout=LONG)
    again = page.resume()
    assert again is not None
    qtbot.waitUntil(lambda: not again.is_running(), timeout=LONG)
    assert again.status == "finished", again.message
    summary = json.loads((folder / "experiment.json").read_text())
    assert [t["status"] for t in summary["trials"]] == ["finished", "finished"]
    events = [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines()]
    resumed = [e for e in events if e["event"] == "started" and e.get("resumed_from")]
    assert [e["trial"] for e in resumed] == ["fold-0"]
    config = json.loads((folder / "fold-1" / "config.json").read_text())["config"]
    assert config["test"] == 0.1 and config["augment"] == {"flip_h": True}
    assert config["class_weights"] == "balanced" and config["folds"] == 2
    qtbot.waitUntil(lambda: page.history.status == "finished", timeout=LONG)
