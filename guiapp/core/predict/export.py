"""Export a run's model for deployment, each export checked by reloading it.

- ``keras``: the ``.keras`` file (a zip of config and weights), reloaded with ``safe_mode``;
- ``savedmodel``: a TensorFlow SavedModel folder (``model.export``), reloaded with
  ``tf.saved_model.load`` and called through its ``serve`` signature;
- ``tflite``: a TensorFlow Lite flat buffer converted from that SavedModel, run in the
  TFLite interpreter.

Each export predicts a few hundred rows of the run's dataset (or seeded random inputs
when the dataset is gone) and the largest absolute difference from the original model's
probabilities is reported; it must stay within ``TOLERANCE`` (TFLite reorders float
arithmetic in its own kernels, so it gets a looser bound). ONNX is not offered: it needs
three packages this stack does not ship (tf2onnx and onnx to convert, onnxruntime to reload
and check the export), and tf2onnx has not been tried with TensorFlow 2.21 / Keras 3 here
(docs/ARCHITECTURE.md, "Decisions measured here").
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_path
from ..errors import UserError, disk_error
from ..model.keras_file import load_keras
from ..store import Dataset
from .source import ModelSource, resolve_model

FORMATS = ("keras", "savedmodel", "tflite")
SUFFIX = {"keras": ".keras", "savedmodel": "", "tflite": ".tflite"}
TOLERANCE = {"keras": 1e-5, "savedmodel": 1e-5, "tflite": 1e-4}


def default_out(run_dir: Path, fmt: str) -> Path:
    return run_dir / "export" / f"model{SUFFIX[fmt] or '.savedmodel'}"


def check_rows(source: ModelSource, model: Any, rows: int) -> np.ndarray:
    """Up to ``rows`` inputs: the run's dataset's first rows, else seeded random ones."""
    shape = tuple(int(s) for s in model.input_shape[1:])
    dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
    data = source.run_config.get("data") or source.dataset.get("path")
    if data and Path(data).exists():
        with Dataset(data) as ds:
            x, _ = ds.read_range(0, min(rows, len(ds)))
        return np.asarray(x).reshape((len(x), *shape)).astype(dtype)
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 4, size=(rows, *shape)).astype(dtype)
    return rng.standard_normal((rows, *shape)).astype(dtype)


def export_model(
    run: str | os.PathLike[str],
    fmt: str,
    out: str | os.PathLike[str] | None = None,
    *,
    which: str = "best",
    rows: int = 256,
) -> dict[str, Any]:
    """Write the export and check it; returns where, how big and the max abs difference."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: use one of {', '.join(FORMATS)} (ONNX: see the docs)")
    source = resolve_model(run, which)
    target = Path(out) if out else default_out(source.run_dir or source.path.parent, fmt)
    if fmt == "keras" and target.suffix != ".keras":
        raise UserError(f"--out {target}: a Keras model file must end in .keras")
    model = load_keras(source.path)
    x = check_rows(source, model, rows)
    ref = np.asarray(model(x, training=False), dtype=np.float32)
    try:
        got = _write(model, fmt, target, x)
    except OSError as exc:
        err = disk_error(target, exc, resume="run the same command again")
        if err is None:
            raise
        raise err from None
    diff = float(np.max(np.abs(got - ref))) if len(ref) else 0.0
    result = {
        "format": fmt,
        "out": str(target),
        "model": str(source.path),
        "model_hash": source.hash,
        "rows_checked": len(x),
        "max_abs_diff": diff,
        "tolerance": TOLERANCE[fmt],
        "ok": diff <= TOLERANCE[fmt],
        "bytes": _size(target),
    }
    return result


def _write(model: Any, fmt: str, target: Path, x: np.ndarray) -> np.ndarray:
    """Write the export (atomically) and reload it; its predictions on ``x``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "keras":
        with atomic_path(target) as tmp:
            model.save(tmp.with_suffix(".keras"))
            tmp.with_suffix(".keras").replace(tmp)
        again = load_keras(target)
        got = np.asarray(again(x, training=False), dtype=np.float32)
    elif fmt == "savedmodel":
        _write_savedmodel(model, target)
        got = _run_savedmodel(target, x)
    else:
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp_dir:
            saved = Path(tmp_dir) / "savedmodel"
            model.export(str(saved), format="tf_saved_model", verbose=False)
            blob = _tflite_bytes(saved)
        with atomic_path(target) as tmp:
            tmp.write_bytes(blob)
        got = _run_tflite(target, x)
    return got


def _write_savedmodel(model: Any, target: Path) -> None:
    """The SavedModel folder, built beside the target and renamed into place."""
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.export(str(tmp), format="tf_saved_model", verbose=False)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_savedmodel(path: Path, x: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))
    return np.asarray(loaded.serve(tf.constant(x)), dtype=np.float32)


def _tflite_bytes(saved: Path) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved))
    return bytes(converter.convert())


def _run_tflite(path: Path, x: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    interp = tf.lite.Interpreter(model_path=str(path))
    inp = interp.get_input_details()[0]
    interp.resize_tensor_input(inp["index"], list(x.shape))
    interp.allocate_tensors()
    interp.set_tensor(inp["index"], x.astype(inp["dtype"]))
    interp.invoke()
    out = interp.get_output_details()[0]
    return np.asarray(interp.get_tensor(out["index"]), dtype=np.float32)


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size
