"""Labels as the sources give them (ints, strings, mongoexport ``{"$numberInt": "3"}``) -> classes.

Without ``--class-names``: if every label is a non-negative integer (or a string of one),
class ``i`` is label ``i`` and the names are ``"0".."K-1"``; otherwise the labels are
strings and the class names are their sorted set. The decision needs every label, so
pass 1 stores a provisional id per row and pass 2 maps it to the final class index.

With ``--class-names a,b,c``: a label equal to a name is that class; otherwise an integer
label is the class index. Anything else is a row error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import Problem, UserError

#: A label field with more distinct values than this is almost surely the wrong field.
MAX_CLASSES = 65536

_MONGO_NUMBERS = ("$numberInt", "$numberLong", "$numberDouble", "$numberDecimal")


def count_labels(rows: list[int], ids: np.ndarray) -> None:
    """Add a chunk's provisional label ``ids`` to ``rows`` (rows per id, grown as needed)."""
    if not len(ids):
        return
    counts = np.bincount(ids, minlength=len(rows)).tolist()
    rows.extend([0] * (len(counts) - len(rows)))
    for i, c in enumerate(counts):
        rows[i] += c


def _int_like(s: str) -> int | None:
    t = s.strip()
    if t.isascii() and t.isdigit():
        return int(t)
    return None


def normalize(v: Any) -> int | str:
    """One raw label -> an int or a string; raises ValueError with the problem."""
    if isinstance(v, dict) and len(v) == 1:
        key, inner = next(iter(v.items()))
        if key in _MONGO_NUMBERS:
            try:
                f = float(inner)
            except (TypeError, ValueError):
                raise ValueError(f"label {v!r} is not a number") from None
            if f != int(f):
                raise ValueError(f"label {inner} is not a whole number")
            v = int(f)
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"label {v!r} is true/false, not a class")
    if isinstance(v, (int, np.integer)):
        if v < 0:
            raise ValueError(f"label {int(v)} is negative")
        return int(v)
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v) or v != int(v):
            raise ValueError(f"label {float(v)!r} is not a whole number")
        if v < 0:
            raise ValueError(f"label {int(v)} is negative")
        return int(v)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, str):
        s = v.strip()
        if not s:
            raise ValueError("label is empty")
        return s
    if v is None:
        raise ValueError("label is null")
    shown = repr(v)
    raise ValueError(f"label {shown[:40]} is not an integer or a string")


def _as_array(labels: Sequence[Any]) -> Sequence[Any] | np.ndarray:
    """A chunk of plain ints (or of plain strings) as one array: its distinct values are
    mapped once each, not row by row. Provisional ids then follow the values' order, not
    the rows'; the classes do not depend on it (``finish`` orders them by value or name)."""
    kind = type(labels[0])
    if (kind is int or kind is str) and all(type(v) is kind for v in labels):
        if kind is str and "\x00" in "".join(labels):  # numpy strings drop trailing NULs
            return labels
        try:
            return np.asarray(labels, dtype=np.int64 if kind is int else None)
        except OverflowError:
            return labels
    return labels


class IntLabels:
    """Non-negative integer labels of many rows as one int64 array (the compiled fast
    path's, ``jitparse.py``): label ``i`` is ``int(codes[i])``, or, when ``text`` (CSV), its
    decimal text ``str(codes[i])``. Iterating gives the plain ints or strings a list of
    the other paths would hold; ``LabelMap.ids`` maps one by its distinct values."""

    __slots__ = ("codes", "text")

    def __init__(self, codes: np.ndarray, text: bool) -> None:
        self.codes = codes
        self.text = text

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, s: slice) -> IntLabels:
        return IntLabels(self.codes[s], self.text)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    def tolist(self) -> list[Any]:
        values: list[int] = self.codes.tolist()
        return list(map(str, values)) if self.text else values


Labels = list[Any] | IntLabels


def join_labels(parts: Sequence[Labels]) -> Labels:
    """The labels of consecutive parts as one (an ``IntLabels`` if every part is one)."""
    ints = [p for p in parts if isinstance(p, IntLabels)]
    if parts and len(ints) == len(parts) and len({p.text for p in ints}) == 1:
        codes = [p.codes for p in ints]
        return IntLabels(codes[0] if len(codes) == 1 else np.concatenate(codes), ints[0].text)
    out: list[Any] = []
    for p in parts:
        out += p.tolist() if isinstance(p, IntLabels) else p
    return out


def _problem(exc: ValueError) -> str:
    """A bad label's problem: the ``Problem`` it was raised with (naming its option), or
    its text."""
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, Problem) else str(exc)


class LabelMap:
    """Maps raw labels to provisional ids (pass 1) and then to class indices (pass 2)."""

    def __init__(self, class_names: Sequence[str] | None = None) -> None:
        self.fixed = [str(c) for c in class_names] if class_names else None
        if self.fixed is not None and len(set(self.fixed)) != len(self.fixed):
            raise UserError(
                "--class-names has a name twice", option="--class-names", value=",".join(self.fixed)
            )
        self._by_name = {c: i for i, c in enumerate(self.fixed or [])}
        self.keys: list[int | str] = []  # provisional id -> normalized label
        self._ids: dict[Any, int] = {}
        self._raw_cache: dict[Any, int | tuple[str]] = {}

    def _provisional(self, key: int | str) -> int:
        pid = self._ids.get(key)
        if pid is None:
            if self.fixed is not None:
                if isinstance(key, str) and key in self._by_name:
                    pid = self._by_name[key]
                else:
                    k = key if isinstance(key, int) else _int_like(key)
                    if k is None:
                        raise ValueError(
                            Problem(
                                f"label {key!r} is not one of --class-names "
                                f"({', '.join(self.fixed)})",
                                option="--class-names",
                                value=",".join(self.fixed),
                            )
                        )
                    if k >= len(self.fixed):
                        raise ValueError(
                            Problem(
                                f"label {k} is out of range for {len(self.fixed)} --class-names",
                                option="--class-names",
                                value=",".join(self.fixed),
                            )
                        )
                    pid = k
            else:
                if len(self.keys) >= MAX_CLASSES:
                    raise UserError(
                        f"the labels have more than {MAX_CLASSES} distinct values; check "
                        "--label-field (is it the data column?)",
                        option="--label-field",
                    )
                pid = len(self.keys)
                self.keys.append(key)
            self._ids[key] = pid
        return pid

    def _int_ids(self, labels: IntLabels) -> tuple[np.ndarray, list[tuple[int, str]]]:
        """``ids`` of an ``IntLabels``: what the array path below gives for the same ints
        (or their strings): the distinct values mapped once each, in sorted order."""
        codes = labels.codes
        if not len(codes):
            return np.empty(0, np.int32), []
        hi = int(codes.max())
        if hi < 1 << 16:  # the usual few small labels: no sort
            uniq = np.flatnonzero(np.bincount(codes, minlength=hi + 1))
        else:
            uniq = np.unique(codes)
        values: list[Any] = uniq.tolist()
        order: list[int] = list(range(len(values)))
        if labels.text:
            values = [str(v) for v in values]
            order = sorted(order, key=values.__getitem__)  # as np.unique sorts the strings
        mapped = np.full(len(values), -1, dtype=np.int32)
        problems: dict[int, str] = {}
        for j in order:
            try:
                mapped[j] = self._provisional(normalize(values[j]))
            except ValueError as exc:
                problems[int(uniq[j])] = _problem(exc)
        if hi < 1 << 16:
            table = np.full(hi + 1, -1, dtype=np.int32)
            table[uniq] = mapped
            out = table[codes]
        else:
            out = mapped[np.searchsorted(uniq, codes)]
        errors = []
        if problems:
            errors = [(int(i), problems[int(codes[i])]) for i in np.flatnonzero(out < 0)]
        return out, errors

    def ids(
        self, labels: Sequence[Any] | np.ndarray | IntLabels
    ) -> tuple[np.ndarray, list[tuple[int, str]]]:
        """Provisional ids of a chunk's labels; rows with a bad label get -1 and an error."""
        if isinstance(labels, IntLabels):
            return self._int_ids(labels)
        n = len(labels)
        out = np.full(n, -1, dtype=np.int32)
        errors: list[tuple[int, str]] = []
        if not isinstance(labels, np.ndarray) and n:
            labels = _as_array(labels)
        if isinstance(labels, np.ndarray) and labels.dtype.kind in "iuUS":
            uniq, inv = np.unique(labels, return_inverse=True)
            mapped = np.full(len(uniq), -1, dtype=np.int32)
            problems: dict[int, str] = {}
            for j, u in enumerate(uniq.tolist()):
                try:
                    mapped[j] = self._provisional(normalize(u))
                except ValueError as exc:
                    problems[j] = _problem(exc)
            out = mapped[inv.reshape(-1)]
            if problems:
                errors = [(int(i), problems[int(inv[i])]) for i in np.flatnonzero(out < 0)]
            return out, errors
        cache = self._raw_cache
        for i, v in enumerate(labels):
            plain = type(v) is int or type(v) is str
            hit = cache.get(v) if plain else None
            if hit is None:
                try:
                    pid = self._provisional(normalize(v))
                except ValueError as exc:
                    hit = (_problem(exc),)
                else:
                    hit = pid
                if plain:
                    cache[v] = hit
            if isinstance(hit, tuple):
                errors.append((i, hit[0]))
            else:
                out[i] = hit
        return out, errors

    def mixed(self, rows: Sequence[int]) -> Problem | None:
        """A warning when the labels mix whole numbers with other text (one ``"1.0"`` among
        0..11 makes every label a name, sorted as text: label 10 becomes class 2), naming
        the fewer kind's values and the rows that hold them (``rows``: rows per key)."""
        if self.fixed is not None or not self.keys:
            return None
        ints = [k for k in self.keys if isinstance(k, int) or _int_like(k) is not None]
        if not ints or len(ints) == len(self.keys):
            return None
        count = {k: rows[i] if i < len(rows) else 0 for i, k in enumerate(self.keys)}
        texts = [k for k in self.keys if k not in ints]
        n_int = sum(count[k] for k in ints)
        n_text = sum(count[k] for k in texts)
        odd, odd_rows, other = (texts, n_text, "whole numbers") if n_text <= n_int else (
            ints, n_int, "names")  # fmt: skip
        shown = ", ".join(f"{str(k)!r} ({count[k]:,} row{'s' if count[k] != 1 else ''})"
                          for k in sorted(odd, key=str)[:5])  # fmt: skip
        more = f" and {len(odd) - 5} more" if len(odd) > 5 else ""
        total = f", {odd_rows:,} rows in all" if len(odd) > 1 else ""
        return Problem(
            f"the labels mix {other} with other values: {shown}{more}{total}; every label is taken as a name and the classes are sorted as text "
            f"({', '.join(self.finish()[0][:6])}, ...). Fix those rows, or give --class-names",
            option="--class-names",
            fix="Fix those rows, or give --class-names",
        )

    def finish(self) -> tuple[list[str], np.ndarray]:
        """Class names and the provisional-id -> class-index lookup table."""
        if self.fixed is not None:
            return list(self.fixed), np.arange(len(self.fixed), dtype=np.int32)
        ints = [k if isinstance(k, int) else _int_like(k) for k in self.keys]
        if all(i is not None for i in ints):
            values = [int(i) for i in ints if i is not None]
            k = max(values, default=0) + 1
            if k > MAX_CLASSES:
                raise UserError(
                    f"label {k - 1} would make {k} classes; check --label-field, or give "
                    "string labels or --class-names",
                    option="--class-names",
                    fix="check --label-field, or give string labels or --class-names",
                )
            return [str(i) for i in range(k)], np.asarray(values, dtype=np.int32)
        names = sorted({str(key) for key in self.keys})
        index = {n: i for i, n in enumerate(names)}
        return names, np.asarray([index[str(key)] for key in self.keys], dtype=np.int32)
