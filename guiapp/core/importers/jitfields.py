"""A good record's group and kept fields, found in its line's bytes (a second, light scan).

The parse paths (``jitparse.py``, ``fastparse.py``, the exact per-line path) find a line's
label and data; ``--group-field`` and ``--keep-fields`` name other fields. ``spans`` walks
the records the parse took (valid JSON objects, or CSV rows) once more and gives, per record
and field, the byte span of the value and its kind:

- JSON: a top-level member's value: a string without escapes (``STR``), an integer written
  as ``0`` or ``-?[1-9][0-9]{0,17}`` (``INT``), ``null`` (``NULL``), a typed value
  ``{"$x": "text"}`` (its text: ``STR``, or ``INT`` for ``$numberInt``/``$numberLong``
  holding such an integer), or absent (``MISSING``);
- CSV/TSV: the cell of a column (``STR``; ``MISSING`` past the row's end), unquoted or
  quoted without ``""`` escapes, ASCII.

Anything else (escapes, floats, booleans, lists, other objects, a member name with an
escape, non-ASCII CSV cells) makes the line ``UNSURE``: ``lineage_piece.py`` reads that
line by the exact rules (``json`` / ``csv``), which give the same values for the shapes
above. Compiled with numba (without the GIL) where it is there; without numba every line is
read by the exact rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import available, jit

MISSING, STR, INT, NULL, OTHER = 0, 1, 2, 3, 4
#: Fewer records than this are read by the exact rules (loading the kernel costs ~0.15 s).
MIN_COMPILED = 1024
#: Line status: the spans hold every field; or read the line by the exact rules.
SURE, UNSURE = 0, 1
_MAX_DIGITS = 18

_NUMBER_INT, _NUMBER_LONG = b"$numberInt", b"$numberLong"
_NINT = np.frombuffer(_NUMBER_INT, np.uint8).copy()  # constant arrays, compiled in
_NLONG = np.frombuffer(_NUMBER_LONG, np.uint8).copy()


@jit
def _ws(buf: Any, i: int, end: int) -> int:
    while i < end and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13 or buf[i] == 10):
        i += 1
    return i


_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x2222222222222222)
_SLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)


@jit
def _plain_word(w: Any) -> bool:
    """Whether none of the 8 bytes of ``w`` is a quote or a backslash."""
    q = w ^ _QUOTES
    s = w ^ _SLASHES
    return bool(((q - _ONES) & ~q & _HIGHS) == 0 and ((s - _ONES) & ~s & _HIGHS) == 0)


@jit
def _string(buf: Any, words: Any, off: int, i: int, end: int) -> tuple[int, bool]:
    """``buf[i]`` is a quote: (index after the closing quote or -1, whether it has escapes).
    ``words`` is ``buf[off:]`` as aligned 8-byte words: long strings (the data) are
    skipped a word at a time."""
    j = i + 1
    esc = False
    while j < end:
        if j >= off and ((j - off) & 7) == 0:
            while j + 8 <= end and _plain_word(words[(j - off) >> 3]):
                j += 8
            if j >= end:
                break
        c = buf[j]
        if c == 92:
            esc = True
            j += 2
            continue
        if c == 34:
            return j + 1, esc
        j += 1
    return -1, esc


@jit
def _skip(buf: Any, words: Any, off: int, i: int, end: int) -> int:
    """The end of any JSON value at ``i`` (nested ones too); -1 if none."""
    c = buf[i]
    if c == 34:
        return _string(buf, words, off, i, end)[0]
    if c == 123 or c == 91:
        depth = 0
        j = i
        while j < end:
            c = buf[j]
            if c == 34:
                j = _string(buf, words, off, j, end)[0]
                if j < 0:
                    return -1
                continue
            if c == 123 or c == 91:
                depth += 1
            elif c == 125 or c == 93:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return -1
    j = i
    while j < end:
        c = buf[j]
        if c == 44 or c == 125 or c == 93 or c == 32 or c == 9 or c == 13 or c == 10:
            break
        j += 1
    return j if j > i else -1


@jit
def _canonical_int(buf: Any, a: int, b: int) -> bool:
    """``buf[a:b]`` is ``0`` or ``-?[1-9][0-9]{0,17}`` (its ``str(int(...))`` is itself)."""
    if a < b and buf[a] == 45:
        a += 1
        if a < b and buf[a] == 48:
            return False
    n = b - a
    if n < 1 or n > _MAX_DIGITS or (buf[a] == 48 and n > 1):
        return False
    for k in range(a, b):  # noqa: SIM110 (no generators in compiled code)
        if buf[k] < 48 or buf[k] > 57:
            return False
    return True


@jit
def _same(buf: Any, a: int, b: int, key: Any, ka: int, kb: int) -> bool:
    if b - a != kb - ka:
        return False
    for k in range(b - a):  # noqa: SIM110
        if buf[a + k] != key[ka + k]:
            return False
    return True


@jit
def value_kind(buf: Any, p: int, q: int) -> tuple[int, int, int]:
    """(kind, start, end) of a value ``buf[p:q]`` that ``jitparse`` took as simple (a
    string without escapes, an integer, ``{"$x": "text"}``, true/false/null); kind -1 when
    only the exact rules can tell (true/false, a non-canonical integer, another object)."""
    c = buf[p]
    if c == 34:
        return STR, p + 1, q - 1
    if c == 110:
        return NULL, 0, 0
    if c == 123:  # {"key": "text"}: the key's quotes at p + 1 and k - 1
        k = p + 2
        while buf[k] != 34:
            k += 1
        k += 1
        if buf[p + 2] != 36:
            return -1, 0, 0
        a = k + 1  # past ":"
        if buf[a] == 32:
            a += 1
        a += 1  # past the opening quote
        b = q - 2  # the closing quote, before "}"
        if (
            _same(buf, p + 2, k - 1, _NINT, 0, len(_NINT))
            or _same(buf, p + 2, k - 1, _NLONG, 0, len(_NLONG))
        ) and _canonical_int(buf, a, b):
            return INT, a, b
        return STR, a, b
    if _canonical_int(buf, p, q):
        return INT, p, q
    return -1, 0, 0


@jit
def _typed(
    buf: Any, words: Any, off: int, i: int, end: int, nint: Any, nlong: Any
) -> tuple[int, int, int, int]:
    """``{"$x": "text"}`` at ``i``: (kind, text start, text end, value end); kind -1 if the
    value has another shape."""
    p = _ws(buf, i + 1, end)
    if p >= end or buf[p] != 34:
        return -1, 0, 0, 0
    k, esc = _string(buf, words, off, p, end)
    if k < 0 or esc or k - p < 3 or buf[p + 1] != 36:
        return -1, 0, 0, 0
    ka, kb = p + 1, k - 1
    p = _ws(buf, k, end)
    if p >= end or buf[p] != 58:
        return -1, 0, 0, 0
    p = _ws(buf, p + 1, end)
    if p >= end or buf[p] != 34:
        return -1, 0, 0, 0
    v, esc = _string(buf, words, off, p, end)
    if v < 0 or esc:
        return -1, 0, 0, 0
    a, b = p + 1, v - 1
    q = _ws(buf, v, end)
    if q >= end or buf[q] != 125:
        return -1, 0, 0, 0
    kind = STR
    if (
        _same(buf, ka, kb, nint, 0, len(nint)) or _same(buf, ka, kb, nlong, 0, len(nlong))
    ) and _canonical_int(buf, a, b):
        kind = INT
    return kind, a, b, q + 1


@jit
def _json_spans(
    buf: Any, words: Any, off: int, starts: Any, ends: Any, keys: Any, koff: Any,
    nint: Any, nlong: Any,
    kind: Any, span_a: Any, span_b: Any, status: Any,
) -> None:  # fmt: skip
    nf = len(koff) - 1
    for r in range(len(starts)):
        end = ends[r]  # kind, span_a, span_b arrive MISSING, 0, 0 (``spans``)
        status[r] = UNSURE
        p = _ws(buf, starts[r], end)
        if p >= end or buf[p] != 123:
            continue
        p = _ws(buf, p + 1, end)
        if p < end and buf[p] == 125:
            status[r] = SURE
            continue
        while True:
            if p >= end or buf[p] != 34:
                break
            k, esc = _string(buf, words, off, p, end)
            if k < 0 or esc:
                break
            which = -1
            for f in range(nf):
                if _same(buf, p + 1, k - 1, keys, koff[f], koff[f + 1]):
                    which = f
                    break
            p = _ws(buf, k, end)
            if p >= end or buf[p] != 58:
                break
            p = _ws(buf, p + 1, end)
            if p >= end:
                break
            if which < 0:
                p = _skip(buf, words, off, p, end)
            else:
                c = buf[p]
                kd, a, b = -1, 0, 0
                if c == 34:
                    v, esc = _string(buf, words, off, p, end)
                    if v >= 0 and not esc:
                        kd, a, b = STR, p + 1, v - 1
                    p = v
                elif c == 45 or 48 <= c <= 57:
                    v = _skip(buf, words, off, p, end)
                    if v >= 0 and _canonical_int(buf, p, v):
                        kd, a, b = INT, p, v
                    p = v
                elif c == 110:
                    v = _skip(buf, words, off, p, end)
                    if v == p + 4 and buf[p + 1] == 117 and buf[p + 2] == 108 and buf[p + 3] == 108:
                        kd = NULL
                    p = v
                elif c == 123:
                    kd, a, b, p = _typed(buf, words, off, p, end, nint, nlong)
                if kd < 0:
                    break
                kind[r, which] = kd
                span_a[r, which] = a
                span_b[r, which] = b
            if p < 0:
                break
            p = _ws(buf, p, end)
            if p >= end:
                break
            if buf[p] == 125:
                status[r] = SURE
                break
            if buf[p] != 44:
                break
            p = _ws(buf, p + 1, end)


@jit
def _csv_spans(
    buf: Any, starts: Any, ends: Any, delim: int, cols: Any,
    kind: Any, span_a: Any, span_b: Any, status: Any,
) -> None:  # fmt: skip
    nf = len(cols)
    last = 0
    for f in range(nf):
        last = max(last, cols[f])
    for r in range(len(starts)):
        end = ends[r]  # kind, span_a, span_b arrive MISSING, 0, 0 (``spans``)
        status[r] = SURE
        p = starts[r]
        col = 0
        while col <= last:
            if p < end and buf[p] == 34:
                j = p + 1
                while j < end and buf[j] != 34:
                    j += 1
                if j >= end or (j + 1 < end and buf[j + 1] != delim):
                    status[r] = UNSURE  # "" escapes, text after the closing quote
                    break
                a, b, q = p + 1, j, j + 1
            else:
                q = p
                while q < end and buf[q] != delim:
                    if buf[q] == 34:
                        status[r] = UNSURE
                        break
                    q += 1
                if status[r] == UNSURE:
                    break
                a, b = p, q
            for f in range(nf):
                if cols[f] == col:
                    for k in range(a, b):
                        if buf[k] >= 128:
                            status[r] = UNSURE
                    kind[r, f] = STR
                    span_a[r, f] = a
                    span_b[r, f] = b
            if status[r] == UNSURE or q >= end:
                break
            p = q + 1
            col += 1


def spans(
    buf: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    fields: list[str],
    csv_cols: list[int] | None,
    delimiter: str,
    least: int = MIN_COMPILED,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(kind, start, end) per record and field, and each record's status (``SURE`` or
    ``UNSURE``); ``csv_cols`` None: JSON. Without numba (or for fewer than ``least``
    records) every record is ``UNSURE``."""
    n, nf = len(starts), len(fields)
    kind = np.zeros((n, nf), np.int8)  # MISSING: the kernels set the fields they find
    a = np.zeros((n, nf), np.int64)
    b = np.zeros((n, nf), np.int64)
    status = np.full(n, UNSURE, np.int8)
    if not available() or n < max(1, least):
        return kind, a, b, status
    arr = np.frombuffer(buf, np.uint8)
    s, e = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64)
    if csv_cols is None:
        if any("." in f for f in fields):  # a nested field: the exact rules
            return kind, a, b, status
        enc = [f.encode() for f in fields]
        keys = np.frombuffer(b"".join(enc) or b"\0", np.uint8)
        koff = np.concatenate([[0], np.cumsum([len(k) for k in enc])]).astype(np.int64)
        nint = np.frombuffer(_NUMBER_INT, np.uint8)
        nlong = np.frombuffer(_NUMBER_LONG, np.uint8)
        off = int(-arr.ctypes.data % 8)
        words = arr[off : off + (len(arr) - off) // 8 * 8].view(np.uint64)
        _json_spans(arr, words, off, s, e, keys, koff, nint, nlong, kind, a, b, status)
    else:
        cols = np.asarray(csv_cols, np.int64)
        _csv_spans(arr, s, e, ord(delimiter), cols, kind, a, b, status)
    return kind, a, b, status
