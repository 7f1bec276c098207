"""What a generation job will do before it does it: shards to write, bytes, time; resume state."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import DatasetError, UserError, nonfinite_generated
from ..store.format import LABEL_DTYPE, row_nbytes, shard_dir, shard_relpath
from ..store.shard_meta import ShardMeta, read_shard_meta
from .resume import resumable_point
from .source import Source, nonfinite_rows
from .spec import GenConfig

SHARD_OVERHEAD_BYTES = 32768  # HDF5 headers, attributes and statistics of one shard


def shard_path(index: Path, k: int) -> Path:
    return index.parent / shard_relpath(index, k)


def shard_file_bytes(cfg: GenConfig, rows: int) -> int:
    per = row_nbytes(cfg.sample_shape, np.dtype(cfg.dtype)) + LABEL_DTYPE.itemsize
    return rows * per + SHARD_OVERHEAD_BYTES


@dataclass
class Plan:
    path: str
    uuid: str
    rows: int
    shards: int
    shard_rows: int
    kept_shards: int
    todo_shards: int
    todo_rows: int
    bytes_total: int
    bytes_needed: int
    free_bytes: int
    workers: int
    measured_rows_per_s: float
    estimated_s: float
    todo: list[int] | range = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "todo"}

    def text(self) -> str:
        gib = 2**30
        lines = [
            f"dataset     {self.path}",
            f"rows        {self.rows:,} in {self.shards} shard(s) of up to {self.shard_rows:,} rows",
            f"disk        {self.bytes_total / gib:.2f} GiB in all, {self.bytes_needed / gib:.2f} GiB "
            f"still to write, {self.free_bytes / gib:.2f} GiB free",
            f"speed       {self.measured_rows_per_s:,.0f} rows/s per worker (measured), "
            f"{self.workers} worker(s)",
            f"time        about {self.estimated_s:,.0f} s",
        ]
        if self.bytes_needed > self.free_bytes:
            lines[-2:] = ["fits        no: not enough free disk space (speed not measured)"]
        if self.kept_shards:
            lines.insert(
                2, f"resume      {self.kept_shards} shard(s) done, {self.todo_shards} to do"
            )
        return "\n".join(lines)


MEASURE_BYTES = 64 << 20  # the trial batch stays this small whatever the sample size


def measure_rate(cfg: GenConfig) -> float:
    """Rows per second of one worker, from a quick run of the generator (also checks it,
    NaN/Inf included, so a generator that makes them is refused before anything is written)."""
    source = Source(cfg)
    rng = np.random.default_rng([cfg.seed, 2**32])  # not a shard's stream
    per = max(1, row_nbytes(cfg.sample_shape, np.dtype(cfg.dtype)))
    n = int(max(1, min(cfg.chunk_rows, cfg.n, 4096, MEASURE_BYTES // per)))
    source.batch(rng, min(n, 64))  # warm-up: imports, caches (kmer1d's genomes)
    t = time.perf_counter()
    x, _, _ = source.batch(rng, n)
    rate = n / max(time.perf_counter() - t, 1e-6)
    bad = nonfinite_rows(x)
    if bad is not None and cfg.on_nonfinite != "skip":
        count = int(x.size - np.count_nonzero(np.isfinite(x)))
        at = f"row {int(np.flatnonzero(bad)[0])} of a trial batch (nothing was written)"
        raise nonfinite_generated(source.where, count, n, at)
    return rate


def make_plan(cfg: GenConfig, path: Path, workers: int, kept: set[int]) -> Plan:
    num = cfg.num_shards
    todo: list[int] | range = range(num) if not kept else [k for k in range(num) if k not in kept]
    last = cfg.rows_of(num - 1)
    total = (num - 1) * shard_file_bytes(cfg, cfg.shard_rows) + shard_file_bytes(cfg, last)
    done_rows = sum(cfg.rows_of(k) for k in kept)
    todo_rows = cfg.n - done_rows
    needed = total - sum(shard_file_bytes(cfg, cfg.rows_of(k)) for k in kept)
    folder = path.parent if path.parent.exists() else Path.cwd()
    free = shutil.disk_usage(folder).free
    rate = measure_rate(cfg) if todo and needed <= free else 0.0  # no trial when it cannot fit
    parallel = max(1, min(workers, len(todo), os.cpu_count() or 1))
    est = todo_rows / (rate * parallel) * 1.15 + (1.0 if todo else 0.0) if rate else 0.0
    return Plan(
        path=str(path),
        uuid=cfg.uuid,
        rows=cfg.n,
        shards=cfg.num_shards,
        shard_rows=cfg.shard_rows,
        kept_shards=len(kept),
        todo_shards=len(todo),
        todo_rows=todo_rows,
        bytes_total=total,
        bytes_needed=needed,
        free_bytes=free,
        workers=workers,
        measured_rows_per_s=round(rate, 1),
        estimated_s=round(est, 1),
        todo=todo,
    )


def _differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict) and key == "params":
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: stored {json.dumps(a)}, now {json.dumps(b)}")
    return out


def check_same_config(path: Path, cfg: GenConfig) -> dict[str, Any]:
    """The stored provenance of the dataset at ``path``; an error if its config differs."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            prov = json.loads(str(f.attrs["provenance"]))
    except (OSError, KeyError, ValueError) as exc:
        raise DatasetError(
            path, f"cannot be resumed: its index is unreadable ({exc})", "Use --overwrite"
        ) from None
    stored = prov.get("config")
    if not isinstance(stored, dict):
        raise DatasetError(
            path,
            "was not made by 'guiapp generate', so it cannot be resumed",
            "Choose another output path or use --overwrite",
        )
    diffs = _differences(stored, cfg.to_json())
    if diffs:
        problem = (
            "cannot resume: the dataset was generated with a different configuration "
            f"({'; '.join(diffs)})"
        )
        fix = "Rerun with the original options, or pass --overwrite to start over"
        raise UserError(f"{path}: {problem}. {fix}", option="--overwrite", problem=problem, fix=fix)
    return dict(prov)


def sealed_shards(
    path: Path, cfg: GenConfig, note: Callable[[str], None] | None = None
) -> dict[int, ShardMeta]:
    """Shards already sealed (hash recorded, all rows committed); the rest are removed,
    except half-written ones with a checkpoint whose rows still match their checksums,
    which the workers continue (``note`` hears of a shard whose rows did not)."""
    kept: dict[int, ShardMeta] = {}
    folder = shard_dir(path)
    if not folder.is_dir():
        return kept
    for k in range(cfg.num_shards):
        p = shard_path(path, k)
        if not p.exists():
            continue
        try:
            meta = read_shard_meta(p, expect_uuid=cfg.uuid)
        except DatasetError:
            meta = None
        rows = cfg.rows_of(k)
        if meta and meta.content_hash and meta.committed == meta.capacity == rows:
            kept[k] = meta
        elif resumable_point(p, cfg.uuid, rows, note) is None:
            p.unlink()
    for stray in folder.glob(".*.tmp-*"):
        with contextlib.suppress(OSError):
            stray.unlink()
    return kept
