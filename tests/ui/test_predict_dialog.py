"""The Predict dialog runs a real `guiapp predict` job and opens its result in the Browser."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import open_project

from guiapp.core.predict import PredictionTable
from guiapp.core.project import RunEntry

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.timeout(300)
def test_predict_dialog_job_summary_and_browser(qtbot, tmp_path: Path, make_dataset) -> None:
    data = make_dataset(tmp_path / "d.h5", 2000, shape=(8, 8), classes=3)
    run = tmp_path / "runs" / "r1"
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", "train", "--data", str(data), "--model", "cnn2d-small",
         "--out", str(run), "--batch", "32", "--max-steps", "5"],
        capture_output=True, text=True, env=ENV, timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    run_ref = RunEntry(str(run), name="r1", dataset="d", model="m")
    window = open_project(qtbot, tmp_path, "Predict", {"d": data}, [run_ref])
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: runs.predict_button.isEnabled(), timeout=10_000)
    dialog = runs.open_predict_dialog()
    qtbot.addWidget(dialog)
    out = tmp_path / "pred.h5"
    dialog.out.set_path(out)
    assert dialog.data_path() == str(data)
    job = dialog.start()
    assert job is not None and window.jobs_panel.rows[0].job is job
    qtbot.waitUntil(lambda: job.status != "running", timeout=120_000)
    assert job.status == "finished", job.message + job.stderr[-2000:]
    summary = dialog.summary
    assert summary["rows"] == 2000 and sum(summary["pred_counts"]) == 2000
    assert sum(summary["confidence_hist"]) == 2000 and dialog.browser_button.isEnabled()
    dialog.show_in_browser()
    browser = window.page("Browser")
    qtbot.waitUntil(lambda: window.current_page() is browser, timeout=10_000)
    qtbot.waitUntil(lambda: "predictions of" in browser.grid.selection.title, timeout=10_000)
    assert len(browser.grid.selection) == PredictionTable(out).committed == 2000
    assert browser.predictions.path == str(out)
    # filter: misclassified, most confident first
    browser.predictions.correct_combo.setCurrentIndex(1)
    browser.predictions.apply_button.click()
    qtbot.waitUntil(lambda: "misclassified" in browser.grid.selection.title, timeout=10_000)
    table = PredictionTable(out)
    wrong = table.read("label") != table.read("pred")
    assert len(browser.grid.selection) == int(wrong.sum())
    if wrong.sum() > 1:
        shown = np.array([browser.grid.selection.row(i) for i in range(2)])
        p = table.read("prob")[shown]
        assert p[0] >= p[1]
