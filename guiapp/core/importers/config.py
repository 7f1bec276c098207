"""What an import is asked to do (``ImportConfig``), what pass 1 counted, and the stored dtype."""

from __future__ import annotations

import os
import zipfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UserError
from ..store.format import SAMPLE_DTYPES
from .arrays import NpyDirSource, NpySource, NpyStream, NpzSource, open_npy
from .sources import Source

if TYPE_CHECKING:
    from ..requests import ImportRequest


@dataclass
class ImportConfig:
    """Everything ``guiapp import`` takes; stored in the dataset's provenance."""

    src: Path
    out: Path
    format: str
    labels: Path | None = None
    label_field: str = "label"
    data_field: str = "data"
    delimiter: str | None = None
    x_key: str = "x"
    y_key: str = "y"
    per_file: str = "auto"
    length: int | None = None
    pad: str = "post"
    truncate: str = "pre"
    pad_value: float = 0
    dtype: str | None = None  # default: uint16 for text, the arrays' own dtype otherwise
    class_names: list[str] | None = None
    on_error: str = "abort"
    seed: int = 0
    memory_mb: float = 256
    shard_rows: int | None = None
    compression: str | None = None
    overwrite: bool = False
    on_nonfinite: str = "abort"  # or "skip": rows holding NaN/Inf left out and counted
    group_field: str | None = None  # each row's group (lineage.py)
    keep_fields: list[str] | None = None  # fields kept per row as columns
    #: How the work is done, not what it makes (left out of the provenance's params).
    workers: int = 1
    resume: bool = False
    piece_mb: float = 16  # text input is cut into pieces of this size (for the workers)

    @classmethod
    def from_request(cls, req: ImportRequest) -> ImportConfig:
        """The config of a ``guiapp import`` request: the one place its options become
        what the job reads (``--workers``: ``auto`` or a number; the comma lists split)."""
        from .parallel import default_workers

        if req.workers == "auto":
            workers = min(8, default_workers())
        elif str(req.workers).isdigit() and int(req.workers) >= 1:
            workers = int(req.workers)
        else:
            raise UserError(
                f"--workers {req.workers!r}: give a number of processes (1 or more) or auto",
                option="--workers",
                value=req.workers,
            )
        names = req.class_names
        if isinstance(names, str):
            names = [c.strip() for c in names.split(",")] if names else None
        keep = req.keep_fields
        if isinstance(keep, str):
            keep = keep.split(",") if keep else None
        pad_value = req.pad_value
        # every field by its name (a new option needs no line here), then the few the
        # command line gives as text
        same = {f.name: getattr(req, f.name) for f in fields(cls) if hasattr(req, f.name)}
        return cls(
            **{
                **same,
                "src": Path(req.src),
                "out": Path(req.out),
                "labels": None if req.labels is None else Path(req.labels),
                "pad_value": int(pad_value) if float(pad_value).is_integer() else pad_value,
                "class_names": names or None,
                "keep_fields": keep or None,
                "compression": None if req.compression == "none" else req.compression,
                "workers": workers,
            }
        )

    def params(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("workers", "resume", "piece_mb"):
            d.pop(k)
        for k in ("src", "out", "labels"):
            d[k] = None if d[k] is None else os.path.abspath(d[k])
        return d


@dataclass
class Tally:
    """Counts of pass 1."""

    rows_read: int = 0
    rows: int = 0
    skipped: int = 0
    padded: int = 0
    truncated: int = 0
    empty: int = 0
    reports: list[str] = field(default_factory=list)
    nonfinite_rows: int = 0
    nonfinite_values: int = 0
    nonfinite_at: list[str] = field(default_factory=list)  # where the first ones are
    #: Rows per provisional label id (``LabelMap.keys``): to name odd labels and their rows.
    label_rows: list[int] = field(default_factory=list)


def storage_dtype(cfg: ImportConfig, source_dtype: np.dtype | None) -> np.dtype:
    """``--dtype``, or a default: uint16 for text, else the arrays' dtype (int64 -> int32)."""
    if cfg.dtype:
        name = cfg.dtype.lower()
        if name not in SAMPLE_DTYPES:
            raise UserError(
                f"--dtype {cfg.dtype!r} is not one of {', '.join(SAMPLE_DTYPES)}",
                option="--dtype",
                value=cfg.dtype,
            )
        return np.dtype(name)
    if source_dtype is None:
        return np.dtype("uint16")
    if source_dtype.name in SAMPLE_DTYPES:
        return source_dtype
    if source_dtype.kind == "b":
        return np.dtype("uint8")
    if source_dtype.kind in "iu":
        return np.dtype("int32")  # values outside int32 are row errors, never wrapped
    if source_dtype.kind == "f":
        return np.dtype("float64")
    problem = f"the arrays have dtype {source_dtype}, which is not numeric"
    fix = "pass --dtype or convert them"
    raise UserError(f"{problem}; {fix}", option="--dtype", problem=problem, fix=fix)


def peek_dtype(source: Source) -> np.dtype | None:
    """The arrays' dtype for array formats (None for text formats)."""
    if isinstance(source, NpySource):
        with open_npy(source.src) as fh:
            return NpyStream(fh, source.src.name).dtype
    if isinstance(source, NpyDirSource):
        with open_npy(source.files[0]) as fh:
            return NpyStream(fh, source.files[0].name).dtype
    if isinstance(source, NpzSource):
        with zipfile.ZipFile(source.src) as z, z.open(source.x_key + ".npy") as fh:
            return NpyStream(fh, source.src.name).dtype
    return None
