"""``Dataset``: open a dataset by its index path and read its committed rows.

Uncompressed shards are read through read-only memmaps at the datasets' byte offsets
(no h5py, no global lock, safe while a writer appends); compressed shards through h5py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import DatasetError
from .format import FORMAT_NAME, FORMAT_VERSION, LABEL_DTYPE, X, Y
from .index import SINGLE_FILE
from .shard_meta import ShardMeta, check_shard_size, open_h5, raw_arrays, read_shard_meta
from .shard_stats import ShardStats

IMPORT_HINT = "Import it with 'guiapp import SRC OUT.h5 --format ...' (see 'guiapp import --help')"


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray) and v.shape == ():
        return _text(v[()])
    return str(v)


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
                manifest = json.loads(_text(a["shards"]))
                self.complete = bool(int(a["complete"]))
            except (KeyError, ValueError, TypeError) as exc:
                raise DatasetError(
                    self.path,
                    f"has a damaged header ({exc})",
                    "Regenerate or re-import the dataset",
                ) from None
        self.format_version = version
        self.shards: list[ShardMeta] = [self._shard(e) for e in manifest]
        if self.layout == "single" and self.shards:
            self.complete = bool(self.shards[0].content_hash)
        counts = [s.committed for s in self.shards]
        self.starts = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self._arrays: dict[int, tuple[Any, Any]] = {}
        self._h5: dict[int, h5py.File] = {}

    def _shard(self, e: dict[str, Any]) -> ShardMeta:
        if e["file"] == SINGLE_FILE:
            return read_shard_meta(self.path, expect_uuid=self.uuid)
        path = (self.path.parent / e["file"]).resolve()
        sealed_here = e["committed"] == e["capacity"] or bool(e.get("content_hash"))
        if not path.exists():
            if e["committed"] == 0 and not sealed_here:
                # Listed before any row went in (e.g. a job killed right after creating it).
                return ShardMeta(
                    path=path,
                    number=e["number"],
                    capacity=e["capacity"],
                    committed=0,
                    sample_shape=self.sample_shape,
                    dtype=self.dtype,
                    x_offset=None,
                    y_offset=None,
                    compression=self.compression,
                    dataset_uuid=self.uuid,
                    content_hash="",
                    stats=ShardStats.empty(len(self.class_names)),
                )
            raise DatasetError(
                path,
                f"is missing (shard {e['number']} of {self.path.name})",
                "Restore the shard file or regenerate the dataset",
            )
        if not sealed_here:
            return read_shard_meta(path, expect_uuid=self.uuid)
        meta = ShardMeta(
            path=path,
            number=int(e["number"]),
            capacity=int(e["capacity"]),
            committed=int(e["committed"]),
            sample_shape=self.sample_shape,
            dtype=self.dtype,
            x_offset=e.get("x_offset"),
            y_offset=e.get("y_offset"),
            compression=self.compression,
            dataset_uuid=self.uuid,
            content_hash=str(e.get("content_hash", "")),
            stats=ShardStats.from_mapping(e["stats"]),
        )
        check_shard_size(meta)
        return meta

    # -- size and schema --------------------------------------------------------
    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def row_nbytes(self) -> int:
        return int(np.prod(self.sample_shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def class_counts(self) -> np.ndarray:
        total = np.zeros(self.num_classes, dtype=np.int64)
        for s in self.shards:
            c = s.stats.class_counts
            if len(c) > self.num_classes:
                raise DatasetError(
                    s.path,
                    f"holds labels up to {len(c) - 1}, but the dataset names only {self.num_classes} classes",
                    "Fix class_names or re-import the data",
                )
            total[: len(c)] += c
        return total

    def value_stats(self) -> dict[str, float | None]:
        n = len(self) * int(np.prod(self.sample_shape))
        st = [s.stats for s in self.shards]
        bad = sum(s.nonfinite for s in st)
        if any(np.isnan(s.value_sum) for s in st):  # written with value statistics off
            return {"mean": None, "std": None, "min": None, "max": None, "nonfinite": float(bad)}
        good = max(1, n - bad)
        total = sum(s.value_sum for s in st)
        mean = total / good
        var = max(0.0, sum(s.value_sumsq for s in st) / good - mean * mean)
        return {
            "mean": mean,
            "std": float(np.sqrt(var)),
            "min": min((s.value_min for s in st), default=float("nan")),
            "max": max((s.value_max for s in st), default=float("nan")),
            "nonfinite": float(bad),
        }

    def size_on_disk(self) -> int:
        files = {self.path, *(s.path for s in self.shards)}
        total = 0
        for p in files:
            try:
                total += p.stat().st_blocks * 512
            except FileNotFoundError:
                pass
        return total

    # -- reading ------------------------------------------------------------------
    def shard_arrays(self, k: int) -> tuple[Any, Any]:
        """``(x, y)`` of shard ``k``'s committed rows: memmaps, or h5py datasets if compressed."""
        if k not in self._arrays:
            s = self.shards[k]
            if s.committed == 0:
                arrs: tuple[Any, Any] = (
                    np.empty((0, *self.sample_shape), self.dtype),
                    np.empty((0,), LABEL_DTYPE),
                )
            elif s.x_offset is not None and s.y_offset is not None:
                arrs = raw_arrays(
                    s.path, s.x_offset, s.y_offset, s.committed, self.sample_shape, self.dtype
                )
            else:
                f = open_h5(s.path, "r", locking=False)
                self._h5[k] = f
                arrs = (f[X], f[Y])
            self._arrays[k] = arrs
        return self._arrays[k]

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
        counts = self.class_counts
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
            "sealed_shards": sum(1 for s in self.shards if s.sealed),
            "shard_capacity": self.shard_capacity,
            "compression": self.compression or "none",
            "complete": self.complete,
            "data_bytes": len(self) * (self.row_nbytes + LABEL_DTYPE.itemsize),
            "size_on_disk": self.size_on_disk(),
            "values": self.value_stats(),
            "created": self.created,
            "provenance": self.provenance,
            "statistics": self.statistics,
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
