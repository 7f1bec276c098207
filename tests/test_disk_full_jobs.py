"""Issue 35.2: a full disk in ``generate`` and ``import`` keeps the contract: exit 2 with one
line naming the file and the free space, every committed row (the import's staging folder)
kept, and ``--resume`` continuing to the very dataset an uninterrupted run writes once space
is freed. The disk is a small tmpfs that another program fills while the job runs (skipped
where a tmpfs cannot be mounted)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ENV, guiapp
from test_disk_full import small_disk  # noqa: F401 - the fixture

from guiapp.core.store import Dataset


class Filler:
    """Another program that takes every byte of ``disk`` and, until stopped, every byte
    that is freed again (an import deletes its buckets as pass 2 goes)."""

    def __init__(self, disk: Path) -> None:
        self.fh = open(disk / "filler", "wb", buffering=0)  # noqa: SIM115 - closed in stop
        self.done = threading.Event()
        self.full = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.full.wait(30), "the disk never filled"

    def _run(self) -> None:
        while not self.done.is_set():
            try:
                self.fh.write(b"\1" * 65536)
            except OSError:
                self.full.set()
                time.sleep(0.001)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self.fh.close()
        Path(self.fh.name).unlink()  # space is freed


def run_until_the_disk_fills(args: list[object], disk: Path, phase: str) -> tuple[int, str]:
    """Run ``guiapp ARGS --events -`` and fill ``disk`` at its ``phase``-th progress event
    ("1", "2"), or (an import) once a checkpoint of "pass1" or the first shard file of
    "pass2" is there. Returns the exit code and stderr, after the filler let go of the space."""
    cmd = [sys.executable, "-m", "guiapp", *map(str, args), "--events", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout and proc.stderr
    filler = None
    if phase not in ("pass1", "pass2"):
        seen = 0
        for line in proc.stdout:
            seen += json.loads(line)["event"] == "progress"
            if seen == int(phase) and filler is None:
                filler = Filler(disk)
    else:
        out = Path(str(args[2]))
        stage = f".{out.name}.import-*/"
        # pass 1: once a checkpoint commits scattered rows; pass 2: its first shard file
        seen_at = stage + ("checkpoint.json" if phase == "pass1" else f"{out.stem}.shards/*.h5")
        while filler is None and proc.poll() is None:
            if next(disk.glob(seen_at), None) is not None:
                filler = Filler(disk)
            time.sleep(0.001)
    proc.stdout.read()
    err = proc.stderr.read()
    rc = proc.wait(60)
    assert filler is not None, "the job ended before the disk was filled"
    filler.stop()
    return rc, err


def one_disk_line(err: str, path: Path) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0] and "the disk is full" in lines[0] and " free" in lines[0]
    assert "--resume" in lines[0]


def same_rows(a: Path, b: Path) -> None:
    with Dataset(a) as da, Dataset(b) as db:
        assert da.complete and db.complete and len(da) == len(db)
        xa, ya = da.read_range(0, len(da))
        xb, yb = db.read_range(0, len(db))
        assert xa.tobytes() == xb.tobytes() and np.array_equal(ya, yb)


def test_generate_on_a_full_disk_then_resume(tmp_path: Path, small_disk: Path) -> None:  # noqa: F811
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    args = ["--n", 12000, "--shard-rows", 2048, "--seed", 4]
    ref = tmp_path / "ref.h5"
    assert guiapp("generate", ref, *args).returncode == 0
    out = small_disk / "g.h5"
    rc, err = run_until_the_disk_fills(["generate", out, *args], small_disk, "2")
    assert rc == 2
    one_disk_line(err, out)
    assert out.exists() and not list(small_disk.glob(".*tmp*")), "no half-written index"
    r = guiapp("generate", out, *args, "--resume")
    assert r.returncode == 0, r.stderr
    same_rows(out, ref)


@pytest.mark.parametrize("when", ["pass1", "pass2"])
def test_import_on_a_full_disk_then_resume(tmp_path: Path, small_disk: Path, when: str) -> None:  # noqa: F811
    # Room for the import and little more, so that filling it is instant.
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    rng = np.random.default_rng(0)
    src = tmp_path / "rows.jsonl"
    with open(src, "w") as fh:
        for i in range(20000):
            fh.write(json.dumps({"data": rng.random(32).round(4).tolist(), "label": "abc"[i % 3]}))
            fh.write("\n")
    args = ["--format", "jsonl", "--dtype", "float32", "--shard-rows", 4096, "--memory-mb", 1]
    ref = tmp_path / "ref.h5"
    assert guiapp("import", src, ref, *args).returncode == 0
    out = small_disk / "b.h5"
    rc, err = run_until_the_disk_fills(["import", src, out, *args], small_disk, when)
    assert rc == 2
    one_disk_line(err, out)
    staged = list(small_disk.glob(".b.h5.import-*"))
    assert len(staged) == 1 and (staged[0] / "checkpoint.json").exists(), "the staging is kept"
    r = guiapp("import", src, out, *args, "--resume", "--events", "-")
    assert r.returncode == 0, r.stderr
    assert "nothing to resume" not in r.stdout, "--resume continued from the staging"
    same_rows(out, ref)
    assert not list(small_disk.glob(".b.h5.import-*"))
