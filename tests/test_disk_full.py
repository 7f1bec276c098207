"""Issue 35.1: a full disk never corrupts predictions. ``guiapp predict`` into a small
tmpfs that fills: exit 2 with one line, the rows committed are on the disk and
``complete`` is not set; after space is freed the same command finishes the very file an
uninterrupted run writes. (Skipped where a tmpfs cannot be mounted: not root, or no
permission.)"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import guiapp

from guiapp.core.store import DatasetWriter

MODEL = """{"name": "dense", "input": {"shape": [8], "dtype": "float32"},
 "layers": [{"type": "Dense", "units": 5, "activation": "softmax"}],
 "loss": "sparse_categorical_crossentropy", "optimizer": {"type": "adam"},
 "metrics": ["accuracy"]}"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small"
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)


def test_predict_on_a_full_disk_then_resume(tmp_path: Path, small_disk: Path) -> None:
    rng = np.random.default_rng(0)
    data = tmp_path / "d.h5"
    with DatasetWriter(data, sample_shape=(8,), dtype="float32",
                       class_names=[f"c{i}" for i in range(5)]) as w:  # fmt: skip
        w.append(rng.normal(size=(16000, 8)), rng.integers(0, 5, 16000))
    (tmp_path / "m.json").write_text(MODEL)
    run = tmp_path / "run"
    r = guiapp("train", "--data", data, "--model", tmp_path / "m.json", "--out", run)
    assert r.returncode == 0, r.stderr[-2000:]
    args = ["--model", run, "--data", data, "--probs", "--commit-rows", "2000"]
    ref = tmp_path / "ref.h5"
    assert guiapp("predict", *args, "--out", ref).returncode == 0
    out = small_disk / "p.h5"
    r = guiapp("predict", *args, "--out", out)
    assert r.returncode == 2
    errors = [x for x in r.stderr.splitlines() if x.startswith("guiapp")]
    assert len(errors) == 1 and "disk is full" in errors[0] and str(out) in errors[0]
    assert "Traceback" not in r.stderr and "h5py" not in r.stderr
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
        n = int(f.attrs["committed"])
        assert 0 < n < 16000 and not int(f.attrs["complete"])
        for key in ("row", "pred", "probs"):  # what is committed is what was computed
            assert np.array_equal(f[key][:n], g[key][:n])
    subprocess.run(["mount", "-o", "remount,size=50m", str(small_disk)], check=True)
    r = guiapp("predict", *args, "--out", out, "--events", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    started = json.loads(r.stdout.splitlines()[0])
    assert started["event"] == "started"
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
        assert int(f.attrs["complete"]) and int(f.attrs["committed"]) == 16000
        for key in ("row", "label", "pred", "prob", "topk_class", "topk_prob", "probs"):
            assert np.array_equal(f[key][()], g[key][()]), key
