"""Checkpoints as HDF5 (no pickle): every model and optimizer variable, plus the position.

The position (epoch, step within epoch, global step, history so far) lets ``--resume``
restart at exactly the batch after the checkpoint with the same data order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..atomic import atomic_path
from ..errors import UserError

FORMAT = "guiapp-checkpoint"


def save_checkpoint(
    path: Path, model_vars: list[Any], opt_vars: list[Any], position: dict[str, Any]
) -> None:
    """Write variables (in order) and the position atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["position"] = json.dumps(position, default=float)
        for group, variables in (("model", model_vars), ("optimizer", opt_vars)):
            g = f.create_group(group)
            g.attrs["count"] = len(variables)
            for i, v in enumerate(variables):
                d = g.create_dataset(str(i), data=np.asarray(v.numpy()))
                d.attrs["name"] = str(getattr(v, "path", getattr(v, "name", i)))


def load_checkpoint(path: Path) -> tuple[list[np.ndarray], list[np.ndarray], dict[str, Any]]:
    """Read a checkpoint; a missing or damaged one is a clear UserError."""
    if not path.exists():
        raise UserError(f"{path}: no checkpoint to resume from. Start the run without --resume")
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != FORMAT:
                raise ValueError("not a guiapp checkpoint")
            position = json.loads(f.attrs["position"])
            out = []
            for group in ("model", "optimizer"):
                g = f[group]
                out.append([np.asarray(g[str(i)]) for i in range(int(g.attrs["count"]))])
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(
            f"{path}: the checkpoint is damaged ({exc}). Remove it and start the run again without --resume"
        ) from None
    return out[0], out[1], position


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
