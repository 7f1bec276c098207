"""Compiled statistics of 8/16-bit integer rows: ``GenStats``' per-position sums and
``ShardStats``' value sums, bit for bit the numpy formulas' results.

``int_sums`` gives one chunk's per-position sums and sums of squares as integers and its
value histogram, in one pass over the rows. For 8/16-bit values and a chunk of under
``2**53 / max_value**2`` rows (over 2 million rows for uint16) every partial float64 sum
``GenStats.update`` made before was an exact integer, so the chunk's integer sums, turned
into float64 and added to the running totals in the same chunk order, give the same bits
(``tests/test_import_scale.py`` checks it against the float64 formula). ``shard_sums`` does
``ShardStats._small_int_sums``'s work (min, max, the exact integer sum and the sum of
squares added chunk by chunk of ``_STEP`` values in the same order) in one pass.

Importing this module imports numba (``core/jit.py``), so nothing in the store imports it
by itself: a job that pays numba's start anyway (the import) turns the kernels on with
:func:`use_compiled_sums` and :func:`gen_stats`. Without numba both keep the numpy formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import available, jit
from . import shard_stats
from .stats import HIST_BINS, GenStats


@jit
def _int_sums(flat: Any, positions: bool, lo: int, shift: int, s: Any, sq: Any, hist: Any) -> None:
    n, p = flat.shape
    if positions:  # (a loop of its own: it vectorises across the positions)
        for i in range(n):
            for j in range(p):
                v = np.int64(flat[i, j])
                s[j] += v
                sq[j] += v * v
    # Four histograms filled in turn, added at the end: consecutive values landing in the
    # same bin no longer wait on each other's store (1.07 -> 0.71 ns a value here).
    h4 = np.zeros((4, hist.shape[0]), np.int64)
    fl = flat.reshape(-1)
    m = fl.shape[0]
    k = 0
    while k + 4 <= m:
        h4[0, ((np.int64(fl[k]) - lo) >> shift) + 1] += 1
        h4[1, ((np.int64(fl[k + 1]) - lo) >> shift) + 1] += 1
        h4[2, ((np.int64(fl[k + 2]) - lo) >> shift) + 1] += 1
        h4[3, ((np.int64(fl[k + 3]) - lo) >> shift) + 1] += 1
        k += 4
    while k < m:
        h4[0, ((np.int64(fl[k]) - lo) >> shift) + 1] += 1
        k += 1
    for b in range(hist.shape[0]):
        hist[b] += h4[0, b] + h4[1, b] + h4[2, b] + h4[3, b]


@jit
def _shard_sums(flat: Any, step: int, sumsq: float) -> tuple[Any, Any, Any, float]:
    n = flat.shape[0]
    lo = hi = np.int64(flat[0])
    total = np.int64(0)
    for a in range(0, n, step):
        b = min(n, a + step)
        part = np.int64(0)
        for i in range(a, b):  # (no min/max in this loop: it vectorises, 2x faster)
            v = np.int64(flat[i])
            total += v
            part += v * v
        lo = min(lo, np.int64(flat[a:b].min()))
        hi = max(hi, np.int64(flat[a:b].max()))
        sumsq += np.float64(part)
    return lo, hi, total, sumsq


def shard_sums(flat: np.ndarray, step: int, sumsq: float) -> tuple[int, int, int, float]:
    """(min, max, integer sum, ``sumsq`` plus the chunked sum of squares) of a non-empty
    1-D array of 8/16-bit integers."""
    return _shard_sums(np.ascontiguousarray(flat), step, sumsq)


def int_sums(flat: np.ndarray, positions: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per-position sums, sums of squares, histogram [below, bins..., above]) of a 2-D
    chunk of 8/16-bit integers, all int64; the sums empty when ``positions`` is false."""
    info = np.iinfo(flat.dtype)
    span = int(info.max) - int(info.min) + 1  # 256 or 65536: a power of two
    shift = span.bit_length() - 1 - (HIST_BINS.bit_length() - 1)
    p = flat.shape[1] if positions else 0
    s, sq = np.zeros(p, np.int64), np.zeros(p, np.int64)
    hist = np.zeros(HIST_BINS + 2, np.int64)
    _int_sums(np.ascontiguousarray(flat), positions, int(info.min), shift, s, sq, hist)
    return s, sq, hist


def gen_stats(sample_shape: tuple[int, ...], dtype: Any) -> GenStats:
    """The job's ``GenStats``: with the compiled sums where numba is there."""
    return GenStats(sample_shape, dtype, int_sums=int_sums if available() else None)


def use_compiled_sums() -> bool:
    """Have every ``ShardStats`` of this process sum 8/16-bit rows with ``shard_sums`` (where
    numba is there); whether it does."""
    if available():
        shard_stats.small_int_kernel = shard_sums
    return available()


__all__ = ["gen_stats", "int_sums", "shard_sums", "use_compiled_sums"]
