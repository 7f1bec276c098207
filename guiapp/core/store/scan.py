"""Reading every committed row of a shard once, in memory that does not grow with it.

``Dataset.shard_arrays`` maps whole shards (memmaps), which is right for a reader that comes
back to rows, but a pass over a whole dataset (``check --full``) then holds every page it
touched in its resident set: about the dataset's size. :func:`scan_shard` reads a shard in
blocks of about ``SCAN_BYTES`` into two buffers it reuses (``os.preadv`` for contiguous
shards, h5py slices for compressed ones) and tells the kernel after each block that its
pages will not be needed again (``posix_fadvise(DONTNEED)``), so neither the process nor the
page cache fills up with a dataset read once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from .format import LABEL_DTYPE, X, Y
from .shard_meta import ShardMeta, open_h5

#: About this many bytes of samples per block a scan reads (and holds) at once.
SCAN_BYTES = 8 << 20

Block = tuple[int, np.ndarray | None, np.ndarray | None]


def block_rows(sample_shape: tuple[int, ...], dtype: np.dtype) -> int:
    row = int(np.prod(sample_shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    return max(1, SCAN_BYTES // max(1, row))


class Buffers:
    """The two arrays a scan reads into, made once for all the shards of a dataset (fresh
    8 MiB arrays per shard leave the allocator holding more each time)."""

    def __init__(self, sample_shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.rows = block_rows(sample_shape, dtype)
        self.x = np.empty((self.rows, *sample_shape), dtype)
        self.y = np.empty((self.rows,), LABEL_DTYPE)


def scan_shard(
    s: ShardMeta, *, want_x: bool = True, want_y: bool = True, buffers: Buffers | None = None
) -> Iterator[Block]:
    """``(first_row, x, y)`` blocks of shard ``s``'s committed rows, in order (``x`` or ``y``
    None where not wanted). The arrays are ``buffers``' (reused): use each block before
    asking for the next.
    """
    n = s.committed
    if n == 0:
        return
    bufs = buffers or Buffers(s.sample_shape, s.dtype)
    rows = bufs.rows
    if s.x_offset is None or s.y_offset is None:
        yield from _scan_h5(s, rows, want_x, want_y)
        return
    row_bytes = bufs.x[0].nbytes
    fd = os.open(s.path, os.O_RDONLY)
    try:
        for a in range(0, n, rows):
            m = min(rows, n - a)
            x = y = None
            if want_x:
                x = bufs.x[:m]
                _read_into(fd, x, s.x_offset + a * row_bytes)
            if want_y:
                y = bufs.y[:m]
                _read_into(fd, y, s.y_offset + a * LABEL_DTYPE.itemsize)
            yield a, x, y
    finally:
        os.close(fd)


def _read_into(fd: int, a: np.ndarray, offset: int) -> None:
    """Fill ``a`` from ``offset``, then drop those pages from the page cache."""
    view = a.data.cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], offset + done)
        if got <= 0:
            raise OSError(f"the file ends {offset + done} bytes in, inside its rows")
        done += got
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, offset, len(view), os.POSIX_FADV_DONTNEED)


def _scan_h5(s: ShardMeta, rows: int, want_x: bool, want_y: bool) -> Iterator[Block]:
    """A compressed shard through h5py (each slice a new array, freed with the block)."""
    f: Any = open_h5(s.path, "r", locking=False)
    with f:
        xs, ys = f[X], f[Y]
        for a in range(0, s.committed, rows):
            b = min(s.committed, a + rows)
            yield a, (xs[a:b] if want_x else None), (ys[a:b] if want_y else None)
