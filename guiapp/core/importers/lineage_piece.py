"""A parsed piece's lineage: each good record's group and kept fields (``--group-field``,
``--keep-fields``), and the records whose group field is unusable turned into row errors.

Runs where the piece was parsed (a worker), after the parse: ``jitfields.spans`` finds the
values in the records' bytes; a line it is not sure of is read by the exact rules here
(``json`` or ``csv``, as the parse's exact path reads it). The rules (docs/IMPORT.md):

- a string is itself; an integer its decimal text (and the field may be stored as int64);
- mongoexport's typed values ``{"$oid": "..."}``, ``{"$date": "..."}`` (and any other
  ``{"$x": "text"}``) are their text; ``$numberInt``/``$numberLong`` are integers;
  ``{"$date": {"$numberLong": "..."}}`` is the text of the number;
- a kept field that is missing or null is empty; a list, an object, true/false or a
  fraction is kept as its compact JSON text;
- a group field that is missing, null, empty, a list, an object, true/false or a fraction
  makes the line a row error (``--on-error``);
- a value longer than ``MAX_VALUE_BYTES`` (the store's widest string) is a row error.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

from ..errors import Problem
from . import jitcols, jitfields
from .jitfields import INT, MISSING, NULL, OTHER, STR, SURE
from .jitparse import OK
from .labels import IntLabels, Labels
from .rowcols import LENGTH, RowCols, offsets, pack_texts
from .text import _field

if TYPE_CHECKING:
    from .jitparse import Scan
    from .piece_result import ParseSpec, PieceResult

#: The longest value a kept field (a fixed-width ``S<n>`` column) or a group name holds.
MAX_VALUE_BYTES = 9999
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]{0,17}")
_BOM = b"\xef\xbb\xbf"


def group_ids(
    lens: np.ndarray, data: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``store.columns.group_id`` of each packed name, each distinct name hashed once, and
    the table of the distinct names (ids, lengths, bytes). (Here, not imported from the
    store: a parse worker starts without h5py; a test holds the two equal.)"""
    n = len(lens)
    if not n:
        return np.zeros(0, np.int64), (np.zeros(0, np.int64), lens[:0], data[:0])
    heads = jitcols.run_heads(lens, data)  # rows of one group often come together
    names = jitcols.unpack(lens.astype(np.int64), data, heads)
    uniq, first, inv = np.unique(names, return_index=True, return_inverse=True)
    h = xxhash.xxh3_64_intdigest
    texts = [bytes(v) for v in uniq.tolist()]
    ids = np.fromiter((h(v) & 0x7FFF_FFFF_FFFF_FFFF for v in texts), np.int64, len(uniq))
    return np.repeat(ids[inv.reshape(-1)], np.diff(np.append(heads, n))), (ids, *pack_texts(texts))


def classify(v: Any) -> tuple[int, str]:
    """(kind, text) of one decoded JSON value (``jitfields``' kinds)."""
    if v is None:
        return NULL, ""
    if isinstance(v, bool):
        return OTHER, "true" if v else "false"
    if isinstance(v, int):
        return (INT if -(2**63) <= v < 2**63 else STR), str(v)
    if isinstance(v, str):
        return STR, v
    if isinstance(v, dict) and len(v) == 1:
        key, inner = next(iter(v.items()))
        if isinstance(key, str) and key.startswith("$"):
            if isinstance(inner, str):
                if key in ("$numberInt", "$numberLong") and _CANONICAL_INT.fullmatch(inner):
                    return INT, inner
                return STR, inner
            if (
                key == "$date"
                and isinstance(inner, dict)
                and len(inner) == 1
                and isinstance(inner.get("$numberLong"), str)
            ):
                return STR, inner["$numberLong"]
    return OTHER, json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _described(text: str) -> str:
    c = text[:1]
    if c == "[":
        return "a list"
    if c == "{":
        return "an object"
    if c in ("t", "f"):
        return f"{text} (true/false)"
    return f"the number {text[:20]}"


def exact_values(
    line: bytes, fields: list[str], csv_cols: list[int] | None, delimiter: str
) -> list[tuple[int, str]]:
    """(kind, text) of each field of one record, by the exact rules."""
    if csv_cols is None:
        try:
            obj = json.loads(line.decode("utf-8"))
        except ValueError:  # (a record the parse took is valid JSON)
            obj = None
        if not isinstance(obj, dict):
            return [(MISSING, "")] * len(fields)
        out = []
        for f in fields:
            ok, v = _field(obj, f)
            out.append(classify(v) if ok else (MISSING, ""))
        return out
    text = line.decode("utf-8", "replace")
    try:
        row = next(csv.reader([text], delimiter=delimiter), [])
    except csv.Error:
        row = []
    return [(STR, row[c]) if c < len(row) else (MISSING, "") for c in csv_cols]


class Lineage:
    """A piece's good records' fields (``cols``) and the records whose group field names
    no group (``problems``: ``(record, text)``)."""

    def __init__(self, cols: RowCols, problems: list[tuple[int, str]]) -> None:
        self.cols = cols
        self.problems = problems


Spans = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def extract(
    buf: bytes,
    n: int,
    spans_of: Spans,
    fields: list[str],
    group: bool,
    csv_cols: list[int] | None,
    delimiter: str,
    known: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Lineage:
    """The fields of ``n`` records, record ``i`` being ``buf[starts[i]:ends[i]]``
    (``spans_of(i) -> (starts, ends)``; field 0 is the group when ``group``). ``known``:
    per record, the kinds and spans (in the pool) the parse's scan found (a kind -1: ask
    ``jitfields.spans``), and the pool."""
    pool = None
    in_pool = np.zeros(n, bool)
    if known is None:
        starts, ends = spans_of(np.arange(n))
        kind, a, b, status = jitfields.spans(buf, starts, ends, fields, csv_cols, delimiter)
    else:
        kind, a, b, pool = known
        rest = np.flatnonzero((kind < 0).any(axis=1))
        status = np.full(n, SURE, np.int8)
        in_pool[:] = True
        if len(rest):
            kind, a, b = kind.copy(), a.copy(), b.copy()
            spans = jitfields.spans(buf, *spans_of(rest), fields, csv_cols, delimiter)
            kind[rest], a[rest], b[rest], status[rest] = spans
            in_pool[rest] = False
    unsure = np.flatnonzero(status != SURE).tolist()
    exact: dict[int, list[tuple[int, str]]] = {}
    if unsure:
        kind = kind.copy()
        at = np.asarray(unsure, np.int64)
        for i, s, e in zip(unsure, *(v.tolist() for v in spans_of(at)), strict=True):
            vals = exact_values(buf[s:e], fields, csv_cols, delimiter)
            exact[i] = vals
            kind[i] = [k for k, _ in vals]
    bad: dict[int, str] = {}
    a, b = a.copy(), b.copy()
    a[unsure] = b[unsure] = 0  # (their values are the exact rules' texts)
    cols = RowCols(None)
    for f, name in enumerate(fields):
        is_group = group and f == 0
        texts = {i: exact[i][f][1].encode("utf-8") for i in unsure}
        lens = (b[:, f] - a[:, f]).astype(LENGTH)
        for i, t in texts.items():
            lens[i] = len(t)
        for i in np.flatnonzero(lens > MAX_VALUE_BYTES).tolist():
            what = "group name" if is_group else "kept field"
            bad.setdefault(
                i,
                f"field {name!r} holds {int(lens[i]):,} bytes, more than the "
                f"{MAX_VALUE_BYTES} a {what} may hold",
            )
            a[i, f] = b[i, f] = lens[i] = 0
            texts.pop(i, None)
        k = kind[:, f]
        if is_group:
            for i in np.flatnonzero(((k != STR) & (k != INT)) | (lens == 0)).tolist():
                bad.setdefault(i, _group_problem(name, int(k[i]), exact, i, csv_cols))
        if len(texts) < n:
            data = jitcols.gather(buf, pool, f, in_pool, a[:, f], b[:, f], lens)
        else:
            data = np.zeros(int(lens.sum(dtype=np.int64)), np.uint8)
        if texts:
            at = offsets(lens)
            for i, t in texts.items():
                data[at[i] : at[i + 1]] = np.frombuffer(t, np.uint8)
        if is_group:
            cols.ids, cols.names = group_ids(lens, data)
        else:
            cols.lens.append(lens)
            cols.data.append(data)
            cols.ints.append(np.asarray(k == INT))
    return Lineage(cols, sorted(bad.items()))


def scan_takes(spec: ParseSpec) -> bool:
    """Whether ``jitparse.scan`` may read the fields while it parses (top-level fields
    other than the label and the data)."""
    return bool(spec.fields) and not any(
        "." in f or f in (spec.label_field, spec.data_field) for f in spec.fields
    )


def scanned_fields(
    sc: Scan, lines: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A scan's fields of the physical lines ``lines`` (kind -1: a line it did not take),
    and its pool of their values."""
    assert sc.fields is not None
    fk, fa, fb, pool = sc.fields
    if len(lines) == len(fk) and bool((sc.status[lines] == OK).all()):
        return fk, fa, fb, pool  # (the usual piece: every good record a line the scan took)
    ok = sc.status[lines] == OK
    at = (np.cumsum(sc.status == OK) - 1)[lines[ok]]
    kind = np.full((len(lines), fk.shape[1]), -1, np.int8)
    a = np.zeros((len(lines), fk.shape[1]), np.int64)
    b = np.zeros_like(a)
    kind[ok], a[ok], b[ok] = fk[at], fa[at], fb[at]
    return kind, a, b, pool


def _group_problem(
    name: str, kd: int, exact: dict[int, list[tuple[int, str]]], i: int, csv_cols: list[int] | None
) -> str:
    """Why record ``i``'s group field (of kind ``kd``) names no group (a ``Problem``
    naming ``--group-field``)."""
    how = "--group-field"
    if kd == MISSING:
        if csv_cols is not None:
            text = f"has no column {csv_cols[0]} for {name!r} (see {how})"
        else:
            text = f"has no {name!r} field (see {how})"
    elif kd == NULL:
        text = f"field {name!r} is null, not a group name (see {how})"
    elif kd == OTHER:
        text = f"field {name!r} is {_described(exact[i][0][1])}, not a group name (see {how})"
    else:
        text = f"field {name!r} is empty, not a group name (see {how})"
    return Problem(text, option=how, value=name)


def record_spans(
    buf: bytes, stops: np.ndarray, lines: np.ndarray, bom_line: int
) -> tuple[np.ndarray, np.ndarray]:
    """Byte ranges (without a ``\\r`` before the line end, nor the file's byte order mark)
    of the physical lines ``lines`` (0-based) of a piece whose line ends are ``stops``."""
    li = np.asarray(lines, np.int64)
    starts = np.where(li > 0, stops[np.maximum(li - 1, 0)] + 1, 0)
    ends = stops[li].astype(np.int64)
    if len(li):
        arr = np.frombuffer(buf, np.uint8)
        cr = (ends > starts) & (arr[np.maximum(ends - 1, 0)] == 13) if len(arr) else ends < 0
        ends = ends - cr
        if bom_line >= 0:
            for r in np.flatnonzero(li == bom_line).tolist():
                s = int(starts[r])
                if buf[s : s + 3] == _BOM:
                    starts[r] += 3
    return starts, ends


def demote(
    kind: np.ndarray, labels: Labels, problems: list[str], drop: list[tuple[int, str]]
) -> tuple[np.ndarray, Labels, list[str], np.ndarray]:
    """Good records (``drop``: (index among the good records, problem)) made unusable:
    the new kinds, labels (per usable record), problems (per unusable or bad-data record)
    and the mask of the good records kept."""
    from .piece_result import BAD_DATA, GOOD, UNUSABLE

    good_at = np.flatnonzero(kind == GOOD)
    keep_good = np.ones(len(good_at), bool)
    keep_good[[g for g, _ in drop]] = False
    rec = good_at[[g for g, _ in drop]]
    labeled = np.flatnonzero(kind != UNUSABLE)
    keep_label = np.ones(len(labeled), bool)
    keep_label[np.searchsorted(labeled, rec)] = False
    if isinstance(labels, IntLabels):
        new_labels: Labels = IntLabels(labels.codes[keep_label], labels.text)
    else:
        new_labels = [v for v, k in zip(labels, keep_label.tolist(), strict=True) if k]
    old = np.flatnonzero((kind == UNUSABLE) | (kind == BAD_DATA)).tolist()
    merged = sorted(
        [(r, 0, p) for r, p in zip(old, problems, strict=True)]
        + [(int(r), 1, p) for r, (_, p) in zip(rec.tolist(), drop, strict=True)]
    )
    new_kind = kind.copy()
    new_kind[rec] = UNUSABLE
    return new_kind, new_labels, [p for _, _, p in merged], keep_good


def attach(
    res: PieceResult, spec: ParseSpec, file: int, buf: bytes, stops: np.ndarray, bom_line: int,
    sc: Scan | None = None,
) -> PieceResult:  # fmt: skip
    """``res`` with its good records' fields (``res.cols``: per field, the values and the
    integer flags, or the group's ids); good records whose group field is unusable become
    unusable ones. ``sc``: the parse's scan, when it read the fields."""
    from .piece_result import GOOD

    if not spec.fields:
        return res
    good = res.kind == GOOD
    lines = res.line[good].astype(np.int64) - 1
    cols = None
    if spec.format != "jsonl":
        cols = spec.field_cols.get(str(file), [0] * len(spec.fields))
    known = None if sc is None else scanned_fields(sc, lines)
    lin = extract(
        buf, len(lines), lambda i: record_spans(buf, stops, lines[i], bom_line),
        spec.fields, spec.group, cols, spec.delimiter, known,
    )  # fmt: skip
    res.lineage = lin.cols
    if lin.problems:
        kind, labels, problems, keep = demote(res.kind, res.labels, res.problems, lin.problems)
        res.kind, res.labels, res.problems = kind, labels, problems
        res.x, res.fitted = res.x[keep], res.fitted[keep]
        res.lineage = lin.cols.take(keep)
    return res
