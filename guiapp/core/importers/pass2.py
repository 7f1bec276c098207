"""Pass 2 of an import: what pass 1 left (``Pass1Result``), shuffled, into the staged dataset.

Each bucket is read back, permuted and written (``shuffle.shuffled_rows``; the next one
read ahead while this one is written), with a checkpoint after every bucket's rows are
committed; the job (``job.py``) then publishes the staged dataset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import DatasetError, Problem
from ..events import RateMeter
from ..provenance import versions
from ..store import Dataset, DatasetWriter
from ..store.commit_sums import SLOTS, verified_rows
from ..store.format import shard_relpath
from ..store.jitsums import use_compiled_sums
from .pass1 import JobContext, Pass1Result
from .shuffle import read_ahead, shuffled_rows


class WritePass:
    """Pass 2 of one import: ``run`` writes the staged dataset, ``report_done`` says so."""

    def __init__(self, job: JobContext, read: Pass1Result, max_bucket_bytes: int) -> None:
        self.job = job
        self.read = read
        self.max_bucket_bytes = max_bucket_bytes
        self.label_warning: Problem | None = None
        self.meter: RateMeter | None = None
        self.rows = 0

    def _provenance(self) -> dict[str, Any]:
        cfg, t = self.job.cfg, self.read.tally
        lineage = self.read.lineage
        return {
            "importer": cfg.format,
            "source": os.path.abspath(cfg.src),
            "source_files": len(self.job.source.files),
            "source_bytes": self.job.source.total_bytes,
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
            "shuffle": {"method": "two-pass external", "buckets": self.read.scatter.n},
            **({"lineage": lineage.summary()} if lineage.active else {}),
        }

    def run(self, saved: dict[str, Any] | None) -> Path:
        """Buckets, shuffled, into the staged dataset, whose path it returns. A checkpoint
        after every bucket's rows are committed (the rows written, the current shard's
        statistics, and those of the open shard's earlier commits: where a resume goes back
        to when a power cut lost committed rows); the bucket files those rows came from are
        deleted once their shard is sealed, so the temporary space (and the page cache it
        holds) shrinks as the dataset grows."""
        cfg, t = self.job.cfg, self.read.tally
        use_compiled_sums()  # the shard statistics too (this job has paid numba's start)
        lineage, scatter = self.read.lineage, self.read.scatter
        class_names, remap = self.read.labels.finish()
        self.label_warning = self.read.labels.mixed(t.label_rows)
        if self.label_warning and saved is None:
            self.job.sink.emit(
                "log", level="warning", message=self.label_warning, option=self.label_warning.option
            )
        meter = self.meter = RateMeter(t.rows)
        staged = self.job.stage / Path(cfg.out).name
        done = 0 if saved is None else int(saved.get("rows", 0))
        if done and not staged.exists():  # (its buckets up to there are deleted)
            raise DatasetError(
                staged, "is missing: the stopped import's rows cannot be recovered",
                "Run the import without --resume to start over", option="--resume",
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
                dtype=scatter.dtype,
                class_names=class_names,
                shard_capacity=cfg.shard_rows,
                compression=cfg.compression,
                provenance=self._provenance(),
                statistics=self.read.stats.summary(),
                overwrite=True,
                expected_rows=t.rows,
                write_threads=cfg.workers,
                columns=lineage.writer_columns(),
            )
        if lineage.group:  # (a resumed writer too: the names are written at its close)
            writer.set_group_names(*lineage.table())
        lineage.read_widths(scatter)
        retired: list[tuple[tuple[Path, ...], int]] = []  # (appended by read_ahead's thread)

        def retire(paths: tuple[Path, ...], end_row: int) -> None:
            retired.append((paths, end_row))

        rows = shuffled_rows(
            scatter, cfg.seed, self.max_bucket_bytes, self.job.check, skip_rows=done, retire=retire
        )
        if cfg.workers > 1:  # the next bucket read and permuted while this one is written
            rows = read_ahead(rows)
        cap = writer.header.shard_capacity
        with writer:
            for x, pid, cols in rows:
                writer.append(x, remap[pid], lineage.to_writer(cols))
                writer.commit()
                # The open shard's recent commits: where a resume rolls back to when the disk
                # lost committed rows (a power cut), with those rows' buckets still there.
                sealed_rows = writer.shards_done * cap
                positions = [p for p in positions if p["rows"] > sealed_rows][-SLOTS + 1 :]
                positions.append(writer.position())
                self.job.checkpoint(
                    "pass2", sealed=writer.shards_done, positions=positions, **writer.position()
                )
                for paths, end in [r for r in retired if r[1] <= sealed_rows]:
                    for p in paths:
                        p.unlink(missing_ok=True)
                    retired.remove((paths, end))
                self.job.progress.emit("write", meter, writer.rows, t)
        self.job.check()
        self.job.checkpoint("publish", sealed=writer.shards_done, uuid=writer.header.uuid)
        self.rows = writer.rows
        return staged

    def report_done(self) -> None:
        """The last ``progress`` event, once the dataset is published."""
        assert self.meter is not None
        self.job.progress.emit("write", self.meter, self.rows, self.read.tally, force=True)

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
            self.job.sink.emit(
                "log", level="warning",
                message=f"{shard.name}: rows {good:,} to {part:,} no longer match the checksums "
                f"committed with them (a power cut?); the import goes back to row {rows:,} "
                "and writes them again",
            )  # fmt: skip
            return rows, (at or {}).get("shard_stats")
        return done, saved.get("shard_stats")  # (reopen says which rows, and to start over)
