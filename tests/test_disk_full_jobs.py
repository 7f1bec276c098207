"""Issue 35.2: a full disk in ``generate`` and ``import`` keeps the contract: exit 2 with one
line naming the file and the free space, every committed row (the import's staging folder)
kept, and ``--resume`` continuing to the very dataset an uninterrupted run writes once space
is freed. The disk is a small tmpfs that another program fills while the job runs (skipped
where a tmpfs cannot be mounted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from conftest import ENV, guiapp
from test_disk_full import small_disk  # noqa: F401 - the fixture

from guiapp.core.store import Dataset


def run_until_the_disk_fills(args: list[object], disk: Path, progress: int) -> tuple[int, str]:
    """Run ``guiapp ARGS --events -``; at its PROGRESS-th progress event fill ``disk`` to
    the last byte (as another program would). Returns (exit code, stderr)."""
    cmd = [sys.executable, "-m", "guiapp", *map(str, args), "--events", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout and proc.stderr
    seen = 0
    for line in proc.stdout:
        if json.loads(line)["event"] == "progress":
            seen += 1
            if seen == progress:
                with open(disk / "filler", "wb", buffering=0) as fh:
                    try:
                        while True:
                            fh.write(b"\1" * 65536)
                    except OSError:
                        pass
    err = proc.stderr.read()
    return proc.wait(60), err


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
    rc, err = run_until_the_disk_fills(["generate", out, *args], small_disk, progress=2)
    assert rc == 2
    one_disk_line(err, out)
    assert out.exists() and not list(small_disk.glob(".*tmp*")), "no half-written index"
    (small_disk / "filler").unlink()  # space is freed
    r = guiapp("generate", out, *args, "--resume")
    assert r.returncode == 0, r.stderr
    same_rows(out, ref)


def test_import_on_a_full_disk_then_resume(tmp_path: Path, small_disk: Path) -> None:  # noqa: F811
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
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
    rc, err = run_until_the_disk_fills(["import", src, out, *args], small_disk, progress=2)
    assert rc == 2
    one_disk_line(err, out)
    staged = list(small_disk.glob(".b.h5.import-*"))
    assert len(staged) == 1 and (staged[0] / "checkpoint.json").exists(), "the staging is kept"
    (small_disk / "filler").unlink()
    r = guiapp("import", src, out, *args, "--resume", "--events", "-")
    assert r.returncode == 0, r.stderr
    assert "nothing to resume" not in r.stdout, "--resume continued from the staging"
    same_rows(out, ref)
    assert not list(small_disk.glob(".b.h5.import-*"))
