"""Issue 30.8: predictions compare labels with the model's classes by name (or a
--class-map), an empty split is one line, not "predicted 0 rows, accuracy 0.0000" with exit
0, and an import whose labels mix numbers and text says so."""

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


def test_a_class_map_compares_in_the_models_classes(run: Path, tmp_path: Path) -> None:
    """Issue 30.8: --class-map DATA=MODEL renumbers the labels; the same rows under the
    model's own names give the same predictions and the same accuracy."""
    other = write(tmp_path / "other.h5", ["spot", "bar", "ring"])
    same = write(tmp_path / "same.h5", ["grating", "blob", "ring"])
    r = guiapp("predict", "--model", run, "--data", other, "--out", tmp_path / "p.csv",
               "--class-map", "spot=grating, bar=blob")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    r2 = guiapp("predict", "--model", run, "--data", same, "--out", tmp_path / "q.csv")
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert (tmp_path / "p.csv").read_text() == (tmp_path / "q.csv").read_text()
    for bad, words in (
        ("spot=grating", "bar"),
        ("spot=nothing", "'nothing'"),
        ("spot", "DATA=MODEL"),
    ):
        r = guiapp("predict", "--model", run, "--data", other, "--out", tmp_path / "b.csv",
                   "--class-map", bad)  # fmt: skip
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and words in lines[0], r.stderr
        assert not (tmp_path / "b.csv").exists()


def test_the_same_classes_in_another_order_are_renumbered(run: Path, tmp_path: Path) -> None:
    """Names that are the model's in another order are compared by name, not by index."""
    import csv

    data = ["ring", "grating", "blob"]
    shuffled = write(tmp_path / "shuffled.h5", data)
    r = guiapp("predict", "--model", run, "--data", shuffled, "--out", tmp_path / "s.csv")
    assert r.returncode == 0, r.stderr[-2000:]
    model = ["grating", "blob", "ring"]
    with open(tmp_path / "s.csv") as f:
        rows = list(csv.DictReader(f))
    y = np.arange(600) % 3
    labels = {int(row["row"]): int(row["label"]) for row in rows}
    assert len(labels) == 600
    assert all(labels[i] == model.index(data[y[i]]) for i in labels)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_import_warns_of_labels_mixing_numbers_and_text(tmp_path: Path, workers: int) -> None:
    """One "1.0" among labels 0..11 makes every label a name sorted as text (label 10 is
    class 3): the import says so, naming the value and its rows, and records it."""
    import json

    from guiapp.core.store import Dataset

    src = tmp_path / "a.jsonl"
    with open(src, "w") as f:
        for i in range(600):
            label: int | str = "1.0" if i in (77, 78) else i % 12
            f.write(json.dumps({"label": label, "data": [i % 7, 1, 2]}) + "\n")
    out = tmp_path / "a.h5"
    r = guiapp("import", src, out, "--format", "jsonl", "--workers", workers)
    assert r.returncode == 0, r.stderr
    warned = [line for line in r.stderr.splitlines() if "mix whole numbers" in line]
    assert len(warned) == 1 and "'1.0' (2 rows)" in warned[0], r.stderr
    with Dataset(out) as ds:
        assert ds.class_names[3] == "10"  # what the warning is about
        assert "'1.0' (2 rows)" in ds.provenance["label_warning"]
    clean = tmp_path / "b.jsonl"
    clean.write_text(
        "".join(json.dumps({"label": i % 12, "data": [1, 2, 3]}) + "\n" for i in range(60))
    )
    r = guiapp("import", clean, tmp_path / "b.h5", "--format", "jsonl")
    assert r.returncode == 0 and "mix" not in r.stderr, r.stderr
    with Dataset(tmp_path / "b.h5") as ds:
        assert "label_warning" not in ds.provenance and ds.class_names[10] == "10"
