"""The app's life cycle (issue 17): quitting with jobs, resuming, failures, state on reopen.

Real child processes, real datasets, real Qt widgets offscreen; the quit dialog is a real
QMessageBox, answered from a timer that finds it as the active modal widget.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMessageBox

from guiapp.core.project import DatasetRef, Project
from guiapp.core.store import Dataset
from guiapp.ui.close_guard import STOP_AND_QUIT
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.main_window import MainWindow
from guiapp.ui.widgets.failure_controls import MARK

LONG = 120_000
BIG = ["--n", "3000000", "--shape", "8x8", "--shard-rows", "100000", "--seed", "2"]


def open_window(qtbot: Any, path: Path) -> MainWindow:
    window = MainWindow(Project.load(path))
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def new_project(tmp_path: Path, datasets: list[Path] = ()) -> Path:  # type: ignore[assignment]
    project = Project.new(tmp_path / "p.gproj", "Life")
    project.datasets = [DatasetRef(p.stem, p) for p in datasets]
    project.save()
    return tmp_path / "p.gproj"


def test_quit_with_a_generation_running_asks_once_waits_for_stopped_and_resumes_after_reopen(
    qtbot, tmp_path: Path, dialogs, modal
) -> None:
    window = open_window(qtbot, new_project(tmp_path))
    out = tmp_path / "data" / "big.h5"
    job = CliJob("generate big", "generate", [str(out), *BIG], resumable=True)
    window.page("Datasets").start_dataset_job(job, out)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: job.last_event.get("event") == "progress", timeout=LONG)
    window.set_modified(True)

    seen: list[dict[str, str]] = []
    modal(STOP_AND_QUIT, seen)
    dialogs.answer = QMessageBox.StandardButton.Save
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=LONG)
    assert len(seen) == 1 and seen[0]["title"] == "Jobs are running"
    assert "1 job is still running" in seen[0]["text"]
    assert "generate big (generation)" in seen[0]["text"]
    assert "Resume continues it" in seen[0]["info"]
    assert [t for _, t, _ in dialogs.shown] == ["Unsaved changes"]  # asked once
    assert job.status == "stopped" and job.last_event["event"] == "stopped"

    again = open_window(qtbot, tmp_path / "p.gproj")
    datasets = again.page("Datasets")
    assert [r.job.name for r in again.jobs_panel.rows] == ["generate big"]
    assert again.jobs_panel.rows[0].resume_button.isEnabled()
    qtbot.waitUntil(lambda: str(out) in datasets.info, timeout=LONG)  # type: ignore[attr-defined]
    datasets.table.selectRow(0)  # type: ignore[attr-defined]
    status = datasets.table.item(0, datasets.STATUS).text()  # type: ignore[attr-defined]
    assert status.startswith("unfinished") and datasets.resume_button.isEnabled()  # type: ignore[attr-defined]
    resumed = datasets.resume_selected()  # type: ignore[attr-defined]
    assert resumed is not None and "--resume" in resumed.args
    qtbot.waitUntil(lambda: resumed.last_event.get("event") == "progress", timeout=LONG)
    resumed.stop()
    qtbot.waitUntil(lambda: not resumed.is_running(), timeout=LONG)
    assert resumed.status == "stopped"


def test_a_job_that_ends_while_the_quit_dialog_is_up_still_quits(
    qtbot, tmp_path: Path, modal
) -> None:
    window = open_window(qtbot, new_project(tmp_path))
    out = tmp_path / "small.h5"
    small = [str(out), "--n", "1000000", "--shape", "8x8"]  # about 2 s of work
    job = CliJob("generate small", "generate", small, resumable=True)
    window.jobs_panel.add_job(job)
    job.start()
    # Not last_event: the first progress event comes in the same read as "started".
    qtbot.waitUntil(lambda: bool(job.started_event), timeout=LONG)
    assert job.is_running()
    seen: list[dict[str, str]] = []
    modal(STOP_AND_QUIT, seen, wait_for=lambda: not job.is_running())
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=LONG)
    assert len(seen) == 1 and job.status == "finished"


def test_one_shard_generation_resumed_from_the_jobs_panel_keeps_its_rows(
    qtbot, tmp_path: Path
) -> None:
    """Cancel mid-shard, Resume: it continues from the committed rows, same bytes."""
    one = ["--n", "40000", "--shard-rows", "40000", "--shape", "40x40", "--seed", "3"]
    ref = tmp_path / "ref.h5"
    r = subprocess.run([sys.executable, "-m", "guiapp", "generate", str(ref), *one])
    assert r.returncode == 0
    window = open_window(qtbot, new_project(tmp_path))
    out = tmp_path / "one.h5"
    job = CliJob("generate one", "generate", [str(out), *one], resumable=True)
    row = window.jobs_panel.add_job(job)
    shares: list[int] = []
    job.progress.connect(lambda *_a: shares.append(row.bar.value()))
    job.start()
    qtbot.waitUntil(lambda: job.last_event.get("rows_done", 0) >= 20_000, timeout=LONG)
    assert any(0 < v < 1000 for v in shares)  # not 0 % then 100 %
    assert window.jobs_panel.table.item(0, window.jobs_panel.ETA).text()
    row.cancel_button.click()
    qtbot.waitUntil(lambda: job.status == "stopped", timeout=LONG)
    with Dataset(out) as ds:
        kept = len(ds)
    assert kept >= 8192
    shares.clear()
    row.resume_button.click()
    qtbot.waitUntil(lambda: job.status == "finished", timeout=LONG)
    assert shares and min(shares) >= kept * 1000 // 40_000  # starts where it stopped
    with Dataset(out) as a, Dataset(ref) as b:
        assert [s.content_hash for s in a.shards] == [s.content_hash for s in b.shards]


def test_failed_import_opens_the_error_panel_in_the_dialogs_words_with_its_log(
    qtbot, tmp_path: Path
) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("label,data\n0,1 2 3\n1,4 5 6\n0,x 8 9\n")
    window = open_window(qtbot, new_project(tmp_path))
    panel = window.jobs_panel
    out = tmp_path / "bad.h5"
    job = CliJob("import bad", "import", [str(csv), str(out), "--format", "csv"])
    window.page("Datasets").start_dataset_job(job, out)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: job.status == "failed", timeout=LONG)
    error = panel.error_panel
    assert error.isVisible() and error.title.text() == "import bad failed"
    assert "bad.csv:4" in error.what.text() and "not an integer" in error.what.text()
    assert "“On a bad row” to skip in the Import dialog" in error.fix.text()
    assert "--on-error" not in error.fix.text() + error.what.text()
    # the failed event names the option; the Import dialog opened next focuses its control
    assert (job.last_event["option"], job.last_event["value"]) == ("--on-error", "abort")
    dialog = window.page("Datasets").open_import_dialog()  # type: ignore[attr-defined]
    assert dialog.focusWidget() is dialog.on_error and dialog.on_error.property(MARK)
    assert "bad.csv:4" in dialog.message.text()
    dialog.reject()
    error.log_button.click()
    log = panel.log_dialogs[-1]
    assert log.isVisible() and "bad.csv:4" in log.text.toPlainText()  # type: ignore[attr-defined]
    assert "$ " in log.text.toPlainText() and "failed:" in log.text.toPlainText()  # type: ignore[attr-defined]
    assert panel.clear_finished() == 1 and not panel.rows and not error.isVisible()


def test_check_ok_training_form_and_job_history_come_back_on_reopen(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "d.h5", 3000)
    path = new_project(tmp_path, [data])
    window = open_window(qtbot, path)
    datasets = window.page("Datasets")
    qtbot.waitUntil(lambda: str(data) in datasets.info, timeout=LONG)  # type: ignore[attr-defined]
    datasets.table.selectRow(0)  # type: ignore[attr-defined]
    job = datasets.check_selected()  # type: ignore[attr-defined]
    assert job is not None
    qtbot.waitUntil(lambda: not job.is_running(), timeout=LONG)
    assert datasets.checks[str(data)] == "checked OK"  # type: ignore[attr-defined]
    form = window.page("Training").form  # type: ignore[attr-defined]
    form.epochs.setValue(7)
    form.batch.setValue(32)
    form.devices.setEditText("cpu:2")
    form.class_weights.setChecked(True)
    form.experiment.fractions.setText("0.25, 0.5")
    assert window.save()
    saved = json.loads(path.read_text())["ui"]
    assert saved["checks"]["d.h5"]["status"] == "checked OK"

    again = open_window(qtbot, path)
    pages = again.page("Datasets")
    qtbot.waitUntil(lambda: str(data) in pages.info, timeout=LONG)  # type: ignore[attr-defined]
    assert pages.table.item(0, pages.STATUS).text() == "checked OK"  # type: ignore[attr-defined]
    form = again.page("Training").form  # type: ignore[attr-defined]
    assert (form.epochs.value(), form.batch.value()) == (7, 32)
    assert form.devices.currentText() == "cpu:2" and form.class_weights.isChecked()
    assert form.experiment.fractions.text() == "0.25, 0.5"
    rows = again.jobs_panel.rows
    assert [r.job.name for r in rows] == ["check d"] and rows[0].job.status == "finished"
    assert "done" in again.jobs_panel.table.item(0, again.jobs_panel.STATUS).text()
