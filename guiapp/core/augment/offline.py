"""Offline augmentation: a JSON pipeline of ops applied to generated rows before writing.

Spec (documented in docs/GENERATION.md)::

    {"copies": 2, "ops": [{"op": "flip", "axis": "h", "p": 0.5}, {"op": "noise", "std": 0.1}]}

Each source sample is written ``copies`` times, each copy augmented independently; copies
are shuffled among the rows. Every op acts on a random subset of rows (probability ``p``)
and draws all its randomness from the job's generator, so augmented datasets stay
byte-reproducible. Ops validate against the dataset's shape and dtype up front, and each
error names the op and the parameter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError

Op = Callable[[np.random.Generator, np.ndarray, dict[str, Any]], np.ndarray]

# name -> {parameter: (default, kind, low, high)}; kind is "num", "int" or a tuple of choices.
PARAMS: dict[str, dict[str, tuple[Any, Any, float, float]]] = {
    "flip": {"axis": ("h", ("h", "v"), 0, 0), "p": (0.5, "num", 0, 1)},
    "rot90": {"p": (1.0, "num", 0, 1)},
    "transpose": {"p": (0.5, "num", 0, 1)},
    "shift": {
        "max": (2, "int", 0, 10**6),
        "mode": ("roll", ("roll", "zero"), 0, 0),
        "p": (1.0, "num", 0, 1),
    },
    "noise": {"std": (0.1, "num", 0, 1e6), "p": (1.0, "num", 0, 1)},
    "cutout": {
        "size": (5, "int", 1, 10**6),
        "fill": (0.0, "num", -1e30, 1e30),
        "p": (0.5, "num", 0, 1),
    },
    "scale": {
        "low": (0.8, "num", -1e6, 1e6),
        "high": (1.2, "num", -1e6, 1e6),
        "p": (1.0, "num", 0, 1),
    },
    "zscore": {},
    "mutate": {
        "rate": (0.01, "num", 0, 1),
        "low": (1, "int", 0, 2**31),
        "vocab": (65521, "int", 1, 2**31),
    },
    "reverse": {"p": (0.5, "num", 0, 1)},
    "crop_pad": {
        "min_length": (64, "int", 1, 10**9),
        "pad": ("post", ("post", "pre"), 0, 0),
        "pad_value": (0, "int", -(2**31), 2**31),
        "p": (0.5, "num", 0, 1),
    },
}
IMAGE_OPS = {"flip", "rot90", "transpose", "shift", "cutout"}
FLOAT_OPS = {"noise", "scale", "zscore"}
SEQUENCE_OPS = {"mutate", "reverse", "crop_pad"}


def _rows(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
    return np.flatnonzero(rng.random(n) < p)


def _flip(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    x[i] = x[i][:, :, ::-1] if a["axis"] == "h" else x[i][:, ::-1]
    return x


def _rot90(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    turns = rng.integers(1, 4, len(i))
    for t in (1, 2, 3):
        j = i[turns == t]
        x[j] = np.rot90(x[j], t, axes=(1, 2))
    return x


def _transpose(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    x[i] = np.swapaxes(x[i], 1, 2)
    return x


def _shift(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    h, w = x.shape[1], x.shape[2]
    dy = rng.integers(-a["max"], a["max"] + 1, len(i))
    dx = rng.integers(-a["max"], a["max"] + 1, len(i))
    r = np.arange(h)[None, :] - dy[:, None]
    c = np.arange(w)[None, :] - dx[:, None]
    out = x[i[:, None, None], (r % h)[:, :, None], (c % w)[:, None, :]]
    if a["mode"] == "zero":
        outside = ((r < 0) | (r >= h))[:, :, None] | ((c < 0) | (c >= w))[:, None, :]
        out[outside] = 0
    x[i] = out
    return x


def _noise(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    x[i] += (rng.standard_normal((len(i), *x.shape[1:])) * a["std"]).astype(x.dtype)
    return x


def _cutout(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    h, w, s = x.shape[1], x.shape[2], a["size"]
    top = rng.integers(0, max(1, h - s + 1), len(i))[:, None]
    left = rng.integers(0, max(1, w - s + 1), len(i))[:, None]
    rr, cc = np.arange(h)[None, :], np.arange(w)[None, :]
    mask = ((rr >= top) & (rr < top + s))[:, :, None] & ((cc >= left) & (cc < left + s))[:, None, :]
    sub = x[i]
    sub[mask] = a["fill"]
    x[i] = sub
    return x


def _scale(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    f = rng.uniform(a["low"], a["high"], len(i)).reshape(-1, *([1] * (x.ndim - 1)))
    x[i] *= f.astype(x.dtype)
    return x


def _zscore(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    flat = x.reshape(len(x), -1)
    flat -= flat.mean(axis=1, keepdims=True)
    std = flat.std(axis=1, keepdims=True)
    std[std < 1e-6] = 1.0
    flat /= std
    return x


def _mutate(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    hits = rng.random(x.shape) < a["rate"]
    x[hits] = rng.integers(a["low"], a["vocab"], int(hits.sum())).astype(x.dtype)
    return x


def _reverse(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    i = _rows(rng, len(x), a["p"])
    x[i] = x[i][:, ::-1]
    return x


def _crop_pad(rng: np.random.Generator, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    """Keep a random window of ``min_length..L`` tokens, padded back to L like pad_sequences."""
    i = _rows(rng, len(x), a["p"])
    big = x.shape[1]
    keep = rng.integers(min(a["min_length"], big), big + 1, len(i))
    start = rng.integers(0, big - keep + 1)
    j = np.arange(big)[None, :]
    lead = (big - keep)[:, None] if a["pad"] == "pre" else 0
    src = start[:, None] + j - lead
    valid = (j >= lead) & (j < lead + keep[:, None])
    out = np.take_along_axis(x[i], np.clip(src, 0, big - 1), axis=1)
    out[~valid] = a["pad_value"]
    x[i] = out
    return x


OPS: dict[str, Op] = {
    "flip": _flip,
    "rot90": _rot90,
    "transpose": _transpose,
    "shift": _shift,
    "noise": _noise,
    "cutout": _cutout,
    "scale": _scale,
    "zscore": _zscore,
    "mutate": _mutate,
    "reverse": _reverse,
    "crop_pad": _crop_pad,
}


class Augmenter:
    """A validated pipeline; ``apply(rng, x)`` augments a batch (in place where it can)."""

    def __init__(self, spec: dict[str, Any], sample_shape: tuple[int, ...], dtype: Any) -> None:
        from .check import check_spec

        self.spec = check_spec(spec, tuple(sample_shape), np.dtype(dtype))
        self.copies = int(self.spec["copies"])

    def apply(self, rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
        for a in self.spec["ops"]:
            x = OPS[a["op"]](rng, x, a)
        return x


def load_spec(source: str | Path | dict[str, Any] | None) -> dict[str, Any] | None:
    """A spec from a dict, a JSON file path, or inline JSON text."""
    if source is None or isinstance(source, dict):
        return source
    text = str(source)
    if not text.lstrip().startswith(("{", "[")):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{source}: cannot read the augment spec ({exc.strerror})") from None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"augment spec {source}: not valid JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno})"
        ) from None
    if isinstance(spec, list):
        spec = {"ops": spec}
    if not isinstance(spec, dict):
        raise UserError(f"augment spec {source}: must be a JSON object with 'copies' and 'ops'")
    return spec
