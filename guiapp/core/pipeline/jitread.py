"""The reader's ``preadv`` loop compiled: a whole segment read without the GIL.

``WindowReader`` calls ``read_groups`` where numba is there (``core/jit.py``) and the
platform has ``preadv``: the iovec lists are built and the system calls made in compiled
code, so the GIL is not taken once per group of runs (for 126-long uint16 rows, Python's
share of a segment's read was what kept two reader threads from going faster than one:
docs/BENCHMARKS.md, "What TensorFlow's hand-off allows"). The plan of the reads is the
same as the Python loop's: one ``preadv`` of x and one of y per group of runs contiguous in
one shard, at most ``IOV_MAX`` runs each.

Importing this module imports numba; ``WindowReader`` does it the first time it reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types

from ..jit import jit

# preadv(fd, const struct iovec *, iovcnt, off_t) -> ssize_t, found by name in the process
# (libc is loaded), so the compiled kernel can be cached, unlike a ctypes pointer.
_preadv: Any = types.ExternalFunction(
    "preadv", types.int64(types.int32, types.uintp, types.int32, types.int64)
)


@jit
def _preadv_runs(
    fd: int, iov: Any, s: int, e: int, base: int, dest: Any, length: Any, off: int
) -> int:
    """One ``preadv`` of runs ``s:e`` from byte ``off`` of ``fd``, run ``i`` to
    ``base + dest[i]``: the bytes read, or -1 where the read came back short."""
    want = 0
    for i in range(s, e):
        iov[i - s, 0] = base + dest[i]
        iov[i - s, 1] = length[i]
        want += length[i]
    return want if _preadv(fd, iov.ctypes.data, e - s, off) == want else -1


@jit
def read_groups(
    fds: Any,
    pos_x: Any,
    pos_y: Any,
    edges: Any,
    base_x: int,
    dest_x: Any,
    len_x: Any,
    base_y: int,
    dest_y: Any,
    len_y: Any,
    iov_max: int,
) -> int:
    """Read every group ``g`` (runs ``edges[g]:edges[g+1]``) of one segment.

    Group ``g`` reads from descriptor ``fds[g]`` at byte ``pos_x[g]`` (x) and ``pos_y[g]``
    (y); run ``i`` lands at ``base + dest[i]`` for ``len[i]`` bytes. Returns -1 when every
    read was whole, else the first run of the read that came back short (nothing after it
    was read; the caller reads the whole segment again the exact, slow way).
    """
    iov = np.empty((iov_max, 2), np.uint64)
    for g in range(len(edges) - 1):
        fd = fds[g]
        off_x = pos_x[g]
        off_y = pos_y[g]
        s = edges[g]
        while s < edges[g + 1]:
            e = min(edges[g + 1], s + iov_max)
            got_x = _preadv_runs(fd, iov, s, e, base_x, dest_x, len_x, off_x)
            if got_x < 0:
                return int(s)
            got_y = _preadv_runs(fd, iov, s, e, base_y, dest_y, len_y, off_y)
            if got_y < 0:
                return int(s)
            off_x += got_x
            off_y += got_y
            s = e
    return -1
