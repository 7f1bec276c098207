"""The import job: read -> parse -> scatter (pass 1), shuffle -> write (pass 2), then publish.

Everything is built inside a staging folder beside the output
(``.OUT.h5.import-PID/``: the bucket files and the new dataset under its final name), and
published at the very end by renaming the shard folder and then the index file into
place. An error, an ``--on-error abort`` or a cancel removes the staging folder: no
half-written dataset is ever left behind.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import fsync_dir
from ..errors import Cancelled, DatasetError, UserError
from ..events import CancelToken, EventSink, RateMeter
from ..provenance import versions
from ..store import DatasetWriter, remove_dataset, shard_dir
from ..store.stats import GenStats
from .config import ImportConfig, Tally, peek_dtype, storage_dtype
from .labels import LabelMap
from .parse import Fit, Parsed, Shaper, as_number_array, parse_text_rows
from .shuffle import LABEL, Scatter, bucket_count, shuffled
from .sources import Chunk, open_source

#: Row errors kept (in the provenance, the events and the summary) when skipping.
MAX_REPORTS = 20
PROGRESS_EVERY_S = 0.5
TEXT_FORMATS = ("jsonl", "csv", "tsv")


def staging_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.import-{os.getpid()}"


class ImportJob:
    """One import; ``run()`` returns the summary (also emitted as the ``finished`` event)."""

    def __init__(self, cfg: ImportConfig, sink: EventSink, cancel: CancelToken) -> None:
        self.cfg = cfg
        self.sink = sink
        self.cancel = cancel
        if cfg.on_error not in ("abort", "skip"):
            raise UserError("--on-error takes 'skip' or 'abort'")
        if cfg.memory_mb <= 0:
            raise UserError("--memory-mb must be positive")
        if cfg.shard_rows is not None and cfg.shard_rows <= 0:
            raise UserError("--shard-rows must be positive")
        if cfg.compression in ("none", ""):
            cfg.compression = None
        out = Path(cfg.out)
        if out.is_dir():
            raise DatasetError(out, "is a folder", "Give the dataset's file name, e.g. OUT.h5")
        if (out.exists() or shard_dir(out).exists()) and not cfg.overwrite:
            raise DatasetError(out, "already exists", "Choose another name or pass --overwrite")
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
        )
        self.dtype = storage_dtype(cfg, peek_dtype(self.source))
        self.fit = Fit(
            dtype=self.dtype,
            length=cfg.length,
            pad=cfg.pad,
            truncate=cfg.truncate,
            pad_value=cfg.pad_value,
        )
        self.shaper = Shaper(self.fit)
        self.labels = LabelMap(cfg.class_names)
        self.budget = int(cfg.memory_mb * 2**20)
        self.max_bucket_bytes = max(1, self.budget // 4)
        self.tally = Tally()
        self.stats: GenStats | None = None
        self.scatter: Scatter | None = None
        self.stage = staging_dir(out)
        self._last_progress = 0.0

    # -- the job ----------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        self.started = time.monotonic()
        self.sink.emit("started", job="import", config=cfg.params(), dtype=self.dtype.name)
        try:
            if self.stage.exists():
                shutil.rmtree(self.stage)
            self.stage.mkdir(parents=True)
            self._pass1()
            summary = self._pass2()
        except Cancelled:
            self._cleanup()
            self.sink.emit("stopped", job="import", reason=self.cancel.reason, output=None)
            raise
        except UserError as exc:
            self._cleanup()
            self.sink.emit("failed", job="import", message=str(exc))
            raise
        except OSError as exc:
            self._cleanup()
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

    def _cleanup(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)

    def _check(self) -> None:
        self.cancel.raise_if_cancelled()

    # -- pass 1 --------------------------------------------------------------------
    def _pass1(self) -> None:
        t = self.tally
        meter = RateMeter(self.source.total_bytes)
        for chunk in self.source.chunks():
            self._check()
            x, ids = self._parse(chunk)
            t.rows_read += len(chunk) + len(chunk.bad)
            if len(x):
                if self.scatter is None:
                    self._start_scatter(x, chunk)
                assert self.scatter is not None and self.stats is not None
                self.stats.update(x)
                self.scatter.add(x, ids)
                t.rows += len(x)
            self._progress("read", meter, chunk.bytes_done)
        self._progress("read", meter, self.source.total_bytes, force=True)
        if t.rows == 0:
            first = f" (first problem: {t.reports[0]})" if t.reports else ""
            raise UserError(f"{self.cfg.src}: no usable rows{first}")

    def _parse(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray]:
        ids, label_errors = self.labels.ids(chunk.labels)
        if isinstance(chunk.data, np.ndarray):
            parsed = self.shaper.shape_array(chunk.data)
        else:
            parsed = self.shaper.shape_rows(self._row_arrays(chunk.data, ids))
        errors = list(chunk.bad)
        errors += [(int(chunk.keys[i]), chunk.locate(i), p) for i, p in label_errors]
        errors += [
            (int(chunk.keys[i]), chunk.locate(i), p) for i, p in parsed.errors if ids[i] >= 0
        ]
        self._row_errors(sorted(errors))
        self._count(parsed)
        keep = ids[parsed.rows] >= 0
        x = parsed.x if keep.all() else parsed.x[keep]
        return x, ids[parsed.rows[keep]]

    def _row_arrays(self, data: list[Any], ids: np.ndarray) -> list[np.ndarray | str | None]:
        rows: list[np.ndarray | str | None] = [None] * len(data)
        text_at = [i for i, d in enumerate(data) if isinstance(d, str) and ids[i] >= 0]
        if text_at:
            for i, r in zip(
                text_at, parse_text_rows([data[i] for i in text_at], self.dtype), strict=True
            ):
                rows[i] = r
        for i, d in enumerate(data):
            if ids[i] >= 0 and not isinstance(d, str):
                rows[i] = as_number_array(d)
        return rows

    def _count(self, parsed: Parsed) -> None:
        self.tally.padded += parsed.padded
        self.tally.truncated += parsed.truncated
        self.tally.empty += parsed.empty

    def _row_errors(self, errors: list[tuple[int, str, str]]) -> None:
        if not errors:
            return
        t = self.tally
        if self.cfg.on_error == "abort":
            _, where, problem = errors[0]
            raise UserError(
                f"{where}: {problem}. Fix the row, or pass --on-error skip to leave bad rows out"
            )
        for _, where, problem in errors:
            t.skipped += 1
            if len(t.reports) < MAX_REPORTS:
                report = f"{where}: {problem}"
                t.reports.append(report)
                self.sink.emit("log", level="warning", message=f"skipped {report}")

    def _start_scatter(self, x: np.ndarray, chunk: Chunk) -> None:
        """Choose the bucket count from the first rows: estimate the whole input's size."""
        shape = tuple(x.shape[1:])
        row_bytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize + LABEL.itemsize
        if self.source.total_rows is not None:
            est_rows = self.source.total_rows
        else:
            seen = self.tally.rows_read + len(chunk) + len(chunk.bad)
            est_rows = int(seen * self.source.total_bytes / max(1, chunk.bytes_done)) + 1
        est_bytes = est_rows * row_bytes
        free = shutil.disk_usage(self.stage).free
        if free < est_bytes * 1.1:
            raise UserError(
                f"{self.stage.parent}: about {est_bytes * 1.1 / 2**30:.2f} GiB of free space are "
                f"needed for this import, {free / 2**30:.2f} GiB are free. Free some space or "
                "write the dataset elsewhere"
            )
        self.est_rows = est_rows
        self.scatter = Scatter(
            self.stage / "buckets",
            bucket_count(est_bytes, self.max_bucket_bytes),
            shape,
            self.dtype,
            np.random.default_rng([self.cfg.seed, 1]),
            flush_bytes=max(1, self.budget // 4),
        )
        self.stats = GenStats(shape, self.dtype)

    def _progress(self, phase: str, meter: RateMeter, done: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
        t = self.tally
        rate = meter.update(done)
        if phase == "read":
            rate["bytes_done"], rate["bytes_total"] = rate.pop("done"), rate.pop("total")
            rate.pop("rows_per_s")
            el = max(1e-9, rate["elapsed_s"])
            rate["rows_per_s"] = round(t.rows_read / el, 1)
        self.sink.emit(
            "progress",
            job="import",
            phase=phase,
            rows_read=t.rows_read,
            rows=t.rows,
            skipped=t.skipped,
            **rate,
        )

    # -- pass 2 --------------------------------------------------------------------
    def _pass2(self) -> dict[str, Any]:
        cfg, t = self.cfg, self.tally
        assert self.scatter is not None and self.stats is not None
        class_names, remap = self.labels.finish()
        per_pid = np.zeros(len(remap), dtype=np.int64)
        scatter = self.scatter
        shape = scatter.sample_shape
        provenance = {
            "importer": cfg.format,
            "source": os.path.abspath(cfg.src),
            "source_files": len(self.source.files),
            "source_bytes": self.source.total_bytes,
            "params": cfg.params(),
            "seed": cfg.seed,
            "versions": versions(),
            "rows_read": t.rows_read,
            "rows": t.rows,
            "skipped_rows": t.skipped,
            "row_errors": list(t.reports),
            "padded_rows": t.padded,
            "truncated_rows": t.truncated,
            "empty_rows": t.empty,
            "shuffle": {"method": "two-pass external", "buckets": scatter.n},
        }
        meter = RateMeter(t.rows)
        staged = self.stage / Path(cfg.out).name
        written = 0
        with DatasetWriter(
            staged,
            sample_shape=shape,
            dtype=self.dtype,
            class_names=class_names,
            shard_capacity=cfg.shard_rows,
            compression=cfg.compression,
            provenance=provenance,
            statistics=self.stats.summary(),
        ) as writer:
            for x, pid in shuffled(scatter, cfg.seed, self.max_bucket_bytes, self._check):
                y = remap[pid]
                writer.append(x, y)
                per_pid += np.bincount(pid, minlength=len(remap))
                written += len(x)
                self._progress("write", meter, written)
        counts = np.bincount(remap, weights=per_pid, minlength=len(class_names)).astype(np.int64)
        self._check()
        self._publish(staged)
        self._progress("write", meter, written, force=True)
        return {
            "output": os.path.abspath(cfg.out),
            "rows": written,
            "rows_read": t.rows_read,
            "skipped": t.skipped,
            "row_errors": list(t.reports),
            "padded": t.padded,
            "truncated": t.truncated,
            "classes": [
                {"index": i, "name": n, "count": int(c)}
                for i, (n, c) in enumerate(zip(class_names, counts, strict=True))
            ],
            "sample_shape": list(shape),
            "dtype": self.dtype.name,
            "buckets": scatter.n,
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }

    def _publish(self, staged: Path) -> None:
        """Move the finished dataset into place: shard folder first, the index last."""
        out = Path(self.cfg.out)
        if out.exists() or shard_dir(out).exists():
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
