"""Issue 34.3: a generation stopped, listed in a reopened project's Jobs panel and resumed
from there: when it ends, the Datasets page and the Browser show the finished dataset
(they kept the stopped one's rows)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from guiapp.core.project import DatasetRef, Project
from guiapp.core.store import Dataset
from guiapp.ui.main_window import MainWindow

ARGS = ["--generator", "patterns2d", "--n", "60000", "--shape", "8x8", "--shard-rows", "8192"]


def test_pages_read_the_dataset_again_when_a_resumed_job_ends(qtbot, tmp_path: Path) -> None:
    out = tmp_path / "cells.h5"
    proc = subprocess.Popen([sys.executable, "-m", "guiapp", "generate", str(out), *ARGS,
                             "--workers", "1", "--events", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})  # fmt: skip
    assert proc.stdin and proc.stdout
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "progress" and 8192 <= e["rows_done"] < 60000:
            proc.stdin.write("stop\n")
            proc.stdin.flush()
            break
    proc.communicate(timeout=60)
    with Dataset(out) as ds:
        stopped_rows = len(ds)
        assert not ds.complete and stopped_rows < 60000
    project = Project.new(tmp_path / "p.gproj", "Follow")
    project.datasets.append(DatasetRef("cells", out))
    project.ui["jobs"] = [{"name": "generate cells", "command": "generate",
                           "args": [str(out), *ARGS], "resumable": True,
                           "working_dir": str(tmp_path), "status": "stopped"}]  # fmt: skip
    window = MainWindow(project)
    qtbot.addWidget(window)
    window.show()
    datasets, browser = window.page("Datasets"), window.page("Browser")
    qtbot.waitUntil(lambda: str(out) in datasets.info, timeout=10_000)  # type: ignore[attr-defined]
    assert datasets.info[str(out)]["rows"] == stopped_rows  # type: ignore[attr-defined]
    window.set_page(1)
    qtbot.waitUntil(lambda: browser.meta is not None, timeout=10_000)  # type: ignore[attr-defined]
    assert browser.meta["rows"] == stopped_rows  # type: ignore[attr-defined]
    row = window.jobs_panel.rows[0]
    assert row.resume_button.isEnabled()
    row.resume_button.click()
    qtbot.waitUntil(lambda: row.job.status == "finished", timeout=120_000)
    qtbot.waitUntil(
        lambda: (datasets.info.get(str(out)) or {}).get("rows") == 60000,
        timeout=10_000,  # type: ignore[attr-defined]
    )
    assert datasets.info[str(out)]["complete"]  # type: ignore[attr-defined]
    qtbot.waitUntil(
        lambda: browser.meta is not None and browser.meta["rows"] == 60000,
        timeout=10_000,  # type: ignore[attr-defined]
    )


def test_jobs_panel_never_offers_resume_of_a_run_another_process_writes(
    qtbot, tmp_path: Path
) -> None:
    """Issue 35.4: a stopped training job listed in the Jobs panel is not resumed while
    another process holds its run's lock (it ran twice at once, interleaving events.jsonl)."""
    from guiapp.core.train.run_lock import RunLock

    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    project = Project.new(tmp_path / "p.gproj", "Lock")
    project.ui["jobs"] = [{"name": "train r1", "command": "train",
                           "args": ["--spec", str(run / "spec.json"), "--resume"],
                           "resumable": True, "working_dir": str(tmp_path),
                           "status": "stopped"}]  # fmt: skip
    with RunLock(run):  # another writer (here: this process, on another descriptor)
        window = MainWindow(project)
        qtbot.addWidget(window)
        row = window.jobs_panel.rows[0]
        assert not row.resume_button.isEnabled()
        row.resume()
        assert row.job.status == "stopped"  # nothing started
    row.on_status(row.job.status)
    assert row.resume_button.isEnabled()
