"""A failed training run looks like a failure on the Training page: the error panel, not
the green banner, with the CLI's message and a way to the run's log."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import open_project

from guiapp.ui.dialogs.job_log import JobLogDialog
from guiapp.ui.widgets.failure_controls import MARK

LONG = 120_000


@pytest.mark.timeout(240)
def test_a_failed_run_shows_the_error_panel_with_its_message_and_log(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "d.h5", 300, shape=(8, 8), classes=3)
    window = open_project(qtbot, tmp_path, "Fail", {"d": data})
    window.set_page(3)
    training = window.page("Training")
    assert training.form.select_model("cnn2d-small")
    form = training.form
    form.val.setValue(0.0)  # early stopping without a validation split: refused at Start,
    form.experiment.early_stopping.setValue(3)  # on the control the error names (--val)
    assert training.start() is None and "give --val" in training.message.text()
    assert window.focusWidget() is form.val and form.val.property(MARK)
    form.val.setValue(0.1)
    form.experiment.early_stopping.setValue(0)
    training.form.devices.setCurrentText("gpu:97")  # no machine has GPU 97: train fails
    job = training.start()
    assert not form.val.property(MARK)  # a new Start clears the old mark
    assert job is not None
    qtbot.waitUntil(lambda: job.status == "failed", timeout=LONG)

    panel = training.error_panel
    assert panel.isVisible() and not training.banner.isVisible()
    assert panel.title.text().startswith("Training run ") and panel.title.text().endswith("failed")
    assert "97" in panel.what.text()  # the CLI's own line, whole
    assert panel.fix.text().startswith("What to do:")
    # the failed event names the option; the form focuses its control
    assert (job.last_event["option"], job.last_event["value"]) == ("--devices", "gpu:97")
    devices = training.form.devices
    assert window.focusWidget() is devices and devices.property(MARK)
    assert window.statusBar().currentMessage().startswith("Training failed: ")
    assert "see the log" not in window.statusBar().currentMessage()  # the message itself
    assert window.project.runs[-1].status == "failed"

    panel.log_button.click()
    log = training.log_dialog
    assert isinstance(log, JobLogDialog) and log.isVisible()
    assert "$ " in log.text.toPlainText() and "failed:" in log.text.toPlainText()
