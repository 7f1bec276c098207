"""``DatasetWriter``: append batches of (x, y) to a new dataset, shard by shard."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import shutil
import uuid as uuidlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from ..errors import DatasetError
from .columns import as_column, check_columns, dtype_text
from .commit_sums import verified_rows
from .format import (
    COMMIT_ROWS,
    COMPRESSIONS,
    SAMPLE_DTYPES,
    default_capacity,
    shard_dir,
    shard_relpath,
)
from .index import MIN_SLOTS, SINGLE_FILE, DatasetHeader, IndexFile
from .shard import ShardWriter
from .shard_meta import ShardMeta
from .shard_stats import ShardStats


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def remove_dataset(path: str | os.PathLike[str]) -> None:
    """Delete a dataset's index file and its shard folder."""
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    folder = shard_dir(path)
    if folder.is_dir():
        shutil.rmtree(folder)


def already_exists(path: str | os.PathLike[str], overwrite: bool = False) -> DatasetError:
    """A new dataset's path is taken and ``--overwrite`` (given as ``overwrite``) was not:
    the error names that option, its value the flag as given (docs/ERRORS.md)."""
    exc = DatasetError(
        path, "already exists", "Choose another name or pass --overwrite", option="--overwrite"
    )
    exc.value = overwrite  # the option's value, not the path (a flag)
    return exc


def validate_batch(
    path: Path,
    x: Any,
    y: Any,
    sample_shape: tuple[int, ...],
    dtype: np.dtype,
    num_classes: int,
    first_row: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Check one batch against the dataset's schema; return it as arrays of the right dtypes."""
    x = np.asarray(x)
    y = np.asarray(y)
    if x.shape[1:] != tuple(sample_shape):
        raise DatasetError(
            path,
            f"batch of shape {x.shape} does not match the sample shape {tuple(sample_shape)}",
            "Give arrays of shape (n, " + ", ".join(map(str, sample_shape)) + ")",
        )
    if y.ndim != 1 or len(y) != len(x):
        raise DatasetError(
            path,
            f"labels of shape {y.shape} do not match {len(x)} samples",
            "Give one integer label per sample",
        )
    if x.dtype != dtype:
        if not np.can_cast(x.dtype, dtype, casting="same_kind"):
            raise DatasetError(
                path,
                f"samples of dtype {x.dtype} cannot be stored as {dtype}",
                f"Convert them to {dtype} first",
            )
        x = x.astype(dtype)
    if len(y) and y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(np.mod(y, 1) == 0):
            y = y.astype(np.int64)
        else:
            raise DatasetError(
                path, f"labels of dtype {y.dtype} are not integers", "Give class indices 0..K-1"
            )
    if len(y):
        bad = np.flatnonzero((y < 0) | (y >= num_classes))
        if bad.size:
            i = int(bad[0])
            raise DatasetError(
                path,
                f"label {int(y[i])} of row {first_row + i} is out of range 0..{num_classes - 1}",
                f"The dataset has {num_classes} classes",
            )
    return x, y


class DatasetWriter:
    """Write a new dataset: append batches, commit periodically, close to finish.

    ``layout="sharded"`` writes ``NAME.h5`` plus ``NAME.shards/00000.h5 ...``;
    ``layout="single"`` writes everything into ``NAME.h5`` (at most ``shard_capacity`` rows).
    Rows become visible to readers at each commit (every ``commit_rows`` rows, at every
    shard boundary, and at ``close``); a crash loses at most the uncommitted rows.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sample_shape: Sequence[int],
        dtype: Any,
        class_names: Sequence[str],
        shard_capacity: int | None = None,
        layout: str = "sharded",
        compression: str | None = None,
        provenance: dict[str, Any] | None = None,
        statistics: dict[str, Any] | None = None,
        commit_rows: int = COMMIT_ROWS,
        overwrite: bool = False,
        durable: bool = False,
        expected_rows: int | None = None,
        write_threads: int = 1,
        columns: dict[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        dtype = np.dtype(dtype)
        if dtype.name not in SAMPLE_DTYPES:
            raise DatasetError(
                self.path,
                f"dtype {dtype} is not supported",
                "Use one of " + ", ".join(SAMPLE_DTYPES),
            )
        if compression not in COMPRESSIONS:
            raise DatasetError(
                self.path, f"compression {compression!r} is not supported", "Use none, lzf or gzip"
            )
        if layout not in ("sharded", "single"):
            raise DatasetError(
                self.path, f"layout {layout!r} is not supported", "Use sharded or single"
            )
        if len(class_names) < 1:
            raise DatasetError(
                self.path, "a dataset needs at least one class name", "Give class names"
            )
        try:
            self.columns = check_columns(columns or {})
        except ValueError as exc:
            raise DatasetError(self.path, str(exc), "Name other fields") from None
        sample_shape = tuple(int(s) for s in sample_shape)
        if not sample_shape or min(sample_shape) <= 0:
            raise DatasetError(
                self.path, f"sample shape {sample_shape} is empty", "Give a shape like 25x25"
            )
        if self.path.exists() or shard_dir(self.path).exists():
            if not overwrite:
                raise already_exists(self.path, overwrite)
            remove_dataset(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.header = DatasetHeader(
            uuid=str(uuidlib.uuid4()),
            sample_shape=sample_shape,
            dtype=dtype,
            class_names=[str(c) for c in class_names],
            shard_capacity=int(shard_capacity or default_capacity(sample_shape, dtype)),
            layout=layout,
            compression=compression,
            provenance=dict(provenance or {}),
            created=now_iso(),
            statistics=dict(statistics or {}),
            columns={k: dtype_text(v) for k, v in self.columns.items()},
        )
        self.commit_rows = int(commit_rows)
        self.durable = durable
        self._pool: ThreadPoolExecutor | None = None
        self.set_write_threads(write_threads)
        self.rows = 0
        self._since_commit = 0
        self._done = 0  # shards finished (their entries live in self.index.table)
        self._current: ShardWriter | None = None
        self._closed = False
        cap = self.header.shard_capacity
        slots = -(-int(expected_rows) // cap) + 1 if expected_rows else MIN_SLOTS
        self.index = IndexFile(self.path, self.header, slots=slots)
        if layout == "sharded":
            shard_dir(self.path).mkdir(parents=True, exist_ok=True)
            self.index.rewrite(complete=False)

    @classmethod
    def reopen(
        cls,
        path: str | os.PathLike[str],
        *,
        keep_rows: int,
        shard_stats: dict[str, Any] | None = None,
        write_threads: int = 1,
    ) -> DatasetWriter:
        """Continue an unfinished sharded dataset after its first ``keep_rows`` rows (a
        resumed job). The shards those rows fill must be sealed; the shard they end in is
        cut back to them (``shard_stats``: its statistics at that row, as ``ShardStats``'
        JSON); later shard files are removed; appends go on from there."""
        from .dataset import Dataset  # the reader, only to read the header and manifest

        path = Path(path)
        with Dataset(path) as ds:
            cap = ds.shard_capacity
            keep, part = divmod(int(keep_rows), cap)
            listed = len(ds.shards)
            if (
                ds.layout != "sharded"
                or listed < keep + (part > 0)
                or any(not ds.shards[k].sealed for k in range(keep))
                or (part > 0 and shard_stats is None)
            ):
                raise DatasetError(path, "cannot be continued here", "Start the job again")
            metas = [ds.shards[k] for k in range(keep)]
            # The dataset's own header, field by field (its layout is "sharded": checked above).
            same = {f.name: getattr(ds, f.name) for f in dataclasses.fields(DatasetHeader)}
            same["columns"] = {k: dtype_text(v) for k, v in ds.columns.items()}
            header = DatasetHeader(**{**same, "class_names": list(ds.class_names)})
        folder = shard_dir(path)
        last = keep + (part > 0)  # shard files from this number on are removed
        for p in folder.iterdir():
            if p.suffix == ".h5" and p.stem.isdigit() and int(p.stem) >= last:
                p.unlink()
        w = cls.__new__(cls)
        w.path, w.header = path, header
        w.columns = check_columns(header.columns)
        w.commit_rows, w.durable = COMMIT_ROWS, False
        w.rows, w._since_commit, w._done = keep * cap, 0, keep
        w._current, w._closed, w._pool = None, False, None
        w.set_write_threads(write_threads)
        w.index = IndexFile(path, header, slots=max(MIN_SLOTS, 2 * last))
        w.index.set_all(metas)
        if part > 0:
            assert shard_stats is not None
            shard_path = path.parent / shard_relpath(path, keep)
            good, _ = verified_rows(shard_path)
            if good < part:
                raise DatasetError(
                    shard_path,
                    f"rows {good:,} to {part:,} no longer match the checksums committed with "
                    "them: the disk lost them after the job stopped (a power cut before they "
                    "were written out?), and the rows they came from are gone",
                    "Run the job again without --resume",
                )
            shard = ShardWriter(shard_path, len(header.class_names), False)
            shard.rewind(part, ShardStats.from_mapping(shard_stats))
            w._current, w.rows = w._threaded(shard), keep * cap + part
            w.index.put(shard.meta())
        w.index.rewrite(complete=False)
        return w

    def position(self) -> dict[str, Any]:
        """Where a resumed job would continue: ``reopen(keep_rows=..., shard_stats=...)``'s
        arguments for the rows committed so far (call ``commit()`` first)."""
        cur = self._current
        return {
            "rows": self.rows,
            "shard_stats": None if cur is None or cur.committed == 0 else cur.stats.to_json(),
        }

    def set_write_threads(self, n: int) -> None:
        """Have ``n`` threads share each append's pwrite (uncompressed shards; from the next
        shard on). One (the default): the caller's thread writes."""
        self.write_threads = max(1, int(n))
        if self.write_threads > 1 and self._pool is None:
            self._pool = ThreadPoolExecutor(self.write_threads, thread_name_prefix="guiapp-write")

    def _threaded(self, shard: ShardWriter) -> ShardWriter:
        """``shard``, its appends' pwrites shared by this writer's threads."""
        shard.write_pool, shard.write_parts = self._pool, self.write_threads
        return shard

    @property
    def shards_done(self) -> int:
        """Shards finished so far (sealed, while writing)."""
        return self._done

    def set_group_names(self, ids: np.ndarray, names: Sequence[str]) -> None:
        """The names of the groups (``columns.group_id`` of each), kept in the index."""
        order = np.argsort(np.asarray(ids, np.int64), kind="stable")
        self.index.group_names = (np.asarray(ids, np.int64)[order], [names[i] for i in order])

    # -- writing -----------------------------------------------------------------
    def append(self, x: Any, y: Any, cols: dict[str, Any] | None = None) -> None:
        """Append rows; they are visible to readers after the next commit. ``cols``: one
        array per column of the dataset (its group, kept fields), as long as ``x``."""
        h = self.header
        x, y = validate_batch(
            self.path, x, y, h.sample_shape, h.dtype, len(h.class_names), self.rows
        )
        given = cols or {}
        if set(given) != set(self.columns):
            raise DatasetError(
                self.path,
                f"rows come with columns {sorted(given)}, the dataset has {sorted(self.columns)}",
                "Give every column with every row",
            )
        try:
            checked = {k: as_column(k, given[k], dt, len(x)) for k, dt in self.columns.items()}
        except ValueError as exc:
            raise DatasetError(self.path, f"rows {self.rows}..: {exc}", "Fix the values") from None
        at = 0
        while at < len(x):
            shard = self._shard_with_room()
            part = {k: v[at:] for k, v in checked.items()}
            n = shard.append(x[at:], y[at:], part)
            at += n
            self.rows += n
            self._since_commit += n
            if shard.free == 0:
                self._seal(shard)
            elif self._since_commit >= self.commit_rows:
                self.commit()

    def commit(self) -> None:
        if self._current is not None:
            self._current.commit()
        self._since_commit = 0

    def close(self, *, complete: bool = True) -> None:
        """Commit and finish the last shard, then write the final index."""
        if self._closed:
            return
        self._closed = True
        try:
            self._close(complete)
        finally:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None

    def _close(self, complete: bool) -> None:
        if self._current is not None:
            shard = self._current
            self._current = None
            if complete:
                shard.finish()
            else:
                shard.close()
            self._record(shard.meta())
        if self.header.layout == "single":
            if self._done == 0:  # nothing was appended: still leave a valid empty dataset
                self._create_shard().close()
            if self.index.group_names is not None:
                import h5py

                from .index import write_group_names

                with h5py.File(self.path, "r+") as f:
                    write_group_names(f, *self.index.group_names)
            return
        self.index.rewrite(complete=complete)

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(complete=et is None)

    # -- shards --------------------------------------------------------------------
    def _shard_with_room(self) -> ShardWriter:
        if self._current is None:
            self._current = self._create_shard()
        return self._current

    def _create_shard(self) -> ShardWriter:
        h = self.header
        number = self._done
        common = dict(
            number=number,
            capacity=h.shard_capacity,
            sample_shape=h.sample_shape,
            dtype=h.dtype,
            num_classes=len(h.class_names),
            dataset_uuid=h.uuid,
            compression=h.compression,
            durable=self.durable,
            columns=self.columns,
        )
        if h.layout == "single":
            if number > 0:
                raise DatasetError(
                    self.path,
                    f"a single-file dataset holds at most {h.shard_capacity} rows",
                    "Use the sharded layout for more rows",
                )
            entry = {
                "file": SINGLE_FILE,
                "number": 0,
                "capacity": h.shard_capacity,
                "committed": 0,
                "content_hash": "",
            }
            attrs = h.to_attrs([], complete=False)
            attrs["shards"] = json.dumps([entry])
            shard = ShardWriter.create(self.path, header_attrs=attrs, **common)  # type: ignore[arg-type]
            return self._threaded(shard)
        shard = ShardWriter.create(self.path.parent / shard_relpath(self.path, number), **common)  # type: ignore[arg-type]
        self._threaded(shard)
        # List the new shard before any row goes into it, so committed rows are always
        # reachable: one record written in place (the index is rewritten only when it is full).
        self.index.put(shard.meta())
        return shard

    def _seal(self, shard: ShardWriter) -> None:
        shard.finish()
        self._current = None
        self._since_commit = 0
        meta = self._record(shard.meta())
        if self.header.layout == "sharded":
            self.index.put(meta)

    def _record(self, meta: ShardMeta) -> ShardMeta:
        self._done += 1
        self.index.table.set(meta.number, meta)
        return meta
