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
import xxhash

from ..errors import Cancelled, DatasetError, no_rows, nonfinite_values
from .commit_sums import verified_rows
from .dataset import Dataset
from .format import FORMAT_VERSION, SHARD_FORMAT_NAME, X, Y
from .scan import Buffers, scan_shard
from .shard_file import HASH_NAME
from .shard_meta import ShardMeta, open_h5, read_shard_meta

Progress = Callable[[int, int], None]  # (done, total) in rows
CancelCheck = Callable[[], bool]


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
        _rows(ds, rep, progress, cancelled)
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
    total = len(ds) * (2 if full else 1)
    bad_labels, first_bad, done = 0, None, 0
    bufs = Buffers(ds.sample_shape, ds.dtype)
    for i, s in enumerate(ds.shards):
        for a, _, y in scan_shard(s, want_x=False, buffers=bufs):
            assert y is not None
            if cancelled and cancelled():
                raise Cancelled()
            wrong = np.flatnonzero((y < 0) | (y >= k))
            if wrong.size:
                bad_labels += int(wrong.size)
                if first_bad is None:
                    first_bad = (int(ds.starts[i]) + a + int(wrong[0]), int(y[wrong[0]]))
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


def _rows(
    ds: Dataset, rep: CheckReport, progress: Progress | None, cancelled: CancelCheck | None
) -> None:
    """One pass over every sample, shard by shard in bounded memory (``scan.py``): the
    NaN/Inf scan (float samples) and the content hash of every sealed or finished shard."""
    floats = ds.dtype.kind == "f"
    values = rep.step(f"NaN/Inf scan of {len(ds)} samples") if floats else None
    hashed = sum(1 for s in ds.shards if s.content_hash and s.committed)
    hashes = rep.step(f"content hashes of {hashed} shard(s), commit checksums of the rest")
    nonfinite, first = 0, -1
    bufs = Buffers(ds.sample_shape, ds.dtype)
    for i, s in enumerate(ds.shards):
        h = xxhash.xxh3_128() if s.content_hash and s.committed else None
        start = int(ds.starts[i])
        try:
            for a, x, _ in scan_shard(s, want_y=False, buffers=bufs):
                assert x is not None
                if cancelled and cancelled():
                    raise Cancelled()
                if floats:
                    finite = np.isfinite(x.reshape(len(x), -1))
                    bad = int(finite.size - np.count_nonzero(finite))
                    if bad and first < 0:
                        first = start + a + int(np.flatnonzero(~finite.all(axis=1))[0])
                    nonfinite += bad
                if h is not None:
                    h.update(np.ascontiguousarray(x).data.cast("B"))
                if progress:
                    progress(len(ds) + start + a + len(x), 2 * len(ds))
            if h is not None:
                for _, _, y in scan_shard(s, want_x=False, buffers=bufs):
                    assert y is not None
                    h.update(np.ascontiguousarray(y).data.cast("B"))
        except (OSError, ValueError) as exc:
            hashes.problems.append(
                DatasetError(s.path, f"cannot be read ({exc})", "Regenerate the dataset")
            )
            continue
        if h is not None:
            got = f"{HASH_NAME}:{h.hexdigest()}"
            if got != s.content_hash:
                hashes.problems.append(_hash_differs(ds, s, got))
        elif s.committed and ds.layout == "sharded":
            _commit_sums(s, hashes)
    if values is not None and nonfinite and not any(s.stats.nonfinite for s in ds.shards):
        values.problems.append(nonfinite_values(ds.path, nonfinite, f"row {first}"))


def _commit_sums(s: ShardMeta, result: CheckResult) -> None:
    """An unfinished shard's committed rows against their commit checksums (``commit_sums``):
    what a power cut can leave behind (committed rows that read as zeros)."""
    try:
        good, committed = verified_rows(s.path)
    except (OSError, KeyError, ValueError) as exc:
        result.problems.append(
            DatasetError(s.path, f"cannot be read ({exc})", "Regenerate the dataset")
        )
        return
    if good < min(committed, s.committed):
        result.problems.append(
            DatasetError(
                s.path,
                f"rows {good:,} to {s.committed:,} of this unfinished shard no longer match "
                "the checksums committed with them (lost in a power cut?)",
                "Resume the job that writes it: 'guiapp generate ... --resume' writes the "
                "shard again; an import starts over without --resume",
            )
        )


def _hash_differs(ds: Dataset, s: ShardMeta, got: str) -> DatasetError:
    """Whose record is wrong when a shard's rows do not hash to the manifest's hash: the
    shard's rows (its own ``content_hash`` agrees with the manifest), or the manifest's
    record (the shard's own hash matches its rows)."""
    own = ""
    if ds.layout == "sharded":
        try:
            own = read_shard_meta(s.path).content_hash
        except DatasetError:
            own = ""
    if own == got:
        return DatasetError(
            ds.path,
            f"the manifest's record of shard {s.number} is damaged: it lists content hash "
            f"{s.content_hash[:20]}…, the shard's rows and its own record say {got[:20]}…",
            "Restore the index file from a backup or regenerate the dataset (the shard "
            "file is intact)",
        )
    return DatasetError(
        s.path,
        f"content hash {got[:20]}… differs from the recorded {s.content_hash[:20]}…: its "
        "rows changed after it was sealed",
        "Restore the shard from a backup or regenerate the dataset",
    )
