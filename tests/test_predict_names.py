"""Issue 30.8: predictions compare labels with the model's classes by name, and an empty
split is one line, not "predicted 0 rows, accuracy 0.0000" with exit 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import guiapp

from guiapp.core.store import DatasetWriter

MODEL = """{"name": "dense", "input": {"shape": [5], "dtype": "float32"},
 "layers": [{"type": "Dense", "units": 3, "activation": "softmax"}],
 "loss": "sparse_categorical_crossentropy", "optimizer": {"type": "adam"},
 "metrics": ["accuracy"]}"""


def write(path: Path, names: list[str]) -> Path:
    rng = np.random.default_rng(0)
    with DatasetWriter(path, sample_shape=(5,), dtype="float32", class_names=names) as w:
        w.append(rng.normal(size=(600, 5)), np.arange(600) % 3)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("names")
    data = write(d / "train.h5", ["grating", "blob", "ring"])
    (d / "m.json").write_text(MODEL)
    out = d / "run"
    r = guiapp("train", "--data", data, "--model", d / "m.json", "--out", out, "--epochs", 1)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def test_other_class_names_are_refused_unless_asked(run: Path, tmp_path: Path) -> None:
    other = write(tmp_path / "other.h5", ["spot", "bar", "ring"])
    r = guiapp("predict", "--model", run, "--data", other, "--out", tmp_path / "p.csv")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "spot, bar, ring" in lines[0] and "grating, blob, ring" in lines[0]
    assert "--ignore-class-names" in lines[0] and not (tmp_path / "p.csv").exists()
    r = guiapp("predict", "--model", run, "--data", other, "--out", tmp_path / "p.csv",
               "--ignore-class-names")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    same = write(tmp_path / "same.h5", ["grating", "blob", "ring"])
    r = guiapp("predict", "--model", run, "--data", same, "--out", tmp_path / "q.csv")
    assert r.returncode == 0, r.stderr[-2000:]


def test_an_empty_split_is_one_line(run: Path, tmp_path: Path) -> None:
    r = guiapp("predict", "--model", run, "--data", run.parent / "train.h5", "--split", "test",
               "--out", tmp_path / "t.csv")  # fmt: skip
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--split test" in lines[0] and "holds no rows" in lines[0]
