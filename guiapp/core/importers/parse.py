"""Turn raw rows (integer strings, lists, arrays) into fixed-shape samples of the storage dtype.

Text rows are as messy as real exports: comma- or space-separated, with empty tokens from
stray commas (skipped). Rows of other lengths are padded or truncated like Keras
``pad_sequences(maxlen, padding=..., truncating=..., value=...)``. A value the storage
dtype cannot hold exactly (out of range, or not an integer for an integer dtype) is a
row error, never a silent wrap.

Every function here works on a whole chunk of rows at once and returns the good rows plus
``(index, problem)`` for the bad ones, so one bad row never costs the chunk.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Problem, UserError

_SPLIT = re.compile(r"[,\s]+")


@dataclass
class Fit:
    """How a row becomes a sample: target length, padding, truncation, storage dtype."""

    dtype: np.dtype
    length: int | None = None  # fixed 1-D length (pad/truncate); None: all rows must match
    pad: str = "post"
    truncate: str = "pre"
    pad_value: float = 0
    #: Fixed once the first good row is seen (or from ``length``).
    sample_shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        self.dtype = np.dtype(self.dtype)
        if self.pad not in ("post", "pre") or self.truncate not in ("post", "pre"):
            name = "pad" if self.pad not in ("post", "pre") else "truncate"
            raise UserError(
                "--pad and --truncate take 'post' or 'pre'",
                option=f"--{name}",
                value=getattr(self, name),
            )
        if self.length is not None:
            if self.length <= 0:
                raise UserError(
                    f"--length {self.length} must be a positive number of values",
                    option="--length",
                    value=self.length,
                )
            self.sample_shape = (self.length,)
        problem = value_problem(np.array([self.pad_value], dtype=np.float64), self.dtype)
        if problem:
            raise UserError(
                f"--pad-value {self.pad_value:g}: {problem}",
                option="--pad-value",
                value=self.pad_value,
                problem=problem,
            )


@dataclass
class Parsed:
    """The outcome of one chunk: good samples, which input rows they are, and the bad ones."""

    x: np.ndarray  # (m, *sample_shape) in the storage dtype
    rows: np.ndarray  # indices into the chunk of the good rows, ascending
    errors: list[tuple[int, str]] = field(default_factory=list)
    padded: int = 0
    truncated: int = 0
    empty: int = 0


def value_problem(values: np.ndarray, dtype: np.dtype) -> str:
    """Why ``values`` (float64 or integer) cannot be stored exactly as ``dtype``; "" if they can."""
    if values.size == 0:
        return ""
    bad = bad_value_mask(values.reshape(1, -1), dtype)
    if not bad.any():
        return ""
    i = int(np.flatnonzero(bad[0])[0])
    return _describe(values.reshape(-1)[i], i, values.size, dtype)


def _describe(v: Any, i: int, n: int, dtype: np.dtype) -> str:
    where = f"value {_fmt(v)} (item {i + 1} of {n})"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not np.isfinite(v) or float(v) != np.floor(float(v)):
            return f"{where} is not an integer ({dtype.name} data)"
        return f"{where} is out of range for {dtype.name} ({info.min}..{info.max})"
    return f"{where} is out of range for {dtype.name}"


def _fmt(v: Any) -> str:
    f = float(v)
    if np.isfinite(f) and f == int(f) and abs(f) < 2**63:
        return str(int(f))
    return repr(f)


def bad_value_mask(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Element mask of ``x`` (n, ...) that ``dtype`` cannot hold exactly."""
    src = x.dtype
    if src == dtype or np.can_cast(src, dtype, casting="safe"):
        return np.zeros(x.shape, dtype=bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if src.kind in "iub":
            return (x < info.min) | (x > info.max)
        if src.kind == "f":
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(x) | (x != np.floor(x)) | (x < info.min) | (x > info.max)
            return np.asarray(bad, dtype=bool)
        return np.ones(x.shape, dtype=bool)
    if dtype.kind == "f":
        if src.kind == "f":
            big = float(np.finfo(dtype).max)
            with np.errstate(invalid="ignore"):
                big_mask = np.isfinite(x) & (np.abs(x) > big)
            return np.asarray(big_mask, dtype=bool)
        return np.zeros(x.shape, dtype=bool)  # integers to floats: always representable in range
    return np.ones(x.shape, dtype=bool)


def _flat_rows(n: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return (n, int(np.prod(shape, dtype=np.int64)))


def clean_text(s: str) -> str:
    """``" 1, 2,,3 ,"`` -> ``"1,2,3"``; a string of plain ``d,d,d`` is returned unchanged."""
    if s[:1] == "[" and s[-1:] == "]":
        s = s[1:-1]
    if (
        ",," in s
        or s[:1] == ","
        or s[-1:] == ","
        or " " in s
        or "\t" in s
        or "\n" in s
        or "\r" in s
    ):
        return ",".join([t for t in _SPLIT.split(s) if t])
    return s


def _fromstring(text: str, parse_as: type) -> np.ndarray | None:
    if not text:
        return np.empty(0, dtype=parse_as)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return np.fromstring(text, dtype=parse_as, sep=",")
        except (ValueError, DeprecationWarning):
            return None


def _token_problem(text: str, integer: bool) -> str:
    kind = "an integer" if integer else "a number"
    for i, t in enumerate(text.split(",")):
        try:
            if "_" in t:
                raise ValueError(t)
            int(t) if integer else float(t)
        except ValueError:
            shown = t if len(t) <= 20 else t[:20] + "..."
            return f"token {shown!r} (item {i + 1}) is not {kind}"
    return f"data is not a list of {kind}s"


def parse_text_rows(texts: Sequence[str], dtype: np.dtype) -> list[np.ndarray | str]:
    """Each text row as an int64 (integer dtypes) or float64 array, or a problem string.

    Integer dtypes parse as integers (7x faster than floats, and ``2.5`` is an error);
    a number beyond int64 saturates and then fails the range check.
    """
    integer = dtype.kind in "iu"
    parse_as = np.int64 if integer else np.float64
    cleaned = [clean_text(t) for t in texts]
    counts = [c.count(",") + 1 if c else 0 for c in cleaned]
    flat = _fromstring(",".join([c for c in cleaned if c]), parse_as)
    if flat is not None and flat.size == sum(counts):
        out: list[np.ndarray | str] = []
        at = 0
        for k in counts:
            out.append(flat[at : at + k])
            at += k
        return out
    # Some row is bad: parse one by one to find which.
    result: list[np.ndarray | str] = []
    for c, k in zip(cleaned, counts, strict=True):
        a = _fromstring(c, parse_as)
        result.append(a if a is not None and a.size == k else _token_problem(c, integer))
    return result


def as_number_array(v: Any) -> np.ndarray | str:
    """A JSON list (or nested list) of numbers as an array, or a problem string."""
    if isinstance(v, np.ndarray):
        return v
    if any(isinstance(e, bool) for e in v):
        return "data holds true/false, not numbers"
    try:
        a = np.asarray(v, dtype=np.float64)
    except (ValueError, TypeError):
        return "data is not a list of numbers"
    return a


class Shaper:
    """Applies a ``Fit`` to chunks of rows; counts padded, truncated and empty rows."""

    def __init__(self, fit: Fit) -> None:
        self.fit = fit

    def _check_shape(self, shape: tuple[int, ...]) -> str:
        """ "" if a row of ``shape`` fits; else the problem. Fixes the sample shape at first use."""
        fit = self.fit
        if fit.length is not None:
            if len(shape) != 1:
                problem = (
                    f"--length pads or truncates 1-D rows, but these samples have shape "
                    f"{'x'.join(map(str, shape))}"
                )
                fix = "leave --length out"
                raise UserError(
                    f"{problem}; {fix}",
                    option="--length",
                    value=fit.length,
                    problem=problem,
                    fix=fix,
                )
            return ""
        if fit.sample_shape is None:
            if not shape or 0 in shape:
                return "has no values"
            fit.sample_shape = tuple(int(s) for s in shape)
            return ""
        if tuple(shape) != fit.sample_shape:
            if len(shape) == 1 and len(fit.sample_shape) == 1:
                return Problem(
                    f"has {shape[0]} values, but the first row has {fit.sample_shape[0]} "
                    f"(pass --length {fit.sample_shape[0]} to pad or truncate)",
                    option="--length",
                )
            hint = " (a folder of stacked samples needs --per-file stack)" if len(shape) > 1 else ""
            return (
                f"has shape {'x'.join(map(str, shape)) or 'scalar'}, but the first row has "
                f"{'x'.join(map(str, fit.sample_shape))}{hint}"
            )
        return ""

    def fit_row(self, a: np.ndarray) -> tuple[np.ndarray, int]:
        """Pad/truncate one 1-D row to ``length``; returns the row and -1/0/+1 (pad/as-is/cut)."""
        n = self.fit.length
        assert n is not None
        k = a.shape[0]
        if k == n:
            return a, 0
        if k > n:
            return (a[:n] if self.fit.truncate == "post" else a[k - n :]), 1
        pad = self.fit.pad_value
        integral = a.dtype.kind in "iub" and float(pad).is_integer()
        out = np.full(n, pad, dtype=np.int64 if integral else np.float64)
        if self.fit.pad == "post":
            out[:k] = a
        else:
            out[n - k :] = a
        return out, -1

    def shape_rows(self, rows: Sequence[np.ndarray | str | None]) -> Parsed:
        """Rows already parsed to arrays (or problem strings; None for rows to leave out)."""
        errors: list[tuple[int, str]] = []
        good: list[np.ndarray] = []
        idx: list[int] = []
        padded = truncated = empty = 0
        for i, r in enumerate(rows):
            if r is None:
                continue
            if isinstance(r, str):
                errors.append((i, r))
                continue
            problem = self._check_shape(r.shape)
            if problem:
                errors.append((i, problem))
                continue
            if self.fit.length is not None:
                if r.shape[0] == 0:
                    empty += 1
                r, how = self.fit_row(r)
                padded += how < 0
                truncated += how > 0
            good.append(r)
            idx.append(i)
        shape = self.fit.sample_shape or (0,)
        if good:
            x = (
                np.stack(good)
                if len({g.dtype for g in good}) == 1
                else np.stack([g.astype(np.float64) for g in good])
            )
        else:
            x = np.empty((0, *shape), dtype=self.fit.dtype)
        parsed = self.to_dtype(x, np.asarray(idx, dtype=np.int64))
        parsed.errors = sorted(errors + parsed.errors)
        parsed.padded, parsed.truncated, parsed.empty = padded, truncated, empty
        return parsed

    def shape_array(self, x: np.ndarray) -> Parsed:
        """A stack of samples of one shape (from ``.npy``/``.npz``): check shape and values."""
        n = x.shape[0]
        problem = self._check_shape(tuple(x.shape[1:]))
        if problem:
            return Parsed(
                x=np.empty((0, *(self.fit.sample_shape or ())), dtype=self.fit.dtype),
                rows=np.empty(0, dtype=np.int64),
                errors=[(i, problem) for i in range(n)],
            )
        if self.fit.length is not None and x.shape[1] != self.fit.length:
            return self.shape_rows(list(x))
        return self.to_dtype(np.asarray(x), np.arange(n, dtype=np.int64))

    def to_dtype(self, x: np.ndarray, rows: np.ndarray) -> Parsed:
        """Cast to the storage dtype; rows holding a value it cannot represent become errors."""
        dtype = self.fit.dtype
        n = x.shape[0]
        if x.dtype.kind not in "iufb":
            return Parsed(
                x=np.empty((0, *x.shape[1:]), dtype=dtype),
                rows=np.empty(0, dtype=np.int64),
                errors=[(int(r), f"data of dtype {x.dtype} is not numeric") for r in rows],
            )
        bad = bad_value_mask(x, dtype)
        errors: list[tuple[int, str]] = []
        if n and bad.any():
            flat_bad = bad.reshape(_flat_rows(n, x.shape[1:]))
            row_bad = flat_bad.any(axis=1)
            flat_x = x.reshape(_flat_rows(n, x.shape[1:]))
            for i in np.flatnonzero(row_bad):
                j = int(np.flatnonzero(flat_bad[i])[0])
                errors.append((int(rows[i]), _describe(flat_x[i, j], j, flat_x.shape[1], dtype)))
            keep = ~row_bad
            x, rows = x[keep], rows[keep]
        with np.errstate(invalid="ignore", over="ignore"):
            out = x.astype(dtype, copy=False)
        return Parsed(x=out, rows=rows, errors=errors)
