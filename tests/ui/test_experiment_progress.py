"""Issue 30.9: a k-fold or sweep's job shows the experiment's progress and ETA (trial i of
n), not the current fold's from 0% again."""

from __future__ import annotations

from guiapp.ui.jobs.cli_job import CliJob


def test_progress_and_eta_are_the_experiments(qtbot) -> None:
    job = CliJob("train cv", "train", ["--out", "cv"], resumable=True)
    got: list[tuple] = []
    job.progress.connect(lambda *a: got.append(a))
    job._event({"event": "experiment", "trials": [{"id": f"fold-{k}"} for k in range(3)]})
    job._event({"event": "trial", "status": "started", "trial": "fold-1", "index": 1})
    job._event({"event": "started", "epochs": 2, "steps_per_epoch": 10, "global_batch": 32})
    job._event({"event": "batch", "epoch": 1, "step": 5, "rows_per_s": 320.0})
    done, total, rate, eta = got[-1]
    assert (done, total) == (20 + 15, 60)  # fold-0's 20 steps, then 15 of fold-1's 20
    assert eta == (60 - 35) * 32 / 320.0
    single = CliJob("train r", "train", ["--out", "r"])
    single.progress.connect(lambda *a: got.append(a))
    single._event({"event": "started", "epochs": 2, "steps_per_epoch": 10, "global_batch": 32})
    single._event({"event": "batch", "epoch": 1, "step": 5, "rows_per_s": 320.0})
    assert got[-1][:2] == (15, 20)
