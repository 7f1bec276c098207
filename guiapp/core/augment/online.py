"""Cheap on-the-fly augmentation inside the pipeline: flips, rot90, noise of 2D samples;
``reverse`` of 1-D k-mer rows (with canonical k-mers, a read's reverse complement is its
tokens in reverse order: strand-aware training).

The registry's ops that run ``"online"``, in the online form ``{"flip_h": true, ...}``
(its keys are ``registry.ONLINE_KEYS``). Offline augmentation, written into a dataset,
is ``offline.py``; this one runs per batch while training, identically seeded by
(seed, epoch, batch), in numpy (``augment_numpy``) or TensorFlow ops (``augment_tf``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .registry import ONLINE_KEYS, OP_DEFS, online_param

#: The probability with which each online flip mirrors a sample.
FLIP_P: dict[str, float] = {
    key: ONLINE_KEYS[key].fixed["p"] for key in ("flip_h", "flip_v", "reverse")
}


@dataclass(frozen=True)
class AugmentSpec:
    flip_h: bool = False
    flip_v: bool = False
    rot90: bool = False  # square samples only
    noise_std: float = 0.0
    reverse: bool = False  # 1-D rows only

    @property
    def active(self) -> bool:
        return self.flip_h or self.flip_v or self.rot90 or self.noise_std > 0 or self.reverse

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> AugmentSpec:
        d = dict(d or {})
        unknown = set(d) - set(ONLINE_KEYS)
        if unknown:
            raise ValueError(
                f"unknown on-the-fly augmentation {sorted(unknown)}: use {', '.join(ONLINE_KEYS)}"
            )
        spec = cls(**d)
        for key, k in ONLINE_KEYS.items():
            if k.value is None:
                continue
            rule, v = online_param(key), getattr(spec, key)
            if v < rule.low:
                raise ValueError(f"{key} must be >= {rule.low:g}, got {v}")
            if v > rule.high:
                raise ValueError(f"{key} must be <= {rule.high:g}, got {v}")
        return spec

    def check_shape(self, sample_shape: tuple[int, ...]) -> None:
        if not self.active:
            return
        ops = [OP_DEFS[k.op] for key, k in ONLINE_KEYS.items() if getattr(self, key)]
        if len(sample_shape) < 2 and any(op.samples == "2d" for op in ops):
            raise ValueError(f"flips and rot90 need 2D samples; these are {sample_shape}")
        if len(sample_shape) != 1 and any(op.samples == "1d" for op in ops):
            raise ValueError(f"reverse needs 1-D rows (k-mer vectors); these are {sample_shape}")
        if any(op.square for op in ops) and sample_shape[0] != sample_shape[1]:
            raise ValueError(
                f"rot90 needs square samples; these are {sample_shape[0]}x{sample_shape[1]}"
            )


assert [f.name for f in fields(AugmentSpec)] == list(ONLINE_KEYS), "one field per online key"


def augment_numpy(x: np.ndarray, spec: AugmentSpec, rng: np.random.Generator) -> np.ndarray:
    """Augment a batch ``(n, H, W, ...)``; returns a new array."""
    x = np.array(x, copy=True)
    n = len(x)
    if spec.flip_h:
        m = rng.random(n) < FLIP_P["flip_h"]
        x[m] = x[m][:, :, ::-1]
    if spec.flip_v:
        m = rng.random(n) < FLIP_P["flip_v"]
        x[m] = x[m][:, ::-1]
    if spec.rot90:
        k = rng.integers(0, 4, n)
        for r in (1, 2, 3):
            m = k == r
            if m.any():
                x[m] = np.rot90(x[m], r, axes=(1, 2))
    if spec.noise_std > 0 and x.dtype.kind == "f":
        x += rng.normal(0.0, spec.noise_std, size=x.shape).astype(x.dtype)
    if spec.reverse:
        m = rng.random(n) < FLIP_P["reverse"]
        x[m] = x[m][:, ::-1]
    return x


def augment_tf(x: Any, spec: AugmentSpec, seed: Any) -> Any:
    """The same operations in TensorFlow ops, seeded statelessly by ``seed`` (shape [2])."""
    import tensorflow as tf

    n = tf.shape(x)[0]
    rank = len(x.shape)

    def mask(i: int, p: float = 0.5) -> Any:
        u = tf.random.stateless_uniform([n], seed=seed + tf.constant([0, i], tf.int64))
        return tf.reshape(u < p, [-1] + [1] * (rank - 1))

    if spec.flip_h:
        x = tf.where(mask(1, FLIP_P["flip_h"]), tf.reverse(x, [2]), x)
    if spec.flip_v:
        x = tf.where(mask(2, FLIP_P["flip_v"]), tf.reverse(x, [1]), x)
    if spec.rot90:
        perm = [0, 2, 1, *range(3, rank)]
        rot = tf.reverse(tf.transpose(x, perm), [1])  # 90 degrees
        x = tf.where(mask(3), rot, x)
        x = tf.where(mask(4), tf.reverse(x, [1, 2]), x)  # + 180 -> all four
    if spec.noise_std > 0 and x.dtype.is_floating:
        x = x + tf.random.stateless_normal(
            tf.shape(x),
            seed=seed + tf.constant([0, 5], tf.int64),
            stddev=spec.noise_std,
            dtype=x.dtype,
        )
    if spec.reverse:
        x = tf.where(mask(6, FLIP_P["reverse"]), tf.reverse(x, [1]), x)
    return x
