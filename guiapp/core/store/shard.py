"""One shard file: fixed capacity, contiguous rows, a ``committed`` counter readers trust.

A shard is created complete (datasets allocated, attributes present, file extended to its
final size) under a temporary name and renamed into place, so it always opens. Rows are
then written with ``os.pwrite`` at the datasets' byte offsets (uncompressed shards) or
through h5py (compressed ones); ``commit()`` makes them visible by rewriting fixed-size
attributes in place after the data is written. A process killed at any moment therefore
leaves a shard whose first ``committed`` rows are exactly what was written.
"""

from __future__ import annotations

import contextlib
import os
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xxhash

from ..errors import DatasetError
from .format import (
    FORMAT_VERSION,
    LABEL_DTYPE,
    SHARD_FORMAT_NAME,
    X,
    Y,
    row_nbytes,
)

HASH_CHUNK_ROWS = 1 << 14


@dataclass
class ShardStats:
    """Running statistics of the committed rows of one shard."""

    class_counts: np.ndarray
    value_sum: float = 0.0
    value_sumsq: float = 0.0
    value_min: float = float("inf")
    value_max: float = float("-inf")
    nonfinite: int = 0

    @classmethod
    def empty(cls, num_classes: int) -> ShardStats:
        return cls(class_counts=np.zeros(num_classes, dtype=np.int64))

    def update(self, x: np.ndarray, y: np.ndarray, values: bool = True) -> None:
        self.class_counts += np.bincount(y, minlength=len(self.class_counts))[
            : len(self.class_counts)
        ]
        if not values:  # counts only: value statistics are marked "not recorded"
            self.value_sum = self.value_sumsq = float("nan")
            return
        if x.size == 0:
            return
        flat = x.reshape(-1)
        lo, hi = flat.min(), flat.max()  # NaN or Inf show up here: only then look closer
        if flat.dtype.kind == "f" and not (np.isfinite(lo) and np.isfinite(hi)):
            finite = np.isfinite(flat)
            self.nonfinite += int(flat.size - np.count_nonzero(finite))
            flat = flat[finite]
            if flat.size == 0:
                return
            lo, hi = flat.min(), flat.max()
        self.value_min = min(self.value_min, float(lo))
        self.value_max = max(self.value_max, float(hi))
        self.value_sum += float(flat.sum(dtype=np.float64))
        # Sum of squares in float32 chunks (BLAS dot), accumulated in float64.
        work = flat if flat.dtype.kind == "f" and flat.dtype.itemsize >= 4 else None
        step = 1 << 16
        for s in range(0, flat.size, step):
            part = flat[s : s + step] if work is not None else flat[s : s + step].astype(np.float64)
            self.value_sumsq += float(np.dot(part, part))

    def to_attrs(self) -> dict[str, Any]:
        return {
            "class_counts": self.class_counts.astype(np.int64),
            "value_sum": np.float64(self.value_sum),
            "value_sumsq": np.float64(self.value_sumsq),
            "value_min": np.float64(self.value_min),
            "value_max": np.float64(self.value_max),
            "nonfinite": np.int64(self.nonfinite),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "class_counts": [int(c) for c in self.class_counts],
            "value_sum": self.value_sum,
            "value_sumsq": self.value_sumsq,
            "value_min": self.value_min,
            "value_max": self.value_max,
            "nonfinite": self.nonfinite,
        }

    @classmethod
    def from_mapping(cls, m: Any) -> ShardStats:
        return cls(
            class_counts=np.asarray(m["class_counts"], dtype=np.int64).copy(),
            value_sum=float(m["value_sum"]),
            value_sumsq=float(m["value_sumsq"]),
            value_min=float(m["value_min"]),
            value_max=float(m["value_max"]),
            nonfinite=int(m["nonfinite"]),
        )


@dataclass
class ShardMeta:
    """What a reader needs to know about one shard, without reading its rows."""

    path: Path
    number: int
    capacity: int
    committed: int
    sample_shape: tuple[int, ...]
    dtype: np.dtype
    x_offset: int | None  # None when compressed (read through h5py)
    y_offset: int | None
    compression: str | None
    dataset_uuid: str
    content_hash: str
    stats: ShardStats = field(repr=False, default_factory=lambda: ShardStats.empty(0))

    @property
    def sealed(self) -> bool:
        return self.committed == self.capacity

    def to_json(self, relpath: str) -> dict[str, Any]:
        return {
            "file": relpath,
            "number": self.number,
            "capacity": self.capacity,
            "committed": self.committed,
            "x_offset": self.x_offset,
            "y_offset": self.y_offset,
            "content_hash": self.content_hash,
            "stats": self.stats.to_json(),
        }


def _dcpl_contiguous() -> Any:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    return dcpl


def create_shard_datasets(
    f: h5py.File,
    *,
    capacity: int,
    sample_shape: tuple[int, ...],
    dtype: np.dtype,
    compression: str | None,
) -> None:
    """Create ``x`` and ``y`` in an open file, allocated now, never filled."""
    if compression is None:
        f.create_dataset(
            X,
            shape=(capacity, *sample_shape),
            dtype=dtype,
            dcpl=_dcpl_contiguous(),
            track_times=False,
        )
        f.create_dataset(
            Y, shape=(capacity,), dtype=LABEL_DTYPE, dcpl=_dcpl_contiguous(), track_times=False
        )
    else:
        chunk_rows = max(1, min(capacity, (1 << 20) // max(1, row_nbytes(sample_shape, dtype))))
        f.create_dataset(
            X,
            shape=(capacity, *sample_shape),
            dtype=dtype,
            chunks=(chunk_rows, *sample_shape),
            compression=compression,
            shuffle=np.dtype(dtype).itemsize > 1,
            track_times=False,
        )
        f.create_dataset(
            Y,
            shape=(capacity,),
            dtype=LABEL_DTYPE,
            chunks=(max(chunk_rows, 1024) if capacity >= 1024 else capacity,),
            compression=compression,
            track_times=False,
        )


def init_commit_attrs(attrs: Any, num_classes: int, dataset_uuid: str) -> None:
    """Attributes a writer later rewrites in place: created once with their final sizes."""
    attrs["committed"] = np.int64(0)
    for k, v in ShardStats.empty(num_classes).to_attrs().items():
        attrs[k] = v
    attrs["content_hash"] = np.bytes_(b" " * 64)
    attrs["dataset_uuid"] = np.bytes_(dataset_uuid.encode("ascii").ljust(36)[:36])


HASH_NAME = "xxh3_128"


def content_hash(x: np.ndarray, y: np.ndarray) -> str:
    """``"xxh3_128:<hex>"`` of the rows' bytes: all of ``x`` (C order), then all of ``y``.

    XXH3 runs at memory speed (~15 GB/s here, sha256 ~1.3 GB/s), so sealing a shard
    costs little next to writing it; it detects corruption, it is not a signature.
    """
    h = xxhash.xxh3_128()
    for a in (x, y):
        for s in range(0, len(a), HASH_CHUNK_ROWS):
            h.update(np.ascontiguousarray(a[s : s + HASH_CHUNK_ROWS]).data.cast("B"))
    return f"{HASH_NAME}:{h.hexdigest()}"


def _open_h5(path: Path, mode: str, *, locking: bool | None = None) -> h5py.File:
    kw: dict[str, Any] = {}
    if locking is not None:
        kw["locking"] = locking
    try:
        return h5py.File(path, mode, **kw)
    except FileNotFoundError:
        raise DatasetError(path, "does not exist", "Check the path") from None
    except (OSError, ValueError) as exc:
        text = str(exc)
        if "truncated file" in text:
            raise DatasetError(
                path,
                "is truncated (the file is shorter than its HDF5 header says)",
                "Copy it again or regenerate the dataset",
            ) from None
        if "lock" in text.lower() and "unable" in text.lower():
            raise DatasetError(
                path, "is locked by another process", "Wait for the job writing it to finish"
            ) from None
        if "signature" in text or "not an HDF5" in text.lower():
            raise DatasetError(
                path,
                "is not an HDF5 file",
                "Import your data with 'guiapp import SRC OUT.h5 --format ...' (see 'guiapp import --help')",
            ) from None
        if "ermission denied" in text:
            raise DatasetError(
                path, "cannot be opened: permission denied", "Check the file's permissions"
            ) from None
        raise DatasetError(
            path, f"cannot be opened as HDF5 ({text})", "Check that the file is intact"
        ) from None


def read_shard_meta(path: Path, *, expect_uuid: str | None = None) -> ShardMeta:
    """Open a shard read-only (no lock, so a live writer is fine) and read its header."""
    f = _open_h5(path, "r", locking=False)
    with f:
        a = f.attrs
        if a.get("format") not in (SHARD_FORMAT_NAME, "guiapp-dataset"):
            raise DatasetError(
                path, "is not a guiapp shard (no 'format' attribute)", "Regenerate the dataset"
            )
        version = int(a.get("format_version", 0))
        if version > FORMAT_VERSION:
            raise DatasetError(
                path,
                f"has format_version {version}, newer than this guiapp supports ({FORMAT_VERSION})",
                "Update guiapp",
            )
        if X not in f or Y not in f:
            raise DatasetError(path, "has no 'x' and 'y' datasets", "Regenerate the dataset")
        x, y = f[X], f[Y]
        compression = x.compression
        x_off = y_off = None
        if compression is None and x.chunks is None:
            x_off, y_off = x.id.get_offset(), y.id.get_offset()
            if x_off is None or y_off is None:
                raise DatasetError(path, "has unallocated data", "Regenerate the dataset")
        uuid = a["dataset_uuid"]
        uuid = (uuid.decode("ascii") if isinstance(uuid, bytes) else str(uuid)).strip()
        if expect_uuid is not None and uuid != expect_uuid:
            raise DatasetError(
                path,
                "belongs to another dataset (its dataset_uuid differs from the index)",
                "Remove the stray shard folder or regenerate the dataset",
            )
        sha = a["content_hash"]
        sha = (sha.decode("ascii") if isinstance(sha, bytes) else str(sha)).strip()
        meta = ShardMeta(
            path=path,
            number=int(a.get("number", 0)),
            capacity=int(x.shape[0]),
            committed=int(a["committed"]),
            sample_shape=tuple(int(s) for s in x.shape[1:]),
            dtype=x.dtype,
            x_offset=x_off,
            y_offset=y_off,
            compression=compression,
            dataset_uuid=uuid,
            content_hash=sha,
            stats=ShardStats.from_mapping(a),
        )
    check_shard_size(meta)
    return meta


def check_shard_size(meta: ShardMeta) -> None:
    """A contiguous shard must be long enough to hold its full capacity."""
    if meta.x_offset is None or meta.y_offset is None:
        return
    need = max(
        meta.x_offset + meta.capacity * row_nbytes(meta.sample_shape, meta.dtype),
        meta.y_offset + meta.capacity * LABEL_DTYPE.itemsize,
    )
    try:
        size = meta.path.stat().st_size
    except FileNotFoundError:
        raise DatasetError(
            meta.path, "is missing", "Restore the shard file or regenerate the dataset"
        ) from None
    if size < need:
        raise DatasetError(
            meta.path,
            f"is truncated ({size} bytes, {need} expected)",
            "Copy it again or regenerate the dataset",
        )


class ShardWriter:
    """Writes rows into one new shard file and commits them.

    Uncompressed shards are written with ``os.pwrite``; h5py opens the file only for the
    moment of a commit, so other readers (in this process or another) can always open it.
    Compressed shards are written through h5py, which keeps them open until ``close``.

    >>> w = ShardWriter.create(path, number=0, capacity=1024, sample_shape=(25, 25),
    ...                        dtype=np.float32, num_classes=5, dataset_uuid=u)
    >>> w.append(x, y); w.commit(); w.close()
    """

    def __init__(self, path: Path, num_classes: int, durable: bool) -> None:
        self.path = path
        self.num_classes = num_classes
        self.durable = durable
        self.content_hash = ""
        self.value_stats = True
        self._fd: int | None = None
        self._x_off: int | None = None
        self._y_off: int | None = None
        self._f: h5py.File | None = h5py.File(path, "r+")
        f = self._f
        x = f[X]
        self.number = int(f.attrs["number"])
        self.capacity = int(x.shape[0])
        self.sample_shape = tuple(int(s) for s in x.shape[1:])
        self.dtype = x.dtype
        self.row_bytes = row_nbytes(self.sample_shape, self.dtype)
        self.compression = x.compression
        self.dataset_uuid = f.attrs["dataset_uuid"].decode("ascii").strip()
        self.committed = int(f.attrs["committed"])
        self.written = self.committed
        self.stats = ShardStats.from_mapping(f.attrs)
        if self.compression is None:
            self._x_off = int(x.id.get_offset())
            self._y_off = int(f[Y].id.get_offset())
            f.close()
            self._f = None
            self._fd = os.open(path, os.O_RDWR)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        number: int,
        capacity: int,
        sample_shape: tuple[int, ...],
        dtype: Any,
        num_classes: int,
        dataset_uuid: str | None = None,
        compression: str | None = None,
        durable: bool = False,
        header_attrs: dict[str, Any] | None = None,
        value_stats: bool = True,
    ) -> ShardWriter:
        """Create the shard complete under a temporary name, rename it into place, open it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        dataset_uuid = dataset_uuid or str(uuidlib.uuid4())
        try:
            with h5py.File(tmp, "w") as f:
                f.attrs["format"] = SHARD_FORMAT_NAME
                f.attrs["format_version"] = np.int64(FORMAT_VERSION)
                f.attrs["number"] = np.int64(number)
                create_shard_datasets(
                    f,
                    capacity=capacity,
                    sample_shape=tuple(sample_shape),
                    dtype=np.dtype(dtype),
                    compression=compression,
                )
                init_commit_attrs(f.attrs, num_classes, dataset_uuid)
                for k, v in (header_attrs or {}).items():
                    f.attrs[k] = v
            # Closing extended the file to its final size, so a reader never sees it short.
            if durable:
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        w = cls(path, num_classes, durable)
        w.value_stats = value_stats
        return w

    @property
    def free(self) -> int:
        return self.capacity - self.written

    def append(self, x: np.ndarray, y: np.ndarray) -> int:
        """Write as many of the rows as fit; return how many were written (not yet committed)."""
        n = min(len(x), self.free)
        if n <= 0:
            return 0
        x = np.ascontiguousarray(x[:n], dtype=self.dtype)
        y = np.ascontiguousarray(y[:n], dtype=LABEL_DTYPE)
        a = self.written
        if self._fd is not None and self._x_off is not None and self._y_off is not None:
            _pwrite_all(self._fd, x, self._x_off + a * self.row_bytes)
            _pwrite_all(self._fd, y, self._y_off + a * LABEL_DTYPE.itemsize)
        elif self._f is not None:
            self._f[X][a : a + n] = x
            self._f[Y][a : a + n] = y
        self.stats.update(x, y, self.value_stats)
        self.written = a + n
        return n

    def _set_attrs(self, values: dict[str, Any]) -> None:
        """Rewrite fixed-size attributes in place and flush them."""
        if self._f is not None:
            self._f.flush()  # the rows first
            for k, v in values.items():
                self._f.attrs.modify(k, v)
            self._f.flush()
            return
        with h5py.File(self.path, "r+") as f:
            for k, v in values.items():
                f.attrs.modify(k, v)

    def commit(self) -> None:
        """Make every written row visible: data first, then the counters."""
        if self.written == self.committed:
            return
        if self.durable and self._fd is not None:
            os.fsync(self._fd)
        self._set_attrs({**self.stats.to_attrs(), "committed": np.int64(self.written)})
        if self.durable:
            with open(self.path, "rb+") as fh:
                os.fsync(fh.fileno())
        self.committed = self.written

    def finish(self) -> str:
        """Commit, store the content hash of the committed rows, close. Returns the hash."""
        self.commit()
        n = self.committed
        if self._x_off is not None and self._y_off is not None:
            xs, ys = raw_arrays(
                self.path, self._x_off, self._y_off, n, self.sample_shape, self.dtype
            )
            self.content_hash = content_hash(xs, ys)
            del xs, ys
        elif self._f is not None:
            self.content_hash = content_hash(self._f[X][:n], self._f[Y][:n])
        self._set_attrs({"content_hash": np.bytes_(self.content_hash.encode("ascii"))})
        self.close()
        return self.content_hash

    def meta(self) -> ShardMeta:
        return ShardMeta(
            path=self.path,
            number=self.number,
            capacity=self.capacity,
            committed=self.committed,
            sample_shape=self.sample_shape,
            dtype=self.dtype,
            x_offset=self._x_off,
            y_offset=self._y_off,
            compression=self.compression,
            dataset_uuid=self.dataset_uuid,
            content_hash=self.content_hash,
            stats=ShardStats.from_mapping(self.stats.to_attrs()),
        )

    def close(self) -> None:
        """Commit what was written and close (an unfinished shard stays unsealed)."""
        if self._f is not None or self._fd is not None:
            self.commit()
        if self._f is not None:
            self._f.close()
            self._f = None
        if self._fd is not None:
            if self.durable:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


def raw_arrays(
    path: Path,
    x_offset: int,
    y_offset: int,
    rows: int,
    sample_shape: tuple[int, ...],
    dtype: np.dtype,
) -> tuple[np.ndarray, np.ndarray]:
    """Read-only memmaps of the first ``rows`` rows of an uncompressed shard (no h5py, no lock)."""
    if rows == 0:
        return np.empty((0, *sample_shape), dtype), np.empty((0,), LABEL_DTYPE)
    xs = np.memmap(path, dtype=dtype, mode="r", offset=x_offset, shape=(rows, *sample_shape))
    ys = np.memmap(path, dtype=LABEL_DTYPE, mode="r", offset=y_offset, shape=(rows,))
    return xs, ys


def _pwrite_all(fd: int, a: np.ndarray, offset: int) -> None:
    view = a.data.cast("B")
    done = 0
    total = len(view)
    while done < total:
        done += os.pwrite(fd, view[done:], offset + done)
