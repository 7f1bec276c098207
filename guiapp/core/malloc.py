"""The C allocator's settings for a job's own process (an import), never the GUI's.

glibc hands every allocation above a threshold (128 KiB at first, then the size of the
largest block freed so far, up to 32 MiB) straight from the kernel with ``mmap`` and gives
it back on ``free``, and returns the heap's free top above 2x that threshold. An import
allocates and frees blocks of a few MiB all the time (each piece's parsed rows, each
bucket read and permuted): each time the kernel maps fresh pages and zeroes them on their
first touch. Measured (1,000,000 k-mer lines, five interleaved pairs, medians;
docs/BENCHMARKS.md, "Importing"): with 2 workers 129,000 page faults and 0.93 s of system
time without these settings, 57,000 and 0.81 s with them, the import 5% faster (1 worker:
69,000 -> 38,000 faults, 7% faster). The freed memory stays in the process for the next
block, so its peak RSS can be higher by about one block per thread (569 -> 634 MB there).
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap and are reused (glibc's ceiling for it).
MMAP_THRESHOLD = 32 << 20
#: The free top of the heap is returned to the kernel only above this.
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Have glibc's malloc reuse freed blocks up to :data:`MMAP_THRESHOLD` instead of
    mapping fresh pages for each; False where there is no glibc (macOS, Windows, musl) or
    ``GUIAPP_KEEP_FREED=0`` leaves glibc's defaults."""
    if not sys.platform.startswith("linux") or os.environ.get("GUIAPP_KEEP_FREED") == "0":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
        and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    )


__all__ = ["MMAP_THRESHOLD", "keep_freed_memory"]
