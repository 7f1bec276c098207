"""Issue 30.1: a run's report describes the model Export ships and ``predict`` uses.

On noise the validation accuracy wanders from epoch to epoch, so the best epoch is not the
last: the run's confusion matrix must be ``best.keras``'s, equal cell by cell to
``guiapp predict --model RUN --split val``'s (it was the last epoch's).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from conftest import guiapp

NOISE = """
import numpy as np

def generate(rng, n, params):
    return rng.normal(size=(n, *params["shape"])).astype("float32"), rng.integers(0, 3, n)
"""

DENSE = {
    "name": "dense",
    "input": {"shape": [8, 8], "dtype": "float32"},
    "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 64, "activation": "relu"},
               {"type": "Dense", "units": 3, "activation": "softmax"}],
    "loss": "sparse_categorical_crossentropy",
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "metrics": ["accuracy"],
}  # fmt: skip


def matrix(path: Path) -> np.ndarray:
    rows = list(csv.reader(path.read_text().splitlines()))
    return np.array([[int(v) for v in r[1:]] for r in rows[1:]])


def test_the_report_is_the_shipped_models(tmp_path: Path) -> None:
    (tmp_path / "noise.py").write_text(NOISE)
    data = tmp_path / "noise.h5"
    r = guiapp("generate", data, "--generator", tmp_path / "noise.py", "--n", 3000,
               "--shape", "8x8", "--classes", 3, "--seed", 2)  # fmt: skip
    assert r.returncode == 0, r.stderr
    (tmp_path / "dense.json").write_text(json.dumps(DENSE))
    run = tmp_path / "run"
    r = guiapp("train", "--data", data, "--model", tmp_path / "dense.json", "--out", run,
               "--epochs", 5, "--batch", 64, "--val", 0.3)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    history = [dict(row) for row in csv.DictReader((run / "history.csv").open())]
    accs = [float(row["val_accuracy"]) for row in history]
    best = int(np.argmax(accs))
    assert best != len(accs) - 1, accs  # (the case the issue measured)
    report = json.loads((run / "report.json").read_text())
    assert report["model"] == {"file": "best.keras", "epoch": best + 1, "epochs": 5,
                               "chosen": "the highest validation accuracy"}  # fmt: skip
    assert report["accuracy"] == round(accs[best], 6) or abs(report["accuracy"] - accs[best]) < 1e-3
    assert "Model: `best.keras`, epoch" in (run / "report.md").read_text()
    pred = tmp_path / "pred.csv"
    r = guiapp("predict", "--model", run, "--data", data, "--split", "val", "--out", pred)
    assert r.returncode == 0, r.stderr[-2000:]
    got = np.zeros((3, 3), int)
    for row in csv.DictReader(pred.open()):
        got[int(row["label"]), int(row["pred"])] += 1
    assert np.array_equal(got, matrix(run / "confusion.csv"))
