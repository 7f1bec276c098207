"""One shard file: fixed capacity, contiguous rows, a ``committed`` counter readers trust.

A shard is created complete (datasets allocated, attributes present, file extended to its
final size) under a temporary name and renamed into place, so it always opens. Rows are
then written with ``os.pwrite`` at the datasets' byte offsets (uncompressed shards) or
through h5py (compressed ones); ``commit()`` makes them visible by rewriting fixed-size
attributes in place after the data is written. A process killed at any moment therefore
leaves a shard whose first ``committed`` rows are exactly what was written.
"""

from __future__ import annotations

import os
import uuid as uuidlib
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xxhash

from ..atomic import atomic_path
from ..errors import DatasetError
from .columns import META, column_path
from .commit_sums import SUMS, CommitSums, create_sums, prefix_blocks
from .format import FORMAT_VERSION, LABEL_DTYPE, SHARD_FORMAT_NAME, X, Y, row_nbytes
from .shard_file import HASH_NAME, content_hash, create_shard_datasets, init_commit_attrs
from .shard_meta import ShardMeta, raw_arrays
from .shard_stats import ShardStats

__all__ = ["ShardWriter"]

#: The smallest part of an append a write thread takes (smaller appends: one thread).
PART_MIN_BYTES = 1 << 20
#: The largest single pwrite. On this VM one pwrite of 25 MB into new page-cache pages took
#: 6-70 ms (the same bytes as 1 MiB pwrites: 6 ms, steadily): past some size the kernel's
#: pages for one write come from memory the host has to bring in first.
PWRITE_BYTES = 1 << 20


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
        #: Threads that share each append's pwrite (``DatasetWriter(write_threads=...)``).
        self.write_pool: ThreadPoolExecutor | None = None
        self.write_parts = 1
        # The content hash, kept up with every append of a shard written from its first row
        # (its x bytes so far; its labels, hashed after them at ``finish``); a shard opened
        # again (a resumed job) is hashed from its file instead.
        self._hasher: Any = None
        self._hashed_labels: list[np.ndarray] = []
        self._fd: int | None = None
        self._x_off: int | None = None
        self._y_off: int | None = None
        self._f: h5py.File | None = h5py.File(path, "r+")
        f = self._f
        x = f[X]
        #: Per-row columns (``columns.py``): name -> (dtype, byte offset or None).
        self.columns: dict[str, tuple[np.dtype, int | None]] = {}
        if META in f:
            for name, d in f[META].items():
                off = d.id.get_offset() if x.compression is None else None
                self.columns[name] = (d.dtype, None if off is None else int(off))
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
        #: The commit records (``commit_sums.py``); None: a shard written without them.
        self.sums = CommitSums.of(f)
        if self.sums is not None and self.committed:
            self._hash_prefix(f, self.committed)
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
        columns: dict[str, np.dtype] | None = None,
    ) -> ShardWriter:
        """Create the shard complete under a temporary name, rename it into place, open it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        dataset_uuid = dataset_uuid or str(uuidlib.uuid4())
        with atomic_path(path, durable=durable) as tmp, h5py.File(tmp, "w") as f:
            f.attrs["format"] = SHARD_FORMAT_NAME
            f.attrs["format_version"] = np.int64(FORMAT_VERSION)
            f.attrs["number"] = np.int64(number)
            create_shard_datasets(
                f,
                capacity=capacity,
                sample_shape=tuple(sample_shape),
                dtype=np.dtype(dtype),
                compression=compression,
                columns=columns,
            )
            init_commit_attrs(f.attrs, num_classes, dataset_uuid)
            create_sums(f)
            for k, v in (header_attrs or {}).items():
                f.attrs[k] = v
            # Closing extended the file to its final size, so a reader never sees it short.
        w = cls(path, num_classes, durable)
        w.value_stats = value_stats
        w._hasher = xxhash.xxh3_128()
        return w

    @property
    def free(self) -> int:
        return self.capacity - self.written

    def append(
        self, x: np.ndarray, y: np.ndarray, cols: dict[str, np.ndarray] | None = None
    ) -> int:
        """Write as many of the rows as fit; return how many were written (not yet committed).

        ``cols``: one array per column of the shard (``columns.py``), as long as ``x``."""
        n = min(len(x), self.free)
        if n <= 0:
            return 0
        if set(cols or {}) != set(self.columns):
            raise DatasetError(
                self.path,
                f"rows come with columns {sorted(cols or {})}, the shard has "
                f"{sorted(self.columns)}",
                "Write every column of the dataset with every row",
            )
        x = np.ascontiguousarray(x[:n], dtype=self.dtype)
        y = np.ascontiguousarray(y[:n], dtype=LABEL_DTYPE)
        a = self.written
        pending: list[Future[None]] = []
        if self._fd is not None and self._x_off is not None and self._y_off is not None:
            pending = _pwrite_parts(
                self._fd, x, self._x_off + a * self.row_bytes, self.write_pool, self.write_parts
            )
            _pwrite_all(self._fd, y, self._y_off + a * LABEL_DTYPE.itemsize)
            for name, (dt, off) in self.columns.items():
                assert off is not None and cols is not None
                c = np.ascontiguousarray(cols[name][:n], dtype=dt)
                _pwrite_all(self._fd, c, off + a * dt.itemsize)
        elif self._f is not None:
            self._f[X][a : a + n] = x
            self._f[Y][a : a + n] = y
            for name, (dt, _) in self.columns.items():
                assert cols is not None
                self._f[column_path(name)][a : a + n] = np.asarray(cols[name][:n], dtype=dt)
        try:
            self.stats.update(x, y, self.value_stats)  # (while the pool writes the rows)
            if self.sums is not None:
                self.sums.hy.update(y.data.cast("B"))
            if self._hasher is not None:
                self._hasher.update(x.data.cast("B"))
                self._hashed_labels.append(y.copy())
        finally:
            wait(pending)  # (every part ended before a failure is raised or the fd closed)
        for f in pending:
            f.result()
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

    def rewind(self, rows: int, stats: ShardStats) -> None:
        """Back to its first ``rows`` rows, whose statistics are ``stats`` (a resumed job
        continues here; the order the statistics were summed in cannot be replayed from the
        rows): committed again with those counters, unsealed, later rows to be overwritten."""
        if not 0 <= rows <= self.committed:
            raise DatasetError(
                self.path,
                f"holds {self.committed:,} committed rows, the job stopped after {rows:,}",
                "Start the job again",
            )
        self.written = self.committed = rows
        self.stats = stats
        self.content_hash = ""
        self._hasher = None
        if self.sums is not None:
            if self._f is not None:
                self._hash_prefix(self._f, rows)
            else:
                with h5py.File(self.path, "r", locking=False) as f:
                    self._hash_prefix(f, rows)
            for slot in self.sums.forget_after(rows):
                self._write_record(slot, self.sums.table[slot : slot + 1])
        attrs = {**stats.to_attrs(), "committed": np.int64(rows)}
        self._set_attrs({**attrs, "content_hash": np.bytes_(b" " * 64)})

    def commit(self) -> None:
        """Make every written row visible: data first, then the counters."""
        if self.written == self.committed:
            return
        self._write_sums()
        if self.durable and self._fd is not None:
            os.fsync(self._fd)
        self._set_attrs({**self.stats.to_attrs(), "committed": np.int64(self.written)})
        if self.durable:
            with open(self.path, "rb+") as fh:
                os.fsync(fh.fileno())
        self.committed = self.written

    def _hash_prefix(self, f: h5py.File, rows: int) -> None:
        """The running hashes of a shard opened again, over its first ``rows`` rows read
        back (a resumed job; what the commit records and the content hash go on from)."""
        assert self.sums is not None
        self._hasher = xxhash.xxh3_128()
        self._hashed_labels = []
        self.sums.hy.reset()
        for x, y in prefix_blocks(f, rows):
            self._hasher.update(x.data.cast("B"))
            self._hashed_labels.append(y)
            self.sums.hy.update(y.data.cast("B"))

    def _write_sums(self) -> None:
        """The commit record of the rows about to be committed, before the counter."""
        if self.sums is None or self._hasher is None:
            return
        slot, record = self.sums.record(self.written, self._hasher)
        self._write_record(slot, record)

    def _write_record(self, slot: int, record: np.ndarray) -> None:
        assert self.sums is not None
        if self._fd is not None and self.sums.offset is not None:
            _pwrite_all(self._fd, record, self.sums.offset + slot * record.nbytes)
        elif self._f is not None:
            self._f[SUMS][slot : slot + 1] = record
        else:
            with h5py.File(self.path, "r+") as f:
                f[SUMS][slot : slot + 1] = record

    def finish(self) -> str:
        """Commit, store the content hash of the committed rows, close. Returns the hash."""
        self.commit()
        n = self.committed
        if self._hasher is not None and sum(len(y) for y in self._hashed_labels) == n:
            for y in self._hashed_labels:  # (the same digest as content_hash of the file)
                self._hasher.update(y.data.cast("B"))
            self.content_hash = f"{HASH_NAME}:{self._hasher.hexdigest()}"
            self._hasher, self._hashed_labels = None, []
        elif self._x_off is not None and self._y_off is not None:
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


def _pwrite_parts(
    fd: int, a: np.ndarray, offset: int, pool: ThreadPoolExecutor | None, parts: int
) -> list[Future[None]]:
    """``a`` written at ``offset``: at once without a pool, else in up to ``parts`` parts
    by the pool's threads (pwrite runs without the GIL; where fresh page-cache pages are
    slow to come, threads bring them in parallel). The futures of the parts."""
    parts = min(parts, max(1, a.nbytes // PART_MIN_BYTES))
    if parts <= 1 or pool is None:
        _pwrite_all(fd, a, offset)
        return []
    step = -(-len(a) // parts)
    row = a.nbytes // max(1, len(a))
    return [
        pool.submit(_pwrite_all, fd, a[s : s + step], offset + s * row)
        for s in range(0, len(a), step)
    ]


def _pwrite_all(fd: int, a: np.ndarray, offset: int) -> None:
    """All of ``a`` at ``offset``, by pwrites of at most ``PWRITE_BYTES``."""
    view = a.data.cast("B")
    done = 0
    total = len(view)
    while done < total:
        done += os.pwrite(fd, view[done : done + PWRITE_BYTES], offset + done)
