"""``ShardStats``: running statistics of one shard's committed rows (counts, sum, min/max).

A writer updates them with every append and stores them as fixed-size attributes of the
shard at each commit; the index manifest keeps a JSON copy for every sealed shard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Values per chunk of the sum of squares (the order of the float64 additions).
_STEP = 1 << 16

#: ``(flat, _STEP, value_sumsq) -> (min, max, int sum, new value_sumsq)``: the 8/16-bit
#: integer statistics in one compiled pass; ``jitsums.use_compiled_sums()`` sets it where
#: numba is there (same results, bit for bit: ``tests/test_import_scale.py``).
small_int_kernel: Callable[[np.ndarray, int, float], tuple[int, int, int, float]] | None = None


@dataclass
class ShardStats:
    """Running statistics of the committed rows of one shard."""

    class_counts: np.ndarray
    value_sum: float = 0.0
    value_sumsq: float = 0.0
    value_min: float = float("inf")
    value_max: float = float("-inf")
    nonfinite: int = 0

    @classmethod
    def empty(cls, num_classes: int) -> ShardStats:
        return cls(class_counts=np.zeros(num_classes, dtype=np.int64))

    def update(self, x: np.ndarray, y: np.ndarray, values: bool = True) -> None:
        self.class_counts += np.bincount(y, minlength=len(self.class_counts))[
            : len(self.class_counts)
        ]
        if not values:  # counts only: value statistics are marked "not recorded"
            self.value_sum = self.value_sumsq = float("nan")
            return
        if x.size == 0:
            return
        flat = x.reshape(-1)
        if small_int_kernel is not None and flat.dtype.kind in "iu" and flat.dtype.itemsize <= 2:
            lo_i, hi_i, total, sumsq = small_int_kernel(flat, _STEP, self.value_sumsq)
            self.value_min = min(self.value_min, float(lo_i))
            self.value_max = max(self.value_max, float(hi_i))
            if flat.size * max(abs(lo_i), abs(hi_i)) < 2**53:
                self.value_sum += float(total)
            else:
                self.value_sum += float(flat.sum(dtype=np.float64))
            self.value_sumsq = sumsq
            return
        lo, hi = flat.min(), flat.max()  # NaN or Inf show up here: only then look closer
        if flat.dtype.kind == "f" and not (np.isfinite(lo) and np.isfinite(hi)):
            finite = np.isfinite(flat)
            self.nonfinite += int(flat.size - np.count_nonzero(finite))
            flat = flat[finite]
            if flat.size == 0:
                return
            lo, hi = flat.min(), flat.max()
        self.value_min = min(self.value_min, float(lo))
        self.value_max = max(self.value_max, float(hi))
        if flat.dtype.kind in "iu" and flat.dtype.itemsize <= 2:
            self._small_int_sums(flat, max(abs(int(lo)), abs(int(hi))))
            return
        self.value_sum += float(flat.sum(dtype=np.float64))
        # Sum of squares in chunks (BLAS dot), accumulated in float64.
        work = flat if flat.dtype.kind == "f" and flat.dtype.itemsize >= 4 else None
        for s in range(0, flat.size, _STEP):
            part = (
                flat[s : s + _STEP] if work is not None else flat[s : s + _STEP].astype(np.float64)
            )
            self.value_sumsq += float(np.dot(part, part))

    def _small_int_sums(self, flat: np.ndarray, biggest: int) -> None:
        """The float path's sums, bit for bit, in integer arithmetic (4x cheaper).

        A chunk of ``_STEP`` squares of 8/16-bit integers sums to under 2**49, so the float
        path's float64 dot of a chunk is exact: it equals the chunk's integer sum, which is
        added to ``value_sumsq`` in the same order. The plain sum is exact in float64 (any
        order) while ``size * biggest < 2**53``; beyond that the float sum is kept.
        """
        wide = np.int32 if flat.dtype.kind == "i" else np.uint32
        acc = np.int64 if flat.dtype.kind == "i" else np.uint64
        if flat.size * biggest < 2**53:
            self.value_sum += float(int(flat.sum(dtype=acc)))
        else:
            self.value_sum += float(flat.sum(dtype=np.float64))
        block = _STEP * 64  # bounded temporary memory (16 MiB of squares)
        for b in range(0, flat.size, block):
            sq = flat[b : b + block].astype(wide)
            np.multiply(sq, sq, out=sq)
            full = sq.size // _STEP * _STEP
            parts = sq[:full].reshape(-1, _STEP).sum(axis=1, dtype=acc).tolist()
            if full < sq.size:
                parts.append(int(sq[full:].sum(dtype=acc)))
            for part in parts:
                self.value_sumsq += float(part)

    def to_attrs(self) -> dict[str, Any]:
        return {
            "class_counts": self.class_counts.astype(np.int64),
            "value_sum": np.float64(self.value_sum),
            "value_sumsq": np.float64(self.value_sumsq),
            "value_min": np.float64(self.value_min),
            "value_max": np.float64(self.value_max),
            "nonfinite": np.int64(self.nonfinite),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "class_counts": [int(c) for c in self.class_counts],
            "value_sum": self.value_sum,
            "value_sumsq": self.value_sumsq,
            "value_min": self.value_min,
            "value_max": self.value_max,
            "nonfinite": self.nonfinite,
        }

    @classmethod
    def from_mapping(cls, m: Any) -> ShardStats:
        return cls(
            class_counts=np.asarray(m["class_counts"], dtype=np.int64).copy(),
            value_sum=float(m["value_sum"]),
            value_sumsq=float(m["value_sumsq"]),
            value_min=float(m["value_min"]),
            value_max=float(m["value_max"]),
            nonfinite=int(m["nonfinite"]),
        )
