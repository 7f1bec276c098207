"""The fast path of the text importers: lines of the common shape, parsed a block at a time.

A JSON line takes the fast path only when one regular expression proves it is a flat
object of simple members (strings without escapes, integers, ``{"$numberInt": "3"}``-like
typed values, true/false/null) whose data field is a string of digits and single commas,
with the label field present exactly once, all ASCII. A CSV/TSV line takes it when it is
exactly ``label<d>"1,2,3"`` (TSV: the data may be unquoted). Everything else (other
shapes, escapes, whitespace inside the data, lists, bad JSON, wrong lengths, values out of
range) goes to the exact per-line path of ``text.py`` and ``parse.py``, so a file gives the
same rows and the same messages whichever path each line takes.

The data strings of a block's fast lines are joined and parsed by one ``np.fromstring``
call (numpy's C parser); the token counts and the value range are checked for the whole
block at once. Measured in docs/IMPORT.md ("Speed").
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import numpy as np

from .labels import normalize
from .parse import bad_value_mask

_DIGITS_COMMA = b"0123456789,"

_STR = rb'"[^"\\\x00-\x1f]*"'
_SIMPLE = (
    rb"(?:" + _STR + rb"|-?(?:0|[1-9][0-9]*)|\{" + _STR + rb": ?" + _STR + rb"\}|true|false|null)"
)
_PAIR = _STR + rb": ?" + _SIMPLE
_cache: dict[tuple[str, str], tuple[re.Pattern[bytes], re.Pattern[bytes]]] = {}


def _patterns(label_field: str, data_field: str) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """``head``: from a line's start to the data string's opening quote, the label among
    the members before it (groups: the head, the label's text); ``tail``: what may follow
    the data string's closing quote. No other member may be the label or the data field,
    so each appears exactly once."""
    key = (label_field, data_field)
    if key not in _cache:
        lf = re.escape(json.dumps(label_field).encode())
        df = re.escape(json.dumps(data_field).encode())
        member = rb"(?!" + lf + rb":)(?!" + df + rb":)" + _PAIR
        before = rb"(?:" + member + rb", ?)*"
        head = re.compile(
            rb"\n(\{" + before + lf + rb": ?(" + _SIMPLE + rb"), ?" + before + df + rb': ?")'
        )
        tail = re.compile(rb"(?:, ?" + member + rb")*\}")
        _cache[key] = (head, tail)
    return _cache[key]


def _label(text: bytes, seen: dict[bytes, Any]) -> Any:
    """A label's JSON text decoded (typed numbers such as ``{"$numberInt": "3"}`` already
    normalized to the int they stand for when they are valid); None if it is not JSON."""
    lab = seen.get(text)
    if lab is None:
        try:
            lab = json.loads(text)
        except ValueError:
            return None
        if isinstance(lab, dict):
            try:
                v = normalize(lab)
            except ValueError:
                v = None
            if isinstance(v, int):
                lab = v
        seen[text] = lab
    return lab


def fast_jsonl(
    lines: list[bytes], label_field: str, data_field: str, labels_seen: dict[bytes, Any]
) -> tuple[list[int], list[Any], list[bytes]]:
    """``(indices, raw labels, data strings)`` of the lines that have the fast shape.

    ``lines`` are without their line ends (nor a trailing carriage return). One regular
    expression search over the block finds each line's head; the data string runs to the
    next quote and the line must end right after it (or with simple members, then ``}``).
    Dotted (nested) field names and non-ASCII lines are left to the exact path.
    """
    if "." in label_field or "." in data_field or not lines:
        return [], [], []
    head, tail = _patterns(label_field, data_field)
    buf = b"\n" + b"\n".join(lines)
    n = len(lines)
    lens = np.fromiter(map(len, lines), np.int64, n)
    starts = np.empty(n, np.int64)  # in buf, after the "\n"
    starts[0] = 1
    np.cumsum(lens[:-1] + 1, out=starts[1:])
    starts[1:] += 1
    found = head.findall(buf)
    if len(found) == n:
        at = np.arange(n)
    else:
        ms = list(head.finditer(buf))
        found = [m.groups() for m in ms]
        at = np.searchsorted(starts, np.fromiter((m.start() + 1 for m in ms), np.int64, len(ms)))
    if not found:
        return [], [], []
    heads, label_texts = zip(*found, strict=True)
    data_start = starts[at] + np.fromiter(map(len, heads), np.int64, len(found))
    quotes = np.flatnonzero(np.frombuffer(buf, np.uint8) == 34)
    qi = np.searchsorted(quotes, data_start)
    has_close = qi < len(quotes)
    close = np.where(has_close, quotes[np.minimum(qi, len(quotes) - 1)], 0)
    line_end = starts[at] + lens[at]
    good = has_close & (close < line_end)
    simple_end = good & (close + 2 == line_end)
    if simple_end.any():
        b = np.frombuffer(buf, np.uint8)
        simple_end &= b[np.minimum(close + 1, len(buf) - 1)] == 125  # '}'
    for k in np.flatnonzero(good & ~simple_end).tolist():  # other members after the data
        good[k] = tail.fullmatch(buf, int(close[k]) + 1, int(line_end[k])) is not None
    if not buf.isascii():
        for k in np.flatnonzero(good).tolist():
            good[k] = lines[int(at[k])].isascii()
    labs = list(map(labels_seen.get, label_texts))
    missing = [k for k, lab in enumerate(labs) if lab is None] if None in labs else []
    if missing:  # labels not seen before: each distinct text decoded once
        for text in {label_texts[k] for k in missing}:
            _label(text, labels_seen)
        for k in missing:
            labs[k] = labels_seen.get(label_texts[k])
            good[k] &= labs[k] is not None
    keep = np.flatnonzero(good)
    if len(keep) != len(found):
        labs = [labs[k] for k in keep.tolist()]
    idx = at[keep].tolist()
    datas = list(map(buf.__getitem__, map(slice, data_start[keep].tolist(), close[keep].tolist())))
    return idx, labs, datas


def _line_of(lines: list[bytes], positions: list[int]) -> np.ndarray:
    starts = np.cumsum([0] + [len(ln) + 1 for ln in lines[:-1]])
    return np.searchsorted(starts, np.asarray(positions, np.int64), side="right") - 1


def _matches(
    pats: list[re.Pattern[bytes]], lines: list[bytes]
) -> tuple[list[int], list[tuple[bytes, bytes]]]:
    """(line index, groups) of the lines some whole-line pattern matches, in line order."""
    buf = b"\n".join(lines)
    found = pats[0].findall(buf)
    if len(found) == len(lines):  # the usual block: every line has the first shape
        return list(range(len(lines))), found
    hits: dict[int, tuple[bytes, bytes]] = {}
    for pat in pats:
        ms = list(pat.finditer(buf))
        if ms:
            at = _line_of(lines, [m.start() for m in ms]).tolist()
            for i, m in zip(at, ms, strict=True):
                hits.setdefault(i, m.groups())  # type: ignore[arg-type]
    order = sorted(hits)
    return order, [hits[i] for i in order]


def fast_csv(lines: list[bytes], delimiter: str) -> tuple[list[int], list[Any], list[bytes]]:
    """Lines ``label<d>"d,d,d"`` (and, for a delimiter other than ",", ``label<d>d,d,d``)."""
    d = re.escape(delimiter.encode())
    pats = [re.compile(rb'^([^"' + d + rb"\r\n]*)" + d + rb'"([0-9,]*)"$', re.M)]
    if delimiter != ",":
        pats.append(re.compile(rb'^([^"' + d + rb"\r\n]*)" + d + rb"([0-9,]*)$", re.M))
    idx, found = _matches(pats, lines)
    keep = [k for k, (lab, data) in enumerate(found) if lab.strip() or data]  # blank rows: skipped
    if len(keep) != len(found):
        idx, found = [idx[k] for k in keep], [found[k] for k in keep]
    return idx, [lab.decode("utf-8", "replace") for lab, _ in found], [d for _, d in found]


def _fromstring(joined: bytes) -> np.ndarray | None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return np.fromstring(joined, dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            return None


def _clean(s: bytes) -> bool:
    """Digits and single commas between them, nothing else (not empty)."""
    return bool(s) and not (
        s.translate(None, _DIGITS_COMMA) or b",," in s or s[:1] == b"," or s[-1:] == b","
    )


def _block_clean(joined: bytes, datas: list[bytes], length: int) -> bool:
    """Whether ``joined`` (the ``datas`` joined by commas) is ``_clean`` and each string
    holds exactly ``length`` values: the comma after string ``i`` must be the
    ``(i + 1) * length``-th comma of the whole (all from the comma positions)."""
    n = len(datas)
    if not joined or joined.translate(None, _DIGITS_COMMA):
        return False
    commas = np.flatnonzero(np.frombuffer(joined, np.uint8) == 44)
    if commas.size != n * length - 1:
        return False
    if commas.size and (
        commas[0] == 0 or commas[-1] == len(joined) - 1 or bool((np.diff(commas) == 1).any())
    ):
        return False
    seps = np.cumsum(np.fromiter(map(len, datas), np.int64, n) + 1)[:-1] - 1
    return bool(np.array_equal(commas[length - 1 :: length], seps))


def fast_values(datas: list[bytes], length: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Values ``(m, length)`` int64 of the data strings that are exactly ``length`` integers
    (digits and single commas) the storage dtype holds, and the mask of those strings (the
    others: the exact path)."""
    n = len(datas)
    none = np.empty((0, length), np.int64), np.zeros(n, bool)
    if length == 0 or n == 0:
        return none
    joined = b",".join(datas)
    if _block_clean(joined, datas, length):  # the usual block
        ok, chosen = np.ones(n, bool), datas
    else:  # some string is odd (rare): check each
        ok = np.fromiter(map(bytes.count, datas, [b","] * n), np.int64, n) == length - 1
        for j in np.flatnonzero(ok).tolist():
            ok[j] = _clean(datas[j])
        chosen = [d for d, g in zip(datas, ok.tolist(), strict=True) if g]
        joined = b",".join(chosen)
    m = len(chosen)
    if m == 0:
        return none
    flat = _fromstring(joined)
    if flat is None or flat.size != m * length:  # cannot happen after the checks; stay exact
        return none
    vals = flat.reshape(m, length)
    bad = bad_value_mask(vals, np.dtype(dtype)).any(axis=1)
    if bad.any():  # the exact path words the error
        ok[np.flatnonzero(ok)[bad]] = False
        vals = vals[~bad]
    return vals, ok
