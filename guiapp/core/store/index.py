"""The index file ``NAME.h5``: the dataset's header, its shard manifest, and virtual ``x``/``y``.

A sharded dataset's index is rewritten atomically (temporary file, fsync, ``os.replace``)
whenever a shard is added, sealed, or the writer closes. A single-file dataset is its own
index: the header is written once, when the file is created.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..atomic import atomic_path
from .format import FORMAT_NAME, FORMAT_VERSION, LABEL_DTYPE, X, Y
from .shard_meta import ShardMeta

SINGLE_FILE = "."  # manifest entry of a dataset that is its own only shard


@dataclass
class DatasetHeader:
    """Everything about a dataset that is not its rows."""

    uuid: str
    sample_shape: tuple[int, ...]
    dtype: np.dtype
    class_names: list[str]
    shard_capacity: int
    layout: str = "sharded"  # or "single"
    compression: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    #: Summary statistics computed while writing (e.g. per-position mean/std, histogram).
    statistics: dict[str, Any] = field(default_factory=dict)

    def to_attrs(self, manifest: list[dict[str, Any]], complete: bool) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": np.int64(FORMAT_VERSION),
            "uuid": self.uuid,
            "layout": self.layout,
            "sample_shape": np.asarray(self.sample_shape, dtype=np.int64),
            "dtype": np.dtype(self.dtype).name,
            "label_dtype": LABEL_DTYPE.name,
            "class_names": np.array(self.class_names, dtype=h5py.string_dtype()),
            "shard_capacity": np.int64(self.shard_capacity),
            "compression": self.compression or "none",
            "provenance": json.dumps(self.provenance, sort_keys=True),
            "statistics": json.dumps(self.statistics, sort_keys=True),
            "created": self.created,
            "shards": json.dumps(manifest),
            "complete": np.int8(1 if complete else 0),
        }


def manifest_of(index_path: Path, shards: list[ShardMeta]) -> list[dict[str, Any]]:
    folder = index_path.parent
    return [s.to_json(os.path.relpath(s.path, folder)) for s in shards]


def write_index(
    index_path: Path, header: DatasetHeader, shards: list[ShardMeta], *, complete: bool
) -> None:
    """Atomically replace the index of a sharded dataset.

    ``x`` and ``y`` are virtual datasets over each shard's committed rows, so any HDF5
    tool sees the whole dataset as two arrays. Source paths are relative to the index.
    """
    index_path = Path(index_path)
    total = sum(s.committed for s in shards)
    with atomic_path(index_path) as tmp, h5py.File(tmp, "w") as f:
        for k, v in header.to_attrs(manifest_of(index_path, shards), complete).items():
            f.attrs[k] = v
        for name, dtype, shape in (
            (X, np.dtype(header.dtype), tuple(header.sample_shape)),
            (Y, LABEL_DTYPE, ()),
        ):
            if total == 0:
                f.create_dataset(name, shape=(0, *shape), dtype=dtype, track_times=False)
                continue
            layout = h5py.VirtualLayout(shape=(total, *shape), dtype=dtype)
            at = 0
            for s in shards:
                if s.committed == 0:
                    continue
                rel = os.path.relpath(s.path, index_path.parent)
                src = h5py.VirtualSource(rel, name, shape=(s.capacity, *shape), dtype=dtype)
                layout[at : at + s.committed] = src[0 : s.committed]
                at += s.committed
            f.create_virtual_dataset(name, layout)
