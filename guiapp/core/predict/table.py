"""The predictions table: one HDF5 file of per-row predictions, written in committed chunks.

```
PRED.h5
  row          int64 (n,)       the dataset row each prediction is for, in dataset order
  label        int32 (n,)       the true class (only when the rows have known labels)
  pred         int32 (n,)       the predicted class
  prob         float32 (n,)     the predicted class's probability
  topk_class   int32 (n, k)     the k most probable classes, most probable first
  topk_prob    float32 (n, k)   their probabilities
  probs        float32 (n, C)   the full probability vector (only with --probs)
  fields/NAME  int64 or S<w> (n,)  the dataset's per-row fields (when it has any): ``group``
               (the group's name, or ``#<id>``), ``group_id`` (its int64 id) and every kept
               field (``_id``, ``accession``, ...), so each prediction joins back to its source
  attrs: format="guiapp-predictions", format_version, committed, complete, rows, top_k,
         num_classes, class_names (JSON), model_hash, model_path, dataset_hash,
         dataset_path, split, batch, identity, fields (JSON: the field names in order)
```

The file is created whole (every dataset allocated, chunked, uncompressed, never filled)
under a temporary name and renamed into place, so it always opens. Rows are then written
chunk by chunk and made visible by rewriting the fixed-size ``committed`` attribute: a
reader (and a resumed job) trusts rows ``[0, committed)`` only, so a job killed at any
moment leaves a file whose committed rows are exactly what a whole run writes. The fields
are written in the same commits, read for the commit's rows from the dataset (``RowFields``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import h5py
import numpy as np

from ..atomic import atomic_path
from ..errors import FileError

FORMAT_NAME = "guiapp-predictions"
FORMAT_VERSION = 1
CHUNK_ROWS = 1 << 16
#: The dataset names scripts can rely on (docs/ARCHITECTURE.md, "Predictions").
COLUMNS = ("row", "label", "pred", "prob", "topk_class", "topk_prob", "probs")
#: The HDF5 group of the per-row fields (``fields/group``, ``fields/_id``, ...).
FIELDS = "fields"


class RowFields(Protocol):
    """Where a table's fields come from: their values at given dataset rows."""

    def values(self, rows: np.ndarray) -> dict[str, np.ndarray]: ...


#: The fields of ``TableSpec`` that a resumed file must share with the new job.
_IDENTITY = (
    "rows", "num_classes", "top_k", "has_labels", "with_probs",
    "model_hash", "dataset_hash", "split", "batch",
)  # fmt: skip


@dataclass(frozen=True)
class TableSpec:
    """What a predictions file holds; everything but the rows written so far."""

    rows: int
    num_classes: int
    top_k: int
    class_names: tuple[str, ...]
    has_labels: bool
    with_probs: bool
    model_hash: str
    model_path: str
    dataset_hash: str
    dataset_path: str
    split: str
    batch: int
    #: The per-row fields, ``(name, dtype)`` with dtype ``int64`` or ``S<w>``.
    fields: tuple[tuple[str, str], ...] = ()
    #: ``--class-map``: the model's class index of each of the dataset's classes (labels are
    #: written in the model's numbering); empty when the names agree.
    label_map: tuple[int, ...] = ()
    #: ``--rc-average``: each row's probabilities averaged with its reversed row's.
    rc_average: bool = False

    def identity(self) -> dict[str, Any]:
        """What must match for a file to be resumed (paths may move, hashes may not)."""
        out = {name: getattr(self, name) for name in _IDENTITY}
        if self.fields:  # a table without fields keeps the identity it always had
            out["fields"] = [[name, dtype] for name, dtype in self.fields]
        if self.label_map:
            out["label_map"] = list(self.label_map)
        if self.rc_average:  # (likewise: tables without it keep their identity)
            out["rc_average"] = True
        return out


def _chunks(n: int, width: int = 1) -> tuple[int, ...]:
    rows = max(1, min(n, CHUNK_ROWS // max(1, width // 4 + 1)))
    return (rows,) if width == 0 else (rows, width)


def create_table(path: Path, spec: TableSpec, rows: Any) -> None:
    """Create the whole file (with its ``row`` column) atomically; no predictions yet.
    ``rows``: an array of row numbers, or ``RowRanges`` (written a piece at a time)."""
    n, k, c = spec.rows, spec.top_k, spec.num_classes
    if len(rows) != n:
        raise ValueError(f"{len(rows)} row numbers for a table of {n} rows")
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver="earliest") as f:

        def column(name: str, dtype: str, width: int = 0) -> None:
            shape: tuple[int, ...] = (n,) if width == 0 else (n, width)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            if n:
                dcpl.set_chunk(_chunks(n, width))
            f.create_dataset(name, shape=shape, dtype=dtype, dcpl=dcpl, track_times=False)

        column("row", "int64")
        if n and hasattr(rows, "chunks"):
            at = 0
            for piece in rows.chunks(CHUNK_ROWS * 16):
                f["row"][at : at + len(piece)] = piece
                at += len(piece)
        elif n:
            f["row"][:] = np.asarray(rows, np.int64)
        if spec.has_labels:
            column("label", "int32")
        column("pred", "int32")
        column("prob", "float32")
        column("topk_class", "int32", k)
        column("topk_prob", "float32", k)
        if spec.with_probs:
            column("probs", "float32", c)
        for name, dtype in spec.fields:
            column(f"{FIELDS}/{name}", dtype)
        a = f.attrs
        a["format"] = FORMAT_NAME
        a["format_version"] = np.int64(FORMAT_VERSION)
        a["committed"] = np.int64(0)
        a["complete"] = np.int64(0)
        a["rows"] = np.int64(n)
        a["top_k"] = np.int64(k)
        a["num_classes"] = np.int64(c)
        a["batch"] = np.int64(spec.batch)
        a["class_names"] = json.dumps(list(spec.class_names))
        for key in ("model_hash", "model_path", "dataset_hash", "dataset_path", "split"):
            a[key] = str(getattr(spec, key))
        a["identity"] = json.dumps(spec.identity(), sort_keys=True)
        a["fields"] = json.dumps([name for name, _ in spec.fields])


class TableWriter:
    """Appends predictions to a table created by :func:`create_table`, one commit at a time;
    a table with fields needs ``fields``, their source (the values of the commit's rows)."""

    def __init__(self, path: Path, fields: RowFields | None = None) -> None:
        self.path = Path(path)
        with h5py.File(self.path, "r", locking=False) as f:
            self.committed = int(f.attrs["committed"])
            self.rows = int(f.attrs["rows"])
            self.has_labels = "label" in f
            self.with_probs = "probs" in f
            self.fields: list[str] = json.loads(_text(f.attrs.get("fields", "[]")))
        if self.fields and fields is None:
            raise ValueError(f"{self.path} has fields {self.fields}; give their source")
        self.source = fields

    def commit(
        self,
        pred: np.ndarray,
        prob: np.ndarray,
        topk_class: np.ndarray,
        topk_prob: np.ndarray,
        label: np.ndarray | None = None,
        probs: np.ndarray | None = None,
    ) -> int:
        """Write the next ``len(pred)`` rows, then make them visible; returns ``committed``."""
        a, b = self.committed, self.committed + len(pred)
        if b > self.rows:
            raise ValueError(f"rows {a}..{b} pass the table's {self.rows} rows")
        # No chunk cache: each write reaches the file at once and fails there (a full disk).
        # With one, HDF5 wrote a chunk only when its dataset object was freed, where errors
        # are ignored, and the commit went on: committed and complete over missing rows.
        with h5py.File(self.path, "r+", locking=False, rdcc_nbytes=0) as f:
            f["pred"][a:b] = pred
            f["prob"][a:b] = prob
            f["topk_class"][a:b] = topk_class
            f["topk_prob"][a:b] = topk_prob
            if self.has_labels and label is not None:
                f["label"][a:b] = label
            if self.with_probs and probs is not None:
                f["probs"][a:b] = probs
            if self.fields and self.source is not None:
                values = self.source.values(np.asarray(f["row"][a:b]))
                for name in self.fields:
                    f[f"{FIELDS}/{name}"][a:b] = values[name]
            f.flush()
            # The rows on the disk before the counter says so: a full disk (or a file system
            # that allocates at writeback) fails here, never after ``committed`` moved.
            os.fsync(f.id.get_vfd_handle())
            f.attrs["committed"] = np.int64(b)
            if b == self.rows:
                f.attrs["complete"] = np.int64(1)
        self.committed = b
        return b


def read_identity(path: Path) -> dict[str, Any] | None:
    """The identity a table was created with, or None when the file is not a table."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            if _text(f.attrs.get("format", "")) != FORMAT_NAME:
                return None
            identity: dict[str, Any] = json.loads(_text(f.attrs["identity"]))
            return identity
    except (OSError, KeyError, ValueError):
        return None


class PredictionTable:
    """Read a predictions file: its attributes and its committed rows, column by column."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            f = h5py.File(self.path, "r", locking=False)
        except (OSError, ValueError) as exc:
            raise FileError(
                self.path, f"cannot be read as a predictions file ({exc})", "Run guiapp predict"
            ) from None
        with f:
            a = f.attrs
            if _text(a.get("format", "")) != FORMAT_NAME:
                raise FileError(
                    self.path,
                    "is not a predictions file (no format='guiapp-predictions' attribute)",
                    "Give a file written by guiapp predict or a run's predictions.h5",
                )
            self.attrs = {k: _plain(v) for k, v in a.items()}
            self.columns = [name for name in COLUMNS if name in f]
            #: The per-row fields in their order (``group``, ``group_id``, kept fields).
            self.fields: list[str] = [
                n for n in json.loads(_text(a.get("fields", "[]"))) if f"{FIELDS}/{n}" in f
            ]
        self.committed = int(self.attrs["committed"])
        self.rows = int(self.attrs["rows"])
        self.complete = bool(self.attrs["complete"])
        self.class_names: list[str] = json.loads(str(self.attrs["class_names"]))
        self.top_k = int(self.attrs["top_k"])
        self.has_labels = "label" in self.columns

    def read(self, name: str, a: int = 0, b: int | None = None) -> np.ndarray:
        """Committed rows ``[a, b)`` of one column."""
        b = self.committed if b is None else min(b, self.committed)
        with h5py.File(self.path, "r", locking=False) as f:
            return np.asarray(f[name][a:b])

    def read_field(self, name: str, a: int = 0, b: int | None = None) -> np.ndarray:
        """Committed rows ``[a, b)`` of field ``name`` (KeyError when the table has none)."""
        if name not in self.fields:
            raise KeyError(name)
        return self.read(f"{FIELDS}/{name}", a, b)

    def read_all(self, a: int = 0, b: int | None = None) -> dict[str, np.ndarray]:
        b = self.committed if b is None else min(b, self.committed)
        with h5py.File(self.path, "r", locking=False) as f:
            return {name: np.asarray(f[name][a:b]) for name in self.columns}


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v
