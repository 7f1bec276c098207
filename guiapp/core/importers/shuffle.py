"""Two-pass external shuffle with bounded memory.

Pass 1 (``Scatter``): every parsed row goes to a bucket drawn at random from a seeded
generator; buckets are plain binary files (``NNNNN.x`` raw samples, ``NNNNN.y`` int32
labels) in a temporary folder beside the output. Rows wait in memory only until
``flush_bytes`` of them are pending.

Pass 2 (``shuffled``): buckets are loaded one at a time, permuted in memory with a
generator seeded by (seed, bucket) and handed on. A bucket that came out larger than
``max_bucket_bytes`` (the row-count estimate was low) is scattered again into smaller
buckets first, so memory stays bounded whatever the input. Bucket files are deleted as
soon as they are used, so the temporary space shrinks while the dataset grows.

Per-row columns (an import's groups and kept fields) travel with their rows: per bucket
and column ``NNNNN.cJ`` (int64 values, or the bytes of strings one after the other) and,
for strings, ``NNNNN.nJ`` (their lengths, uint16).

Rows land in a uniformly random bucket and each bucket is uniformly permuted: any input
order (e.g. sorted by class) comes out mixed. The same rows, seed and bucket count give
the same order.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import UserError
from . import jitcols

MAX_BUCKETS = 4096
LABEL = np.dtype("<i4")
INT64 = np.dtype("<i8")
LENGTH = jitcols.LENGTH
#: A column in the buckets: "i8" (int64) or "S" (strings of any width up to 65535 bytes).
Cols = dict[str, np.ndarray]


def bucket_count(estimated_bytes: int, max_bucket_bytes: int) -> int:
    """Buckets needed so that each holds at most ``max_bucket_bytes`` (with 25% headroom)."""
    need = math.ceil(1.25 * max(0, estimated_bytes) / max(1, max_bucket_bytes))
    return int(min(MAX_BUCKETS, max(1, need)))


class Scatter:
    """Pass 1: append rows to randomly chosen bucket files."""

    def __init__(
        self,
        folder: Path,
        buckets: int,
        sample_shape: tuple[int, ...],
        dtype: np.dtype,
        rng: np.random.Generator,
        flush_bytes: int,
        columns: dict[str, str] | None = None,
    ) -> None:
        self.folder = folder
        self.columns = dict(columns or {})  # name -> "i8" or "S"
        self.widths: dict[str, int] = {}  # a string column's width when read (pass 2)
        folder.mkdir(parents=True, exist_ok=True)
        self.n = int(buckets)
        self.sample_shape = tuple(sample_shape)
        self.dtype = np.dtype(dtype)
        self.row_bytes = int(np.prod(self.sample_shape, dtype=np.int64)) * self.dtype.itemsize
        self.rng = rng
        self.flush_bytes = max(1, int(flush_bytes))
        self.rows = np.zeros(self.n, dtype=np.int64)
        self._pending: list[list[tuple[np.ndarray, np.ndarray, list[np.ndarray]]]] = [
            [] for _ in range(self.n)
        ]
        self._pending_bytes = 0
        self.flushes = 0

    def restore(self, rows: list[int]) -> None:
        """Back to a checkpoint: ``rows`` per bucket on disk, anything written after cut off."""
        self._pending = [[] for _ in range(self.n)]
        self._pending_bytes = 0
        self.rows = np.asarray(rows, dtype=np.int64)
        for k in range(self.n):
            r = int(self.rows[k])
            for p, size in zip(
                self.paths(k), (r * self.row_bytes, r * LABEL.itemsize), strict=True
            ):
                _cut(p, size)
            for j, kind in enumerate(self.columns.values()):
                c, lens = self.folder / f"{k:05d}.c{j}", self.folder / f"{k:05d}.n{j}"
                if kind == "i8":
                    _cut(c, r * INT64.itemsize)
                    continue
                _cut(lens, r * LENGTH.itemsize)
                _cut(c, int(np.fromfile(lens, LENGTH).sum(dtype=np.int64)) if r else 0)

    def paths(self, k: int) -> tuple[Path, Path]:
        return self.folder / f"{k:05d}.x", self.folder / f"{k:05d}.y"

    def col_paths(self, k: int) -> tuple[Path, ...]:
        out: list[Path] = []
        for j, kind in enumerate(self.columns.values()):
            out.append(self.folder / f"{k:05d}.c{j}")
            if kind == "S":
                out.append(self.folder / f"{k:05d}.n{j}")
        return tuple(out)

    def add(self, x: np.ndarray, y: np.ndarray, cols: dict[str, Any] | None = None) -> None:
        """Rows (and a value per row of each column: int64 values; strings as an ``S``
        array or packed, ``(lengths, bytes)``) into random buckets."""
        n = len(x)
        if n == 0:
            return
        ids = self.rng.integers(0, self.n, size=n) if self.n > 1 else np.zeros(n, np.int64)
        order = np.argsort(ids, kind="stable")
        counts = np.bincount(ids, minlength=self.n)
        xs, ys = x[order], y[order].astype(LABEL, copy=False)
        cs: list[tuple[np.ndarray, np.ndarray | None]] = []  # (values or bytes, offsets)
        for name, kind in self.columns.items():
            v = (cols or {})[name]
            if kind == "i8":
                cs.append((np.ascontiguousarray(v[order], INT64), None))
                continue
            if isinstance(v, tuple):  # (packed: lengths, bytes)
                lens, data = jitcols.repack(v[0], v[1], order)
            else:
                lens, data = jitcols.pack(v, order)
            cs.append((data, np.concatenate([[0], np.cumsum(lens, dtype=np.int64)])))
            cs.append((lens, None))
        at = 0
        for k in np.flatnonzero(counts):
            c = int(counts[k])
            parts = [v[at : at + c] if o is None else v[o[at] : o[at + c]] for v, o in cs]
            self._pending[k].append((xs[at : at + c], ys[at : at + c], parts))
            at += c
        self.rows += counts
        self._pending_bytes += n * (self.row_bytes + LABEL.itemsize) + sum(v.nbytes for v, _ in cs)
        if self._pending_bytes >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        for k, parts in enumerate(self._pending):
            if not parts:
                continue
            px, py = self.paths(k)
            with open(px, "ab") as fx:
                for x, _, _ in parts:
                    fx.write(np.ascontiguousarray(x).data)
            with open(py, "ab") as fy:
                for _, y, _ in parts:
                    fy.write(np.ascontiguousarray(y).data)
            for i, p in enumerate(self.col_paths(k)):  # (the parts' arrays in the same order)
                with open(p, "ab") as fc:
                    fc.write(np.concatenate([cs[i] for _, _, cs in parts]).data)
            parts.clear()
        self._pending_bytes = 0
        self.flushes += 1

    def read_cols(
        self, k: int, rows: int, a: int = 0, b: int | None = None, perm: np.ndarray | None = None
    ) -> Cols:
        """Rows ``[a, b)`` of bucket ``k``'s columns (it holds ``rows``), in the order
        ``perm`` (of those rows) when given."""
        b = rows if b is None else b
        out: Cols = {}
        for j, (name, kind) in enumerate(self.columns.items()):
            c = self.folder / f"{k:05d}.c{j}"
            if kind == "i8":
                v = np.fromfile(c, INT64, count=b - a, offset=a * INT64.itemsize)
                out[name] = v if perm is None else np.take(v, perm)
                continue
            lens = np.fromfile(self.folder / f"{k:05d}.n{j}", LENGTH, count=rows)
            at = np.concatenate([[0], np.cumsum(lens, dtype=np.int64)])
            size = int(at[b] - at[a])
            data = np.fromfile(c, np.uint8, count=size, offset=int(at[a])) if size else at[:0]
            data = data.astype(np.uint8, copy=False)
            out[name] = jitcols.unpack(lens[a:b], data, perm, self.widths.get(name, 0))
        return out


def _cut(p: Path, size: int) -> None:
    """Cut a bucket file back to ``size`` bytes (a resume); refuse one that is shorter."""
    if size == 0:
        _unlink(p)
        return
    have = p.stat().st_size if p.exists() else 0
    if have < size:  # a power cut: the checkpoint reached the disk, rows did not
        raise UserError(
            f"{p}: the stopped import's bucket holds {have:,} bytes, its "
            f"checkpoint counts {size:,}. Run the import without --resume to "
            "start over",
            option="--resume",
            value=True,
        )
    with open(p, "r+b") as fh:
        fh.truncate(size)


def _unlink(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


T = TypeVar("T")


def read_ahead(items: Iterator[T]) -> Iterator[T]:
    """``items``, made one ahead by a thread: the next bucket is read and permuted (numpy
    releases the GIL there) while the caller writes the current one. The same items in the
    same order; an exception of ``items`` is raised here, in its place. Memory: one more
    bucket (at most ``max_bucket_bytes`` of rows, twice while it is permuted)."""
    q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the caller's thread
            put(("error", exc))

    t = threading.Thread(target=run, name="guiapp-import-read-ahead", daemon=True)
    t.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        t.join()


Retire = Callable[[tuple[Path, ...], int], None]


def _unlink_now(paths: tuple[Path, ...], end_row: int) -> None:
    _unlink(*paths)


def shuffled(
    scatter: Scatter,
    seed: int,
    max_bucket_bytes: int,
    check: Callable[[], None] = lambda: None,
    *,
    skip_rows: int = 0,
    retire: Retire = _unlink_now,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``shuffled_rows`` without the columns."""
    for x, y, _ in shuffled_rows(
        scatter, seed, max_bucket_bytes, check, skip_rows=skip_rows, retire=retire
    ):
        yield x, y


def shuffled_rows(
    scatter: Scatter,
    seed: int,
    max_bucket_bytes: int,
    check: Callable[[], None] = lambda: None,
    _path: tuple[int, ...] = (),
    *,
    skip_rows: int = 0,
    retire: Retire = _unlink_now,
    _base: int = 0,
) -> Iterator[tuple[np.ndarray, np.ndarray, Cols]]:
    """Pass 2: each bucket's rows (and their columns) in a seeded random order, bucket
    after bucket.

    ``skip_rows``: leave out the first rows of the sequence (a resume), without reading the
    buckets that hold only those. ``retire(files, end_row)`` is called once a bucket's rows
    (the output's rows up to ``end_row``) have been handed on; by default its files are
    deleted at once (a resumable job deletes them once those rows are sealed).
    """
    scatter.flush()
    rec = scatter.row_bytes + LABEL.itemsize  # (columns ride along: the order stays the same)
    at = _base
    for k in range(scatter.n):
        check()
        rows = int(scatter.rows[k])
        px, py = scatter.paths(k)
        if rows == 0:
            continue
        start, at = at, at + rows
        if skip_rows >= rows:
            skip_rows -= rows
            retire((px, py, *scatter.col_paths(k)), at)
            continue
        key = (*_path, k)
        if rows * rec > max_bucket_bytes and rows > 1 and len(key) < 6:
            yield from _split(
                scatter, k, seed, max_bucket_bytes, check, key, skip_rows, retire, start
            )
            skip_rows = 0
            continue
        x = np.fromfile(px, dtype=scatter.dtype).reshape((rows, *scatter.sample_shape))
        y = np.fromfile(py, dtype=LABEL)
        perm = np.random.default_rng([seed, 2, *key]).permutation(rows)
        if skip_rows:
            perm = perm[skip_rows:]
            skip_rows = 0
        xs = np.take(x, perm, axis=0)  # (the same rows as x[perm], in half the time)
        del x
        cols = scatter.read_cols(k, rows, perm=perm) if scatter.columns else {}
        yield xs, np.take(y, perm), cols
        retire((px, py, *scatter.col_paths(k)), at)


def _split(
    parent: Scatter,
    k: int,
    seed: int,
    max_bucket_bytes: int,
    check: Callable[[], None],
    key: tuple[int, ...],
    skip_rows: int,
    retire: Retire,
    base: int,
) -> Iterator[tuple[np.ndarray, np.ndarray, Cols]]:
    """Scatter an oversized bucket into smaller ones (streaming it), then shuffle those."""
    rows = int(parent.rows[k])
    px, py = parent.paths(k)
    rec = parent.row_bytes + LABEL.itemsize
    folder = parent.folder / f"{k:05d}.split"
    if folder.exists():  # a resumed job: split again, from the start
        for p in folder.iterdir():
            _unlink(p)
    sub = Scatter(
        folder,
        bucket_count(rows * rec, max_bucket_bytes),
        parent.sample_shape,
        parent.dtype,
        np.random.default_rng([seed, 3, *key]),
        max(1, max_bucket_bytes // 2),
        parent.columns,
    )
    step = max(1, (max_bucket_bytes // 2) // rec)
    for a in range(0, rows, step):
        check()
        n = min(step, rows - a)
        x = np.fromfile(
            px,
            dtype=parent.dtype,
            count=n * int(np.prod(parent.sample_shape)),
            offset=a * parent.row_bytes,
        )
        y = np.fromfile(py, dtype=LABEL, count=n, offset=a * LABEL.itemsize)
        cols = parent.read_cols(k, rows, a, a + n) if parent.columns else None
        sub.add(x.reshape((n, *parent.sample_shape)), y, cols)
    yield from shuffled_rows(
        sub, seed, max_bucket_bytes, check, key, skip_rows=skip_rows, retire=retire, _base=base
    )
    retire((px, py, *parent.col_paths(k)), base + rows)
