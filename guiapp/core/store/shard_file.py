"""A new shard file's layout and its content hash.

``create_shard_datasets`` allocates ``x``, ``y`` and the per-row columns at creation (early
allocation, never filled: contiguous shards are then written with ``os.pwrite`` at fixed
offsets); ``init_commit_attrs`` creates the attributes a writer rewrites in place with
their final sizes; ``content_hash`` is what a sealed shard records of its rows
(``shard.py`` writes shards, ``check.py`` verifies them).
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np
import xxhash

from .columns import column_path
from .format import LABEL_DTYPE, X, Y, row_nbytes
from .shard_stats import ShardStats

HASH_CHUNK_ROWS = 1 << 14
HASH_NAME = "xxh3_128"


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
    columns: dict[str, np.dtype] | None = None,
) -> None:
    """Create ``x``, ``y`` and the per-row columns in an open file, allocated now, never
    filled."""
    for name, dt in (columns or {}).items():
        if compression is None:
            f.create_dataset(
                column_path(name),
                shape=(capacity,),
                dtype=dt,
                dcpl=_dcpl_contiguous(),
                track_times=False,
            )
        else:
            f.create_dataset(
                column_path(name),
                shape=(capacity,),
                dtype=dt,
                chunks=(min(capacity, 1 << 14),),
                compression=compression,
                track_times=False,
            )
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
