"""Resuming a half-written shard: the checkpoint a worker commits with its rows.

A shard is a pure function of (config, seed, k) drawn from one random stream, so the
rows ``[0, committed)`` plus the stream's state after them (:class:`ShardResume`) and the
statistics so far are all a worker needs to continue the shard with the very bytes an
uninterrupted run writes, for any worker count.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py

from ..store import ShardWriter
from ..store.commit_sums import verified_rows
from ..store.format import X
from ..store.stats import GenStats
from .source import ShardResume

__all__ = ["GEN_COMMIT_ROWS", "RESUME_ATTR", "ShardResume", "checkpoint", "resumable_point"]

RESUME_ATTR = "gen_resume"  # an unsealed shard's checkpoint (ShardResume as JSON)
#: a worker commits (and checkpoints) at least every this many rows, inside a shard too
GEN_COMMIT_ROWS = 8192


def checkpoint(w: ShardWriter, stats: GenStats, point: ShardResume) -> None:
    """Commit the written rows with what continues them: the statistics and the generator
    state go in first, for ``point.rows`` rows, then the ``committed`` counter. A crash
    between the two leaves a point that does not match ``committed``: that shard restarts."""
    with h5py.File(w.path, "r+") as f:
        for key, value in stats.to_attrs().items():
            f.attrs[key] = value
        f.attrs[RESUME_ATTR] = point.to_json()
    w.commit()


def resumable_point(
    path: Path, uuid: str, capacity: int, note: Callable[[str], None] | None = None
) -> ShardResume | None:
    """The checkpoint of an unsealed shard of this dataset, or None (start it afresh).

    Its committed rows are checked against their commit checksums first (``commit_sums``):
    rows a power cut lost (zeros where rows were committed) cannot be continued from, and
    the generator's state is kept only for the last commit, so such a shard starts afresh
    from its first row (the last point that can be verified and continued); ``note`` is
    told so in one line."""
    if not path.exists():
        return None
    try:
        with h5py.File(path, "r", locking=False) as f:
            a = f.attrs
            if bytes(a.get("content_hash", b"")).strip() or RESUME_ATTR not in a:
                return None
            if a["dataset_uuid"].decode("ascii").strip() != uuid:
                return None
            if int(f[X].shape[0]) != capacity:
                return None
            text = a[RESUME_ATTR]
            point = ShardResume.from_json(text.decode() if isinstance(text, bytes) else text)
    except (OSError, KeyError, ValueError):
        return None
    if point is None or not 0 < point.rows < capacity:
        return None
    try:
        good, _ = verified_rows(path)
    except (OSError, KeyError, ValueError):
        good = 0
    if good < point.rows:
        if note is not None:
            note(
                f"{path.name}: rows {good:,} to {point.rows:,} no longer match the checksums "
                "committed with them (lost in a power cut?): the shard is written again from "
                "its first row"
            )
        return None
    return point
