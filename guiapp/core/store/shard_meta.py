"""Reading a shard without its rows: ``ShardMeta``, ``read_shard_meta``, size check, raw views.

``read_shard_meta`` opens a shard read-only without HDF5's file lock, so a live writer is
fine; it trusts only the ``committed`` counter and checks the file is long enough for its
full capacity. ``raw_arrays`` maps the rows of an uncompressed shard without h5py.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import DatasetError
from .format import FORMAT_VERSION, LABEL_DTYPE, SHARD_FORMAT_NAME, X, Y, row_nbytes
from .shard_stats import ShardStats


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


def open_h5(path: Path, mode: str, *, locking: bool | None = None) -> h5py.File:
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
    f = open_h5(path, "r", locking=False)
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
    """A shard commits at most its capacity; a contiguous one is long enough to hold it."""
    if not 0 <= meta.committed <= meta.capacity:
        raise DatasetError(
            meta.path,
            f"says {meta.committed} rows are committed but holds only {meta.capacity}",
            "The manifest is damaged: restore the dataset or regenerate it",
        )
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


#: Bytes read at each end of a shard file to vouch for it without HDF5 (its superblock and
#: dataset headers lead the file; the attributes written after the rows end it).
VOUCH_BYTES = 1 << 16


def vouch_shard(
    path: str,
    uuid: bytes,
    x_offset: int,
    y_offset: int,
    capacity: int,
    row_bytes: int,
    content_hash: bytes = b"",
) -> bool | None:
    """Whether the file's own bytes confirm a sealed shard as the manifest lists it, read
    without HDF5: two reads of at most ``VOUCH_BYTES`` at its ends, no rows.

    True: the file is long enough for ``capacity`` rows at the offsets, and its header
    bytes hold the dataset's uuid, the content hash the manifest lists (when it lists one:
    another shard of the same dataset has another) and the contiguous layouts ``(offset,
    length)`` of ``x`` and ``y`` at exactly those offsets. False: it is too short for them.
    None: the bytes do not say (another uuid, hash or offsets, or a layout this reader does
    not know): ask HDF5
    (:func:`confirm_shard`). A missing file raises ``FileNotFoundError``. Offsets < 0
    (compressed shards): only the uuid is looked for.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        contiguous = x_offset >= 0 and y_offset >= 0
        if contiguous:
            x_len, y_len = capacity * row_bytes, capacity * LABEL_DTYPE.itemsize
            start, end = min(x_offset, y_offset), max(x_offset + x_len, y_offset + y_len)
            if size < end:
                return False
        else:
            start, end = size, 0
        head = os.pread(fd, min(VOUCH_BYTES, start, size), 0)
        tail_at = max(end, size - VOUCH_BYTES)
        tail = os.pread(fd, size - tail_at, tail_at) if tail_at < size else b""
    finally:
        os.close(fd)
    if uuid not in tail and uuid not in head:
        return None
    if content_hash and content_hash not in tail and content_hash not in head:
        return None
    if contiguous:
        for layout in (struct.pack("<QQ", x_offset, x_len), struct.pack("<QQ", y_offset, y_len)):
            if layout not in head and layout not in tail:
                return None
    return True


def confirm_shard(
    index: Path,
    path: Path,
    *,
    number: int,
    uuid: str,
    x_offset: int | None,
    y_offset: int | None,
    capacity: int,
    committed: int,
) -> None:
    """HDF5's word on a sealed shard the cheap test could not vouch for: raises
    ``DatasetError`` naming the part that is wrong (the shard file, or the index's manifest
    record of it), or returns when the file agrees with the manifest after all."""
    meta = read_shard_meta(path)  # missing, truncated, not HDF5, not a shard: said there
    if meta.dataset_uuid != uuid:
        raise DatasetError(
            path,
            f"belongs to another dataset (its dataset_uuid {meta.dataset_uuid} is not "
            f"{index.name}'s {uuid})",
            f"Put this dataset's own shard {number:05d}.h5 back (from a backup) or regenerate "
            "the dataset",
        )
    if meta.number != number:
        raise DatasetError(
            path,
            f"holds the rows of shard {meta.number}, not of shard {number} (a shard file "
            "copied over another?)",
            f"Put this dataset's own shard {number:05d}.h5 back (from a backup) or regenerate "
            "the dataset",
        )
    record = {"capacity": capacity, "x_offset": x_offset, "y_offset": y_offset}
    actual = {"capacity": meta.capacity, "x_offset": meta.x_offset, "y_offset": meta.y_offset}
    for key, listed in record.items():
        if listed != actual[key]:
            raise DatasetError(
                index,
                f"the manifest's record of shard {number} is damaged: it says {key} "
                f"{listed}, the shard file {path.name} says {actual[key]}",
                "Restore the index file from a backup or regenerate the dataset (the shard "
                "files are intact)",
            )
    if meta.committed < committed:
        raise DatasetError(
            path,
            f"holds {meta.committed:,} committed rows, the index lists {committed:,}",
            "Restore the shard from a backup or regenerate the dataset",
        )
