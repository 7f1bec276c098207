"""``check_dataset``: validate a dataset; metadata and labels by default, every byte with ``full``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Cancelled, DatasetError
from .dataset import Dataset
from .shard import content_hash

Progress = Callable[[int, int], None]  # (done, total) in rows
CancelCheck = Callable[[], bool]

CHECK_BLOCK_ROWS = 1 << 15


@dataclass
class CheckReport:
    path: str
    rows: int = 0
    checked: list[str] = field(default_factory=list)
    problems: list[DatasetError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "rows": self.rows,
            "ok": self.ok,
            "checked": self.checked,
            "problems": [str(p) for p in self.problems],
        }


def check_dataset(
    path: str | os.PathLike[str],
    *,
    full: bool = False,
    progress: Progress | None = None,
    cancelled: CancelCheck | None = None,
) -> CheckReport:
    """Check a dataset. Raises ``DatasetError`` when it cannot be opened at all.

    Default: schema, shard files and sizes, committed counts, recorded class counts and
    NaN/Inf counts, and a scan of every label. ``full`` also scans every sample for
    NaN/Inf and recomputes the content hash of every sealed or finished shard.
    """
    with Dataset(path) as ds:
        ds.verify_files()  # opening trusts the manifest; every file is stat'ed once here
        rep = CheckReport(path=str(ds.path), rows=len(ds))
        rep.checked.append(
            f"schema format_version {ds.format_version}, {len(ds.shards)} shard(s) present"
        )
        if len(ds) == 0:
            rep.problems.append(
                DatasetError(
                    ds.path, "has no committed rows", "Generate or import rows into it first"
                )
            )
            return rep
        k = ds.num_classes
        for s in ds.shards:
            if s.committed > s.capacity:
                rep.problems.append(
                    DatasetError(
                        s.path,
                        f"says {s.committed} rows are committed but holds only {s.capacity}",
                        "Regenerate the dataset",
                    )
                )
            counts = s.stats.class_counts
            if int(counts.sum()) != s.committed:
                rep.problems.append(
                    DatasetError(
                        s.path,
                        f"class counts add up to {int(counts.sum())}, not the {s.committed} committed rows",
                        "Run 'guiapp check --full' and regenerate the shard",
                    )
                )
            if s.stats.nonfinite:
                rep.problems.append(
                    DatasetError(
                        s.path,
                        f"holds {s.stats.nonfinite} NaN/Inf values",
                        "Clean the source data and import it again",
                    )
                )
        rep.checked.append(f"committed counts of {len(ds.shards)} shard(s)")
        done = 0
        total = len(ds) * (2 if full else 1)
        bad_labels = 0
        first_bad: tuple[int, int] | None = None
        for a in range(0, len(ds), CHECK_BLOCK_ROWS):
            if cancelled and cancelled():
                raise Cancelled()
            y = ds.read_labels(a, min(len(ds), a + CHECK_BLOCK_ROWS))
            wrong = np.flatnonzero((y < 0) | (y >= k))
            if wrong.size:
                bad_labels += int(wrong.size)
                if first_bad is None:
                    first_bad = (a + int(wrong[0]), int(y[wrong[0]]))
            done += len(y)
            if progress:
                progress(done, total)
        if first_bad is not None:
            row, label = first_bad
            rep.problems.append(
                DatasetError(
                    ds.path,
                    f"{bad_labels} label(s) out of range 0..{k - 1}, first at row {row} (label {label})",
                    "Fix the labels or the class names and import the data again",
                )
            )
        rep.checked.append(
            f"{len(ds)} labels in range 0..{k - 1}" if first_bad is None else "labels"
        )
        if not full:
            return rep
        nonfinite = 0
        if ds.dtype.kind == "f":
            for a in range(0, len(ds), CHECK_BLOCK_ROWS):
                if cancelled and cancelled():
                    raise Cancelled()
                x, _ = ds.read_range(a, min(len(ds), a + CHECK_BLOCK_ROWS))
                nonfinite += int(x.size - np.count_nonzero(np.isfinite(x)))
                done += len(x)
                if progress:
                    progress(done // 2, total // 2)
            if nonfinite and not any(s.stats.nonfinite for s in ds.shards):
                rep.problems.append(
                    DatasetError(
                        ds.path,
                        f"holds {nonfinite} NaN/Inf values",
                        "Clean the source data and import it again",
                    )
                )
            rep.checked.append(f"NaN/Inf scan of {len(ds)} samples")
        hashed = 0
        for i, s in enumerate(ds.shards):
            if not s.content_hash or s.committed == 0:
                continue
            if cancelled and cancelled():
                raise Cancelled()
            x, y = ds.shard_arrays(i)
            got = content_hash(x, y)
            hashed += 1
            if got != s.content_hash:
                rep.problems.append(
                    DatasetError(
                        s.path,
                        f"content hash {got[:12]}… differs from the recorded {s.content_hash[:12]}…: its rows changed after it was sealed",
                        "Restore the shard from a backup or regenerate the dataset",
                    )
                )
        rep.checked.append(f"content hashes of {hashed} shard(s)")
        return rep
