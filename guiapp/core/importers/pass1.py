"""Pass 1 of an import: read -> parse -> scatter.

The input is read in order (text in pieces, parsed by worker processes: ``parallel.py``;
arrays in chunks); each chunk's row errors are reported (or stop the import), its good
rows counted, added to the running statistics and scattered into the shuffle's bucket
files. What pass 1 leaves, ``Pass1Result`` (the counts, the label map, the buckets, the
statistics, the lineage), is all pass 2 (``pass2.py``) writes from, and what the job's
checkpoints hold (``resume.py``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Problem, UserError
from ..events import CancelToken, EventSink, RateMeter
from ..store.jitsums import gen_stats
from ..store.stats import GenStats
from . import resume
from .config import ImportConfig, Tally
from .labels import LabelMap, count_labels
from .lineage import JobLineage, csv_field_cols
from .parallel import parse_in_order
from .parse import Fit, Parsed, Shaper, as_number_array, parse_text_rows
from .piece_plan import plan_pieces
from .piece_result import BAD_DATA, GOOD, UNUSABLE, ParseSpec, PieceResult
from .pieces import PieceParser
from .records import ChunkCutter, RecordChunk
from .rowcols import RowCols
from .shuffle import LABEL, Scatter, bucket_count
from .sources import Chunk, Source, display_name
from .text import CsvSource, TextSource

#: Row errors kept (in the provenance, the events and the summary) when skipping.
MAX_REPORTS = 20
PROGRESS_EVERY_S = 0.5
CHECKPOINT_EVERY_S = 10.0


class Progress:
    """The job's ``progress`` events, both passes', at most one every PROGRESS_EVERY_S."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self._last_progress = 0.0

    def emit(self, phase: str, meter: RateMeter, done: int, t: Tally, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
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


@dataclass
class JobContext:
    """What the job lends both passes: its options, input, staging folder, events, cancel
    token and checkpoint writer (``checkpoint(phase, **state)``)."""

    cfg: ImportConfig
    source: Source
    stage: Path
    sink: EventSink
    cancel: CancelToken
    progress: Progress
    checkpoint: Callable[..., None]

    def check(self) -> None:
        self.cancel.raise_if_cancelled()


@dataclass
class Pass1Result:
    """What pass 1 leaves for pass 2: its counts, labels, lineage, buckets and statistics."""

    tally: Tally
    labels: LabelMap
    lineage: JobLineage
    scatter: Scatter
    stats: GenStats


class ReadPass:
    """Pass 1 of one import. ``run`` reads the input; ``resume.restore_pass1`` puts it
    back to a checkpoint instead; ``result`` hands what it read to pass 2."""

    def __init__(self, job: JobContext, dtype: np.dtype, lineage: JobLineage) -> None:
        cfg = job.cfg
        self.job = job
        self.stage = job.stage
        self.dtype = dtype
        self.fit = Fit(
            dtype=dtype,
            length=cfg.length,
            pad=cfg.pad,
            truncate=cfg.truncate,
            pad_value=cfg.pad_value,
        )
        self.shaper = Shaper(self.fit)
        self.labels = LabelMap(cfg.class_names)
        self.lineage = lineage
        self.budget = int(cfg.memory_mb * 2**20)
        self.max_bucket_bytes = max(1, self.budget // 4)
        self.tally = Tally()
        self.stats: GenStats | None = None
        self.scatter: Scatter | None = None
        self.est_rows = 0
        self._last_checkpoint = time.monotonic()
        self._flushes = 0

    def result(self) -> Pass1Result:
        assert self.scatter is not None and self.stats is not None
        return Pass1Result(self.tally, self.labels, self.lineage, self.scatter, self.stats)

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
        self.job.checkpoint("pass1", pass1=resume.pass1_state(self, position))
        self._last_checkpoint = time.monotonic()

    def run(self, saved: dict[str, Any] | None) -> None:
        """Read the whole input (from the checkpoint ``saved``: ``resume.pass1_state``)."""
        self.meter = RateMeter(self.job.source.total_bytes)
        position = resume.restore_pass1(self, saved) if saved is not None else {}
        t = self.tally
        if isinstance(self.job.source, TextSource):
            self._read_text(self.job.source, position)
        else:
            skip = int(position.get("chunks", 0))
            for n, chunk in enumerate(self.job.source.chunks()):
                if n < skip:
                    continue
                self.job.check()
                x, ids, rows = self.parse_chunk(chunk)
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
        self.job.progress.emit("read", self.meter, self.job.source.total_bytes, t, force=True)
        if t.nonfinite_rows and self.job.cfg.on_nonfinite == "abort":
            more = " ..." if t.nonfinite_rows > len(t.nonfinite_at) else ""
            problem = f"{t.nonfinite_values} NaN/Inf value(s) in {t.nonfinite_rows} row(s)"
            fix = "Clean the source data, or pass --on-nonfinite skip to leave those rows out"
            raise UserError(
                f"{', '.join(t.nonfinite_at)}{more}: {problem}. {fix}",
                option="--on-nonfinite",
                value=self.job.cfg.on_nonfinite,
                problem=problem,
                fix=fix,
            )
        if t.rows == 0:
            first = f" (first problem: {t.reports[0]})" if t.reports else ""
            raise UserError(f"{self.job.cfg.src}: no usable rows{first}")

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
            if not (t.nonfinite_rows and self.job.cfg.on_nonfinite == "abort"):
                self.stats.update(x)
                if cols is not None:
                    self.lineage.add(self.scatter, x, ids, cols)
                else:
                    self.scatter.add(x, ids)
            t.rows += len(x)
            count_labels(t.label_rows, ids)
        self.job.progress.emit("read", self.meter, bytes_done, t)

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

    def _read_text(self, src: TextSource, position: dict[str, Any]) -> None:
        cfg = self.job.cfg
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
            self.job.check()
            self._record_chunk(chunk)
            self._after_chunk(
                {
                    "piece": chunk.next_piece,
                    "record": chunk.next_record,
                    "line_base": chunk.line_base,
                }
            )
        if res.fatal:
            raise res.fatal_error()

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

    def parse_chunk(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        if self.job.cfg.on_error == "abort":
            _, where, problem = errors[0]
            fix = "Fix the row, or pass --on-error skip to leave bad rows out"
            # the option the row's problem names (--length, --label-field, --group-field,
            # --class-names), else the one that would leave the row out
            option, value = "--on-error", self.job.cfg.on_error
            if isinstance(problem, Problem) and problem.option:
                option, value = problem.option, problem.value
            raise UserError(
                f"{where}: {problem}. {fix}",
                option=option,
                value=value,
                problem=str(problem),
                fix=fix,
            )
        for _, where, problem in errors:
            t.skipped += 1
            if len(t.reports) < MAX_REPORTS:
                report = f"{where}: {problem}"
                t.reports.append(report)
                self.job.sink.emit("log", level="warning", message=f"skipped {report}")

    def _start_scatter(self, x: np.ndarray, seen: int, bytes_done: int) -> None:
        """Choose the bucket count from the first rows: estimate the whole input's size."""
        shape = tuple(x.shape[1:])
        row_bytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize + LABEL.itemsize
        if self.job.source.total_rows is not None:
            est_rows = self.job.source.total_rows
        else:
            est_rows = int(seen * self.job.source.total_bytes / max(1, bytes_done)) + 1
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
            np.random.default_rng([self.job.cfg.seed, 1]),
            flush_bytes=max(1, self.budget // 4),
            columns=self.lineage.bucket_columns(),
        )
        self.stats = gen_stats(shape, self.dtype)
