"""A piece scanned by the compiled fast path (``jitparse.scan``), cut into runs of lines.

A run of whole blocks (``BLOCK_LINES`` lines) where every line was taken (or is empty) and
every label is one the label map takes becomes records directly; any other block (a line
the scan did not take, a label the map refuses, a file's first JSON line, byte order mark
or CSV header) is parsed again by the numpy and exact paths, exactly as without numba. The
records come out in line order either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .jitparse import OK, OTHER, Scan


def runs(
    sc: Scan, block: int, special: list[int], label_ok: Callable[[Any], bool], text: bool
) -> list[tuple[int, int, bool]]:
    """``(first line, end line, taken)`` runs covering every line of the scan; ``taken``
    runs hold whole blocks (the last may be short) of lines taken or empty."""
    n = len(sc.status)
    blocks = -(-n // block)
    bad = np.zeros(blocks + 1, bool)
    bad[np.flatnonzero(sc.status == OTHER) // block] = True
    for i in special:
        if 0 <= i < n:
            bad[i // block] = True
    if len(sc.labels):
        hi = int(sc.labels.max())
        uniq = np.flatnonzero(np.bincount(sc.labels)) if hi < 1 << 16 else np.unique(sc.labels)
        refused = [v for v in uniq.tolist() if not label_ok(str(v) if text else v)]
        if refused:
            ok_lines = np.flatnonzero(sc.status == OK)  # the lines of sc.labels, in order
            bad[ok_lines[np.isin(sc.labels, refused)] // block] = True
    out: list[tuple[int, int, bool]] = []
    b = 0
    while b < blocks:
        e = b + 1
        while e < blocks and bad[e] == bad[b]:
            e += 1
        out.append((b * block, min(n, e * block), not bool(bad[b])))
        b = e
    return out


def lines_of(buf: bytes, stops: np.ndarray, a: int, b: int) -> list[bytes]:
    """Lines ``a..b-1`` of ``buf`` without their ``\\n`` (as ``bytes.split`` gives them)."""
    starts = ([0] if a == 0 else [int(stops[a - 1]) + 1]) + (stops[a : b - 1] + 1).tolist()
    return [buf[s:e] for s, e in zip(starts, stops[a:b].tolist(), strict=True)]
