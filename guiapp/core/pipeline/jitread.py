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
    read was whole, else the first run of the read that came back short (the caller reads
    that group again the exact, slow way; nothing after it was read).
    """
    iov = np.empty((iov_max, 2), np.uint64)
    addr = iov.ctypes.data
    for g in range(len(edges) - 1):
        fd = fds[g]
        off_x = pos_x[g]
        off_y = pos_y[g]
        s = edges[g]
        while s < edges[g + 1]:
            e = min(edges[g + 1], s + iov_max)
            want = 0
            for i in range(s, e):
                iov[i - s, 0] = base_x + dest_x[i]
                iov[i - s, 1] = len_x[i]
                want += len_x[i]
            if _preadv(fd, addr, e - s, off_x) != want:
                return int(s)
            off_x += want
            want = 0
            for i in range(s, e):
                iov[i - s, 0] = base_y + dest_y[i]
                iov[i - s, 1] = len_y[i]
                want += len_y[i]
            if _preadv(fd, addr, e - s, off_y) != want:
                return int(s)
            off_y += want
            s = e
    return -1
