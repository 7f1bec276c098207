"""CliJob runs the real CLI as a child process; the Jobs panel follows its signals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from guiapp.ui.jobs.cli_job import (
    CliJob,
    cli_prefix,
    error_line,
    format_eta,
    format_rate,
    training_progress,
)
from guiapp.ui.jobs.jobs_panel import JobsPanel


def test_helpers() -> None:
    assert cli_prefix() == [sys.executable, "-m", "guiapp"]
    assert format_eta(3725) == "1:02:05"
    assert format_eta(None) == ""
    assert format_rate(1_500_000) == "1,500,000" and format_rate(40_211.4) == "40,211"
    assert error_line("noise\nguiapp: error: --n 0: give rows\n") == "--n 0: give rows"


def test_generate_job_emits_progress_and_finished(qtbot, tmp_path: Path) -> None:
    out = tmp_path / "small.h5"
    job = CliJob("generate small", "generate", [str(out), "--n", "3000", "--seed", "1"])
    progress: list[tuple] = []
    kinds: list[str] = []
    job.progress.connect(lambda *a: progress.append(a))
    job.event.connect(lambda e: kinds.append(e["event"]))
    with qtbot.waitSignal(job.finished, timeout=30_000) as blocker:
        job.start()
    assert blocker.args == [True, "done"]
    assert job.status == "finished"
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert progress and progress[-1][:2] == (3000, 3000)
    assert out.exists()


def test_stop_ends_a_running_job_with_a_stopped_event_and_resume_finishes(
    qtbot, tmp_path: Path
) -> None:
    out = tmp_path / "big.h5"
    args = [str(out), "--n", "150000", "--shard-rows", "5000"]
    job = CliJob("generate big", "generate", args, resumable=True)
    panel = JobsPanel()
    qtbot.addWidget(panel)
    row = panel.add_job(job)
    kinds: list[str] = []
    job.event.connect(lambda e: kinds.append(e["event"]))
    with qtbot.waitSignal(job.progress, timeout=30_000):
        job.start()
    assert panel.running_jobs() == [job]
    assert row.cancel_button.isEnabled() and not row.resume_button.isEnabled()
    with qtbot.waitSignal(job.finished, timeout=30_000) as blocker:
        row.cancel_button.click()
    assert blocker.args[0] is False
    assert job.status == "stopped" and "stopped" in kinds
    assert panel.table.item(0, JobsPanel.STATUS).text() == "stopped"
    assert row.resume_button.isEnabled()
    with qtbot.waitSignal(job.finished, timeout=60_000) as blocker:
        row.resume_button.click()
    assert blocker.args == [True, "done"]
    assert job.args[-1] == "--resume"
    assert row.bar.value() == 1000
    assert panel.table.item(0, JobsPanel.STATUS).text() == "done"
    assert panel.table.rowCount() == 1  # finished jobs stay listed


def test_training_batches_are_the_jobs_progress_with_an_eta() -> None:
    """A run's steps (epochs x steps per epoch) make the Jobs panel's bar and ETA."""
    started = {"event": "started", "epochs": 2, "steps_per_epoch": 10, "global_batch": 32}
    batch = {"event": "batch", "epoch": 1, "step": 5, "steps": 10}
    assert training_progress(started, batch) == (15, 20)
    assert training_progress({}, batch) is None
    job = CliJob("train x", "train", [])
    seen: list[tuple] = []
    job.progress.connect(lambda *a: seen.append(a))
    job._line(json.dumps(started))
    job._line(json.dumps({**batch, "rows_per_s": 320.0}))
    assert seen == [(15, 20, 320.0, 5 * 32 / 320.0)]
    assert job.log[-1].startswith("training")


def test_failed_job_shows_one_clear_line(qtbot, tmp_path: Path) -> None:
    job = CliJob("bad", "generate", [str(tmp_path / "x.h5"), "--n", "0"])
    panel = JobsPanel()
    qtbot.addWidget(panel)
    panel.add_job(job)
    with qtbot.waitSignal(job.finished, timeout=30_000) as blocker:
        job.start()
    ok, message = blocker.args
    assert not ok and job.status == "failed"
    assert "--n" in message and "\n" not in message and "Traceback" not in message
    status = panel.table.item(0, JobsPanel.STATUS)
    assert status.text() == "failed" and status.toolTip() == message  # the whole line
    assert panel.error_panel.isVisibleTo(panel) and "--n" in panel.error_panel.what.text()
