"""Statistics computed while generating: per-position mean/std and a value histogram.

Each worker accumulates them for its shard and stores them as ``gen_*`` attributes in the
shard file before sealing it (so ``--resume`` recovers them for kept shards); the job
merges the sealed shards' into the index header's ``statistics`` JSON. The import job
accumulates one ``GenStats`` over all rows in its first pass. Class counts and the global
mean/std/min/max already live in the store's own per-shard statistics (``shard_stats.py``).

Histogram: ``HIST_BINS`` equal bins over a fixed range: [-6, 6) for float samples (they
are usually z-scored), the dtype's whole range for integers ([0, 65536) for uint16);
values outside it are counted as ``below``/``above``. Per-position statistics are kept
for samples of at most ``MAX_POSITIONS`` values (the header is an HDF5 attribute).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

HIST_BINS = 64
MAX_POSITIONS = 1024
FLOAT_RANGE = (-6.0, 6.0)
ATTRS = ("gen_rows", "gen_pos_sum", "gen_pos_sumsq", "gen_hist")


def hist_range(dtype: np.dtype) -> tuple[float, float]:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(info.min), float(info.max) + 1.0
    return FLOAT_RANGE


#: A compiled ``update`` for 8/16-bit integer chunks (``store/jitsums.py``): chunk ->
#: (per-position int sums, int sums of squares, int histogram), bit for bit the same totals.
IntSums = Callable[[np.ndarray, bool], tuple[np.ndarray, np.ndarray, np.ndarray]]


class GenStats:
    def __init__(
        self, sample_shape: tuple[int, ...], dtype: Any, int_sums: IntSums | None = None
    ) -> None:
        self.dtype = np.dtype(dtype)
        self.sample_shape = tuple(sample_shape)
        positions = int(np.prod(sample_shape))
        p = positions if positions <= MAX_POSITIONS else 0
        self.rows = 0
        self.pos_sum = np.zeros(p, np.float64)
        self.pos_sumsq = np.zeros(p, np.float64)
        self.hist = np.zeros(HIST_BINS + 2, np.int64)  # [below, bins..., above]
        self.lo, self.hi = hist_range(self.dtype)
        self.int_sums = int_sums if self.dtype.kind in "iu" and self.dtype.itemsize <= 2 else None
        if self.int_sums is not None:
            info = np.iinfo(self.dtype)
            big = max(abs(int(info.min)), int(info.max))
            self._exact_rows = 2**53 // (big * big)  # a chunk's float64 sums stay exact

    def update(self, x: np.ndarray) -> None:
        flat = x.reshape(len(x), -1)
        if self.int_sums is not None and len(x) < self._exact_rows and x.dtype == self.dtype:
            s, sq, hist = self.int_sums(flat, bool(self.pos_sum.size))
            self.rows += len(x)
            if self.pos_sum.size:
                self.pos_sum += s.astype(np.float64)
                self.pos_sumsq += sq.astype(np.float64)
            self.hist += hist
            return
        self.rows += len(x)
        if self.pos_sum.size:
            self.pos_sum += flat.sum(axis=0, dtype=np.float64)
            work = flat if flat.dtype == np.float32 else flat.astype(np.float64)
            self.pos_sumsq += np.einsum("ij,ij->j", work, work)
        v = flat.reshape(-1)
        if self.dtype == np.uint16:
            idx = (v >> 10).astype(np.intp) + 1  # 64 bins of 1024: exact, no overflow
        elif self.dtype.kind in "iu":
            idx = (v.astype(np.int64) - int(self.lo)) * HIST_BINS // int(self.hi - self.lo) + 1
        else:
            scale = np.float32(HIST_BINS / (self.hi - self.lo))
            t = v * scale if v.dtype == np.float32 else v.astype(np.float32) * scale
            t += np.float32(1.0 - self.lo * scale)  # bin b lands in [b + 1, b + 2)
            np.clip(t, 0.0, HIST_BINS + 1, out=t)  # NaN stays NaN and is counted below
            np.nan_to_num(t, copy=False, nan=0.0)
            idx = t.astype(np.intp)
        self.hist += np.bincount(idx, minlength=HIST_BINS + 2)[: HIST_BINS + 2]

    def merge(self, other: GenStats) -> None:
        self.rows += other.rows
        self.hist += other.hist
        if self.pos_sum.size == other.pos_sum.size:
            self.pos_sum += other.pos_sum
            self.pos_sumsq += other.pos_sumsq

    def to_attrs(self) -> dict[str, Any]:
        return {
            "gen_rows": np.int64(self.rows),
            "gen_pos_sum": self.pos_sum,
            "gen_pos_sumsq": self.pos_sumsq,
            "gen_hist": self.hist,
        }

    def write_to(self, shard_path: Path) -> None:
        with h5py.File(shard_path, "r+") as f:
            for k, v in self.to_attrs().items():
                f.attrs[k] = v

    @classmethod
    def read_from(cls, shard_path: Path, sample_shape: tuple[int, ...], dtype: Any) -> GenStats:
        s = cls(sample_shape, dtype)
        with h5py.File(shard_path, "r", locking=False) as f:
            a = f.attrs
            if all(k in a for k in ATTRS):
                s.rows = int(a["gen_rows"])
                s.hist = np.asarray(a["gen_hist"], np.int64).copy()
                if np.asarray(a["gen_pos_sum"]).size == s.pos_sum.size:
                    s.pos_sum = np.asarray(a["gen_pos_sum"], np.float64).copy()
                    s.pos_sumsq = np.asarray(a["gen_pos_sumsq"], np.float64).copy()
        return s

    def summary(self) -> dict[str, Any]:
        """The JSON stored in the index header (``statistics``)."""
        out: dict[str, Any] = {
            "rows": self.rows,
            "histogram": {
                "low": self.lo,
                "high": self.hi,
                "bins": HIST_BINS,
                "counts": [int(c) for c in self.hist[1:-1]],
                "below": int(self.hist[0]),
                "above": int(self.hist[-1]),
            },
        }
        if self.pos_sum.size and self.rows:
            mean = self.pos_sum / self.rows
            std = np.sqrt(np.maximum(0.0, self.pos_sumsq / self.rows - mean * mean))
            out["position_shape"] = list(self.sample_shape)
            out["position_mean"] = [float(f"{v:.6g}") for v in mean]
            out["position_std"] = [float(f"{v:.6g}") for v in std]
        return out


def merged(parts: Iterable[GenStats], sample_shape: tuple[int, ...], dtype: Any) -> GenStats:
    total = GenStats(sample_shape, dtype)
    for p in parts:
        total.merge(p)
    return total
