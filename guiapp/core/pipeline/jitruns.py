"""Copy plans of grouped splits, compiled: a window's runs and the reader's gap filling.

A grouped split reads a block's selected rows only (``group_split.py``), so a window's
copy plan has a run per stretch of selected rows instead of one per chunk: numpy's dozen
passes over every row of the window cost as much as reading short rows. These kernels make
one pass each, with the results of the numpy paths they replace (``ReadPlan``'s
``_masked_window_runs`` and the reader's ``_fill_gaps``), which stay where numba is not.

Importing this module imports numba (``core/jit.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import jit


@jit
def masked_runs(
    blocks: Any, lengths: Any, mask: Any, block_rows: int, rows: int, c: int, order: Any
) -> tuple[Any, Any, Any]:
    """The window's runs ``(src, dest, length)`` sorted by source row.

    ``blocks`` (window order) hold ``lengths`` selected rows each; a block's ``i``-th
    selected row is in chunk ``i // c`` of the block, chunks numbered in window order and
    placed in the buffer in the order ``order`` (the same chunk shuffle as unmasked).
    """
    nb = len(blocks)
    chunk_first = np.zeros(nb + 1, np.int64)
    for b in range(nb):
        chunk_first[b + 1] = chunk_first[b] + (lengths[b] + c - 1) // c
    nchunks = chunk_first[nb]
    chunk_len = np.empty(nchunks, np.int64)
    for b in range(nb):
        for j in range(chunk_first[b], chunk_first[b + 1]):
            k = j - chunk_first[b]
            chunk_len[j] = min(c, lengths[b] - k * c)
    chunk_dest = np.empty(nchunks, np.int64)
    at = 0
    for j in range(nchunks):
        chunk_dest[order[j]] = at
        at += chunk_len[order[j]]
    total = at
    src = np.empty(total, np.int64)
    dest = np.empty(total, np.int64)
    length = np.empty(total, np.int64)
    n = 0
    by_id = np.argsort(blocks)
    for bi in range(nb):
        b = by_id[bi]
        a = blocks[b] * block_rows
        e = min(a + block_rows, rows)
        i = 0
        for r in range(a, e):
            if not mask[r]:
                continue
            d = chunk_dest[chunk_first[b] + i // c] + i % c
            i += 1
            if n > 0 and src[n - 1] + length[n - 1] == r and dest[n - 1] + length[n - 1] == d:
                length[n - 1] += 1
            else:
                src[n] = r
                dest[n] = d
                length[n] = 1
                n += 1
    return src[:n], dest[:n], length[:n]


@jit
def fill_gaps(
    src: Any, dest: Any, length: Any, shard: Any, row_bytes: int, gap_bytes: int
) -> tuple[Any, Any, Any, Any, Any]:
    """The runs with a junk run in each gap of at most ``gap_bytes`` between two runs of
    one shard: ``(src, dest, length, shard, junk)``."""
    n = len(src)
    out_s = np.empty(2 * n, np.int64)
    out_d = np.empty(2 * n, np.int64)
    out_n = np.empty(2 * n, np.int64)
    out_k = np.empty(2 * n, np.int64)
    junk = np.zeros(2 * n, np.bool_)
    m = 0
    for i in range(n):
        if i > 0:
            end = src[i - 1] + length[i - 1]
            gap = src[i] - end
            if gap > 0 and gap * row_bytes <= gap_bytes and shard[i] == shard[i - 1]:
                out_s[m] = end
                out_d[m] = 0
                out_n[m] = gap
                out_k[m] = shard[i]
                junk[m] = True
                m += 1
        out_s[m] = src[i]
        out_d[m] = dest[i]
        out_n[m] = length[i]
        out_k[m] = shard[i]
        m += 1
    return out_s[:m], out_d[:m], out_n[:m], out_k[:m], junk[:m]


def warm() -> None:
    """Load (or, in a fresh checkout, compile) both kernels now, with the argument types
    their callers give, so the first batch of a run does not wait for them."""
    z = np.zeros(0, np.int64)
    fill_gaps(z, z, z, z, 1, 1)
    masked_runs(z, z, np.ones(1, np.bool_), 1, 1, 1, z)
