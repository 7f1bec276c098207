"""What an import's checkpoint holds, as JSON, and putting a job back into that state.

Pass 1's state: where the input stands (piece and record, or array chunk), the counts, the
label map, the shuffle's buckets (rows per bucket; the files are cut back to them) and its
random generator, and the running statistics. Pass 2's: the rows written (a bucket's
end) and the statistics of the shard they end in (``DatasetWriter.position``). The same
input, options and seed then give the same bytes as an uninterrupted import.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UserError
from ..store.jitsums import gen_stats
from ..store.stats import GenStats
from .config import Tally
from .labels import LabelMap
from .shuffle import Scatter

if TYPE_CHECKING:
    from .pass1 import ReadPass


def source_identity(files: list[Path]) -> list[list[Any]]:
    """What must not change between a stop and its resume: each input's path, size, mtime."""
    out = []
    for p in files:
        st = os.stat(p)
        out.append([str(p.resolve()), st.st_size, st.st_mtime_ns])
    return out


def labels_state(m: LabelMap) -> dict[str, Any]:
    return {"keys": list(m.keys), "ids": [[k, v] for k, v in m._ids.items()]}


def restore_labels(m: LabelMap, d: dict[str, Any]) -> None:
    m.keys = list(d["keys"])
    m._ids = {k: int(v) for k, v in d["ids"]}
    m._raw_cache = {}


def stats_state(s: GenStats) -> dict[str, Any]:
    return {
        "rows": s.rows,
        "pos_sum": s.pos_sum.tolist(),
        "pos_sumsq": s.pos_sumsq.tolist(),
        "hist": s.hist.tolist(),
    }


def restore_stats(s: GenStats, d: dict[str, Any]) -> None:
    s.rows = int(d["rows"])
    s.pos_sum = np.asarray(d["pos_sum"], np.float64)
    s.pos_sumsq = np.asarray(d["pos_sumsq"], np.float64)
    s.hist = np.asarray(d["hist"], np.int64)


def pass1_state(job: ReadPass, position: dict[str, Any]) -> dict[str, Any]:
    """Pass 1 (``ReadPass``) after a chunk (its buckets flushed): enough to continue
    right after it."""
    sc, st = job.scatter, job.stats
    return {
        "position": position,
        "tally": asdict(job.tally),
        "labels": labels_state(job.labels),
        "sample_shape": None if job.fit.sample_shape is None else list(job.fit.sample_shape),
        "scatter": None
        if sc is None
        else {
            "buckets": sc.n,
            "shape": list(sc.sample_shape),
            "rows": sc.rows.tolist(),
            "rng": sc.rng.bit_generator.state,
            "est_rows": job.est_rows,
        },
        "stats": None if st is None else stats_state(st),
        "lineage": job.lineage.state() if job.lineage.active else None,
    }


def restore_pass1(job: ReadPass, d: dict[str, Any], *, buckets: bool = True) -> dict[str, Any]:
    """Put pass 1 (``ReadPass``) back to a checkpoint's state; returns the input position
    to continue from.

    ``buckets``: cut the bucket files back to the checkpoint (pass 1); pass 2 has been
    consuming them, so then they are left as they are."""
    job.tally = Tally(**d["tally"])
    restore_labels(job.labels, d["labels"])
    job.lineage.restore(d.get("lineage"), cut=buckets)
    if d["sample_shape"] is not None and job.fit.length is None:
        job.fit.sample_shape = tuple(d["sample_shape"])
    sc = d["scatter"]
    if sc is not None:
        rng = np.random.default_rng()
        rng.bit_generator.state = sc["rng"]
        job.scatter = Scatter(
            job.stage / "buckets",
            int(sc["buckets"]),
            tuple(sc["shape"]),
            job.dtype,
            rng,
            flush_bytes=max(1, job.budget // 4),
            columns=job.lineage.bucket_columns(),
        )
        rows = [int(r) for r in sc["rows"]]
        if buckets:
            job.scatter.restore(rows)
        else:
            job.scatter.rows = np.asarray(rows, np.int64)
        job.est_rows = int(sc["est_rows"])
        job.stats = gen_stats(tuple(sc["shape"]), job.dtype)
        restore_stats(job.stats, d["stats"])
    position: dict[str, Any] = d["position"]
    return position


def check_same(saved: dict[str, Any], params: dict[str, Any], files: list[Path]) -> None:
    """A checkpoint is only continued with the options and the input it was made with."""
    old = dict(saved["params"])
    new = dict(params)
    for k in ("overwrite",):
        old.pop(k, None)
        new.pop(k, None)
    diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if diff:
        raise UserError(
            f"--resume: the stopped import had other options ({', '.join(diff)}). Run it with "
            "the same options, or without --resume to start over",
            option="--resume",
            value=True,
        )
    if saved["source"] != source_identity(files):
        raise UserError(
            "--resume: the input files changed since the import stopped. Run without "
            "--resume to start over",
            option="--resume",
            value=True,
        )
