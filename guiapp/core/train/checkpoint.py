"""Checkpoints as HDF5 (no pickle): every model and optimizer variable, plus the position.

The position (epoch, step within epoch, global step, history so far) lets ``--resume``
restart at exactly the batch after the checkpoint with the same data order. The file
carries a content hash (XXH3-128 over the position and every variable's dtype, shape and
bytes, in order), so a flipped byte anywhere in it is found before training resumes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xxhash

from ..atomic import atomic_path
from ..errors import UserError, checkpoint_damaged, disk_error

FORMAT = "guiapp-checkpoint"
HASH_NAME = "xxh3_128"


def _hash(position_json: str, groups: list[list[np.ndarray]]) -> str:
    h = xxhash.xxh3_128()
    h.update(position_json.encode())
    for values in groups:
        h.update(f"|{len(values)}".encode())
        for a in values:
            a = np.ascontiguousarray(a)
            h.update(f"|{a.dtype.str}{a.shape}".encode())
            h.update(a.data.cast("B") if a.size else b"")
    return f"{HASH_NAME}:{h.hexdigest()}"


def first_nonfinite(arrays: Iterable[Any]) -> float | None:
    """The first NaN or infinite value among the float ``arrays``, or None if all are finite."""
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            return float(a[~np.isfinite(a)].flat[0])
    return None


def save_checkpoint(
    path: Path,
    model_vars: list[Any],
    opt_vars: list[Any],
    position: dict[str, Any],
) -> None:
    """Write variables (in order), the position and their content hash atomically (the
    runner checks the weights are finite first: :func:`first_nonfinite`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    groups = [[np.asarray(v.numpy()) for v in vs] for vs in (model_vars, opt_vars)]
    position_json = json.dumps(position, default=float)
    try:
        _write(path, variables=(model_vars, opt_vars), groups=groups, position_json=position_json)
    except (OSError, RuntimeError) as exc:  # h5py reports a failed extend as RuntimeError
        err = disk_error(path, exc, resume="rerun the same command with --resume")
        if err is None:
            raise
        raise err from None


def _write(
    path: Path,
    *,
    variables: tuple[list[Any], list[Any]],
    groups: list[list[np.ndarray]],
    position_json: str,
) -> None:
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["position"] = position_json
        f.attrs["content_hash"] = _hash(position_json, groups)
        for group, vars_, values in zip(("model", "optimizer"), variables, groups, strict=True):
            g = f.create_group(group)
            g.attrs["count"] = len(values)
            for i, (v, a) in enumerate(zip(vars_, values, strict=True)):
                d = g.create_dataset(str(i), data=a)
                d.attrs["name"] = str(getattr(v, "path", getattr(v, "name", i)))


def load_checkpoint(
    path: Path, run: str | os.PathLike[str] | None = None
) -> tuple[list[np.ndarray], list[np.ndarray], dict[str, Any]]:
    """Read a checkpoint and verify its content hash; a missing or damaged one is a clear
    UserError whose fix (``--restart``) is accepted."""
    run = path.parent.parent if run is None else run
    if not path.exists():
        raise UserError(f"{path}: no checkpoint to resume from. Start the run without --resume")
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != FORMAT:
                raise ValueError("not a guiapp checkpoint")
            position_json = str(f.attrs["position"])
            recorded = f.attrs.get("content_hash")
            out = []
            for group in ("model", "optimizer"):
                g = f[group]
                out.append([np.asarray(g[str(i)]) for i in range(int(g.attrs["count"]))])
            position = json.loads(position_json)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise checkpoint_damaged(path, str(exc) or type(exc).__name__, run) from None
    if recorded is None:
        raise checkpoint_damaged(path, "it has no content hash", run)
    got = _hash(position_json, out)
    if got != str(recorded):
        raise checkpoint_damaged(
            path, f"content hash {got[9:21]}… differs from the recorded {str(recorded)[9:21]}…", run
        )
    return out[0], out[1], position


def verify_checkpoint(path: Path, run: str | os.PathLike[str]) -> None:
    """Raise the error :func:`load_checkpoint` would (checked before TensorFlow starts)."""
    load_checkpoint(path, run)


def assign_all(
    variables: list[Any], values: list[np.ndarray], what: str, path: os.PathLike[str]
) -> None:
    if len(variables) != len(values):
        raise UserError(
            f"{os.fspath(path)}: the checkpoint holds {len(values)} {what} variables, the model has {len(variables)}; it belongs to another model"
        )
    for v, a in zip(variables, values, strict=True):
        if tuple(v.shape) != a.shape:
            raise UserError(
                f"{os.fspath(path)}: {what} variable {getattr(v, 'path', '?')} has shape {tuple(v.shape)}, the checkpoint {a.shape}; it belongs to another model"
            )
        v.assign(a)
