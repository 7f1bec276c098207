"""Per-row columns next to ``x`` and ``y``: a row's group and the fields an import kept.

A dataset may carry, per row:

- ``group`` (int64): the row's lineage (an organism, a patient, the source sample of
  augmented copies). Rows of one group are never split across train/validation/test.
  Imports give each group name the id ``group_id(name)`` (a 63-bit hash, so workers and a
  resumed job agree without sharing a table) and store the names in the index
  (``group_names``); generated datasets number their groups and have no names.
- kept fields (``int64`` or fixed-width UTF-8 bytes ``S<n>``): ``_id``, ``accession``,
  ``name``, a source file ... whatever the user named, so a prediction joins back to its
  source document.

In a shard each column is the dataset ``meta/<name>`` of shape ``(capacity,)``, allocated
and written like ``y`` (contiguous, ``os.pwrite`` at its offset, visible once
``committed`` says so). The index lists the columns in its ``columns`` attribute (JSON,
name -> dtype). A dataset without columns (format_version 1 or 2, or rows written without
lineage) has no groups: each row is its own group.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import xxhash

GROUP = "group"
GROUP_DTYPE = np.dtype("<i8")
META = "meta"
#: Index datasets of an import's group names (sorted by id).
GROUP_IDS = "group_ids"
GROUP_NAMES = "group_names"
#: The most distinct group names an import keeps a table of.
MAX_GROUPS = 2**31

_NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_.$-]{0,63}$")
_STR = re.compile(r"^S([1-9][0-9]{0,3})$")


def column_path(name: str) -> str:
    return f"{META}/{name}"


def check_column_name(name: str) -> str | None:
    """Why ``name`` cannot be a column (None when it can)."""
    if not _NAME.match(name):
        return (
            f"field name {name!r} must start with a letter, '_' or '$' and hold only letters, "
            "digits, '_', '.', '$' or '-' (at most 64)"
        )
    if name in ("x", "y"):
        return f"field name {name!r} is taken by the samples or the labels"
    return None


def column_dtype(text: str) -> np.dtype:
    """``"int64"`` or ``"S<n>"`` (1 <= n <= 9999) as a numpy dtype; ValueError otherwise."""
    if text == "int64":
        return np.dtype("<i8")
    if _STR.match(text):
        return np.dtype(text)
    raise ValueError(f"column dtype {text!r}: use int64 or S<n> (fixed-width UTF-8 bytes)")


def dtype_text(dt: np.dtype) -> str:
    return "int64" if dt.kind == "i" else f"S{dt.itemsize}"


def check_columns(columns: Mapping[str, str]) -> dict[str, np.dtype]:
    """Validated columns, ``group`` first. ValueError names what is wrong."""
    out: dict[str, np.dtype] = {}
    for name in sorted(columns, key=lambda n: (n != GROUP, n)):
        problem = check_column_name(name)
        if problem:
            raise ValueError(problem)
        dt = column_dtype(str(columns[name]))
        if name == GROUP and dt != GROUP_DTYPE:
            raise ValueError("the group column is int64")
        out[name] = dt
    return out


def group_id(names: Any) -> np.ndarray:
    """The 63-bit id of each group name (xxh3_64 of its UTF-8 bytes, sign bit cleared)."""
    out = np.empty(len(names), np.int64)
    for i, s in enumerate(names):
        b = s if isinstance(s, bytes) else str(s).encode("utf-8")
        out[i] = xxhash.xxh3_64_intdigest(b) & 0x7FFF_FFFF_FFFF_FFFF
    return out


def as_column(name: str, values: Any, dt: np.dtype, n: int) -> np.ndarray:
    """``values`` as ``n`` values of column ``name``; ValueError says which row is wrong."""
    a = np.asarray(values)
    if a.shape != (n,):
        raise ValueError(f"{name}: {a.shape} values for {n} rows (give one value per row)")
    if dt.kind == "i":
        if a.dtype.kind not in "iu" and len(a):
            raise ValueError(f"{name}: values of dtype {a.dtype} are not integers")
        return np.ascontiguousarray(a, dtype=dt)
    if a.dtype.kind == "U":
        a = np.char.encode(a, "utf-8")
    elif a.dtype.kind != "S":
        a = np.array([str(v).encode("utf-8") for v in a.tolist()], dtype=object)
        a = a.astype(np.bytes_) if len(a) else np.zeros(0, dt)
    if a.dtype.itemsize > dt.itemsize:
        long = np.flatnonzero(np.char.str_len(a) > dt.itemsize)
        if len(long):
            i = int(long[0])
            raise ValueError(
                f"{name}: value {a[i][:40]!r} of row {i} is {len(a[i])} bytes, "
                f"longer than the column's {dt.itemsize}"
            )
    return np.ascontiguousarray(a, dtype=dt)


def decode(a: np.ndarray) -> list[Any]:
    """A column's values as Python ints or strings."""
    if a.dtype.kind == "S":
        return [v.decode("utf-8", "replace") for v in a.tolist()]
    return [int(v) for v in a.tolist()]


# -- reading -----------------------------------------------------------------------------
def read_column(ds: Any, name: str, a: int = 0, b: int | None = None) -> np.ndarray:
    """Rows ``[a, b)`` of column ``name`` of an open ``Dataset`` (through h5py, shard by
    shard: not a hot path). KeyError when the dataset has no such column."""
    import h5py

    dt = ds.columns[name]
    n = len(ds)
    b = n if b is None else min(n, b)
    a = max(0, min(a, b))
    out = np.empty(b - a, dt)
    at = a
    while at < b:
        k, j = ds.locate(at)
        s = ds.shards[k]
        m = min(b - at, s.committed - j)
        with h5py.File(s.path, "r", locking=False) as f:
            out[at - a : at - a + m] = f[column_path(name)][j : j + m]
        at += m
    return out


def read_rows(ds: Any, name: str, rows: np.ndarray) -> np.ndarray:
    """Column ``name`` at the given dataset rows (any order)."""
    rows = np.asarray(rows, np.int64)
    out = np.empty(len(rows), ds.columns[name])
    if not len(rows):
        return out
    order = np.argsort(rows, kind="stable")
    srt = rows[order]
    shard = np.searchsorted(ds.starts, srt, side="right") - 1
    import h5py

    for k in np.unique(shard).tolist():
        sel = np.flatnonzero(shard == k)
        local = srt[sel] - int(ds.starts[k])
        with h5py.File(ds.shards[k].path, "r", locking=False) as f:
            d = f[column_path(name)]
            lo, hi = int(local[0]), int(local[-1]) + 1
            out[order[sel]] = d[lo:hi][local - lo]
    return out


def read_groups(ds: Any) -> np.ndarray | None:
    """Every row's group (int64), or None when the rows have no groups."""
    if GROUP not in ds.columns:
        return None
    return read_column(ds, GROUP)


def group_names(ds: Any) -> tuple[np.ndarray, list[str]] | None:
    """The dataset's table of group names ``(ids sorted, names)``, or None."""
    import h5py

    with h5py.File(ds.path, "r", locking=False) as f:
        if GROUP_IDS not in f or GROUP_NAMES not in f:
            return None
        ids = np.asarray(f[GROUP_IDS][()], np.int64)
        names = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in f[GROUP_NAMES][()]]
    return ids, names


def name_groups(ids: np.ndarray, table: tuple[np.ndarray, list[str]] | None) -> list[str]:
    """A display name per group id: its name in the table, else ``#<id>``."""
    if table is None:
        return [f"#{int(i)}" for i in ids]
    tid, tnames = table
    at = np.clip(np.searchsorted(tid, ids), 0, max(0, len(tid) - 1))
    found = (len(tid) > 0) & (tid[at] == ids) if len(tid) else np.zeros(len(ids), bool)
    return [tnames[a] if f else f"#{int(i)}" for a, f, i in zip(at, found, ids, strict=True)]


#: ``info`` summarises groups only up to this many rows (it reads 8 bytes a row).
SUMMARY_MAX_ROWS = 100_000_000


def group_summary(ds: Any) -> dict[str, Any]:
    """What ``info`` says of a dataset's lineage: groups and rows per group, kept fields."""
    fields = [k for k in ds.columns if k != GROUP]
    if GROUP not in ds.columns:
        return {"groups": None, "kept_fields": fields}
    if len(ds) > SUMMARY_MAX_ROWS:
        return {
            "groups": "not counted (over 10^8 rows: see check --leakage)",
            "kept_fields": fields,
        }
    g = read_column(ds, GROUP)
    _, sizes = np.unique(g, return_counts=True)
    return {
        "groups": int(len(sizes)),
        "rows_per_group": {
            "min": int(sizes.min()) if len(sizes) else 0,
            "median": float(np.median(sizes)) if len(sizes) else 0.0,
            "max": int(sizes.max()) if len(sizes) else 0,
        },
        "kept_fields": fields,
    }


def row_lineage(path: Any, row: int) -> dict[str, Any]:
    """A row's group (id and name) and kept fields, for the Browser's sample detail."""
    from .dataset import Dataset

    with Dataset(path) as ds:
        rows = np.array([row], np.int64)
        out: dict[str, Any] = {"row": row, "group": None, "group_name": None, "fields": {}}
        for name in ds.columns:
            value = decode(read_rows(ds, name, rows))[0]
            if name == GROUP:
                out["group"] = value
                out["group_name"] = name_groups(np.array([value]), group_names(ds))[0]
            else:
                out["fields"][name] = value
    return out


def group_rows(path: Any, group: int) -> np.ndarray:
    """The dataset rows of one group, in order."""
    from .dataset import Dataset

    with Dataset(path) as ds:
        g = read_groups(ds)
    return np.zeros(0, np.int64) if g is None else np.flatnonzero(g == group).astype(np.int64)
