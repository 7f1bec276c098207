"""The import job: read -> parse -> scatter (pass 1), shuffle -> write (pass 2), then publish.

Everything is built inside a staging folder beside the output
(``.OUT.h5.import-PID/``: the bucket files and the new dataset under its final name), and
published at the very end by renaming the shard folder and then the index file into
place. An error, an ``--on-error abort`` or a cancel removes the staging folder: no
half-written dataset is ever left behind.

Over 350 lines on purpose: the two passes, the checkpoints and the publication share one
job's state (tally, labels, statistics, scatter, staging folder); apart, each would take
the whole job as an argument (``resume.py`` already holds the checkpoint's own state).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import fsync_dir
from ..errors import Cancelled, DatasetError, UserError, disk_error
from ..events import CancelToken, EventSink, RateMeter
from ..provenance import versions
from ..store import Dataset, DatasetWriter, remove_dataset, shard_dir
from ..store.commit_sums import SLOTS, verified_rows
from ..store.format import shard_relpath
from ..store.jitsums import gen_stats, use_compiled_sums
from ..store.stats import GenStats
from . import resume, staging
from .config import ImportConfig, Tally, peek_dtype, storage_dtype
from .labels import LabelMap, count_labels
from .lineage import JobLineage, check_fields, csv_field_cols
from .parallel import parse_in_order
from .parse import Fit, Parsed, Shaper, as_number_array, parse_text_rows
from .pieces import BAD_DATA, GOOD, UNUSABLE, ParseSpec, PieceParser, PieceResult, plan_pieces
from .records import ChunkCutter, RecordChunk
from .rowcols import RowCols
from .shuffle import LABEL, Scatter, bucket_count, read_ahead, shuffled_rows
from .sources import Chunk, display_name, open_source
from .staging import StagingLock, staging_dir
from .text import CsvSource, TextSource

#: Row errors kept (in the provenance, the events and the summary) when skipping.
MAX_REPORTS = 20
PROGRESS_EVERY_S = 0.5
TEXT_FORMATS = ("jsonl", "csv", "tsv")
CHECKPOINT_EVERY_S = 10.0
RESUME = "rerun the same command with --resume"  # how a job stopped by the disk continues


class ImportJob:
    """One import; ``run()`` returns the summary (also emitted as the ``finished`` event)."""

    def __init__(self, cfg: ImportConfig, sink: EventSink, cancel: CancelToken) -> None:
        self.cfg = cfg
        self.sink = sink
        self.cancel = cancel
        if cfg.on_error not in ("abort", "skip"):
            raise UserError("--on-error takes 'skip' or 'abort'")
        if cfg.on_nonfinite not in ("abort", "skip"):
            raise UserError("--on-nonfinite takes 'skip' or 'abort'")
        if cfg.workers < 1:
            raise UserError(f"--workers {cfg.workers}: give at least 1")
        if cfg.memory_mb <= 0:
            raise UserError("--memory-mb must be positive")
        if cfg.shard_rows is not None and cfg.shard_rows <= 0:
            raise UserError("--shard-rows must be positive")
        if cfg.compression in ("none", ""):
            cfg.compression = None
        out = Path(cfg.out)
        if out.is_dir():
            raise DatasetError(out, "is a folder", "Give the dataset's file name, e.g. OUT.h5")
        if (out.exists() or shard_dir(out).exists()) and not (cfg.overwrite or cfg.resume):
            raise DatasetError(out, "already exists", "Choose another name or pass --overwrite")
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
        self.fit = Fit(
            dtype=self.dtype,
            length=cfg.length,
            pad=cfg.pad,
            truncate=cfg.truncate,
            pad_value=cfg.pad_value,
        )
        self.shaper = Shaper(self.fit)
        self.labels = LabelMap(cfg.class_names)
        self.label_warning: str | None = None
        self.budget = int(cfg.memory_mb * 2**20)
        self.max_bucket_bytes = max(1, self.budget // 4)
        self.tally = Tally()
        self.stats: GenStats | None = None
        self.scatter: Scatter | None = None
        self.stage = staging_dir(out)
        self.lock = StagingLock(self.stage)
        self.lineage = JobLineage(fields, self.stage, Path(cfg.src))
        self.est_rows = 0
        self._last_progress = 0.0
        self._last_checkpoint = time.monotonic()
        self._flushes = 0
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
                    self._pass1(None if saved is None else saved["pass1"])
                    self._pass1_done = resume.pass1_state(self, {})
                    self._checkpoint("pass2", sealed=0)
                else:
                    resume.restore_pass1(self, saved["pass1"], buckets=False)
                    self._pass1_done = saved["pass1"]
                summary = self._pass2(None if saved is None else saved)
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
                raise DatasetError(out, "already exists", "Choose another name or pass --overwrite")
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
        self._last_checkpoint = time.monotonic()

    def _after_chunk(self, position: dict[str, Any]) -> None:
        """Checkpoint pass 1 when the buckets were flushed, or every CHECKPOINT_EVERY_S."""
        sc = self.scatter
        flushed = sc is not None and sc.flushes != self._flushes
        if not flushed and time.monotonic() - self._last_checkpoint < CHECKPOINT_EVERY_S:
            return
        if sc is not None:
            if not flushed:
                sc.flush()
            self._flushes = sc.flushes
        self._checkpoint("pass1", pass1=resume.pass1_state(self, position))

    def _cleanup(self) -> None:
        self.lock.release()
        shutil.rmtree(self.stage, ignore_errors=True)

    def _check(self) -> None:
        self.cancel.raise_if_cancelled()

    # -- pass 1 --------------------------------------------------------------------
    def _pass1(self, saved: dict[str, Any] | None) -> None:
        self.meter = RateMeter(self.source.total_bytes)
        position = resume.restore_pass1(self, saved) if saved is not None else {}
        t = self.tally
        if isinstance(self.source, TextSource):
            self._pass1_text(self.source, position)
        else:
            skip = int(position.get("chunks", 0))
            for n, chunk in enumerate(self.source.chunks()):
                if n < skip:
                    continue
                self._check()
                x, ids, rows = self._parse(chunk)
                cols: RowCols | None = None
                if self.lineage.active:
                    keep, cols, errors = self.lineage.array_cols(
                        chunk.cols, rows, chunk.keys, chunk.locate
                    )
                    self._row_errors(errors)
                    x, ids, rows, cols = x[keep], ids[keep], rows[keep], cols.take(keep)
                x, ids, cols = self._finite(x, ids, rows, chunk.locate, cols)
                self._rows(x, ids, len(chunk) + len(chunk.bad), chunk.bytes_done, cols)
                self._after_chunk({"chunks": n + 1})
        self._progress("read", self.meter, self.source.total_bytes, force=True)
        if t.nonfinite_rows and self.cfg.on_nonfinite == "abort":
            raise UserError(
                f"{', '.join(t.nonfinite_at)}{' ...' if t.nonfinite_rows > len(t.nonfinite_at) else ''}: "
                f"{t.nonfinite_values} NaN/Inf value(s) in {t.nonfinite_rows} row(s). Clean the "
                "source data, or pass --on-nonfinite skip to leave those rows out"
            )
        if t.rows == 0:
            first = f" (first problem: {t.reports[0]})" if t.reports else ""
            raise UserError(f"{self.cfg.src}: no usable rows{first}")

    def _rows(
        self, x: np.ndarray, ids: np.ndarray, records: int, bytes_done: int,
        cols: RowCols | None,
    ) -> None:  # fmt: skip
        """One chunk's good rows (and their lineage ``cols``) into the statistics and the
        shuffle's buckets."""
        t = self.tally
        t.rows_read += records
        if len(x):
            if self.scatter is None:  # (the serial reader counted this chunk twice here)
                self._start_scatter(x, t.rows_read + records, bytes_done)
            assert self.scatter is not None and self.stats is not None
            if not (t.nonfinite_rows and self.cfg.on_nonfinite == "abort"):
                self.stats.update(x)
                if cols is not None:
                    self.lineage.add(self.scatter, x, ids, cols)
                else:
                    self.scatter.add(x, ids)
            t.rows += len(x)
            count_labels(t.label_rows, ids)
        self._progress("read", self.meter, bytes_done)

    def _finite(
        self, x: np.ndarray, ids: np.ndarray, where: np.ndarray, locate: Any,
        cols: RowCols | None,
    ) -> tuple[np.ndarray, np.ndarray, RowCols | None]:  # fmt: skip
        """Rows holding NaN/Inf: counted (and left out with --on-nonfinite skip)."""
        if x.dtype.kind != "f" or not len(x):
            return x, ids, cols
        flat = x.reshape(len(x), -1)
        lo, hi = flat.min(), flat.max()
        if np.isfinite(lo) and np.isfinite(hi):
            return x, ids, cols
        bad_values = ~np.isfinite(flat)
        bad = bad_values.any(axis=1)
        t = self.tally
        for i in np.flatnonzero(bad)[: max(0, 5 - len(t.nonfinite_at))].tolist():
            t.nonfinite_at.append(locate(int(where[i])))
        t.nonfinite_rows += int(bad.sum())
        t.nonfinite_values += int(bad_values.sum())
        return x[~bad], ids[~bad], None if cols is None else cols.take(~bad)

    def _pass1_text(self, src: TextSource, position: dict[str, Any]) -> None:
        cfg = self.cfg
        files = src.files
        names = [display_name(p, src.root) for p in files]
        layouts: dict[str, list[int | None]] = {}
        if isinstance(src, CsvSource):
            for i, path in enumerate(files):
                lay = src.file_layout(path)
                if lay is not None:
                    layouts[str(i)] = [lay.li, lay.di, lay.header_len, lay.header_line]
        pieces = plan_pieces(files, max(1, int(cfg.piece_mb * 2**20)))
        spec = ParseSpec(
            format=cfg.format,
            files=[str(p) for p in files],
            names=names,
            label_field=cfg.label_field,
            data_field=cfg.data_field,
            delimiter=getattr(src, "delimiter", ""),
            dtype=self.dtype.name,
            length=cfg.length,
            pad=cfg.pad,
            truncate=cfg.truncate,
            pad_value=cfg.pad_value,
            sample_shape=None,
            class_names=cfg.class_names,
            csv_layouts=layouts,
            fields=self.lineage.fields.names,
            group=self.lineage.group,
        )
        if self.lineage.active and isinstance(src, CsvSource):
            spec.field_cols = csv_field_cols(src, spec.fields, spec.group)
        at = int(position.get("piece", 0))
        cutter = ChunkCutter(
            pieces,
            [p.stat().st_size for p in files],
            names,
            skip_records=int(position.get("record", 0)),
            line_base=int(position.get("line_base", 0)),
        )
        if self.fit.sample_shape is not None and cfg.length is None:
            spec.sample_shape = list(self.fit.sample_shape)  # resumed after the first rows
        workers = max(1, cfg.workers)
        if workers > 1 and cfg.length is None and spec.sample_shape is None:
            # the first good row fixes the sample shape: find it here, then fan out
            first = PieceParser(spec)
            while at < len(pieces) and first.fit.sample_shape is None:
                self._piece(first.parse(pieces[at]), cutter)
                at += 1
            spec.sample_shape = (
                None if first.fit.sample_shape is None else list(first.fit.sample_shape)
            )
        for res in parse_in_order(spec, pieces, at, workers):
            self._piece(res, cutter)

    def _piece(self, res: PieceResult, cutter: ChunkCutter) -> None:
        if (
            res.sample_shape is not None
            and self.fit.sample_shape is None
            and self.fit.length is None
        ):
            self.fit.sample_shape = tuple(res.sample_shape)
        for chunk in cutter.feed(res):
            self._check()
            self._record_chunk(chunk)
            self._after_chunk(
                {
                    "piece": chunk.next_piece,
                    "record": chunk.next_record,
                    "line_base": chunk.line_base,
                }
            )
        if res.fatal:
            raise UserError(res.fatal)

    def _record_chunk(self, c: RecordChunk) -> None:
        """A chunk of records: labels, errors in line order, counts, then its good rows."""
        has_label = c.kind != UNUSABLE
        ids_l, label_errors = self.labels.ids(c.labels)
        ids = np.full(len(c), -1, np.int32)
        ids[has_label] = ids_l
        rec_of_label = np.flatnonzero(has_label)
        errors: list[tuple[int, str, str]] = []
        problem_at = np.flatnonzero((c.kind == UNUSABLE) | (c.kind == BAD_DATA)).tolist()
        line = c.line
        for r, problem in zip(problem_at, c.problems, strict=True):
            if c.kind[r] == UNUSABLE or ids[r] >= 0:
                errors.append((int(line[r]), f"{c.name}:{int(line[r])}", problem))
        for i, problem in label_errors:
            r = int(rec_of_label[i])
            errors.append((int(line[r]), f"{c.name}:{int(line[r])}", problem))
        self._row_errors(sorted(errors))
        good = c.kind == GOOD
        gids = ids[good]
        keep = gids >= 0
        x = c.x if keep.all() else c.x[keep]
        fitted = c.fitted[keep]
        t = self.tally
        t.padded += int(np.count_nonzero((fitted == -1) | (fitted == 2)))
        t.truncated += int(np.count_nonzero(fitted == 1))
        t.empty += int(np.count_nonzero(fitted == 2))
        glines = line[good][keep]
        cols = c.lineage if c.lineage is None or keep.all() else c.lineage.take(keep)
        x, pids, cols = self._finite(x, gids[keep], glines, lambda n: f"{c.name}:{n}", cols)
        self._rows(x, pids, len(c), c.bytes_done, cols)

    def _parse(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        return x, ids[parsed.rows[keep]], parsed.rows[keep]

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

    def _start_scatter(self, x: np.ndarray, seen: int, bytes_done: int) -> None:
        """Choose the bucket count from the first rows: estimate the whole input's size."""
        shape = tuple(x.shape[1:])
        row_bytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize + LABEL.itemsize
        if self.source.total_rows is not None:
            est_rows = self.source.total_rows
        else:
            est_rows = int(seen * self.source.total_bytes / max(1, bytes_done)) + 1
        est_bytes = est_rows * row_bytes
        free = shutil.disk_usage(self.stage).free
        need = est_bytes * 1.1
        if free < need:
            raise UserError(
                f"{self.stage.parent}: about {need / 2**30:.2f} GiB of free space are "
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
            columns=self.lineage.bucket_columns(),
        )
        self.stats = gen_stats(shape, self.dtype)

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
    def _provenance(self) -> dict[str, Any]:
        cfg, t = self.cfg, self.tally
        assert self.scatter is not None
        return {
            "importer": cfg.format,
            "source": os.path.abspath(cfg.src),
            "source_files": len(self.source.files),
            "source_bytes": self.source.total_bytes,
            "params": cfg.params(),
            "seed": cfg.seed,
            "versions": versions(),
            **({"label_warning": self.label_warning} if self.label_warning else {}),
            "rows_read": t.rows_read,
            "rows": t.rows,
            "skipped_rows": t.skipped,
            "row_errors": list(t.reports),
            "padded_rows": t.padded,
            "truncated_rows": t.truncated,
            "empty_rows": t.empty,
            "nonfinite_rows": t.nonfinite_rows,
            "nonfinite_values": t.nonfinite_values,
            "shuffle": {"method": "two-pass external", "buckets": self.scatter.n},
            **({"lineage": self.lineage.summary()} if self.lineage.active else {}),
        }

    def _pass2(self, saved: dict[str, Any] | None) -> dict[str, Any]:
        """Buckets, shuffled, into the staged dataset. A checkpoint after every bucket's
        rows are committed (the rows written, the current shard's statistics, and those of
        the open shard's earlier commits: where a resume goes back to when a power cut lost
        committed rows); the bucket files those rows came from are deleted once their shard
        is sealed, so the temporary space (and the page cache it holds) shrinks as the
        dataset grows."""
        cfg, t = self.cfg, self.tally
        use_compiled_sums()  # the shard statistics too (this job has paid numba's start)
        assert self.scatter is not None and self.stats is not None
        class_names, remap = self.labels.finish()
        self.label_warning = self.labels.mixed(t.label_rows)
        if self.label_warning and saved is None:
            self.sink.emit("log", level="warning", message=self.label_warning)
        scatter = self.scatter
        meter = RateMeter(t.rows)
        staged = self.stage / Path(cfg.out).name
        done = 0 if saved is None else int(saved.get("rows", 0))
        if done and not staged.exists():  # (its buckets up to there are deleted)
            raise DatasetError(
                staged, "is missing: the stopped import's rows cannot be recovered",
                "Run the import without --resume to start over",
            )  # fmt: skip
        positions: list[dict[str, Any]] = list((saved or {}).get("positions") or [])
        if done:
            done, shard_stats = self._verified_position(staged, done, saved or {}, positions)
            writer = DatasetWriter.reopen(
                staged, keep_rows=done, shard_stats=shard_stats, write_threads=cfg.workers
            )
        else:
            writer = DatasetWriter(
                staged,
                sample_shape=scatter.sample_shape,
                dtype=self.dtype,
                class_names=class_names,
                shard_capacity=cfg.shard_rows,
                compression=cfg.compression,
                provenance=self._provenance(),
                statistics=self.stats.summary(),
                overwrite=True,
                expected_rows=t.rows,
                write_threads=cfg.workers,
                columns=self.lineage.writer_columns(),
            )
        if self.lineage.group:  # (a resumed writer too: the names are written at its close)
            writer.set_group_names(*self.lineage.table())
        self.lineage.read_widths(scatter)
        retired: list[tuple[tuple[Path, ...], int]] = []  # (appended by read_ahead's thread)

        def retire(paths: tuple[Path, ...], end_row: int) -> None:
            retired.append((paths, end_row))

        rows = shuffled_rows(
            scatter, cfg.seed, self.max_bucket_bytes, self._check, skip_rows=done, retire=retire
        )
        if cfg.workers > 1:  # the next bucket read and permuted while this one is written
            rows = read_ahead(rows)
        cap = writer.header.shard_capacity
        with writer:
            for x, pid, cols in rows:
                writer.append(x, remap[pid], self.lineage.to_writer(cols))
                writer.commit()
                # The open shard's recent commits: where a resume rolls back to when the disk
                # lost committed rows (a power cut), with those rows' buckets still there.
                sealed_rows = writer.shards_done * cap
                positions = [p for p in positions if p["rows"] > sealed_rows][-SLOTS + 1 :]
                positions.append(writer.position())
                self._checkpoint(
                    "pass2", sealed=writer.shards_done, positions=positions, **writer.position()
                )
                for paths, end in [r for r in retired if r[1] <= sealed_rows]:
                    for p in paths:
                        p.unlink(missing_ok=True)
                    retired.remove((paths, end))
                self._progress("write", meter, writer.rows)
        self._check()
        self._checkpoint("publish", sealed=writer.shards_done, uuid=writer.header.uuid)
        self._publish(staged)
        self._progress("write", meter, writer.rows, force=True)
        return self._summary()

    def _verified_position(
        self, staged: Path, done: int, saved: dict[str, Any], positions: list[dict[str, Any]]
    ) -> tuple[int, dict[str, Any] | None]:
        """Where pass 2 continues: the checkpoint's rows, or, when the disk lost committed
        rows of the open shard since (their commit records no longer match: a power cut),
        the last recent commit still vouched for, whose buckets are kept until the shard is
        sealed. ``(rows, that shard's statistics there)``."""
        with Dataset(staged) as ds:
            cap = ds.shard_capacity
        keep, part = divmod(done, cap)
        if part == 0:
            return done, saved.get("shard_stats")
        shard = staged.parent / shard_relpath(staged, keep)
        good, _ = verified_rows(shard) if shard.exists() else (part, part)
        if good >= part:
            return done, saved.get("shard_stats")
        back = [p for p in positions if keep * cap < int(p["rows"]) <= keep * cap + good]
        if good == 0 or back:
            at = max(back, key=lambda p: int(p["rows"])) if back else None
            rows = int(at["rows"]) if at else keep * cap
            self.sink.emit(
                "log", level="warning",
                message=f"{shard.name}: rows {good:,} to {part:,} no longer match the checksums "
                f"committed with them (a power cut?); the import goes back to row {rows:,} "
                "and writes them again",
            )  # fmt: skip
            return rows, (at or {}).get("shard_stats")
        return done, saved.get("shard_stats")  # (reopen says which rows, and to start over)

    def _summary(self) -> dict[str, Any]:
        t = self.tally
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
            **({"lineage": self.lineage.summary()} if self.lineage.active else {}),
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }

    def _publish_resumed(self, saved: dict[str, Any]) -> dict[str, Any]:
        """A job killed while publishing: finish moving the dataset into place."""
        resume.restore_pass1(self, saved["pass1"], buckets=False)
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
                raise DatasetError(out, "already exists", "Choose another name or pass --overwrite")
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
