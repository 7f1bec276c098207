"""Shared fixtures: small real datasets written through the real writer."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from guiapp.bench.specs import classifier  # noqa: E402
from guiapp.core.store import DatasetWriter  # noqa: E402

CLASSES = ["ring", "blob", "stripe", "edge", "noise"]

# The environment every CLI subprocess of the suite runs in: no GPU, TensorFlow's own logs quiet.
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}


def guiapp(
    *args: Any,
    timeout: int = 300,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m guiapp ARGS` as a user would, capturing stdout and stderr as text
    (KW goes to subprocess.run, e.g. preexec_fn)."""
    return subprocess.run(
        [sys.executable, "-m", "guiapp", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        input=stdin,
        env={**ENV, **(env or {})},
        **kw,
    )


def killed_predict(args: list[str], out: Path, done: int = 64) -> None:
    """Run ``guiapp predict ARGS --out OUT`` and SIGKILL it once ``done`` rows are predicted."""
    import json
    import signal

    cmd = [sys.executable, "-m", "guiapp", "predict", *args, "--out", str(out), "--events", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "progress" and e.get("phase") == "predict" and e["done"] >= done:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(60)


def generated(path: Path, generator: str, n: int, *extra: Any) -> Path:
    """PATH made by `guiapp generate` (seed 3 unless EXTRA says otherwise); fails the test if not."""
    r = guiapp("generate", path, "--generator", generator, "--n", n, "--seed", 3, *extra)
    assert r.returncode == 0, r.stderr
    return path


def imported(src: Path, out: Path, *extra: Any) -> Path:
    """OUT made by `guiapp import SRC OUT EXTRA`; fails the test if not."""
    r = guiapp("import", src, out, *extra)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def trained(out: Path, data: Path, model: dict[str, Any] | str | Path, *extra: Any) -> Path:
    """OUT made by `guiapp train --data DATA --model MODEL --out OUT EXTRA`, MODEL a template's
    name, a spec file or a spec (written beside DATA as NAME.json first); fails the test if not."""
    if isinstance(model, dict):
        spec = data.with_name(f"{model['name']}.json")
        spec.write_text(json.dumps(model))
        model = str(spec)
    r = guiapp("train", "--data", data, "--model", model, "--out", out, *extra)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def dense_spec(inputs: int, classes: int, units: int = 16, name: str = "dense") -> dict[str, Any]:
    """A spec of two Dense layers (UNITS relu, CLASSES softmax) on vectors of INPUTS values,
    Adam at 0.01 (the benches' :func:`~guiapp.bench.specs.classifier`)."""
    layers = [{"type": "Dense", "units": units, "activation": "relu"},
              {"type": "Dense", "units": classes, "activation": "softmax"}]  # fmt: skip
    return classifier(name, [inputs], layers, learning_rate=0.01)


def kmer_cnn(dim: int, filters: int, pooling: str, classes: int) -> Any:
    """A small Keras model on 126 k-mer ids: Embedding(65521, DIM), Conv1D(FILTERS, 5), the
    POOLING layer (a Keras layer's name), Dense(CLASSES, softmax)."""
    import keras

    return keras.Sequential(
        [
            keras.Input((126,), dtype="int32"),
            keras.layers.Embedding(65521, dim),
            keras.layers.Conv1D(filters, 5, activation="relu"),
            getattr(keras.layers, pooling)(),
            keras.layers.Dense(classes, activation="softmax"),
        ]
    )


def fingerprint(folder: Path, *, mtimes: bool = False) -> dict[str, str]:
    """Every path below FOLDER with its content hash (and mtime): equal means nothing was touched."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest() + (
                str(p.stat().st_mtime_ns) if mtimes else ""
            )
        elif not mtimes:
            out[str(p.relative_to(folder))] = "dir"
    return out


def reference_rows(
    a: int, b: int, shape: tuple[int, ...] = (25, 25)
) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic rows [a, b): row i is a function of i alone."""
    idx = np.arange(a, b)
    base = np.sin(idx.astype(np.float64) * 0.37)[:, None] + np.arange(int(np.prod(shape))) * 1e-3
    x = base.reshape((b - a, *shape)).astype(np.float32)
    y = (idx * 7 + idx // 3) % len(CLASSES)
    return x, y.astype(np.int32)


MakeDataset = Callable[..., Path]


@pytest.fixture
def make_dataset(tmp_path: Path) -> MakeDataset:
    def make(
        name: str = "data.h5",
        rows: int = 5000,
        *,
        capacity: int = 2048,
        layout: str = "sharded",
        compression: str | None = None,
        batch: int = 700,
        shape: tuple[int, ...] = (25, 25),
    ) -> Path:
        path = tmp_path / name
        with DatasetWriter(
            path,
            sample_shape=shape,
            dtype="float32",
            class_names=CLASSES,
            shard_capacity=capacity,
            layout=layout,
            compression=compression,
            commit_rows=1000,
            provenance={"generator": "reference_rows", "seed": 0},
        ) as w:
            for a in range(0, rows, batch):
                w.append(*reference_rows(a, min(rows, a + batch), shape))
        return path

    return make
