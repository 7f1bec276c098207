"""Strings of the shuffle's buckets (kept fields): packed for a bucket file in the buckets'
order, and unpacked into fixed-width rows in a bucket's random order, each in one pass
(numba, without the GIL; the numpy paths where it is missing give the same bytes).

A packed column is ``(lengths, bytes)``: the lengths as uint16, the strings' bytes one
after the other (``shuffle.py``). An ``S`` array's string ends before its trailing NUL
bytes, as numpy reads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import available, jit

LENGTH = np.dtype("<u2")


@jit
def _lengths(u8: Any, lens: Any) -> None:
    n, w = u8.shape
    for i in range(n):
        k = w
        while k > 0 and u8[i, k - 1] == 0:
            k -= 1
        lens[i] = k


@jit
def _pack(u8: Any, order: Any, lens: Any, out: Any) -> None:
    at = 0
    for j in range(len(order)):
        i = order[j]
        for k in range(lens[i]):
            out[at + k] = u8[i, k]
        at += lens[i]


def pack(a: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The strings ``a[order]`` (an ``S`` array) packed: (lengths, bytes). (The kernels
    make no array: numba's runtime would load with the first that does, ~0.15 s.)"""
    n, w = len(a), a.dtype.itemsize
    if n == 0:
        return np.zeros(0, LENGTH), np.zeros(0, np.uint8)
    u8 = np.ascontiguousarray(a).view(np.uint8).reshape(n, w)
    if available():
        lens = np.empty(n, np.int64)
        _lengths(u8, lens)
        data = np.empty(int(lens.sum()), np.uint8)
        _pack(u8, np.ascontiguousarray(order, np.int64), lens, data)
        return lens[order].astype(LENGTH), data
    s = a[order]
    lens = np.strings.str_len(s)
    rows = np.ascontiguousarray(s).view(np.uint8).reshape(n, w)
    return lens.astype(LENGTH), rows[np.arange(w) < lens[:, None]]


@jit
def _unpack(lens: Any, at: Any, data: Any, perm: Any, out: Any) -> None:
    for j in range(len(perm)):
        i = perm[j]
        s = at[i]
        for k in range(lens[i]):
            out[j, k] = data[s + k]


def unpack(
    lens: np.ndarray, data: np.ndarray, perm: np.ndarray | None = None, width: int = 0
) -> np.ndarray:
    """Packed strings as one ``S`` array in the order ``perm``, ``width`` wide (at least as
    wide as the longest)."""
    n = len(lens) if perm is None else len(perm)
    w = max(1, width, int(lens.max()) if len(lens) else 1)
    out = np.zeros((n, w), np.uint8)
    if available() and n:
        p = np.arange(n, dtype=np.int64) if perm is None else np.ascontiguousarray(perm, np.int64)
        at = np.concatenate([[0], np.cumsum(lens, dtype=np.int64)])
        _unpack(lens, at, data, p, out)
        return out.view(f"S{w}").reshape(n)
    whole = np.zeros((len(lens), w), np.uint8)
    whole[np.arange(w) < lens[:, None].astype(np.int64)] = data
    s = whole.view(f"S{w}").reshape(len(lens))
    return s if perm is None else s[perm]


@jit
def _repack(lens: Any, at: Any, data: Any, order: Any, out: Any) -> None:
    o = 0
    for j in range(len(order)):
        i = order[j]
        for k in range(lens[i]):
            out[o + k] = data[at[i] + k]
        o += lens[i]


def repack(lens: np.ndarray, data: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Packed strings in the order ``order``: (lengths as uint16, bytes)."""
    at = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=at[1:])
    out = np.empty(int(at[-1]), np.uint8)
    if available() and len(order):
        _repack(lens, at, data, np.ascontiguousarray(order, np.int64), out)
    elif len(order):
        sel = np.repeat(np.arange(len(lens)), lens)  # the row of each byte
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        out = data[np.argsort(rank[sel], kind="stable")]
    return lens[order].astype(LENGTH), out


@jit
def _gather(buf: Any, pool: Any, f: int, in_pool: Any, a: Any, b: Any, at: Any, out: Any) -> None:
    for i in range(len(a)):
        o = at[i]
        if in_pool[i]:
            for k in range(b[i] - a[i]):
                out[o + k] = pool[f, a[i] + k]
        else:
            for k in range(b[i] - a[i]):
                out[o + k] = buf[a[i] + k]


def gather(
    buf: bytes, pool: np.ndarray | None, f: int, in_pool: np.ndarray, a: np.ndarray,
    b: np.ndarray, lens: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The values ``[a[i]:b[i]]`` of ``pool[f]`` (rows ``in_pool``) or of ``buf``, packed
    at the offsets ``lens`` gives (a row whose length is ``lens[i]`` but whose span is
    empty is left for the caller to write)."""
    n = len(a)
    in_order = n and np.array_equal(a[1:], b[:-1]) and np.array_equal(b - a, lens)
    if pool is not None and in_order and in_pool.all():  # the usual piece: the pool has them
        return pool[f, a[0] : b[-1]].copy()
    at = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=at[1:])
    out = np.zeros(int(at[-1]), np.uint8)
    if n:
        p = np.zeros((f + 1, 1), np.uint8) if pool is None else pool
        src = np.frombuffer(buf, np.uint8)
        _gather(src, p, f, in_pool, np.ascontiguousarray(a), np.ascontiguousarray(b), at, out)
    return out


@jit
def _same_as_before(lens: Any, at: Any, data: Any, out: Any) -> None:
    for i in range(1, len(lens)):
        same = lens[i] == lens[i - 1]
        k = 0
        while same and k < lens[i]:
            same = data[at[i] + k] == data[at[i - 1] + k]
            k += 1
        out[i] = same


def run_heads(lens: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The rows whose packed value differs from the row's before (the first row too)."""
    n = len(lens)
    same = np.zeros(n, bool)
    if n > 1:
        at = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=at[1:])
        if available():
            _same_as_before(lens, at, data, same)
        else:
            s = unpack(lens.astype(np.int64), data)
            same[1:] = s[1:] == s[:-1]
    return np.flatnonzero(~same)
