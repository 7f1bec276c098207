"""The index file ``NAME.h5``: the dataset's header, its shard manifest, and virtual ``x``/``y``.

Format version 2 keeps the manifest of a sharded dataset as a fixed-record table inside the
index (``manifest``, one record per shard slot, plus ``manifest_class_counts``), allocated
with spare slots. Listing or sealing a shard rewrites its one record in place with
``os.pwrite`` (records never straddle a page, so a reader sees the old or the new record);
only when the slots run out, and when the writer closes, is the whole index rewritten
atomically (temporary file, fsync, ``os.replace``), with twice the slots. Sealing a shard
therefore costs the same at 10 shards and at 80,000, and the rewrites cost O(N) in total.

Version 1 indexes (the manifest as one JSON attribute ``shards``) are still read
(``read_manifest``). A single-file dataset is its own index and keeps the JSON form (one
entry); its header is written once, when the file is created.
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
from .format import FORMAT_NAME, FORMAT_VERSION, LABEL_DTYPE, X, Y, shard_relpath
from .shard_meta import ShardMeta

SINGLE_FILE = "."  # manifest entry of a dataset that is its own only shard
MANIFEST = "manifest"
MANIFEST_COUNTS = "manifest_class_counts"
MIN_SLOTS = 64
PAGE = 4096

#: One manifest record: 128 bytes, so a record never straddles a 4 KiB page.
RECORD = np.dtype(
    [
        ("number", "<i8"),  # -1: a free slot
        ("capacity", "<i8"),
        ("committed", "<i8"),
        ("x_offset", "<i8"),  # -1: none (compressed, or not created yet)
        ("y_offset", "<i8"),
        ("value_sum", "<f8"),
        ("value_sumsq", "<f8"),
        ("value_min", "<f8"),
        ("value_max", "<f8"),
        ("nonfinite", "<i8"),
        ("content_hash", "S48"),
    ]
)
assert RECORD.itemsize == 128
FREE = np.array([(-1, 0, 0, -1, -1, 0.0, 0.0, 0.0, 0.0, 0, b"")], dtype=RECORD)


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
    #: Per-row columns, name -> dtype text (``columns.py``): ``group`` and kept fields.
    columns: dict[str, str] = field(default_factory=dict)
    #: Rows of a group never cross a multiple of this many rows (``generate/packing.py``);
    #: 0: no such promise.
    group_blocks: int = 0

    def to_attrs(self, manifest: list[dict[str, Any]] | None, complete: bool) -> dict[str, Any]:
        """The index's attributes; ``manifest`` None: the table form (no ``shards`` JSON)."""
        attrs = {
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
            "complete": np.int8(1 if complete else 0),
        }
        if self.columns:
            attrs["columns"] = json.dumps(self.columns)
        if self.group_blocks:
            attrs["group_blocks"] = np.int64(self.group_blocks)
        if manifest is not None:
            attrs["shards"] = json.dumps(manifest)
        return attrs


# -- the manifest as columns ---------------------------------------------------------
class ShardTable:
    """The manifest as columns: ``rec`` (RECORD per shard) and ``counts`` (shards, K)."""

    def __init__(self, rec: np.ndarray, counts: np.ndarray) -> None:
        self.rec = rec
        self.counts = counts

    @classmethod
    def empty(cls, num_classes: int, n: int = 0) -> ShardTable:
        return cls(np.repeat(FREE, n), np.zeros((n, num_classes), np.int64))

    def __len__(self) -> int:
        return len(self.rec)

    def set(self, k: int, meta: ShardMeta) -> None:
        """Entry ``k`` from a shard's metadata (grows the table when ``k`` is past its end)."""
        if k >= len(self.rec):
            n = max(k + 1, 2 * len(self.rec))
            rec = np.repeat(FREE, n)
            rec[: len(self.rec)] = self.rec
            counts = np.zeros((n, self.counts.shape[1]), np.int64)
            counts[: len(self.counts)] = self.counts
            self.rec, self.counts = rec, counts
        self.rec[k] = record_of(meta)
        c = meta.stats.class_counts
        if len(c) > self.counts.shape[1]:  # a shard with more classes than named: kept, so
            self.counts = np.pad(self.counts, ((0, 0), (0, len(c) - self.counts.shape[1])))
        self.counts[k, :] = 0
        self.counts[k, : len(c)] = c

    def used(self) -> ShardTable:
        """The leading entries that are set (free slots dropped)."""
        n = int(np.argmax(self.rec["number"] < 0)) if (self.rec["number"] < 0).any() else len(self)
        return ShardTable(self.rec[:n], self.counts[:n])


def record_of(meta: ShardMeta) -> Any:
    s = meta.stats
    return np.array(
        [
            (
                meta.number,
                meta.capacity,
                meta.committed,
                -1 if meta.x_offset is None else meta.x_offset,
                -1 if meta.y_offset is None else meta.y_offset,
                s.value_sum,
                s.value_sumsq,
                s.value_min,
                s.value_max,
                s.nonfinite,
                meta.content_hash.strip().encode("ascii"),
            )
        ],
        dtype=RECORD,
    )[0]


def table_from_json(entries: list[dict[str, Any]], num_classes: int) -> ShardTable:
    """A version-1 manifest (JSON list of entries) as a table."""
    width = max(
        [num_classes, *(len((e.get("stats") or {}).get("class_counts", [])) for e in entries)]
    )
    t = ShardTable.empty(width, len(entries))
    for i, e in enumerate(entries):
        st = e.get("stats") or {}
        xo, yo = e.get("x_offset"), e.get("y_offset")
        t.rec[i] = (
            int(e["number"]),
            int(e["capacity"]),
            int(e["committed"]),
            -1 if xo is None else int(xo),
            -1 if yo is None else int(yo),
            float(st.get("value_sum", 0.0)),
            float(st.get("value_sumsq", 0.0)),
            float(st.get("value_min", float("inf"))),
            float(st.get("value_max", float("-inf"))),
            int(st.get("nonfinite", 0)),
            str(e.get("content_hash", "")).strip().encode("ascii"),
        )
        c = np.asarray(st.get("class_counts", []), np.int64)
        t.counts[i, : len(c)] = c
    return t


def read_manifest(f: h5py.File, num_classes: int) -> tuple[ShardTable, list[str] | None]:
    """The manifest of an open index: ``(table, files)``; ``files`` only for version 1
    (relative paths as listed; version 2 derives them from the shard number)."""
    if MANIFEST in f:
        rec = np.asarray(f[MANIFEST][()])
        counts = np.asarray(f[MANIFEST_COUNTS][()], np.int64).reshape(len(rec), -1)
        if counts.shape[1] < num_classes:  # never written narrower; stay safe
            counts = np.pad(counts, ((0, 0), (0, num_classes - counts.shape[1])))
        table, files = ShardTable(rec, counts).used(), None
    else:
        raw = f.attrs["shards"]
        entries = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else str(raw))
        table, files = table_from_json(entries, num_classes), [str(e["file"]) for e in entries]
    _check_committed(f.filename, table, files)
    return table, files


def _check_committed(index: str, table: ShardTable, files: list[str] | None) -> None:
    """No manifest entry commits more rows than its shard holds (one vectorised test)."""
    bad = np.flatnonzero(
        (table.rec["committed"] > table.rec["capacity"]) | (table.rec["committed"] < 0)
    )
    if not len(bad):
        return
    from ..errors import DatasetError

    i = int(bad[0])
    rel = files[i] if files is not None else shard_relpath(index, int(table.rec["number"][i]))
    raise DatasetError(
        Path(index).parent / rel,
        f"says {int(table.rec['committed'][i])} rows are committed but holds only "
        f"{int(table.rec['capacity'][i])}",
        "The manifest is damaged: restore the dataset or regenerate it",
    )


# -- writing ----------------------------------------------------------------------------
class IndexFile:
    """A sharded dataset's index on disk: rewrite it whole, or put one entry in place."""

    #: Counters of what this process wrote to indexes (the suite asserts flat costs on them).
    rewrites = 0
    rewritten_bytes = 0
    puts = 0
    put_bytes = 0

    def __init__(self, path: Path, header: DatasetHeader, *, slots: int = MIN_SLOTS) -> None:
        self.path = Path(path)
        self.header = header
        self.table = ShardTable.empty(len(header.class_names))
        self.min_slots = max(MIN_SLOTS, int(slots))
        #: An import's group names, ``(ids, names)`` sorted by id: written at each rewrite.
        self.group_names: tuple[np.ndarray, list[str]] | None = None
        self._slots = 0
        self._rec_off = self._cnt_off = -1

    def set_all(self, shards: list[ShardMeta]) -> None:
        """Replace the in-memory manifest (entry i is ``shards[i]``); nothing is written."""
        self.table = ShardTable.empty(len(self.header.class_names), len(shards))
        for i, m in enumerate(shards):
            self.table.set(i, m)

    def put(self, meta: ShardMeta) -> None:
        """Record one shard: in place when its slot exists, else by a rewrite with 2x slots."""
        k = meta.number
        self.table.set(k, meta)
        if k >= self._slots or self._rec_off < 0:
            self.rewrite(complete=False)
            return
        counts = np.ascontiguousarray(self.table.counts[k])
        rec = np.ascontiguousarray(self.table.rec[k : k + 1])
        fd = os.open(self.path, os.O_WRONLY)
        try:
            # Class counts first, the record (which says "sealed") last.
            os.pwrite(fd, counts.tobytes(), self._cnt_off + k * counts.nbytes)
            os.pwrite(fd, rec.tobytes(), self._rec_off + k * RECORD.itemsize)
        finally:
            os.close(fd)
        IndexFile.puts += 1
        IndexFile.put_bytes += counts.nbytes + RECORD.itemsize

    def rewrite(self, *, complete: bool) -> None:
        """Atomically replace the whole index (header, manifest with spare slots, x/y)."""
        used = self.table.used()
        n = len(used)
        slots = max(self.min_slots, 2 * n, self._slots)
        self._rec_off, self._cnt_off = write_index_file(
            self.path,
            self.header,
            used,
            slots=slots,
            complete=complete,
            group_names=self.group_names,
        )
        self._slots = slots
        IndexFile.rewrites += 1
        IndexFile.rewritten_bytes += slots * (RECORD.itemsize + 8 * used.counts.shape[1])


def _contiguous(fill: Any | None = None) -> Any:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    if fill is None:
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    else:
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_ALLOC)
        dcpl.set_fill_value(fill)
    return dcpl


def write_index_file(
    index_path: Path,
    header: DatasetHeader,
    table: ShardTable,
    *,
    slots: int,
    complete: bool,
    group_names: tuple[np.ndarray, list[str]] | None = None,
) -> tuple[int, int]:
    """Write an index atomically; returns the byte offsets of the two tables.

    The file is built in memory (HDF5's core driver) and its bytes written with ``os.write``:
    a full disk is then an ``OSError`` of our own write, never an HDF5 error inside its
    objects (which crashed the process when they were freed)."""
    index_path = Path(index_path)
    k = max(1, len(header.class_names))
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_alignment(PAGE, PAGE)  # the record table starts on a page: no torn records
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    fapl.set_fapl_core(1 << 20, False)  # in memory, no backing file
    with atomic_path(index_path) as tmp:
        fid = h5py.h5f.create(f"{tmp}.mem".encode(), h5py.h5f.ACC_TRUNC, fapl=fapl)
        with h5py.File(fid) as f:
            for key, v in header.to_attrs(None, complete).items():
                f.attrs[key] = v
            rec = f.create_dataset(
                MANIFEST, shape=(slots,), dtype=RECORD, dcpl=_contiguous(FREE), track_times=False
            )
            cnt = f.create_dataset(
                MANIFEST_COUNTS,
                shape=(slots, k),
                dtype=np.int64,
                dcpl=_contiguous(np.zeros(1, np.int64)),
                track_times=False,
            )
            n = len(table)
            if n:
                rec[:n] = table.rec
                cnt[:n, : table.counts.shape[1]] = table.counts
            offsets = (int(rec.id.get_offset()), int(cnt.id.get_offset()))
            _virtual(f, index_path, header, table)
            if group_names is not None:
                write_group_names(f, *group_names)
            f.flush()
            image = f.id.get_file_image()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(image)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    return offsets


def write_group_names(f: h5py.File, ids: np.ndarray, names: list[str]) -> None:
    """The table of group names (``columns.py``): ids sorted, one name each."""
    from .columns import GROUP_IDS, GROUP_NAMES

    for key in (GROUP_IDS, GROUP_NAMES):
        if key in f:
            del f[key]
    f.create_dataset(GROUP_IDS, data=np.asarray(ids, np.int64), track_times=False)
    f.create_dataset(
        GROUP_NAMES, data=np.array(names, dtype=h5py.string_dtype()), track_times=False
    )


def _virtual(f: h5py.File, index_path: Path, header: DatasetHeader, table: ShardTable) -> None:
    """``x`` and ``y``: virtual datasets over each shard's committed rows, relative paths."""
    committed = table.rec["committed"]
    total = int(committed.sum())
    for name, dtype, shape in (
        (X, np.dtype(header.dtype), tuple(header.sample_shape)),
        (Y, LABEL_DTYPE, ()),
    ):
        if total == 0:
            f.create_dataset(name, shape=(0, *shape), dtype=dtype, track_times=False)
            continue
        layout = h5py.VirtualLayout(shape=(total, *shape), dtype=dtype)
        at = 0
        for number, cap, rows in zip(
            table.rec["number"].tolist(),
            table.rec["capacity"].tolist(),
            committed.tolist(),
            strict=True,
        ):
            if rows == 0:
                continue
            rel = shard_relpath(index_path, number)
            src = h5py.VirtualSource(rel, name, shape=(cap, *shape), dtype=dtype)
            layout[at : at + rows] = src[0:rows]
            at += rows
        f.create_virtual_dataset(name, layout)
