"""The memory settings of a job's own process (an import), never the GUI's: glibc's
malloc (``keep_freed_memory``) and numpy's huge pages (``small_pages``).

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


def small_pages() -> bool:
    """Have numpy stop asking for transparent huge pages for the big arrays of this process
    (numpy ``madvise``s every array of 4 MiB or more); False where this numpy cannot, or
    ``GUIAPP_HUGEPAGES=1`` leaves numpy's default.

    On this machine (a VM whose host takes free memory back) the first touch of a 25 MB
    array took 5 ms in huge pages the kernel had at hand and 55-64 ms in ones it had to get
    from the host, 8-9 ms in 4 KiB pages either way. An import touches new arrays of tens
    of MB all along (pieces, buckets): docs/BENCHMARKS.md, "Importing", has the figures.
    """
    if os.environ.get("GUIAPP_HUGEPAGES") == "1":
        return False
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    setter = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if setter is None:
        return False
    setter(False)
    return True


__all__ = ["MMAP_THRESHOLD", "keep_freed_memory", "small_pages"]
