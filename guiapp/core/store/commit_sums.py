"""Checksums of a shard's commits: how a resumed job finds committed rows a power cut lost.

A commit makes rows visible by rewriting ``committed`` after the rows; without ``fsync``
(the default: ``durable=False``) the kernel may write the counter to the disk before the
rows' pages, and a power cut then leaves committed rows that read as zeros. Sealed shards
are covered by their content hash; an unfinished shard by these.

A shard (format_version 3, written since this module) holds ``commit_sums``: a ring of
``SLOTS`` records ``(rows, x digest high, x digest low, y digest)``, one per commit: the
xxh3_128 of the bytes of ``x``'s first ``rows`` rows (the very state the shard's content
hash is kept in, so a commit adds no hashing of samples, only its digest) and the xxh3_64
of their labels. A record is written before its ``committed`` counter. Each record vouches
for every row before it, so :func:`verified_rows` hashes the shard from its first row and
gives the rows of the last record that still matches: the point to roll back to. Rows
committed after the last record that reached the disk are not vouched for either. A shard
without ``commit_sums`` (written before) is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xxhash

from .format import LABEL_DTYPE, X, Y, row_nbytes

SUMS = "commit_sums"
#: Records kept: the last this many commits are points a resumed job can roll back to.
SLOTS = 64
RECORD_DTYPE = np.dtype("<u8")
#: Rows hashed at once when a shard's checksums are recomputed (about 8 MiB of samples).
READ_BYTES = 8 << 20


def create_sums(f: h5py.File) -> None:
    """The empty ``commit_sums`` ring of a new shard: contiguous, allocated now, never
    filled (a new file's bytes read as zeros: no records, like the rows' space)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    f.create_dataset(SUMS, shape=(SLOTS, 4), dtype=RECORD_DTYPE, dcpl=dcpl, track_times=False)


def x_digest(h: Any) -> tuple[int, int]:
    """An xxh3_128 state's digest as two integers (high, low)."""
    v = h.intdigest()
    return v >> 64, v & ((1 << 64) - 1)


class CommitSums:
    """The writer's side: the ring, the labels' running hash, the slot of the next record."""

    def __init__(self, table: np.ndarray, offset: int | None) -> None:
        self.table = table
        self.offset = offset  # of the ring in the file (None: written through h5py)
        self.hy = xxhash.xxh3_64()

    @classmethod
    def of(cls, f: h5py.File) -> CommitSums | None:
        """The ring of an open shard, or None for a shard without one."""
        if SUMS not in f:
            return None
        d = f[SUMS]
        off = d.id.get_offset() if f[X].compression is None else None
        return cls(np.array(d[()], RECORD_DTYPE), None if off is None else int(off))

    def record(self, rows: int, hx: Any) -> tuple[int, np.ndarray]:
        """``(slot, record)`` of a commit at ``rows`` rows (``hx``: the x bytes' hasher):
        written over the record of the fewest rows."""
        slot = int(np.argmin(self.table[:, 0]))
        hi, lo = x_digest(hx)
        self.table[slot] = (rows, hi, lo, self.hy.intdigest())
        return slot, self.table[slot : slot + 1]

    def forget_after(self, rows: int) -> list[int]:
        """Drop the records past ``rows`` (a rewind: their rows will be written again);
        the slots to write back."""
        slots = np.flatnonzero(self.table[:, 0] > rows)
        self.table[slots] = 0
        return [int(s) for s in slots]


def prefix_blocks(f: h5py.File, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The shard's first ``rows`` rows as ``(x, y)`` blocks of about ``READ_BYTES``."""
    x, y = f[X], f[Y]
    step = max(1, READ_BYTES // max(1, row_nbytes(x.shape[1:], x.dtype)))
    for a in range(0, rows, step):
        b = min(rows, a + step)
        yield np.ascontiguousarray(x[a:b]), np.ascontiguousarray(y[a:b], LABEL_DTYPE)


def verified_rows(path: Path) -> tuple[int, int]:
    """``(rows vouched for, committed rows)`` of a shard: the rows of the last commit record
    whose digests the shard's rows still match, every earlier record matching too (0: none
    does). A shard without ``commit_sums``: all its committed rows."""
    with h5py.File(path, "r", locking=False) as f:
        committed = int(f.attrs["committed"])
        if SUMS not in f or committed == 0:
            return committed, committed
        table = np.asarray(f[SUMS][()])
        marks = sorted({int(r[0]): r for r in table if 0 < int(r[0]) <= committed}.items())
        if not marks:
            return 0, committed
        hx, hy = xxhash.xxh3_128(), xxhash.xxh3_64()
        x, y = f[X], f[Y]
        step = max(1, READ_BYTES // max(1, row_nbytes(x.shape[1:], x.dtype)))
        good, at = 0, 0
        for rows, rec in marks:
            for a in range(at, rows, step):
                b = min(rows, a + step)
                hx.update(np.ascontiguousarray(x[a:b]).data.cast("B"))
                hy.update(np.ascontiguousarray(y[a:b], LABEL_DTYPE).data.cast("B"))
            at = rows
            if x_digest(hx) != (int(rec[1]), int(rec[2])) or hy.intdigest() != int(rec[3]):
                break
            good = rows
    return good, committed
