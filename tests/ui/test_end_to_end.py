"""From an empty project to a trained, evaluated model, through the real widgets.

new project -> generate 20,000 rows in the dialog -> browse -> cnn2d-small -> train with
plot points arriving -> stop -> resume -> finish -> confusion matrix -> save -> reopen.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QFileDialog

from guiapp.core.project import Project
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from guiapp.ui.main_window import MainWindow

LONG = 120_000


@pytest.mark.timeout(300)
def test_empty_project_to_evaluated_model(qtbot, tmp_path: Path, monkeypatch) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    window.action_new.trigger()
    target = tmp_path / "e2e.gproj"
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), ""))
    )
    assert window.save_as() and window.project.path == target

    # generate 20,000 rows through the dialog
    datasets = window.page("Datasets")
    datasets.generate_button.click()
    dialog = datasets.findChild(GenerateDialog)
    dialog.rows.setText("20,000")
    dialog.seed.setValue(1)
    dialog.output.set_path(tmp_path / "data" / "e2e.h5")
    dialog.start_button.click()
    qtbot.waitUntil(lambda: len(window.project.datasets) == 1, timeout=LONG)

    # the Browser shows it
    window.set_page(1)
    browser = window.page("Browser")
    qtbot.waitUntil(lambda: browser.meta is not None, timeout=LONG)
    assert browser.meta["rows"] == 20_000 and len(browser.grid.selection) == 20_000

    # the Model page adds cnn2d-small, fitted to the dataset
    window.set_page(2)
    model = window.page("Model")
    qtbot.waitUntil(lambda: model.settings.data_info is not None, timeout=LONG)
    model.template_combo.setCurrentText("cnn2d-small")
    model.new_button.click()
    assert [m.name for m in window.project.models] == ["cnn2d-small"]
    qtbot.waitUntil(lambda: model.summary.rowCount() == 9, timeout=LONG)
    assert model.layers.rowCount() == 8 and not model.errors

    # train; plot points arrive; stop; resume; finish
    window.set_page(3)
    training = window.page("Training")
    form = training.form
    assert form.select_model("cnn2d-small") and form.model.currentData() == ("project", 0)
    form.batch.setValue(32)
    form.epochs.setValue(1)
    form.max_steps.setValue(80)
    training.start_button.click()
    assert training.job is not None and training.stop_button.isEnabled()
    qtbot.waitUntil(lambda: training.plots.points("loss_smooth") >= 1, timeout=LONG)
    first = training.plots.points("loss_smooth")
    qtbot.waitUntil(lambda: training.plots.points("loss_smooth") > first, timeout=LONG)
    training.stop_button.click()
    qtbot.waitUntil(lambda: training.history.status == "stopped", timeout=LONG)
    qtbot.waitUntil(lambda: training.resume_button.isEnabled(), timeout=10_000)
    stopped_at = training.plots.points("loss_smooth")
    assert window.project.runs[-1].status == "stopped"
    training.resume_button.click()
    qtbot.waitUntil(lambda: window.project.runs[-1].status == "finished", timeout=LONG)
    qtbot.waitUntil(lambda: training.plots.points("loss_smooth") > stopped_at, timeout=5_000)
    assert training.plots.points("loss_epoch") == 1
    assert "Training finished" in training.banner.text()
    assert training.history.last_batch["global_step"] == 80

    # the Runs page shows the confusion matrix, and a cell opens the Browser
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: len(runs.confusion.names) == 5, timeout=LONG)
    val_rows = training.history.started["val_rows"]
    assert int(runs.confusion.matrix.sum()) == val_rows
    assert runs.report.rowCount() == 5 and runs.table.rowCount() == 1
    assert runs.table.item(0, 1).text() == "finished"
    cm = runs.confusion.matrix
    i, j = (int(v) for v in np.unravel_index(np.argmax(cm - np.diag(np.diag(cm))), cm.shape))
    runs.open_cell(i, j)
    qtbot.waitUntil(lambda: window.current_page() is browser, timeout=LONG)
    qtbot.waitUntil(lambda: "most confident first" in browser.grid.selection.title, timeout=LONG)
    shown = len(browser.grid.selection)
    assert 0 < shown == int(cm[i, j])

    # save, reopen: equal
    assert window.save() and not window.is_modified()
    reopened = Project.load(target)
    assert reopened == window.project
    second = MainWindow(reopened)
    qtbot.addWidget(second)
    again = second.page("Training")
    qtbot.waitUntil(lambda: again.history.status == "finished", timeout=LONG)
    assert again.plots.points("loss_smooth") == training.plots.points("loss_smooth")
