"""Offline augmentation: a JSON pipeline of ops applied to generated rows before writing.

Spec (documented in docs/GENERATION.md)::

    {"copies": 2, "ops": [{"op": "flip", "axis": "h", "p": 0.5}, {"op": "noise", "std": 0.1}]}

Each source sample is written ``copies`` times, each copy augmented independently; copies
are shuffled among the rows. Every op acts on a random subset of rows (probability ``p``)
and draws all its randomness from the job's generator, so augmented datasets stay
byte-reproducible. The ops, their parameters and defaults are declared in
``registry.py``; ``check.py`` validates a spec against it and the dataset's shape and
dtype up front, and each error names the op and the parameter. This module holds the
numpy implementation of every op that runs offline.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError, load_json
from .check import check_spec
from .registry import OFFLINE, ops_that_run

Op = Callable[[np.random.Generator, np.ndarray, dict[str, Any]], np.ndarray]


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
assert sorted(OPS) == ops_that_run(OFFLINE), "every offline op of the registry needs a function"


class Augmenter:
    """A validated pipeline; ``apply(rng, x)`` augments a batch (in place where it can)."""

    def __init__(self, spec: dict[str, Any], sample_shape: tuple[int, ...], dtype: Any) -> None:
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
    spec = load_json(text, f"augment spec {source}")
    if isinstance(spec, list):
        spec = {"ops": spec}
    if not isinstance(spec, dict):
        raise UserError(f"augment spec {source}: must be a JSON object with 'copies' and 'ops'")
    return spec
