"""``ShardStats``: running statistics of one shard's committed rows (counts, sum, min/max).

A writer updates them with every append and stores them as fixed-size attributes of the
shard at each commit; the index manifest keeps a JSON copy for every sealed shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


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
        self.value_sum += float(flat.sum(dtype=np.float64))
        # Sum of squares in float32 chunks (BLAS dot), accumulated in float64.
        work = flat if flat.dtype.kind == "f" and flat.dtype.itemsize >= 4 else None
        step = 1 << 16
        for s in range(0, flat.size, step):
            part = flat[s : s + step] if work is not None else flat[s : s + step].astype(np.float64)
            self.value_sumsq += float(np.dot(part, part))

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
