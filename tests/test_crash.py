"""SIGKILL a real writer process at many moments; the dataset must stay exact up to its commit."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import reference_rows

from guiapp.core.store import Dataset
from guiapp.core.store.check import check_dataset

ROWS, BATCH, CAPACITY, COMMIT = 24_000, 700, 4096, 1500
HERE = Path(__file__).parent


def start_writer(path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [
            sys.executable,
            str(HERE / "crash_writer.py"),
            str(path),
            str(ROWS),
            str(BATCH),
            str(CAPACITY),
            str(COMMIT),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def kill_after(
    proc: subprocess.Popen[str], appended_target: int | None, delay: float | None
) -> int:
    """Kill at a row count (read from the child's reports) or after a delay; return the last
    commit the child reported before it died."""
    assert proc.stdout is not None
    committed = 0
    if appended_target is not None:
        for line in proc.stdout:
            word, *num = line.split()
            if word == "committed":
                committed = int(num[0])
            if word == "appended" and int(num[0]) >= appended_target:
                break
        os.kill(proc.pid, signal.SIGKILL)
    else:
        assert delay is not None
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for line in proc.stdout.read().splitlines():
        word, *num = line.split()
        if word == "committed":
            committed = int(num[0])
    return committed


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    path = tmp_path_factory.mktemp("full") / "full.h5"
    proc = start_writer(path)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "closed" in out
    return Dataset(path)


KILL_POINTS = [
    ("after start", 0, None),
    ("first batch", 700, None),
    ("before first commit", 1400, None),
    ("just past a commit", 2100, None),
    ("at a shard boundary", 4200, None),
    ("second shard", 8400, None),
    ("late", 19600, None),
    ("random time 1", None, 0.55),
    ("random time 2", None, 0.8),
    ("random time 3", None, 1.1),
]


@pytest.mark.parametrize(("label", "rows", "delay"), KILL_POINTS, ids=[k[0] for k in KILL_POINTS])
def test_sigkill_leaves_exact_committed_rows(
    tmp_path: Path, uninterrupted: Dataset, label: str, rows: int | None, delay: float | None
) -> None:
    path = tmp_path / "killed.h5"
    if delay is not None:
        delay *= random.uniform(0.8, 1.2)
    proc = start_writer(path)
    committed_before_kill = kill_after(proc, rows, delay)
    if not path.exists():  # killed before the index existed: nothing to open is the right answer
        assert committed_before_kill == 0
        return
    with Dataset(path) as ds:
        n = len(ds)
        assert committed_before_kill <= n <= ROWS
        x, y = ds.read_range(0, n)
        x_ref, y_ref = reference_rows(0, n)
        np.testing.assert_array_equal(x, x_ref)
        np.testing.assert_array_equal(y, y_ref)
        # Byte-equal to the same rows of an uninterrupted write.
        x_full, y_full = uninterrupted.read_range(0, n)
        assert x.tobytes() == x_full.tobytes() and y.tobytes() == y_full.tobytes()
        assert ds.class_counts.sum() == n
    if n:
        rep = check_dataset(path, full=True)
        assert rep.ok, [str(p) for p in rep.problems]
