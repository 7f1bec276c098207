"""``Dataset``: open a dataset by its index path and read its committed rows.

Uncompressed shards are read through read-only memmaps at the datasets' byte offsets
(no h5py, no global lock, safe while a writer appends); compressed shards through h5py.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import DatasetError
from .columns import GROUP, check_columns, dtype_text
from .format import FORMAT_NAME, FORMAT_VERSION, LABEL_DTYPE, X, Y, shard_relpath
from .index import SINGLE_FILE, ShardTable, read_manifest
from .shard_meta import (
    ShardMeta,
    check_shard_size,
    open_h5,
    raw_arrays,
    read_shard_meta,
)
from .shard_stats import ShardStats
from .vouching import check_listed

#: Shards whose arrays (memmaps or open h5py files) a Dataset keeps at once: a reader's
#: memory and file handles do not grow with the shard count.
OPEN_SHARDS = 64

IMPORT_HINT = "Import it with 'guiapp import SRC OUT.h5 --format ...' (see 'guiapp import --help')"


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray) and v.shape == ():
        return _text(v[()])
    return str(v)


class ShardList(Sequence[ShardMeta]):
    """A dataset's shards as ``ShardMeta``, made from the manifest table when asked for."""

    def __init__(self, ds: Dataset, table: ShardTable, from_files: dict[int, ShardMeta]) -> None:
        self.ds = ds
        self.table = table
        self.from_files = from_files

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, k: int) -> ShardMeta:  # type: ignore[override]
        if not isinstance(k, (int, np.integer)):
            raise TypeError("shards are indexed by number")
        k = int(k)
        if k < 0:
            k += len(self.table)
        if not 0 <= k < len(self.table):
            raise IndexError(f"shard {k} is out of range for {len(self.table)} shards")
        m = self.from_files.get(k)
        if m is not None:
            return m
        r = self.table.rec[k]
        ds = self.ds
        xo, yo = int(r["x_offset"]), int(r["y_offset"])
        return ShardMeta(
            path=ds._path_of(k, ds._files, int(r["number"])),
            number=int(r["number"]),
            capacity=int(r["capacity"]),
            committed=int(r["committed"]),
            sample_shape=ds.sample_shape,
            dtype=ds.dtype,
            x_offset=None if xo < 0 else xo,
            y_offset=None if yo < 0 else yo,
            compression=ds.compression,
            dataset_uuid=ds.uuid,
            content_hash=r["content_hash"].decode("ascii").strip(),
            stats=ShardStats(
                class_counts=self.table.counts[k].copy(),
                value_sum=float(r["value_sum"]),
                value_sumsq=float(r["value_sumsq"]),
                value_min=float(r["value_min"]),
                value_max=float(r["value_max"]),
                nonfinite=int(r["nonfinite"]),
            ),
        )

    def __iter__(self) -> Iterator[ShardMeta]:
        for k in range(len(self.table)):
            yield self[k]


class Dataset:
    """A dataset's committed rows, as one array of ``len(ds)`` samples.

    >>> ds = Dataset("cells.h5")
    >>> len(ds), ds.sample_shape, ds.class_names
    >>> x, y = ds.read_range(0, 1024)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise DatasetError(self.path, "does not exist", "Check the path")
        if self.path.is_dir():
            raise DatasetError(
                self.path, "is a folder, not a dataset file", "Give the path of NAME.h5"
            )
        with open_h5(self.path, "r", locking=False) as f:
            a = dict(f.attrs)
            if _text(a.get("format", "")) != FORMAT_NAME:
                raise DatasetError(
                    self.path,
                    "is an HDF5 file but not a guiapp dataset (no format='guiapp-dataset' attribute)",
                    IMPORT_HINT,
                )
            version = int(a.get("format_version", 0))
            if version > FORMAT_VERSION:
                raise DatasetError(
                    self.path,
                    f"has format_version {version}, newer than this guiapp supports ({FORMAT_VERSION})",
                    "Update guiapp to open it",
                )
            try:
                self.uuid = _text(a["uuid"])
                self.layout = _text(a["layout"])
                self.sample_shape = tuple(int(s) for s in np.asarray(a["sample_shape"]).reshape(-1))
                self.dtype = np.dtype(_text(a["dtype"]))
                self.class_names = [_text(c) for c in np.asarray(a["class_names"]).reshape(-1)]
                self.shard_capacity = int(a["shard_capacity"])
                comp = _text(a["compression"])
                self.compression = None if comp == "none" else comp
                self.provenance: dict[str, Any] = json.loads(_text(a["provenance"]))
                self.created = _text(a["created"])
                self.statistics: dict[str, Any] = json.loads(_text(a.get("statistics", "{}")))
                self.complete = bool(int(a["complete"]))
                #: Per-row columns (``columns.py``): name -> dtype; empty before version 3.
                self.columns: dict[str, np.dtype] = check_columns(
                    json.loads(_text(a.get("columns", "{}")))
                )
                #: Rows of a group never cross a multiple of this many rows (0: no promise).
                self.group_blocks = int(a.get("group_blocks", 0))
                table, files = read_manifest(f, len(self.class_names))
            except (KeyError, ValueError, TypeError) as exc:
                raise DatasetError(
                    self.path,
                    f"has a damaged header ({exc})",
                    "Regenerate or re-import the dataset",
                ) from None
        self.format_version = version
        self._folder = self.path.parent.resolve()
        self._files = files
        self._shard_list = ShardList(self, table, self._open_entries(table, files))
        self._check_listed()
        if self.layout == "single" and len(table):
            self.complete = bool(table.rec["content_hash"][0].strip())
        self.starts = np.concatenate([[0], np.cumsum(table.rec["committed"], dtype=np.int64)])
        self._arrays: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
        self._h5: dict[int, h5py.File] = {}

    def _open_entries(self, table: ShardTable, files: list[str] | None) -> dict[int, ShardMeta]:
        """Read the shards the manifest cannot vouch for (unsealed ones) from their files.

        Sealed entries are trusted for their counts and statistics as listed (their files
        are vouched for by ``_check_listed``, which reads no rows).
        """
        rec = table.rec
        metas: dict[int, ShardMeta] = {}
        unsealed = np.flatnonzero(
            (rec["committed"] != rec["capacity"]) & (rec["content_hash"] == b"")
        )
        for k in unsealed.tolist():
            if files is not None and files[k] == SINGLE_FILE:
                m = read_shard_meta(self.path, expect_uuid=self.uuid)
            else:
                path = self._path_of(k, files, int(rec["number"][k]))
                if not path.exists():
                    if int(rec["committed"][k]) == 0:
                        continue  # listed before any row went in (a job killed right after)
                    raise DatasetError(
                        path,
                        f"is missing (shard {int(rec['number'][k])} of {self.path.name})",
                        "Restore the shard file or regenerate the dataset",
                    )
                m = read_shard_meta(path, expect_uuid=self.uuid)
            metas[k] = m
            table.set(k, m)  # widens the counts if the shard has more classes than named
        if files is not None and files and files[0] == SINGLE_FILE and 0 not in metas:
            m = read_shard_meta(self.path, expect_uuid=self.uuid)
            metas[0] = m
            table.set(0, m)
        return metas

    def _check_listed(self) -> None:
        """Vouch for every shard the manifest lists as sealed (``vouching.check_listed``)."""
        check_listed(self)

    def _path_of(self, k: int, files: list[str] | None, number: int) -> Path:
        if files is not None:
            f = files[k]
            return self.path.resolve() if f == SINGLE_FILE else (self.path.parent / f).resolve()
        return self._folder / shard_relpath(self.path, number)

    @property
    def shards(self) -> ShardList:
        """The shards' metadata, made on demand (``len``, index, iterate)."""
        return self._shard_list

    @property
    def _table(self) -> ShardTable:
        return self._shard_list.table

    def verify_files(self) -> int:
        """Check every shard with rows exists and is long enough; return the bytes on disk.

        One ``stat`` per shard and no shard opened, so it costs the same per shard at any
        shard count.
        """
        rec = self._table.rec
        xo, yo, cap = rec["x_offset"], rec["y_offset"], rec["capacity"]
        need = np.maximum(xo + cap * self.row_nbytes, yo + cap * LABEL_DTYPE.itemsize)
        need[(xo < 0) | (yo < 0)] = 0
        total = os.stat(self.path).st_blocks * 512
        seen = {str(self.path.resolve())}
        numbers, committed = rec["number"].tolist(), rec["committed"].tolist()
        for k, number in enumerate(numbers):
            path = self._path_of(k, self._files, number)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                if committed[k] == 0:
                    continue
                raise DatasetError(
                    path,
                    f"is missing (shard {number} of {self.path.name})",
                    "Restore the shard file or regenerate the dataset",
                ) from None
            if st.st_size < need[k]:
                check_shard_size(self.shards[k])  # words the error
            if str(path) not in seen:
                total += st.st_blocks * 512
        return int(total)

    # -- size and schema --------------------------------------------------------
    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def has_groups(self) -> bool:
        """Whether rows carry a group (else each row is its own group)."""
        return GROUP in self.columns

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def row_nbytes(self) -> int:
        return int(np.prod(self.sample_shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def class_counts(self) -> np.ndarray:
        counts = self._table.counts
        if counts.shape[1] > self.num_classes and counts[:, self.num_classes :].any():
            k = int(np.flatnonzero(counts[:, self.num_classes :].any(axis=1))[0])
            c = self.shards[k].stats.class_counts
            last = int(np.flatnonzero(c)[-1])
            raise DatasetError(
                self.shards[k].path,
                f"holds labels up to {last}, but the dataset names only {self.num_classes} classes",
                "Fix class_names or re-import the data",
            )
        total = np.zeros(self.num_classes, dtype=np.int64)
        w = min(self.num_classes, counts.shape[1])
        total[:w] = counts[:, :w].sum(axis=0)
        return total

    def value_stats(self) -> dict[str, float | None]:
        n = len(self) * int(np.prod(self.sample_shape))
        rec = self._table.rec
        bad = int(rec["nonfinite"].sum())
        if np.isnan(rec["value_sum"]).any():  # written with value statistics off
            return {"mean": None, "std": None, "min": None, "max": None, "nonfinite": float(bad)}
        good = max(1, n - bad)
        mean = float(rec["value_sum"].sum()) / good
        var = max(0.0, float(rec["value_sumsq"].sum()) / good - mean * mean)
        empty = not len(rec)
        return {
            "mean": mean,
            "std": float(np.sqrt(var)),
            "min": float("nan") if empty else float(rec["value_min"].min()),
            "max": float("nan") if empty else float(rec["value_max"].max()),
            "nonfinite": float(bad),
        }

    def size_on_disk(self) -> int:
        return self.verify_files()

    # -- reading ------------------------------------------------------------------
    def shard_arrays(self, k: int) -> tuple[Any, Any]:
        """``(x, y)`` of shard ``k``'s committed rows: memmaps, or h5py datasets if compressed."""
        hit = self._arrays.get(k)
        if hit is not None:
            self._arrays.move_to_end(k)
            return hit
        if True:
            s = self.shards[k]
            if s.committed == 0:
                arrs: tuple[Any, Any] = (
                    np.empty((0, *self.sample_shape), self.dtype),
                    np.empty((0,), LABEL_DTYPE),
                )
            elif s.x_offset is not None and s.y_offset is not None:
                check_shard_size(s)
                arrs = raw_arrays(
                    s.path, s.x_offset, s.y_offset, s.committed, self.sample_shape, self.dtype
                )
            else:
                f = open_h5(s.path, "r", locking=False)
                self._h5[k] = f
                arrs = (f[X], f[Y])
            self._arrays[k] = arrs
            while len(self._arrays) > OPEN_SHARDS:
                old, _ = self._arrays.popitem(last=False)
                f = self._h5.pop(old, None)
                if f is not None:
                    f.close()
        return arrs

    def locate(self, i: int) -> tuple[int, int]:
        """Global row -> (shard number, row within shard)."""
        k = int(np.searchsorted(self.starts, i, side="right")) - 1
        return k, int(i - self.starts[k])

    def read(self, i: int) -> tuple[np.ndarray, int]:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"row {i} is out of range for {n} rows")
        i %= n
        k, j = self.locate(i)
        x, y = self.shard_arrays(k)
        return np.array(x[j]), int(y[j])

    def read_range(
        self, a: int, b: int, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``[a, b)`` as new arrays (``x`` into ``out`` when given)."""
        n = len(self)
        a, b = max(0, a), min(n, b)
        b = max(a, b)
        x = out[: b - a] if out is not None else np.empty((b - a, *self.sample_shape), self.dtype)
        y = np.empty((b - a,), LABEL_DTYPE)
        at = a
        while at < b:
            k, j = self.locate(at)
            xs, ys = self.shard_arrays(k)
            m = min(b - at, self.shards[k].committed - j)
            x[at - a : at - a + m] = xs[j : j + m]
            y[at - a : at - a + m] = ys[j : j + m]
            at += m
        return x, y

    def read_labels(self, a: int = 0, b: int | None = None) -> np.ndarray:
        b = len(self) if b is None else b
        out = np.empty((max(0, b - a),), LABEL_DTYPE)
        at = a
        while at < b:
            k, j = self.locate(at)
            ys = self.shard_arrays(k)[1]
            m = min(b - at, self.shards[k].committed - j)
            out[at - a : at - a + m] = ys[j : j + m]
            at += m
        return out

    def iter_blocks(
        self, block_rows: int, start: int = 0, stop: int | None = None
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Yield ``(first_row, x, y)`` for consecutive blocks of ``block_rows`` rows."""
        stop = len(self) if stop is None else min(stop, len(self))
        for a in range(start, stop, block_rows):
            x, y = self.read_range(a, min(stop, a + block_rows))
            yield a, x, y

    def info(self) -> dict[str, Any]:
        """The header and counts; checks every shard file exists and is long enough."""
        counts = self.class_counts
        rec = self._table.rec
        return {
            "path": str(self.path),
            "format_version": self.format_version,
            "rows": len(self),
            "sample_shape": list(self.sample_shape),
            "dtype": self.dtype.name,
            "classes": [
                {"index": i, "name": n, "count": int(c)}
                for i, (n, c) in enumerate(zip(self.class_names, counts, strict=True))
            ],
            "layout": self.layout,
            "shards": len(self.shards),
            "sealed_shards": int(np.count_nonzero(rec["committed"] == rec["capacity"])),
            "shard_capacity": self.shard_capacity,
            "compression": self.compression or "none",
            "complete": self.complete,
            "data_bytes": len(self) * (self.row_nbytes + LABEL_DTYPE.itemsize),
            "size_on_disk": self.size_on_disk(),
            "values": self.value_stats(),
            "created": self.created,
            "provenance": self.provenance,
            "statistics": self.statistics,
            "columns": {k: dtype_text(v) for k, v in self.columns.items()},
            "group_blocks": self.group_blocks,
        }

    def close(self) -> None:
        self._arrays.clear()
        for f in self._h5.values():
            f.close()
        self._h5.clear()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_info(path: str | Path) -> dict[str, Any]:
    """A dataset's header as :meth:`Dataset.info` gives it, the file closed again."""
    with Dataset(path) as ds:
        return ds.info()
