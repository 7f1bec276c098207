"""Closing the window while a run trains: leave it running, reopen, reattach, see it finish."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import open_project

from guiapp.core.project import Project
from guiapp.ui.close_guard import LEAVE_AND_QUIT
from guiapp.ui.jobs.run_tail import process_alive, stop_detached
from guiapp.ui.main_window import MainWindow

LONG = 120_000


@pytest.mark.timeout(300)
def test_close_leaves_the_run_running_and_reopening_reattaches(
    qtbot, tmp_path: Path, make_dataset, dialogs, modal
) -> None:
    data = make_dataset(tmp_path / "d.h5", 6000, shape=(25, 25), classes=3)
    window = open_project(qtbot, tmp_path, "Close", {"d": data}, saved=True)
    training = window.page("Training")
    assert training.form.select_model("cnn2d-small")
    training.form.batch.setValue(16)
    training.form.epochs.setValue(1)
    training.form.max_steps.setValue(120)
    job = training.start()
    assert job is not None
    qtbot.waitUntil(lambda: training.plots.points("loss_smooth") >= 1, timeout=LONG)

    assert window.save()
    seen: list[dict[str, str]] = []
    modal(LEAVE_AND_QUIT, seen)
    window.close()
    assert window.isVisible()  # waits for the checkpoint first
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=LONG)
    assert len(seen) == 1 and seen[0]["title"] == "Jobs are running"
    assert "(training)" in seen[0]["text"] and "Leave training running" in seen[0]["info"]
    assert dialogs.shown == []  # saved before: no save question
    run = window.project.runs[-1]
    pid = run.pid
    assert run.status == "running" and process_alive(pid)
    saved = Project.load(tmp_path / "p.gproj")
    assert saved.runs[-1].pid == pid  # saved with the run so a reopen finds it

    try:
        again = MainWindow(saved)
        qtbot.addWidget(again)
        page = again.page("Training")
        qtbot.waitUntil(lambda: page.tail is not None, timeout=LONG)
        assert page.is_running() and page.stop_button.isEnabled()
        # the Jobs panel lists the run in the background, its progress read from its file
        panel = again.jobs_panel
        row = panel.rows[0]
        assert row.job is page.followed and row.job.followed and row.job.pid() == pid
        assert row.job.name.endswith("(in the background)")
        assert panel.running_jobs() == []  # not this GUI's child: the quit asks about it apart
        assert row.cancel_button.isEnabled() and not row.resume_button.isVisible()
        shares: list[int] = []
        row.job.progress.connect(lambda *_a: shares.append(row.bar.value()))
        qtbot.waitUntil(lambda: not page.is_running(), timeout=LONG)
        assert page.history.status == "finished"
        assert any(0 < v < 1000 for v in shares) and row.bar.value() == 1000
        assert panel.table.item(0, panel.STATUS).text() == "done"
        assert page.followed is None and all(e["name"] != row.job.name for e in panel.history())
        assert page.history.last_batch["global_step"] == 120
        assert saved.runs[-1].status == "finished"
    finally:
        stop_detached(pid)
