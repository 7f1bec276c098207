"""``check_dataset``: validate a dataset; metadata and labels by default, every byte with ``full``.

A check is a list of named steps; each step records its own problems, so a report never
calls a step ``ok`` when it found something (``CheckReport.results``). Opening the dataset
at all is the first step, and its failure is the one error (``DatasetError``) raised.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Cancelled, DatasetError, no_rows, nonfinite_values
from .dataset import Dataset
from .format import FORMAT_VERSION, SHARD_FORMAT_NAME, X, Y
from .shard import content_hash
from .shard_meta import ShardMeta, open_h5

Progress = Callable[[int, int], None]  # (done, total) in rows
CancelCheck = Callable[[], bool]

CHECK_BLOCK_ROWS = 1 << 15


@dataclass
class CheckResult:
    """One step of a check: what it covered, and what it found wrong (nothing: ok)."""

    name: str
    problems: list[DatasetError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class CheckReport:
    path: str
    rows: int = 0
    results: list[CheckResult] = field(default_factory=list)

    @property
    def problems(self) -> list[DatasetError]:
        return [p for r in self.results for p in r.problems]

    @property
    def checked(self) -> list[str]:
        """The steps that passed."""
        return [r.name for r in self.results if r.ok]

    @property
    def ok(self) -> bool:
        return not self.problems

    def step(self, name: str) -> CheckResult:
        result = CheckResult(name)
        self.results.append(result)
        return result

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "rows": self.rows,
            "ok": self.ok,
            "checked": self.checked,
            "results": [
                {"name": r.name, "ok": r.ok, "problems": [str(p) for p in r.problems]}
                for r in self.results
            ],
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
    NaN/Inf counts, and a scan of every label. ``full`` also opens every shard as HDF5 on
    its own (header, format version, datasets, committed count), scans every sample for
    NaN/Inf and recomputes the content hash of every sealed or finished shard.
    """
    with Dataset(path) as ds:
        ds.verify_files()  # opening trusts the manifest; every file is stat'ed once here
        rep = CheckReport(path=str(ds.path), rows=len(ds))
        rep.step(f"schema format_version {ds.format_version}, {len(ds.shards)} shard(s) present")
        if len(ds) == 0:
            rep.step("committed rows").problems.append(no_rows(ds.path))
            return rep
        _counts(ds, rep.step(f"committed and class counts of {len(ds.shards)} shard(s)"))
        _labels(ds, rep, full, progress, cancelled)
        if ds.columns:
            _columns(ds, rep.step(f"columns {', '.join(ds.columns)} of every shard"))
        if not full:
            return rep
        _shard_files(ds, rep.step(f"{len(ds.shards)} shard file(s) opened as HDF5"))
        if ds.dtype.kind == "f":
            _values(ds, rep.step(f"NaN/Inf scan of {len(ds)} samples"), progress, cancelled)
        _hashes(ds, rep, cancelled)
        return rep


def _counts(ds: Dataset, result: CheckResult) -> None:
    for s in ds.shards:
        counts = s.stats.class_counts
        if int(counts.sum()) != s.committed:
            result.problems.append(
                DatasetError(
                    s.path,
                    f"class counts add up to {int(counts.sum())}, not the {s.committed} committed rows",
                    "Run 'guiapp check --full' and regenerate the shard",
                )
            )
        if s.stats.nonfinite:
            result.problems.append(nonfinite_values(s.path, s.stats.nonfinite))


def _labels(
    ds: Dataset,
    rep: CheckReport,
    full: bool,
    progress: Progress | None,
    cancelled: CancelCheck | None,
) -> None:
    k = ds.num_classes
    result = rep.step(f"{len(ds)} labels in range 0..{k - 1}")
    total = len(ds) * (2 if full and ds.dtype.kind == "f" else 1)
    bad_labels, first_bad, done = 0, None, 0
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
        result.problems.append(
            DatasetError(
                ds.path,
                f"{bad_labels} label(s) out of range 0..{k - 1}, first at row {row} (label {label})",
                "Fix the labels or the class names and import the data again",
            )
        )


def _columns(ds: Dataset, result: CheckResult) -> None:
    """Every shard holds every column the index lists, as long as the shard, of its dtype;
    group ids are not negative; the group names (when kept) are one per distinct id."""
    import h5py

    from .columns import GROUP, column_path, group_names

    for s in ds.shards:
        if s.committed == 0:
            continue
        with h5py.File(s.path, "r", locking=False) as f:
            for name, dt in ds.columns.items():
                d = f.get(column_path(name))
                if d is None or d.shape != (s.capacity,) or d.dtype != dt:
                    got = "missing" if d is None else f"{d.dtype} of shape {d.shape}"
                    result.problems.append(
                        DatasetError(
                            s.path,
                            f"column {name!r} is {got}, the index says {dt} of ({s.capacity},)",
                            "The shard is not this dataset's: regenerate or re-import it",
                        )
                    )
                elif name == GROUP and int(np.min(d[: s.committed])) < 0:
                    result.problems.append(
                        DatasetError(
                            s.path,
                            "holds a negative group id",
                            "Regenerate or re-import the dataset",
                        )
                    )
    table = group_names(ds) if GROUP in ds.columns else None
    if table is not None:
        ids, names = table
        if len(ids) != len(names) or (len(ids) > 1 and bool((np.diff(ids) <= 0).any())):
            result.problems.append(
                DatasetError(
                    ds.path,
                    "its table of group names is damaged (ids not sorted and unique, or not "
                    "one name each)",
                    "Re-import the dataset",
                )
            )


def _shard_files(ds: Dataset, result: CheckResult) -> None:
    """Each shard opens as HDF5 by itself and agrees with the index about itself."""
    for s in ds.shards:
        if s.committed == 0 and not s.path.exists():
            continue  # listed before any row went in
        try:
            _one_shard_file(ds, s)
        except DatasetError as exc:
            result.problems.append(exc)


def _one_shard_file(ds: Dataset, s: ShardMeta) -> None:
    fix = "Restore the shard from a backup or regenerate the dataset"
    try:
        f = open_h5(s.path, "r", locking=False)
    except DatasetError as exc:
        raise DatasetError(s.path, f"cannot be opened as HDF5: {exc.problem}", fix) from None
    with f:
        a = f.attrs
        fmt = a.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt not in (SHARD_FORMAT_NAME, "guiapp-dataset"):
            raise DatasetError(s.path, f"is not a guiapp shard (format {fmt!r})", fix)
        version = int(a.get("format_version", 0))
        if not 1 <= version <= FORMAT_VERSION:
            raise DatasetError(
                s.path,
                f"has format_version {version}; this guiapp reads 1..{FORMAT_VERSION}",
                "Update guiapp" if version > FORMAT_VERSION else fix,
            )
        if X not in f or Y not in f:
            raise DatasetError(s.path, "has no 'x' and 'y' datasets", fix)
        x, y = f[X], f[Y]
        if x.shape != (s.capacity, *ds.sample_shape) or y.shape != (s.capacity,):
            raise DatasetError(
                s.path,
                f"holds x of shape {x.shape} and y of shape {y.shape}, the index says "
                f"{s.capacity} rows of {ds.sample_shape}",
                fix,
            )
        committed = int(a.get("committed", -1))
        if committed < s.committed:
            raise DatasetError(
                s.path,
                f"has {committed} committed rows, the index says {s.committed}",
                fix,
            )


def _values(
    ds: Dataset, result: CheckResult, progress: Progress | None, cancelled: CancelCheck | None
) -> None:
    nonfinite, first = 0, -1
    for a in range(0, len(ds), CHECK_BLOCK_ROWS):
        if cancelled and cancelled():
            raise Cancelled()
        x, _ = ds.read_range(a, min(len(ds), a + CHECK_BLOCK_ROWS))
        finite = np.isfinite(x.reshape(len(x), -1))
        bad = int(finite.size - np.count_nonzero(finite))
        if bad and first < 0:
            first = a + int(np.flatnonzero(~finite.all(axis=1))[0])
        nonfinite += bad
        if progress:
            progress(len(ds) + a + len(x), 2 * len(ds))
    if nonfinite and not any(s.stats.nonfinite for s in ds.shards):
        result.problems.append(nonfinite_values(ds.path, nonfinite, f"row {first}"))


def _hashes(ds: Dataset, rep: CheckReport, cancelled: CancelCheck | None) -> None:
    hashed = [i for i, s in enumerate(ds.shards) if s.content_hash and s.committed]
    result = rep.step(f"content hashes of {len(hashed)} shard(s)")
    for i in hashed:
        s = ds.shards[i]
        if cancelled and cancelled():
            raise Cancelled()
        try:
            x, y = ds.shard_arrays(i)
            got = content_hash(x, y)
        except (OSError, ValueError) as exc:
            result.problems.append(
                DatasetError(s.path, f"cannot be read ({exc})", "Regenerate the dataset")
            )
            continue
        if got != s.content_hash:
            result.problems.append(
                DatasetError(
                    s.path,
                    f"content hash {got[:12]}… differs from the recorded {s.content_hash[:12]}…: its rows changed after it was sealed",
                    "Restore the shard from a backup or regenerate the dataset",
                )
            )
