"""Issue 35, the fault suite's kill sweep: ``kill -9`` at random moments of ``generate``,
``import`` and ``predict``, then ``--resume`` (predict: the same command), must give the
bytes of an uninterrupted run.

The kill points are drawn from a seeded generator: ``GUIAPP_FAULT_SEED`` (printed in each
test's id) reproduces a run; without it the seed is the day, so CI samples other points each
day. CI runs two generate points; the full sweep (every command, more points) is marked
``slow`` (``make test-slow``). The fixed kill points of each command stay in their own
files: test_generate.py, test_import_scale.py (pass 1 and pass 2), test_train.py,
test_experiment.py (k-fold), test_sweep_resume.py (grid and random), test_predict.py."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import ENV, guiapp, killed_predict

from guiapp.core.store import Dataset, DatasetWriter

SEED = int(os.environ.get("GUIAPP_FAULT_SEED", dt.date.today().toordinal()))
RNG = random.Random(SEED)
GEN = ["--n", 12000, "--shard-rows", 2048, "--seed", 5, "--workers", 2]


def points(n: int, low: int, high: int) -> list[int]:
    return sorted(RNG.sample(range(low, high), n))


def killed_at_progress(args: list[object], count: int) -> None:
    """Run ``guiapp ARGS --events -`` and SIGKILL it at its COUNT-th progress event."""
    cmd = [sys.executable, "-m", "guiapp", *map(str, args), "--events", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=ENV, start_new_session=True)  # fmt: skip
    assert proc.stdout
    seen = 0
    for line in proc.stdout:
        if json.loads(line)["event"] == "progress":
            seen += 1
            if seen >= count:
                os.killpg(proc.pid, signal.SIGKILL)  # the job and its workers, as a crash would
                break
    proc.wait(60)


def same_dataset(a: Path, b: Path) -> None:
    with Dataset(a) as da, Dataset(b) as db:
        assert da.complete and db.complete and len(da) == len(db)
        assert [s.content_hash for s in da.shards] == [s.content_hash for s in db.shards]


@pytest.fixture(scope="module")
def generated_ref(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ref = tmp_path_factory.mktemp("ref") / "ref.h5"
    assert guiapp("generate", ref, *GEN).returncode == 0
    return ref


def _generate_killed_then_resumed(tmp_path: Path, ref: Path, count: int) -> None:
    out = tmp_path / "g.h5"
    killed_at_progress(["generate", out, *GEN], count)
    r = guiapp("generate", out, *GEN, "--resume")
    assert r.returncode == 0, (SEED, count, r.stderr)
    same_dataset(out, ref)


CI_POINTS = points(2, 1, 8)


@pytest.mark.parametrize("count", CI_POINTS, ids=[f"seed{SEED}-progress{c}" for c in CI_POINTS])
def test_generate_killed_at_a_sampled_point(
    tmp_path: Path, generated_ref: Path, count: int
) -> None:
    _generate_killed_then_resumed(tmp_path, generated_ref, count)


SLOW_POINTS = points(8, 1, 14)


@pytest.mark.slow
@pytest.mark.parametrize("count", SLOW_POINTS, ids=[f"seed{SEED}-progress{c}" for c in SLOW_POINTS])
def test_generate_killed_anywhere(tmp_path: Path, generated_ref: Path, count: int) -> None:
    _generate_killed_then_resumed(tmp_path, generated_ref, count)


IMPORT = ["--format", "jsonl", "--dtype", "float32", "--shard-rows", 4096, "--memory-mb", 1]


@pytest.fixture(scope="module")
def imported_ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("imp")
    rng = np.random.default_rng(1)
    src = where / "rows.jsonl"
    with open(src, "w") as fh:
        for i in range(30000):
            fh.write(json.dumps({"data": rng.random(16).round(3).tolist(), "label": i % 4}) + "\n")
    ref = where / "ref.h5"
    assert guiapp("import", src, ref, *IMPORT).returncode == 0
    return src, ref


IMPORT_POINTS = points(6, 1, 12)


@pytest.mark.slow
@pytest.mark.parametrize(
    "count", IMPORT_POINTS, ids=[f"seed{SEED}-progress{c}" for c in IMPORT_POINTS]
)
def test_import_killed_anywhere(
    tmp_path: Path, imported_ref: tuple[Path, Path], count: int
) -> None:
    src, ref = imported_ref
    out = tmp_path / "i.h5"
    killed_at_progress(["import", src, out, *IMPORT], count)
    r = guiapp("import", src, out, *IMPORT, "--resume")
    assert r.returncode == 0, (SEED, count, r.stderr)
    with Dataset(out) as a, Dataset(ref) as b:
        assert len(a) == len(b) and a.complete
        xa, ya = a.read_range(0, len(a))
        xb, yb = b.read_range(0, len(b))
        assert xa.tobytes() == xb.tobytes() and np.array_equal(ya, yb)


PREDICT_ROWS = points(5, 100, 3800)


@pytest.mark.slow
def test_predict_killed_anywhere(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    data = tmp_path / "d.h5"
    with DatasetWriter(data, sample_shape=(8,), dtype="float32", class_names=["a", "b", "c"]) as w:
        w.append(rng.normal(size=(4000, 8)), rng.integers(0, 3, 4000))
    spec = {"name": "d", "input": {"shape": [8], "dtype": "float32"},
            "layers": [{"type": "Dense", "units": 3, "activation": "softmax"}],
            "loss": "sparse_categorical_crossentropy", "optimizer": {"type": "adam"},
            "metrics": ["accuracy"]}  # fmt: skip
    (tmp_path / "m.json").write_text(json.dumps(spec))
    run = tmp_path / "run"
    r = guiapp("train", "--data", data, "--model", tmp_path / "m.json", "--out", run,
               "--max-steps", 3)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    args = ["--model", str(run), "--data", str(data), "--probs", "--commit-rows", "256"]
    ref = tmp_path / "ref.h5"
    assert guiapp("predict", *args, "--out", ref).returncode == 0
    for done in PREDICT_ROWS:
        out = tmp_path / f"p{done}.h5"
        killed_predict(args, out, done)
        r = guiapp("predict", *args, "--out", out)
        assert r.returncode == 0, (SEED, done, r.stderr[-2000:])
        with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
            for key in ("row", "label", "pred", "prob", "probs"):
                assert np.array_equal(f[key][()], g[key][()]), (SEED, done, key)
