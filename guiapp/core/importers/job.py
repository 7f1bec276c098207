"""The import job: pass 1 (read -> parse -> scatter: ``pass1.py``), its result, pass 2
(shuffle -> write: ``pass2.py``), then publish.

Everything is built inside a staging folder beside the output
(``.OUT.h5.import-PID/``: the bucket files and the new dataset under its final name), and
published at the very end by renaming the shard folder and then the index file into
place. An error, an ``--on-error abort`` or a cancel removes the staging folder: no
half-written dataset is ever left behind. The job keeps the checkpoint (``resume.py``
says what it holds): pass 1's state while it reads, then pass 1's result and pass 2's
position, then ``publish``.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from ..atomic import fsync_dir
from ..errors import Cancelled, DatasetError, UserError, disk_error
from ..events import CancelToken, EventSink
from ..store import Dataset, remove_dataset, shard_dir
from ..store.writer import already_exists
from . import resume, staging
from .config import ImportConfig, peek_dtype, storage_dtype
from .lineage import JobLineage, check_fields
from .pass1 import JobContext, Progress, ReadPass
from .pass2 import WritePass
from .sources import open_source
from .staging import StagingLock, staging_dir

RESUME = "rerun the same command with --resume"  # how a job stopped by the disk continues


class ImportJob:
    """One import; ``run()`` returns the summary (also emitted as the ``finished`` event)."""

    def __init__(self, cfg: ImportConfig, sink: EventSink, cancel: CancelToken) -> None:
        self.cfg = cfg
        self.sink = sink
        self.cancel = cancel
        if cfg.on_error not in ("abort", "skip"):
            raise UserError(
                "--on-error takes 'skip' or 'abort'", option="--on-error", value=cfg.on_error
            )
        if cfg.on_nonfinite not in ("abort", "skip"):
            raise UserError(
                "--on-nonfinite takes 'skip' or 'abort'",
                option="--on-nonfinite",
                value=cfg.on_nonfinite,
            )
        if cfg.workers < 1:
            raise UserError(
                f"--workers {cfg.workers}: give at least 1", option="--workers", value=cfg.workers
            )
        if cfg.memory_mb <= 0:
            raise UserError(
                "--memory-mb must be positive", option="--memory-mb", value=cfg.memory_mb
            )
        if cfg.shard_rows is not None and cfg.shard_rows <= 0:
            raise UserError(
                "--shard-rows must be positive", option="--shard-rows", value=cfg.shard_rows
            )
        if cfg.compression in ("none", ""):
            cfg.compression = None
        out = Path(cfg.out)
        if out.is_dir():
            raise DatasetError(
                out, "is a folder", "Give the dataset's file name, e.g. OUT.h5", option="--out"
            )
        if (out.exists() or shard_dir(out).exists()) and not (cfg.overwrite or cfg.resume):
            raise already_exists(out, cfg.overwrite)
        fields = check_fields(cfg.format, cfg.group_field, cfg.keep_fields)
        self.source = open_source(
            cfg.format,
            Path(cfg.src),
            labels=cfg.labels,
            label_field=cfg.label_field,
            data_field=cfg.data_field,
            delimiter=cfg.delimiter,
            x_key=cfg.x_key,
            y_key=cfg.y_key,
            per_file=cfg.per_file,
            fields=fields.names,
            group=fields.group is not None,
        )
        self.dtype = storage_dtype(cfg, peek_dtype(self.source))
        self.stage = staging_dir(out)
        self.lock = StagingLock(self.stage)
        self.context = JobContext(
            cfg, self.source, self.stage, sink, cancel, Progress(sink), self._checkpoint
        )
        #: pass 1; after it (or restored from a checkpoint) its result goes to pass 2
        self.read = ReadPass(
            self.context, self.dtype, JobLineage(fields, self.stage, Path(cfg.src))
        )
        self._pass1_done: dict[str, Any] | None = None

    # -- the job ----------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        self.started = time.monotonic()
        self.sink.emit("started", job="import", config=cfg.params(), dtype=self.dtype.name)
        done = self._already_imported()
        if done is not None:
            self.sink.emit("finished", job="import", **done)
            return done
        try:
            saved = self._prepare_stage()
            if saved is not None and saved["phase"] == "publish":
                summary = self._publish_resumed(saved)
            else:
                if saved is None or saved["phase"] == "pass1":
                    self.read.run(None if saved is None else saved["pass1"])
                    self._pass1_done = resume.pass1_state(self.read, {})
                    self._checkpoint("pass2", sealed=0)
                else:
                    resume.restore_pass1(self.read, saved["pass1"], buckets=False)
                    self._pass1_done = saved["pass1"]
                summary = self._pass2(saved)
        except Cancelled:
            self.lock.release()  # the folder stays: --resume continues from its checkpoint
            self.sink.emit(
                "stopped", job="import", reason=self.cancel.reason, output=None,
                resumable=str(self.stage),
            )  # fmt: skip
            raise
        except UserError as exc:
            self._cleanup()
            self.sink.emit("failed", job="import", message=str(exc))
            raise
        except Exception as exc:
            # HDF5 reports a full disk as an OSError, or (closing a file) a RuntimeError
            # whose text holds the errno: either way the disk, not the import.
            disk = disk_error(self.cfg.out, exc, resume=RESUME)
            if disk is not None:  # what is staged stays for --resume
                self.lock.release()
                self.sink.emit("failed", job="import", message=str(disk), resumable=str(self.stage))
                raise disk from None
            self._cleanup()
            if not isinstance(exc, OSError):
                raise
            err = UserError(
                f"{exc.filename or self.stage}: {exc.strerror or exc}. Check free disk space "
                "and permissions beside the output (the import needs about twice the "
                "dataset's size while it runs)"
            )
            self.sink.emit("failed", job="import", message=str(err))
            raise err from None
        except BaseException:
            self._cleanup()
            raise
        self.sink.emit("finished", job="import", **summary)
        return summary

    def _already_imported(self) -> dict[str, Any] | None:
        """``--resume`` of an import that already finished (a kill can land after the
        import's last step, so a retry loop asks again): the finished dataset's summary
        when it was made from this source with these options, else None."""
        out = Path(self.cfg.out)
        if not self.cfg.resume or not out.is_file() or staging.stale_folders(out)[1]:
            return None
        try:
            with Dataset(out) as ds:
                made = ds.provenance.get("params")
                if not ds.complete or made != self.cfg.params():
                    return None
                rows = len(ds)
        except UserError:
            return None
        return {"already_complete": True, "output": str(out), "rows": rows}

    def _prepare_stage(self) -> dict[str, Any] | None:
        """Remove what killed imports of this output left (or adopt it with --resume);
        make and lock our staging folder; return the checkpoint to continue from."""
        out = Path(self.cfg.out)
        stale, live = staging.stale_folders(out)
        if live:
            folder, pid = live[0]
            raise UserError(
                f"{out}: another import into it is running (process {pid}, folder {folder.name}). "
                "Wait for it to finish or stop it first"
            )
        saved = None
        if self.cfg.resume:
            for folder in sorted(stale, key=lambda p: p.stat().st_mtime, reverse=True):
                cp = staging.read_checkpoint(folder)
                if cp is not None:
                    resume.check_same(cp, self.cfg.params(), self.source.files)
                    if self.stage.exists():
                        shutil.rmtree(self.stage)
                    os.rename(folder, self.stage)
                    stale.remove(folder)
                    saved = cp
                    break
        for folder in stale:
            size = staging.folder_bytes(folder)
            staging.remove(folder)
            self.sink.emit(
                "log", level="info",
                message=f"removed {folder.name}, left by a stopped import ({size / 2**20:.1f} MB)",
            )  # fmt: skip
        if saved is None:
            if self.cfg.resume:
                self.sink.emit("log", level="info", message="--resume: nothing to resume, starting")
            if self.stage.exists():
                shutil.rmtree(self.stage)
            if (out.exists() or shard_dir(out).exists()) and not self.cfg.overwrite:
                raise already_exists(out, self.cfg.overwrite)
        self.stage.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        return saved

    def _checkpoint(self, phase: str, **extra: Any) -> None:
        state: dict[str, Any] = {
            "phase": phase,
            "params": self.cfg.params(),
            "source": resume.source_identity(self.source.files),
            **extra,
        }
        state["pass1"] = self._pass1_done if phase != "pass1" else extra.pop("pass1")
        staging.write_checkpoint(self.stage, state)

    def _cleanup(self) -> None:
        self.lock.release()
        shutil.rmtree(self.stage, ignore_errors=True)

    def _pass2(self, saved: dict[str, Any] | None) -> dict[str, Any]:
        """Pass 1's result into the staged dataset (from ``saved``, pass 2's checkpoint),
        published."""
        write = WritePass(self.context, self.read.result(), self.read.max_bucket_bytes)
        staged = write.run(saved)
        self._publish(staged)
        write.report_done()
        return self._summary()

    def _summary(self) -> dict[str, Any]:
        t, lineage = self.read.tally, self.read.lineage
        with Dataset(self.cfg.out) as ds:
            counts = ds.class_counts
            names, rows, shape, dtype = ds.class_names, len(ds), ds.sample_shape, ds.dtype
            buckets = ds.provenance.get("shuffle", {}).get("buckets")
        return {
            "output": os.path.abspath(self.cfg.out),
            "rows": rows,
            "rows_read": t.rows_read,
            "skipped": t.skipped,
            "row_errors": list(t.reports),
            "padded": t.padded,
            "truncated": t.truncated,
            "nonfinite_rows": t.nonfinite_rows,
            "classes": [
                {"index": i, "name": n, "count": int(c)}
                for i, (n, c) in enumerate(zip(names, counts, strict=True))
            ],
            "sample_shape": list(shape),
            "dtype": dtype.name,
            "buckets": buckets,
            **({"lineage": lineage.summary()} if lineage.active else {}),
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }

    def _publish_resumed(self, saved: dict[str, Any]) -> dict[str, Any]:
        """A job killed while publishing: finish moving the dataset into place."""
        resume.restore_pass1(self.read, saved["pass1"], buckets=False)
        out = Path(self.cfg.out)
        staged = self.stage / out.name
        if staged.exists():
            self._publish(staged)
        else:
            self._cleanup()
        return self._summary()

    def _publish(self, staged: Path) -> None:
        """Move the finished dataset into place: shard folder first, the index last."""
        out = Path(self.cfg.out)
        if out.exists() or (shard_dir(out).exists() and shard_dir(staged).exists()):
            if not self.cfg.overwrite:
                raise already_exists(out, self.cfg.overwrite)
            remove_dataset(out)
        # Renames of a finished dataset (a folder, then its index), not file writes: the
        # files were made whole and durable by the store's writer (core/atomic.py writes files).
        if shard_dir(staged).exists():
            os.replace(shard_dir(staged), shard_dir(out))
        os.replace(staged, out)
        fsync_dir(out.parent)
        self._cleanup()


def run_import(
    cfg: ImportConfig, sink: EventSink | None = None, cancel: CancelToken | None = None
) -> dict[str, Any]:
    """Import ``cfg.src`` into a new dataset ``cfg.out``; see ``docs/IMPORT.md``."""
    job = ImportJob(cfg, sink or EventSink(), cancel or CancelToken())
    return job.run()


__all__ = ["ImportJob", "run_import"]
