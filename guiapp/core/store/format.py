"""Names and numbers of the on-disk dataset format (documented in docs/FORMAT.md)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

FORMAT_NAME = "guiapp-dataset"
SHARD_FORMAT_NAME = "guiapp-shard"
#: 3: rows may carry columns (a group, kept fields; ``columns.py``); 2: the index keeps its
#: manifest as a table updated in place (1: one JSON attribute). 1 and 2 are still read:
#: their rows have no groups. Shards did not change between 1 and 2.
FORMAT_VERSION = 3

X = "x"
Y = "y"
LABEL_DTYPE = np.dtype("<i4")

#: Sample dtypes the store accepts.
SAMPLE_DTYPES = ("float32", "float16", "float64", "uint8", "int8", "uint16", "int16", "int32")

#: Default target size of one shard in bytes; capacity is the power of two of rows below it.
SHARD_TARGET_BYTES = 512 * 2**20
MIN_CAPACITY = 2**10
MAX_CAPACITY = 2**22

#: Rows written between two commits by default (the crash-loss window).
COMMIT_ROWS = 2**16

COMPRESSIONS = (None, "lzf", "gzip")


def row_nbytes(sample_shape: tuple[int, ...], dtype: np.dtype) -> int:
    return int(np.prod(sample_shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def default_capacity(sample_shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Rows per shard: the largest power of two whose shard stays under the target size."""
    per_row = max(1, row_nbytes(sample_shape, dtype))
    rows = max(1, SHARD_TARGET_BYTES // per_row)
    cap = 1 << (rows.bit_length() - 1)
    return int(min(MAX_CAPACITY, max(MIN_CAPACITY, cap)))


def shard_dir(index_path: str | os.PathLike[str]) -> Path:
    """``NAME.h5`` -> ``NAME.shards``."""
    p = Path(index_path)
    return p.with_name(p.stem + ".shards")


def shard_relpath(index_path: str | os.PathLike[str], number: int) -> str:
    """Path of shard ``number`` relative to the index file's folder."""
    return f"{shard_dir(index_path).name}/{number:05d}.h5"


def parse_shape(text: str) -> tuple[int, ...]:
    """``"25x25"`` -> ``(25, 25)``; ``"126"`` -> ``(126,)``."""
    parts = [p for p in text.lower().replace(",", "x").split("x") if p.strip()]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"shape {text!r} is not like 25x25 or 126")
    return shape
