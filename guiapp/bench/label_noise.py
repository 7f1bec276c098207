"""Planted label noise, found again: ``python -m guiapp.bench.label_noise``.

A labelled ``.npz`` with a fraction of its labels flipped at known rows (each row's ``_id``
says which), imported with ``--keep-fields _id``, a k-fold experiment, ``guiapp labels
--all``; then the precision and recall of the top N of the ranking (N = rows flipped) and
of the rows confident learning flags. Every step is the CLI a user runs (subprocesses).

``--data points``: 16 features in 4 gaussian classes, a 2-layer dense model.
``--data patterns2d``: 25x25 images of the patterns2d generator (5 classes), cnn2d-small.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DENSE = {
    "name": "points",
    "input": {"shape": [16], "dtype": "float32"},
    "layers": [
        {"type": "Dense", "units": 32, "activation": "relu"},
        {"type": "Dense", "units": 4, "activation": "softmax"},
    ],
    "loss": "sparse_categorical_crossentropy",
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "metrics": ["accuracy"],
}


def write_noisy(
    path: Path, kind: str, rows: int, flip: float, seed: int
) -> dict[str, tuple[int, int]]:
    """The ``.npz`` (``x``, ``y`` as class names, ``_id``); per ``_id`` (true class,
    written class)."""
    rng = np.random.default_rng(seed)
    if kind == "points":
        classes = 4
        centers = rng.normal(0, 2.0, (classes, 16))
        y = rng.integers(0, classes, rows)
        x = centers[y] + rng.normal(0, 1.0, (rows, 16))
    else:
        from ..core.generate import patterns2d

        classes = 5
        params = patterns2d.resolve_params({})
        xi, yi = patterns2d.generate(rng, rows, params)
        x, y = xi, yi.astype(np.int64)
    written = y.copy()
    flipped = rng.choice(rows, int(round(flip * rows)), replace=False)
    written[flipped] = (y[flipped] + rng.integers(1, classes, len(flipped))) % classes
    ids = np.array([f"r{i:07d}" for i in range(rows)])
    names = np.array([f"c{c}" for c in written])
    np.savez(path, x=x.astype(np.float32), y=names, _id=ids)
    truth = {str(ids[i]): (int(y[i]), int(written[i])) for i in range(rows)}
    return truth


def guiapp(*args: object) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", *map(str, args)], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise SystemExit(f"guiapp {args[0]} failed: {r.stderr[-2000:]}")


def measure(
    kind: str, rows: int, flip: float, folds: int, epochs: int, seed: int
) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        truth = write_noisy(d / "data.npz", kind, rows, flip, seed)
        t0 = time.perf_counter()
        guiapp("import", d / "data.npz", d / "data.h5", "--format", "npz",
               "--keep-fields", "_id")  # fmt: skip
        model: object = "cnn2d-small"
        if kind == "points":
            (d / "m.json").write_text(json.dumps(DENSE))
            model = d / "m.json"
        guiapp("train", "--data", d / "data.h5", "--model", model, "--out", d / "cv",
               "--folds", folds, "--epochs", epochs, "--batch", 64, "--seed", seed)  # fmt: skip
        t1 = time.perf_counter()
        guiapp("labels", "--experiment", d / "cv", "--out", d / "labels.csv", "--all")
        t2 = time.perf_counter()
        with open(d / "labels.csv", newline="") as fh:
            lines = list(csv.DictReader(fh))
        summary = json.loads((d / "cv" / "experiment.json").read_text())["summary"]
    flipped = {i for i, (t, w) in truth.items() if t != w}
    n = len(flipped)
    top = sum(line["_id"] in flipped for line in lines[:n])
    flagged = [line for line in lines if line["issue"] == "1"]
    hit = [line for line in flagged if line["_id"] in flipped]
    suggested = sum(line["suggested_name"] == f"c{truth[line['_id']][0]}" for line in hit)
    return {
        "data": kind,
        "rows": rows,
        "flipped": n,
        "folds": folds,
        "epochs": epochs,
        "oof_accuracy": summary["oof"]["rows"]["accuracy"] if summary.get("oof") else None,
        "top_n_precision_recall": round(top / n, 4),
        "flagged": len(flagged),
        "flagged_precision": round(len(hit) / max(1, len(flagged)), 4),
        "flagged_recall": round(len(hit) / n, 4),
        "suggested_is_true_class": round(suggested / max(1, len(hit)), 4),
        "train_s": round(t1 - t0, 1),
        "labels_s": round(t2 - t1, 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guiapp.bench.label_noise", description=__doc__)
    p.add_argument("--data", default="points", choices=("points", "patterns2d"))
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--flip", type=float, default=0.05)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seed", type=int, default=5)
    a = p.parse_args(argv)
    print(json.dumps(measure(a.data, a.rows, a.flip, a.folds, a.epochs, a.seed), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
