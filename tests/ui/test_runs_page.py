"""Runs from their folders (no TensorFlow): the Runs page, reattaching, no TF in the GUI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from conftest import open_project

from guiapp.core.predict.table import TableSpec, TableWriter, create_table
from guiapp.core.project import DatasetRef, Project, RunEntry
from guiapp.core.train.run_files import validation_rows
from guiapp.ui.main_window import MainWindow

NAMES = ["class0", "class1", "class2"]
CONFUSION = [[18, 2, 0], [1, 19, 0], [0, 3, 17]]


def fake_predictions(folder: Path, rows: np.ndarray) -> np.ndarray:
    """A predictions.h5 for ``rows`` whose labels and predictions give CONFUSION; probs."""
    label = np.repeat(np.arange(3), [sum(r) for r in CONFUSION]).astype(np.int32)
    pred = np.concatenate([np.repeat(np.arange(3), r) for r in CONFUSION]).astype(np.int32)
    order = np.random.default_rng(0).permutation(len(label))
    label, pred = label[order], pred[order]
    prob = np.random.default_rng(1).uniform(0.34, 1.0, len(label)).astype(np.float32)
    spec = TableSpec(len(rows), 3, 2, tuple(NAMES), True, False, "m", "m", "d", "d", "val", 32)
    create_table(folder / "predictions.h5", spec, rows)
    topc = np.stack([pred, (pred + 1) % 3], axis=1)
    TableWriter(folder / "predictions.h5").commit(
        pred, prob, topc, np.stack([prob, 1 - prob], axis=1), label=label
    )
    return prob


def event(kind: str, **fields: object) -> str:
    return json.dumps({"event": kind, "time": time.time(), **fields}) + "\n"


def fake_run(folder: Path, data: Path, finished: bool = True) -> Path:
    """A run folder as ``guiapp train`` leaves it, written by hand."""
    folder.mkdir(parents=True)
    config = {"data": str(data), "model": {}, "out": str(folder), "batch": 32, "val": 0.2}
    (folder / "config.json").write_text(json.dumps({"config": config, "dataset": {}}))
    lines = [
        event("started", epochs=1, steps_per_epoch=10, train_rows=240, val_rows=60),
        *(
            event("batch", epoch=0, step=s, steps=10, global_step=s, loss=1 / s, accuracy=0.5)
            for s in (5, 10)
        ),
    ]
    if finished:
        confusion = CONFUSION
        report = {"split": "val", "accuracy": 0.9, "macro_f1": 0.9, "class_names": NAMES}
        report["confusion"] = confusion
        report["classes"] = [
            {"name": n, "precision": 0.9, "recall": 0.9, "f1": 0.9, "support": 20} for n in NAMES
        ]
        (folder / "report.json").write_text(json.dumps(report))
        lines += [
            event("epoch", epoch=0, loss=0.2, accuracy=0.6, val_loss=0.3, val_accuracy=0.9),
            event("evaluation", **report),
            event("finished", best_val_accuracy=0.9, duration_s=12.0),
        ]
    (folder / "events.jsonl").write_text("".join(lines))
    return folder


def test_runs_page_shows_runs_and_opens_a_cell_in_the_browser(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "d.h5", 3000, shape=(4, 4), classes=3)
    run = fake_run(tmp_path / "runs" / "r1", data)
    run_ref = RunEntry(str(run), name="r1", dataset="d", model="m")
    window = open_project(qtbot, tmp_path, "Runs", {"d": data}, [run_ref])
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: runs.table.item(0, 4).text() == "0.9000", timeout=10_000)
    assert runs.table.item(0, 1).text() == "finished"
    assert runs.confusion.names == NAMES and int(runs.confusion.matrix.sum()) == 60
    assert runs.report.rowCount() == 3 and runs.export_button.isEnabled() is False
    assert not window.is_modified()

    runs.confusion.resize(400, 300)
    hit = runs.confusion.cell_at(runs.confusion.rect().center().toPointF())
    assert hit is not None
    # Cell (true class2, predicted class1): exactly its 3 rows, most confident first.
    rows = validation_rows({"val": 0.2, "batch": 32}, 3000)[:60]
    prob = fake_predictions(run, rows)
    runs.open_cell(2, 1)
    browser = window.page("Browser")
    qtbot.waitUntil(lambda: window.current_page() is browser, timeout=10_000)
    qtbot.waitUntil(lambda: "predicted class1" in browser.grid.selection.title, timeout=10_000)
    table = TableWriter(run / "predictions.h5")
    assert table.committed == 60
    import h5py

    with h5py.File(run / "predictions.h5", "r", locking=False) as f:
        label, pred = f["label"][()], f["pred"][()]
    cell = np.flatnonzero((label == 2) & (pred == 1))
    expected = rows[cell[np.argsort(-prob[cell], kind="stable")]]
    shown = [browser.grid.selection.row(i) for i in range(len(browser.grid.selection))]
    assert len(shown) == CONFUSION[2][1] == int(runs.confusion.matrix[2, 1])
    assert np.array_equal(shown, expected)
    # the controls show the filter of the rows shown (issue 34.5): the cell's true class in
    # the Class box, true and predicted in the prediction filters
    assert browser.class_combo.currentText().startswith("2: class2")
    assert browser.predictions.true_combo.currentText() == "2: class2"
    assert browser.predictions.pred_combo.currentText() == "1: class1"
    # each thumbnail names both classes, the predicted one's probability beside it
    browser.predictions.prefetch(np.asarray(shown))
    caption, colour = browser.predictions.annotate(shown[0])
    assert caption == f"class2 → class1 {prob[cell].max():.2f}" and colour.red() > 200
    assert browser.grid.caption_lines == 2  # a narrow cell: the arrow ends the first line
    assert browser.grid.caption(shown[0]) == ["class2 →", f"class1 {prob[cell].max():.2f}"]
    # the user's own pick of a class: the prediction filters say "any" again
    browser.class_combo.setCurrentIndex(1)
    assert browser.predictions.pred_combo.currentText() == "any"
    assert browser.predictions.true_combo.currentText() == "any"


def test_training_page_reattaches_to_a_run_that_is_still_writing(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "d.h5", 300, shape=(4, 4), classes=3)
    run = fake_run(tmp_path / "runs" / "live", data, finished=False)
    project = Project.new(tmp_path / "p.gproj", "Live")
    project.runs.append(RunEntry(str(run), name="live", status="running"))
    window = MainWindow(project)
    qtbot.addWidget(window)
    training = window.page("Training")
    qtbot.waitUntil(lambda: training.tail is not None, timeout=10_000)
    assert training.is_running() and training.stop_button.isEnabled()
    assert training.plots.points("loss_smooth") == 2
    with open(run / "events.jsonl", "a") as fh:
        fh.write(event("batch", epoch=0, step=15, steps=20, global_step=15, loss=0.1))
        fh.write(event("finished", best_val_accuracy=0.5, duration_s=3.0))
    qtbot.waitUntil(lambda: not training.is_running(), timeout=10_000)
    assert training.plots.points("loss_smooth") == 3
    assert project.runs[0].status == "finished" and window.is_modified()
    assert "Training finished" in training.banner.text()


def test_gui_never_imports_tensorflow_with_every_page_in_use(tmp_path: Path, make_dataset) -> None:
    """A fresh process shows a project with a dataset, a model and a run on every page."""
    data = make_dataset(tmp_path / "d.h5", 500, shape=(25, 25), classes=3)
    run = fake_run(tmp_path / "runs" / "r1", data)
    project = Project.new(tmp_path / "p.gproj", "NoTF")
    project.datasets.append(DatasetRef("d", data))
    project.runs.append(RunEntry(str(run), name="r1", dataset="d", model="m"))
    project.save()
    code = f"""
import sys, time
from PySide6.QtWidgets import QApplication
from guiapp.ui.refcount_guard import guard_singletons
guard_singletons()
app = QApplication([])
from guiapp.core.project import Project
from guiapp.ui.main_window import MainWindow
w = MainWindow(Project.load({str(tmp_path / "p.gproj")!r}))
w.show()
w.page("Model").new_model("cnn2d-small")
end = time.monotonic() + 20
for i in range(w.stack.count()):
    w.set_page(i)
    while time.monotonic() < end and not (i != 4 or w.page("Runs").confusion.names):
        app.processEvents()
    assert not w.current_page().grab().isNull()
while time.monotonic() < end and not w.page("Model").summary.rowCount():  # computed on a thread
    app.processEvents()
assert w.page("Model").summary.rowCount() > 0
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras"))
print(bad)
sys.exit(1 if bad else 0)
"""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "c")}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_removing_runs_from_the_list_undoes_from_the_edit_menu(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "d.h5", 300, shape=(4, 4), classes=3)
    refs = [
        RunEntry(str(fake_run(tmp_path / "runs" / n, data)), name=n, status="finished")
        for n in ("r1", "r2")
    ]
    refs.append(RunEntry(str(tmp_path / "runs" / "r3"), name="r3", status="running"))
    window = open_project(qtbot, tmp_path, "Runs", {"d": data}, refs)
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: runs.table.rowCount() == 3, timeout=10_000)
    kept = window.project.runs[1]  # another page may hold this very entry (Training)
    runs.table.selectRow(1)
    runs.remove_button.click()
    assert [r.name for r in window.project.runs] == ["r1", "r3"]
    assert runs.table.rowCount() == 2 and window.is_modified()
    assert Path(kept.path).is_dir()  # the folder stays
    assert "Remove run r2" in window.action_undo.text()
    runs.table.selectRow(1)  # r3 is running: it stays
    assert runs.remove_selected() == 0 and len(window.project.runs) == 2
    assert "running run stays" in window.statusBar().currentMessage()

    window.action_undo.trigger()
    assert [r.name for r in window.project.runs] == ["r1", "r2", "r3"]
    assert window.project.runs[1] is kept and runs.table.rowCount() == 3
    window.action_redo.trigger()
    assert [r.name for r in window.project.runs] == ["r1", "r3"]
