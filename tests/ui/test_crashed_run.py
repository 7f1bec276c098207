"""Issue 34.6: a crashed run looks crashed. After ``kill -9`` of the training child, the run
has one state everywhere (header, the Training page's and the Jobs panel's Resume, both
error panels), the failure says what the crash lost since the last checkpoint, the plots
mark the attempt, and a Resume from the Jobs panel clears the failure everywhere and
says again what it trains twice (a real ``guiapp train`` child, killed for real; that a
resume trains on from the checkpoint is tested with the runner)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pyqtgraph as pg
import pytest
from conftest import open_project

from guiapp.core.project import RunEntry
from guiapp.core.train.run_lock import run_active
from guiapp.ui.pages.training.attempts import checkpoint_step
from tests.conftest import dense_spec

LONG = 120_000
DENSE = dense_spec(6, 3)


def marks(plot: pg.PlotItem) -> list[str]:
    return [
        i.label.format
        for i in plot.items
        if isinstance(i, pg.InfiniteLine) and i.label is not None and "attempt" in i.label.format
    ]


@pytest.mark.timeout(300)
def test_a_killed_run_is_failed_everywhere_and_resume_says_what_it_lost(
    qtbot, tmp_path: Path, make_dataset
) -> None:
    data = make_dataset(tmp_path / "d.h5", 4000, shape=(6,), classes=3)
    window = open_project(qtbot, tmp_path, "Crash", {"d": data}, models={"dense": DENSE})
    window.set_page(3)
    training = window.page("Training")
    assert training.form.select_model("dense")
    training.form.batch.setValue(8)
    training.form.epochs.setValue(3)
    training.form.max_steps.setValue(100)  # a checkpoint at each epoch's end
    job = training.start()
    assert job is not None
    run = Path(training.run.path)
    h = training.history

    killed: list[int] = []

    def kill(event: dict) -> None:  # in epoch 2, as soon as its step 30 is logged
        late = event.get("event") == "batch" and event.get("global_step", 0) >= 130
        if late and not killed and job.is_running():
            killed.append(job.pid())
            os.kill(killed[0], signal.SIGKILL)

    job.event.connect(kill)
    qtbot.waitUntil(lambda: job.status == "failed", timeout=LONG)
    job.event.disconnect(kill)

    # one state: the header, both Resume buttons, both error panels and the project
    assert h.status == "failed" and " · failed · " in training.run_label.text()
    assert not run_active(run)  # the lock, the liveness truth, is free
    row = window.jobs_panel.rows[0]
    assert row.job is job
    assert training.resume_button.isEnabled() and row.resume_button.isEnabled()
    assert training.error_panel.isVisibleTo(training)
    assert window.jobs_panel.error_panel.isVisibleTo(window.jobs_panel)
    assert window.project.runs[-1].status == "failed"
    # what the crash lost since the last checkpoint, in the page's failure
    last, kept = h.last_batch["global_step"], checkpoint_step(run)
    assert kept == 100 and last >= 130
    what = training.error_panel.what.text()
    assert "signal 9 (SIGKILL)" in what
    assert f"the last checkpoint holds step {kept}: the {last - kept} steps after it" in what
    assert marks(training.plots.loss_plot) == ["attempt 1 died", "attempt 2 from here"]
    runs = window.page("Runs")  # its events end without a last event: no lock, no writer
    qtbot.waitUntil(lambda: runs.runs.get(str(run), {}).get("status") == "failed", timeout=10_000)
    assert runs.table.item(0, 1).text() == "failed"

    row.resume_button.click()  # from the Jobs panel: the page follows
    qtbot.waitUntil(lambda: job.status == "running", timeout=LONG)
    assert not training.error_panel.isVisibleTo(training)
    assert not window.jobs_panel.error_panel.isVisibleTo(window.jobs_panel)
    assert not training.resume_button.isEnabled() and not row.resume_button.isEnabled()
    assert training.banner.text().startswith("Resumed (attempt 2): the last checkpoint holds")
    assert window.project.runs[-1].status == "running"
    # (that it trains on from the checkpoint is the resume tests' part: end it here)
    os.kill(job.pid(), signal.SIGKILL)
    qtbot.waitUntil(lambda: job.status == "failed", timeout=LONG)
    assert training.resume_button.isEnabled() and row.resume_button.isEnabled()


def test_a_reopened_run_marks_its_earlier_attempts(qtbot, tmp_path: Path, make_dataset) -> None:
    """A run killed at step 140 and resumed from its checkpoint at step 100, shown from its
    events file: where attempt 1 died and where attempt 2 started again."""
    import json
    import time

    data = make_dataset(tmp_path / "d.h5", 300, shape=(6,), classes=3)
    folder = tmp_path / "runs" / "r"
    folder.mkdir(parents=True)
    start = {"event": "started", "epochs": 3, "steps_per_epoch": 100, "run_dir": str(folder)}
    events: list[dict] = [start]
    events += [{"event": "batch", "epoch": 0, "step": g % 100, "global_step": g, "loss": 1 / g}
               for g in range(20, 101, 20)]  # fmt: skip
    events += [{"event": "epoch", "epoch": 0, "loss": 0.5, "val_loss": 0.5, "accuracy": 0.5,
                "val_accuracy": 0.5},
               {"event": "checkpoint", "epoch": 1, "step": 0}]  # fmt: skip
    events += [{"event": "batch", "epoch": 1, "step": g % 100, "global_step": g, "loss": 1 / g}
               for g in (120, 140)]  # fmt: skip
    events.append({**start, "resumed_from": {"epoch": 1, "step": 0}})  # killed: no last event
    events += [{"event": "batch", "epoch": 1, "step": g % 100, "global_step": g, "loss": 1 / g}
               for g in range(120, 301, 20)]  # fmt: skip
    events.append({"event": "finished", "best_val_accuracy": 0.5})
    now = time.time()
    (folder / "events.jsonl").write_text(
        "".join(json.dumps({**e, "time": now}) + "\n" for e in events)
    )
    run = RunEntry(str(folder), name="r", status="finished")
    window = open_project(qtbot, tmp_path, "Attempts", {"d": data}, [run], shown=False)
    training = window.page("Training")
    training.show_run(window.project.runs[-1])
    qtbot.waitUntil(lambda: training.history.status == "finished", timeout=10_000)
    assert marks(training.plots.loss_plot) == ["attempt 1 died", "attempt 2 from here"]
    lines = [i for i in training.plots.loss_plot.items if isinstance(i, pg.InfiniteLine)]
    assert sorted(line.value() for line in lines if "attempt" in str(line.label.format)) == [
        100,
        140,
    ]
