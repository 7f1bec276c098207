"""The compiled fast path: a piece's raw bytes scanned once, integers parsed straight into
the storage dtype (numba; ``fastparse.py`` is the numpy path it replaces when numba is
missing or ``GUIAPP_NO_NUMBA=1``).

``scan`` walks every line of a buffer and says, per line, ``OK`` (its label and its values
are in the outputs), ``BLANK`` (empty: no record) or ``OTHER`` (anything it is not certain
of: ``pieces.py`` hands that line's block to the numpy fast path and the exact per-line
path, which word the errors). A line is ``OK`` only in these shapes, all ASCII, with no
whitespace but one optional space after ``:`` and ``,`` (JSON) and one ``\\r`` before the
line end:

- JSON: a flat object whose members are strings without escapes, integers, typed values
  ``{"$x": "..."}``, true/false/null; the label field once, a non-negative integer or
  ``{"$numberInt"|"$numberLong": "<1-15 digits>"}`` (the int it stands for, as
  ``fastparse._label`` gives it); the data field once, a string of exactly ``length``
  tokens of 1-18 digits joined by single commas;
- CSV/TSV: ``<label><d>"<tokens>"`` (TSV: the quotes optional), the label a decimal
  integer written as Python writes it (no sign, no leading zero), handed on as that text.

Every value must be at most ``hi`` (the storage dtype's maximum); the digits allow no
sign, so the minimum holds. Those are the rules of the numpy path (each ``OK`` line is one
it takes, with the same label and values), so a file gives the same dataset and the same
messages with or without numba (``tests/test_import_scale.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import available, jit
from .jitfields import MISSING, _same, value_kind

OK, BLANK, OTHER = 0, 1, 2
JSONL, CSV = 0, 1
_MAX_DIGITS = 18  # 10**18 - 1 < 2**63: a token's value never overflows int64


def _bytes(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.uint8).copy()  # a constant array, compiled in


_NUMBER_INT, _NUMBER_LONG = _bytes(b"$numberInt"), _bytes(b"$numberLong")
_TRUE, _FALSE, _NULL = _bytes(b"true"), _bytes(b"false"), _bytes(b"null")


@jit
def _is_digit(c: Any) -> bool:
    return bool(48 <= c <= 57)


@jit
def _string_end(buf: Any, i: int, end: int) -> int:
    """``buf[i]`` is a quote: the index after the closing one; -1 for escapes, control
    or non-ASCII bytes, or no closing quote before ``end``."""
    j = i + 1
    while j < end:
        c = buf[j]
        if c == 34:
            return j + 1
        if c == 92 or c < 32 or c >= 128:
            return -1
        j += 1
    return -1


@jit
def _key_is(buf: Any, i: int, j: int, key: Any) -> bool:
    """Whether the string ``buf[i:j]`` (quotes included) is ``key``."""
    n = j - i - 2
    if n != len(key):
        return False
    for k in range(n):  # noqa: SIM110 (no generators in compiled code)
        if buf[i + 1 + k] != key[k]:
            return False
    return True


@jit
def _colon(buf: Any, j: int, end: int) -> int:
    """After a member's name: past ``:`` and one optional space; -1 if no colon."""
    if j < 0 or j >= end or buf[j] != 58:
        return -1
    j += 1
    if j < end and buf[j] == 32:
        j += 1
    return j if j < end else -1


@jit
def _literal(buf: Any, i: int, end: int, word: Any) -> int:
    if i + len(word) > end:
        return -1
    for k in range(len(word)):
        if buf[i + k] != word[k]:
            return -1
    return i + len(word)


@jit
def _simple_end(buf: Any, i: int, end: int) -> int:
    """The end of a simple member value at ``i``; -1 if it is not one."""
    c = buf[i]
    if c == 34:
        return _string_end(buf, i, end)
    if c == 123:  # {"$x": "..."}
        j = i + 1
        if j >= end or buf[j] != 34:
            return -1
        j = _colon(buf, _string_end(buf, j, end), end)
        if j < 0 or buf[j] != 34:
            return -1
        j = _string_end(buf, j, end)
        if j < 0 or j >= end or buf[j] != 125:
            return -1
        return j + 1
    if c == 45 or _is_digit(c):
        j = i + 1 if c == 45 else i
        if j >= end or not _is_digit(buf[j]):
            return -1
        if buf[j] == 48:
            return j + 1  # a digit after it is no separator: the caller refuses the line
        while j < end and _is_digit(buf[j]):
            j += 1
        return j
    if c == 116:
        return _literal(buf, i, end, _TRUE)
    if c == 102:
        return _literal(buf, i, end, _FALSE)
    if c == 110:
        return _literal(buf, i, end, _NULL)
    return -1


@jit
def _digits(buf: Any, i: int, end: int, most: int) -> tuple[int, int]:
    """(value, end) of 1..``most`` digits at ``i``; end -1 if none or more."""
    v = 0
    j = i
    while j < end and _is_digit(buf[j]):
        if j - i == most:
            return 0, -1
        v = v * 10 + (buf[j] - 48)
        j += 1
    return (v, j) if j > i else (0, -1)


@jit
def _json_label(buf: Any, i: int, end: int) -> tuple[int, int]:
    """(label, end) of a label value at ``i``; end -1 if it is not a shape taken here."""
    c = buf[i]
    if _is_digit(c):
        if c == 48:
            return 0, i + 1
        return _digits(buf, i, end, _MAX_DIGITS)
    if c != 123 or i + 1 >= end or buf[i + 1] != 34:
        return 0, -1
    k = _string_end(buf, i + 1, end)
    if k < 0 or not (_key_is(buf, i + 1, k, _NUMBER_INT) or _key_is(buf, i + 1, k, _NUMBER_LONG)):
        return 0, -1
    j = _colon(buf, k, end)
    if j < 0 or buf[j] != 34:
        return 0, -1
    v, j = _digits(buf, j + 1, end, 15)  # float() of 15 digits is exact (labels.normalize)
    if j < 0 or j + 1 >= end or buf[j] != 34 or buf[j + 1] != 125:
        return 0, -1
    return v, j + 2


@jit
def _values(buf: Any, i: int, end: int, stop: int, row: Any, length: int, hi: int) -> int:
    """Tokens from ``i`` into ``row``; the index of the byte ``stop`` that ends them (-1
    when ``stop`` is -1: the line's end), or -2 if they are not exactly ``length`` tokens
    of 1-18 digits, each at most ``hi``, joined by single commas. (One branch per digit:
    a longer token may wrap around in int64, and is refused by its digit count.)"""
    j = i
    count = 0
    while count < length:
        v = 0
        s = j
        while j < end:
            d = int(buf[j]) - 48
            if d < 0 or d > 9:
                break
            v = v * 10 + d
            j += 1
        if j == s or j - s > _MAX_DIGITS or v > hi:
            return -2
        row[count] = v
        count += 1
        if j == end:
            return -1 if stop == -1 and count == length else -2
        c = buf[j]
        if c == 44:
            j += 1
        elif c == stop and count == length:
            return j
        else:
            return -2
    return -2


@jit
def _json_line(
    buf: Any, p: int, end: int, lkey: Any, dkey: Any, row: Any, length: int, hi: int,
    fkeys: Any, fkoff: Any, fk: Any, fa: Any, fb: Any, m: int, pool: Any, pos: Any,
) -> tuple[bool, int, int]:  # fmt: skip
    """(taken, label, close) of the JSON object at ``buf[p]``, read no further than ``end``:
    taken, it ends at ``close`` (after its ``}``), which the caller checks is the line's
    end. (No member crosses a newline: strings refuse control bytes, numbers end there.)
    The members named by ``fkeys`` (``--group-field``, ``--keep-fields``): their kinds in
    ``fk[m]`` (``jitfields.value_kind``), their values copied to ``pool[f, fa[m, f]:fb[m,
    f]]`` (at ``pos[f]``, while the line is in the cache). (No array views: each costs
    reference counting.)"""
    nf = len(pos)
    for f in range(nf):
        fk[m, f] = MISSING
        fa[m, f] = fb[m, f] = 0
    if buf[p] != 123:
        return False, 0, -1
    p += 1
    label = -1
    data = False
    while True:
        if p >= end or buf[p] != 34:
            return False, 0, -1
        k = _string_end(buf, p, end)
        if k < 0:
            return False, 0, -1
        is_label = _key_is(buf, p, k, lkey)
        is_data = not is_label and _key_is(buf, p, k, dkey)
        which = -1
        for f in range(0 if is_label or is_data else nf):
            if _same(buf, p + 1, k - 1, fkeys, fkoff[f], fkoff[f + 1]):
                which = f
                break
        p = _colon(buf, k, end)
        if p < 0:
            return False, 0, -1
        if is_label:
            if label >= 0:
                return False, 0, -1
            label, p = _json_label(buf, p, end)
        elif is_data:
            if data or buf[p] != 34:
                return False, 0, -1
            data = True
            p = _values(buf, p + 1, end, 34, row, length, hi)
            p = p + 1 if p >= 0 else -1
        else:
            q = _simple_end(buf, p, end)
            if which >= 0 and q >= 0:
                kd, a, b = value_kind(buf, p, q)
                fk[m, which] = kd
                at = pos[which]
                for t in range(b - a):
                    pool[which, at + t] = buf[a + t]
                fa[m, which], fb[m, which] = at, at + b - a
                pos[which] = at + b - a
            p = q
        if p < 0 or p >= end:
            return False, 0, -1
        if buf[p] == 125:
            return (label >= 0 and data), label, p + 1
        if buf[p] != 44:
            return False, 0, -1
        p += 1
        if p < end and buf[p] == 32:
            p += 1


@jit
def _csv_line(
    buf: Any, p: int, end: int, delim: int, row: Any, length: int, hi: int
) -> tuple[bool, int, int]:
    """(taken, label, close) of the CSV/TSV record at ``buf[p]``, as ``_json_line``'s; TSV
    values without quotes run to ``end``, which must then be the line's end."""
    if buf[p] == 48:
        label, j = 0, p + 1
    elif _is_digit(buf[p]):
        label, j = _digits(buf, p, end, _MAX_DIGITS)
    else:
        return False, 0, -1
    if j < 0 or j + 1 >= end or buf[j] != delim:
        return False, 0, -1
    j += 1
    if buf[j] == 34:
        q = _values(buf, j + 1, end, 34, row, length, hi)
        return q >= 0, label, q + 1
    if delim == 44:  # CSV: the data must be quoted
        return False, 0, -1
    return _values(buf, j, end, -1, row, length, hi) == -1, label, end


@jit
def _scan(
    buf: Any, fmt: int, lkey: Any, dkey: Any, delim: int, length: int, hi: int, out: Any,
    stops: Any, status: Any, labels: Any,
    fkeys: Any, fkoff: Any, fk: Any, fa: Any, fb: Any, pool: Any, pos: Any, mark: Any,
) -> tuple[int, int]:  # fmt: skip
    """Every line of ``buf``: ``stops[i]`` its ``\\n`` (or ``len(buf)``), ``status[i]``,
    and for ``OK`` lines, in order, ``labels[m]``, ``out[m]`` and (JSON) the fields'
    ``fk[m]``, ``fa[m]``, ``fb[m]`` (their values in ``pool``, ``_json_line``; ``mark``: room
    for ``pos``). Returns (lines, OK lines). (No array is made here: numba's runtime would
    load with the first kernel that makes one, ~0.15 s.)"""
    n = buf.shape[0]
    line = 0
    m = 0
    p = 0
    while p < n:
        st = OTHER
        e = -1
        for f in range(len(pos)):
            mark[f] = pos[f]
        if m < out.shape[0] and buf[p] != 10 and (fmt == JSONL or delim == 44):
            # Read the record first, bounded by the buffer: taken, and followed by the line's
            # end ("\r" allowed before it), its end is known without a pass to find it.
            if fmt == JSONL:
                ok, lab, c = _json_line(
                    buf, p, n, lkey, dkey, out[m], length, hi, fkeys, fkoff, fk, fa, fb, m,
                    pool, pos,
                )  # fmt: skip
            else:
                ok, lab, c = _csv_line(buf, p, n, delim, out[m], length, hi)
            if ok:
                if c < n and buf[c] == 13:
                    c += 1
                if c == n or buf[c] == 10:
                    st, e = OK, c
                    labels[m] = lab
                    m += 1
        if e < 0:  # not taken so: the line's end first, then the record within it
            for f in range(len(pos)):  # (what the first try copied)
                pos[f] = mark[f]
            e = p
            while e < n and buf[e] != 10:
                e += 1
            end = e - 1 if e > p and buf[e - 1] == 13 else e
            if e == p:
                st = BLANK
            elif end > p and m < out.shape[0]:
                if fmt == JSONL:
                    ok, lab, c = _json_line(
                        buf, p, end, lkey, dkey, out[m], length, hi, fkeys, fkoff, fk, fa, fb,
                        m, pool, pos,
                    )  # fmt: skip
                else:
                    ok, lab, c = _csv_line(buf, p, end, delim, out[m], length, hi)
                if ok and c == end:
                    st = OK
                    labels[m] = lab
                    m += 1
                else:
                    for f in range(len(pos)):
                        pos[f] = mark[f]
        stops[line] = e
        status[line] = st
        line += 1
        p = e + 1
    return line, m


@jit
def _count_lines(buf: Any) -> int:
    """``bytes.count(b"\\n") + 1``, without the GIL."""
    n = 1
    for c in buf:
        if c == 10:
            n += 1
    return n


class Scan:
    """``scan``'s outcome for one buffer."""

    def __init__(
        self, stops: np.ndarray, status: np.ndarray, labels: np.ndarray, x: np.ndarray,
        fields: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:  # fmt: skip
        self.stops = stops  # per physical line: its "\n" (or the buffer's length)
        self.status = status  # per physical line: OK, BLANK, OTHER
        self.labels = labels  # per OK line: the label (int64)
        self.x = x  # per OK line: the values, in the storage dtype
        #: (JSON) per OK line and field: kind (``jitfields``), value start and end in the
        #: field's row of the pool; and the pool
        self.fields = fields


def scan(
    buf: bytes,
    fmt: int,
    length: int,
    dtype: np.dtype,
    label_field: str = "",
    data_field: str = "",
    delimiter: str = ",",
    fields: list[str] | None = None,
    pool: np.ndarray | None = None,
) -> Scan:
    """The lines of ``buf`` (numba must be ``available()``); JSON: also the values of
    ``fields`` (none of them the label or the data field, nor dotted), copied to ``pool``
    (made here when it is missing or too small: a caller that keeps it for the next buffer
    saves touching fresh pages)."""
    arr = np.frombuffer(buf, np.uint8)
    lines = _count_lines(arr)
    most = len(buf) // (2 * length) + 1  # an OK line holds at least 2 * length bytes
    out = np.empty((min(lines, most), length), dtype)
    stops = np.empty(lines, np.int64)
    status = np.empty(lines, np.int8)
    labels = np.empty(len(out), np.int64)
    enc = [f.encode() for f in fields or []]
    fkeys = np.frombuffer(b"".join(enc) or b"\0", np.uint8)
    fkoff = np.cumsum([0] + [len(k) for k in enc], dtype=np.int64)
    nf = len(enc)
    fk = np.empty((len(out), nf), np.int8)
    fa, fb = np.empty((len(out), nf), np.int64), np.empty((len(out), nf), np.int64)
    if pool is None or pool.shape[0] != nf or pool.shape[1] < len(buf):
        pool = np.empty((nf, len(buf) if nf else 0), np.uint8)
    pos = np.zeros(nf, np.int64)
    n, m = _scan(
        arr, fmt, np.frombuffer(label_field.encode(), np.uint8),
        np.frombuffer(data_field.encode(), np.uint8), ord(delimiter) if delimiter else 44,
        length, int(np.iinfo(dtype).max), out, stops, status, labels, fkeys, fkoff, fk, fa, fb,
        pool, pos, pos.copy(),
    )  # fmt: skip
    return Scan(stops[:n], status[:n], labels[:m], out[:m], (fk[:m], fa[:m], fb[:m], pool))


def takes(dtype: np.dtype, fmt: int, label_field: str, data_field: str, delimiter: str) -> bool:
    """Whether ``scan`` handles this storage dtype, these fields or this delimiter (else:
    the numpy path)."""
    if not available() or dtype.kind not in "iu" or dtype == np.uint64:
        return False
    if fmt == CSV:
        return len(delimiter) == 1 and delimiter.isascii() and delimiter not in '"\r\n0123456789'
    return all(
        f.isascii() and f.isprintable() and not any(c in f for c in '."\\')
        for f in (label_field, data_field)
    )
