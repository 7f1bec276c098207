"""Augmented copies packed into blocks: the layout that lets a grouped split read like a
split by blocks.

Generation with ``copies > 1`` gives every source sample a group (its copies). Drawn
freely, the copies of one sample land in different 1,024-row blocks, so a split that keeps
groups whole must pick single rows out of every block (a row mask, ``group_split``), which
reads slower than whole blocks. Packed, every run of :data:`GROUP_BLOCK_ROWS` rows that
starts at a multiple of it (a *unit*) holds whole groups only: a unit of ``L`` rows takes
``L // copies`` samples with all their copies and, when ``copies`` does not divide ``L``,
one sample with the ``L % copies`` copies that fit (the rest of its copies are not written).
Rows are shuffled inside their unit, so the copies of a sample are spread over the unit and
land in different batches as before. The index records the unit (``group_blocks``), and a
grouped split then assigns whole units (``group_split.unit_atoms``): every block it reads
is whole.
"""

from __future__ import annotations

import numpy as np

#: The unit of the packed layout: a multiple of every block size training uses (<= 1024).
GROUP_BLOCK_ROWS = 1024


def unit_segments(at: int, n: int, unit: int) -> np.ndarray:
    """Lengths of the pieces of rows ``[at, at + n)`` cut at multiples of ``unit``."""
    first = min(n, unit - at % unit)
    rest = n - first
    full, tail = divmod(rest, unit)
    segs = [first] + [unit] * full + ([tail] if tail else [])
    return np.asarray([s for s in segs if s], np.int64)


def packed_copies(at: int, n: int, copies: int, unit: int = GROUP_BLOCK_ROWS) -> np.ndarray:
    """Per source sample, how many of its copies rows ``[at, at + n)`` hold: whole samples
    while they fit in a unit, then one sample with the copies that fit."""
    parts = []
    for seg in unit_segments(at, n, unit).tolist():
        q, r = divmod(seg, copies)
        parts.append(np.full(q, copies, np.int64))
        if r:
            parts.append(np.array([r], np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def packed_order(
    rng: np.random.Generator, at: int, n: int, unit: int = GROUP_BLOCK_ROWS
) -> np.ndarray:
    """A permutation of ``n`` rows that shuffles rows only inside their unit."""
    segs = unit_segments(at, n, unit)
    seg_of = np.repeat(np.arange(len(segs)), segs)
    return np.lexsort((rng.random(n), seg_of))
