"""A generation worker process: writes whole shards of its own, reports over a pipe.

Started by the job with the ``spawn`` context. Messages are JSON bytes (no pickle):
``rows`` (shard, written, committed), ``sealed`` (shard), ``done``, ``stopped`` and
``error`` (kind ``user`` or ``internal``, message, detail). The worker stops after its current
chunk when the shared stop event is set, on SIGTERM, or when its parent is gone; it
commits at least every ``GEN_COMMIT_ROWS`` rows with a checkpoint of the generator's
state, so a stop or a crash loses at most that many rows, even inside one shard.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import UserError, disk_error
from ..store import ShardWriter
from ..store.columns import GROUP, column_dtype
from ..store.format import shard_relpath
from ..store.lock import DatasetLock
from ..store.stats import GenStats
from .resume import GEN_COMMIT_ROWS, RESUME_ATTR, ShardResume, checkpoint, resumable_point
from .source import Source
from .spec import GenConfig

SKIPPED_ATTR = "nonfinite_skipped"  # rows with NaN/Inf a shard's generator dropped (skip)


def disk_error_message(path: Path, exc: BaseException) -> str | None:
    err = disk_error(path, exc, resume="rerun the same command with --resume")
    return None if err is None else f"{err}. The dataset keeps every committed row"


class Worker:
    def __init__(self, job: dict[str, Any], conn: Connection, stop: Any) -> None:
        self.cfg = GenConfig.from_json(job["config"])
        self.index = Path(job["path"])
        self.uuid = str(job["uuid"])
        self.shards: list[int] = [int(k) for k in job["shards"]]
        self.conn = conn
        self.stop = stop
        self.parent = os.getppid()
        self.terminated = False

    def send(self, msg_type: str, /, **fields: Any) -> None:
        self.conn.send_bytes(json.dumps({"t": msg_type, **fields}).encode())

    def stopping(self) -> bool:
        return self.terminated or self.stop.is_set() or os.getppid() != self.parent

    def run(self) -> None:
        source = Source(self.cfg)
        for k in self.shards:
            if self.stopping() or not self.write_shard(source, k):
                self.send("stopped")
                return
        self.send("done")

    def open_shard(self, path: Path, k: int) -> tuple[ShardWriter, ShardResume | None]:
        """The shard's writer: the half-written file continued from its last checkpoint
        (the rows it committed with the generator's state), else a new file."""
        cfg = self.cfg
        point = resumable_point(path, self.uuid, cfg.rows_of(k))
        if point is not None:
            w = ShardWriter(path, cfg.classes, durable=False)
            if w.committed == point.rows:
                return w, point
            w.close()
        w = ShardWriter.create(
            path,
            number=k,
            capacity=cfg.rows_of(k),
            sample_shape=cfg.sample_shape,
            dtype=cfg.dtype,
            num_classes=cfg.classes,
            dataset_uuid=self.uuid,
            columns={c: column_dtype(t) for c, t in cfg.columns.items()} or None,
        )
        return w, None

    def write_shard(self, source: Source, k: int) -> bool:
        cfg = self.cfg
        path = self.index.parent / shard_relpath(self.index, k)
        rows = cfg.rows_of(k)
        try:
            w, point = self.open_shard(path, k)
        except OSError as exc:
            raise DiskError(path, exc) from exc
        stats = GenStats.read_from(path, cfg.sample_shape, cfg.dtype) if point else None
        stats = stats or GenStats(cfg.sample_shape, cfg.dtype)
        since = 0
        try:
            for x, y, g in source.shard(k, rows, point):
                w.append(x, y, None if g is None else {GROUP: g, **source.kept})
                stats.update(x)
                since += len(x)
                stop = self.stopping() and w.written < rows
                if (since >= GEN_COMMIT_ROWS or stop) and w.written < rows:
                    checkpoint(w, stats, source.resume_point())
                    since = 0
                self.send("rows", shard=k, written=w.written, committed=w.committed)
                if stop:
                    w.close()
                    return False
            stats.write_to(path)
            with h5py.File(path, "r+") as f:
                if RESUME_ATTR in f.attrs:
                    del f.attrs[RESUME_ATTR]
                if cfg.on_nonfinite == "skip":
                    f.attrs[SKIPPED_ATTR] = np.int64(source.skipped)
            w.finish()
        except OSError as exc:
            with contextlib.suppress(Exception):
                w.close()  # commit what was written, if the disk still lets us
            raise DiskError(path, exc) from exc
        except BaseException:
            with contextlib.suppress(Exception):
                w.close()
            raise
        self.send("sealed", shard=k, skipped=source.skipped)
        return True


class DiskError(Exception):
    def __init__(self, path: Path, exc: OSError) -> None:
        super().__init__(str(exc))
        self.path = path
        self.exc = exc


def main(job_json: str, conn: Connection, stop: Any) -> None:
    """Entry point of the worker process (``multiprocessing`` target)."""
    # The worker's stdout is the job's event stream (inherited): whatever the user's code
    # writes there, even from C, goes to stderr, the job's log, instead.
    sys.stdout.flush()
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the job's process decides when to stop
    job = json.loads(job_json)
    worker = Worker(job, conn, stop)

    def on_term(signum: int, frame: Any) -> None:
        worker.terminated = True

    signal.signal(signal.SIGTERM, on_term)
    try:
        with DatasetLock(Path(job["path"]), shared=True):
            worker.run()
    except UserError as exc:
        worker.send("error", kind="user", message=str(exc))
    except DiskError as exc:
        msg = disk_error_message(exc.path, exc.exc)
        if msg is None:
            worker.send(
                "error",
                kind="internal",
                message=f"{exc.path}: {exc.exc}",
                detail="".join(traceback.format_exception(exc.exc)),
            )
        else:
            worker.send("error", kind="user", message=msg)
    except (BrokenPipeError, EOFError):
        return  # the job's process is gone
    except BaseException as exc:  # noqa: BLE001 - reported to the job, which logs it
        with contextlib.suppress(OSError):
            worker.send(
                "error",
                kind="internal",
                message=f"{type(exc).__name__}: {exc}",
                detail=traceback.format_exc(),
            )
    finally:
        conn.close()
