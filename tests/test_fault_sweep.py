"""Issue 35, the fault suite's kill sweep: ``kill -9`` at random moments of ``generate``,
``import`` and ``predict``, then ``--resume`` (predict: the same command), must give the
bytes of an uninterrupted run.

The kill moments are fractions of an uninterrupted run's wall time (measured in the same
session), drawn from a seeded generator: ``GUIAPP_FAULT_SEED`` (in each test's id)
reproduces a run's draw; without it the seed is the day, so CI samples other moments each
day. Each kill must land before the job ends, or the test fails rather than test nothing. CI runs two generate points; the full sweep (every command, more points) is marked
``slow`` (``make test-slow``). The fixed kill points of each command stay in their own
files: test_generate.py, test_import_scale.py (pass 1 and pass 2), test_train.py,
test_experiment.py (k-fold), test_sweep_resume.py (grid and random), test_predict.py; the slow
sweep here adds random moments of a single run and a k-fold experiment."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import ENV, guiapp, killed_predict

from guiapp.core.store import Dataset, DatasetWriter

SEED = int(os.environ.get("GUIAPP_FAULT_SEED", dt.date.today().toordinal()))
RNG = random.Random(SEED)
GEN = ["--n", 12000, "--shard-rows", 2048, "--seed", 5, "--workers", 2]


def fractions(n: int, last: float = 0.85, first: float = 0.15) -> list[float]:
    """N kill moments, as fractions of an uninterrupted run's wall time (start-up included:
    a kill before the first write is a kill point too); ``last`` leaves a margin for a run
    that goes faster than the measured one."""
    return sorted(round(RNG.uniform(first, last), 3) for _ in range(n))


def timed(*args: object) -> float:
    """Run ``guiapp ARGS`` (it must succeed); its wall time in seconds."""
    t = time.monotonic()
    r = guiapp(*args)
    assert r.returncode == 0, r.stderr
    return time.monotonic() - t


def killed_after(args: list[object], seconds: float) -> None:
    """Run ``guiapp ARGS`` and SIGKILL it and its workers (as a crash would) SECONDS after
    it started; the kill must land before the job ends, or the point tests nothing."""
    cmd = [sys.executable, "-m", "guiapp", *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                            start_new_session=True)  # fmt: skip
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
        return
    pytest.fail(f"the job ended (exit {proc.returncode}) before its kill at {seconds:.2f} s")


def same_dataset(a: Path, b: Path) -> None:
    with Dataset(a) as da, Dataset(b) as db:
        assert da.complete and db.complete and len(da) == len(db)
        assert [s.content_hash for s in da.shards] == [s.content_hash for s in db.shards]


@pytest.fixture(scope="module")
def generated_ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """The uninterrupted dataset and the wall time that made it."""
    ref = tmp_path_factory.mktemp("ref") / "ref.h5"
    return ref, timed("generate", ref, *GEN)


def _generate_killed_then_resumed(tmp_path: Path, ref: tuple[Path, float], at: float) -> None:
    out = tmp_path / "g.h5"
    killed_after(["generate", out, *GEN], at * ref[1])
    r = guiapp("generate", out, *GEN, "--resume")
    assert r.returncode == 0, (SEED, at, r.stderr)
    same_dataset(out, ref[0])


CI_POINTS = fractions(2, last=0.6)  # CI: a wide margin on a loaded machine


@pytest.mark.parametrize("at", CI_POINTS, ids=[f"seed{SEED}-at{a}" for a in CI_POINTS])
def test_generate_killed_at_a_sampled_moment(
    tmp_path: Path, generated_ref: tuple[Path, float], at: float
) -> None:
    _generate_killed_then_resumed(tmp_path, generated_ref, at)


SLOW_POINTS = fractions(8)


@pytest.mark.slow
@pytest.mark.parametrize("at", SLOW_POINTS, ids=[f"seed{SEED}-at{a}" for a in SLOW_POINTS])
def test_generate_killed_anywhere(
    tmp_path: Path, generated_ref: tuple[Path, float], at: float
) -> None:
    _generate_killed_then_resumed(tmp_path, generated_ref, at)


IMPORT = ["--format", "jsonl", "--dtype", "float32", "--shard-rows", 4096, "--memory-mb", 1]


@pytest.fixture(scope="module")
def imported_ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, float]:
    """The source, the uninterrupted import and its wall time."""
    where = tmp_path_factory.mktemp("imp")
    rng = np.random.default_rng(1)
    src = where / "rows.jsonl"
    with open(src, "w") as fh:
        for i in range(60000):
            fh.write(json.dumps({"data": rng.random(16).round(3).tolist(), "label": i % 4}) + "\n")
    ref = where / "ref.h5"
    return src, ref, timed("import", src, ref, *IMPORT)


IMPORT_POINTS = fractions(6)


@pytest.mark.slow
@pytest.mark.parametrize("at", IMPORT_POINTS, ids=[f"seed{SEED}-at{a}" for a in IMPORT_POINTS])
def test_import_killed_anywhere(
    tmp_path: Path, imported_ref: tuple[Path, Path, float], at: float
) -> None:
    """Pass 1 (scatter), pass 2 (shuffle and write) or the publication, wherever it lands."""
    src, ref, seconds = imported_ref
    out = tmp_path / "i.h5"
    killed_after(["import", src, out, *IMPORT], at * seconds)
    r = guiapp("import", src, out, *IMPORT, "--resume")
    assert r.returncode == 0, (SEED, at, r.stderr)
    with Dataset(out) as a, Dataset(ref) as b:
        assert len(a) == len(b) and a.complete
        xa, ya = a.read_range(0, len(a))
        xb, yb = b.read_range(0, len(b))
        assert xa.tobytes() == xb.tobytes() and np.array_equal(ya, yb)


PREDICT_ROWS = sorted(RNG.sample(range(100, 3800), 5))


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
        if out.exists():  # (a kill before the file existed is a kill point too)
            with h5py.File(out, "r") as f:
                assert not int(f.attrs.get("complete", 0)), (SEED, done, "the kill came too late")
        r = guiapp("predict", *args, "--out", out)
        assert r.returncode == 0, (SEED, done, r.stderr[-2000:])
        with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
            for key in ("row", "label", "pred", "prob", "probs"):
                assert np.array_equal(f[key][()], g[key][()]), (SEED, done, key)


# -- train: a single run, a k-fold experiment, a grid and a random sweep (slow: TensorFlow) ----
TRAIN = ["--model", "cnn2d-small", "--epochs", "2", "--batch", "32", "--max-steps", "12",
         "--val", "0.2", "--checkpoint-every", "3"]  # fmt: skip
TRAIN_POINTS = fractions(3, last=0.9, first=0.45)  # (start-up, TensorFlow's import, is ~half)


def _last_weights(run: Path) -> list[np.ndarray]:
    import keras

    return [np.asarray(w) for w in keras.saving.load_model(run / "last.keras").get_weights()]


SWEEPS = {
    "single": ([], [""]),
    "k-fold": (["--folds", "2"], ["fold-0", "fold-1"]),
    "grid": (["--grid", "learning_rate=0.001,0.003"], ["grid-000", "grid-001"]),
    "random": (["--random", "2", "--space", "SPACE"], ["random-000", "random-001"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("sweep", list(SWEEPS))
def test_train_killed_anywhere(tmp_path: Path, sweep: str) -> None:
    data = tmp_path / "d.h5"
    assert guiapp("generate", data, "--n", 1200, "--seed", 3, "--shard-rows", 1024).returncode == 0
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"learning_rate": {"log_uniform": [0.0001, 0.01]}}))
    extra, trials = SWEEPS[sweep]
    args = [*TRAIN, *(str(space) if a == "SPACE" else a for a in extra)]
    ref = tmp_path / "ref"
    seconds = timed("train", "--data", data, "--out", ref, *args)
    runs = [ref / t if t else ref for t in trials]
    for at in TRAIN_POINTS:
        out = tmp_path / f"killed-{at}"
        killed_after(["train", "--data", data, "--out", out, *args], at * seconds)
        r = guiapp("train", "--data", data, "--out", out, *args, "--resume")
        if "no run to resume here" in r.stderr:  # killed before its spec.json: as it says,
            r = guiapp("train", "--data", data, "--out", out, *args)  # start it again
        assert r.returncode == 0, (SEED, at, r.stderr[-2000:])
        for run in runs:
            got = _last_weights(out / run.relative_to(ref))
            for a, b in zip(got, _last_weights(run), strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{SEED} {at}")
