"""Attribution sanity, measured: ``python -m guiapp.bench.attribution``.

``guiapp generate`` patterns2d rows, ``guiapp train`` cnn2d-small on them, then for the
first blob rows the model calls blobs: the share of each method's attribution mass
(absolute values) inside the blob (where the sample's 3x3 mean reaches 30% of its highest
value), for the trained model and for the same model with its weights randomised
(Adebayo et al., 2018), and the correlation between the two maps. Also the time per row
of each method. TensorFlow runs in this process (a measurement, not the GUI).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def blob_region(x: np.ndarray) -> np.ndarray:
    p = np.pad(x, 1, mode="edge")
    window = sum(p[i : i + x.shape[0], j : j + x.shape[1]] for i in range(3) for j in range(3))
    s = np.asarray(window) / 9
    return np.asarray(s >= 0.3 * s.max())


def mass_on(a: np.ndarray, region: np.ndarray) -> float:
    a = np.abs(a)
    return float(a[region].sum() / max(a.sum(), 1e-12))


def guiapp(*args: object) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", *map(str, args)], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise SystemExit(f"guiapp {args[0]} failed: {r.stderr[-2000:]}")


def measure(rows: int, epochs: int, samples: int) -> dict[str, object]:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        guiapp("generate", d / "p.h5", "--generator", "patterns2d", "--n", rows, "--seed", 3)
        guiapp("train", "--data", d / "p.h5", "--model", "cnn2d-small", "--out", d / "run",
               "--epochs", epochs, "--batch", 64)  # fmt: skip
        import keras

        from ..core.explain.attribution import Explainer, randomized
        from ..core.store import Dataset

        model = keras.saving.load_model(d / "run" / "best.keras", safe_mode=True, compile=False)
        accuracy = json.loads((d / "run" / "report.json").read_text())["accuracy"]
        ex, rx = Explainer(model), Explainer(randomized(model, seed=1))
        methods = ex.methods
        mass: dict[str, list[float]] = {m: [] for m in methods}
        rmass: dict[str, list[float]] = {m: [] for m in methods}
        corr: dict[str, list[float]] = {m: [] for m in methods}
        seconds: dict[str, float] = dict.fromkeys(methods, 0.0)
        area: list[float] = []
        with Dataset(d / "p.h5") as ds:
            blob = ds.class_names.index("blob")
            for r in np.flatnonzero(ds.read_labels() == blob):
                x, y = ds.read(int(r))
                xi = ex.as_input(x)
                if int(np.argmax(ex.probabilities(xi[None])[0])) != blob:
                    continue
                region = blob_region(x)
                area.append(float(region.mean()))
                for m in methods:
                    t0 = time.perf_counter()
                    a = ex.explain(xi, y, (m,)).maps[m]
                    seconds[m] += time.perf_counter() - t0
                    b = rx.explain(xi, y, (m,)).maps[m]
                    mass[m].append(mass_on(a, region))
                    rmass[m].append(mass_on(b, region))
                    corr[m].append(float(np.corrcoef(np.abs(a).ravel(), np.abs(b).ravel())[0, 1]))
                if len(area) >= samples:
                    break
    n = len(area)
    return {
        "rows": rows,
        "epochs": epochs,
        "val_accuracy": accuracy,
        "blob_rows": n,
        "blob_area": round(float(np.mean(area)), 3),
        "methods": {
            m: {
                "mass_on_blob": round(float(np.mean(mass[m])), 3),
                "mass_on_blob_random_weights": round(float(np.mean(rmass[m])), 3),
                "corr_with_random_weights": round(float(np.nanmean(corr[m])), 3),
                "ms_per_row": round(1000 * seconds[m] / max(1, n), 1),
            }
            for m in methods
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guiapp.bench.attribution", description=__doc__)
    p.add_argument("--rows", type=int, default=3000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=20, help="blob rows measured")
    a = p.parse_args(argv)
    print(json.dumps(measure(a.rows, a.epochs, a.samples), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
