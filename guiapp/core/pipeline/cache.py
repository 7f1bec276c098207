"""``RowCache``: a dataset's rows read once into memory, for a run whose data fits.

``guiapp train --cache auto|memory|off`` (auto by default). With a cache, the readers of a
run (training and validation) copy their runs of rows from these arrays instead of the
files; the read plan is the same, so every batch holds the same rows in the same order,
and the splits, folds, fractions and ``--resume`` positions are those of a run without it.

``auto`` caches when the dataset (samples and labels) takes at most ``--cache-share`` of the
memory the system reports available (``MemAvailable``) and at most ``AUTO_MAX_BYTES``;
``memory`` caches whenever it fits in what is available at all, and refuses in one line
otherwise; ``off`` reads the files. A larger dataset that fits in memory is kept there by
the system's page cache after the first epoch anyway, and reading it once into fresh memory
costs its start-up a pass of page faults (0.4-0.6 GiB/s on the 2-core test machine:
seconds at a million 25x25 rows) that no epoch gives back.
One cache is kept per process (the last dataset cached): the trials of an experiment run
in one process read it once.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import OptionError
from ..store import Dataset
from ..store.format import LABEL_DTYPE

CACHE_MODES = ("auto", "memory", "off")
#: Rows of one load read (a thread each): big enough that a read is one system call a
#: block, small enough that the threads share the work.
LOAD_BYTES = 32 << 20
#: Runs are copied by one gather of rows when there are more than this many and they hold
#: fewer than ``SHORT_RUN_ROWS`` rows on average (``RowCache.copy_runs``).
SHORT_RUNS_AT = 64
SHORT_RUN_ROWS = 16
#: ``--cache auto`` caches datasets up to this size (see above).
AUTO_MAX_BYTES = 256 << 20


def available_bytes() -> int:
    """What the system says it can hand out without swapping (``MemAvailable``)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - no psutil or no /proc: say nothing fits
        return 0


def dataset_bytes(ds: Dataset) -> int:
    """Bytes a cache of every row of ``ds`` takes (samples and labels)."""
    return len(ds) * (ds.row_nbytes + LABEL_DTYPE.itemsize)


@dataclass(frozen=True)
class CacheChoice:
    """What a run's ``--cache`` came to: ``memory`` or ``off``, and why."""

    mode: str
    nbytes: int
    available: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def choose(ds: Dataset, mode: str, share: float) -> CacheChoice:
    """Whether a run with ``--cache MODE --cache-share SHARE`` caches ``ds``."""
    need, free = dataset_bytes(ds), available_bytes()
    mb = f"{need / 2**20:,.0f} MB"
    if mode == "off":
        return CacheChoice("off", need, free, "--cache off")
    if mode == "memory":
        if need > free:
            raise OptionError(
                "cache",
                "memory",
                f"{ds.path} needs {mb} in memory and {free / 2**20:,.0f} MB is available",
                "use --cache auto or --cache off (read from the files)",
            )
        return CacheChoice("memory", need, free, f"--cache memory ({mb})")
    limit = int(free * share)
    if need > AUTO_MAX_BYTES:
        return CacheChoice(
            "off", need, free, f"{mb}: above {AUTO_MAX_BYTES >> 20} MB the page cache serves"
        )
    if need <= limit:
        return CacheChoice("memory", need, free, f"{mb} fit in {share:g} of available memory")
    return CacheChoice(
        "off", need, free, f"{mb} do not fit in {share:g} of available memory ({limit >> 20:,} MB)"
    )


class RowCache:
    """Every row of one dataset in memory: ``x[i]``, ``y[i]`` is row ``i``."""

    def __init__(self, x: np.ndarray, y: np.ndarray, key: tuple[str, str]) -> None:
        self.x, self.y, self.key = x, y, key

    @property
    def nbytes(self) -> int:
        return int(self.x.nbytes + self.y.nbytes)

    def copy_runs(
        self, src: np.ndarray, dest: np.ndarray, length: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> None:
        """Rows ``src[i]:src[i]+length[i]`` to buffer rows ``dest[i]:...``: a slice copy a
        run where runs are long, one gather of every row where they are short (a grouped
        split's mask leaves runs of a few rows: a Python step per run cost more than it
        copied)."""
        cx, cy = self.x, self.y
        if len(src) > SHORT_RUNS_AT and int(length.sum()) < SHORT_RUN_ROWS * len(src):
            first = np.cumsum(length) - length  # each run's first row among the rows copied
            within = np.arange(int(length.sum())) - np.repeat(first, length)
            to, frm = np.repeat(dest, length) + within, np.repeat(src, length) + within
            x[to] = cx[frm]
            y[to] = cy[frm]
            return
        for s, d, n in zip(src.tolist(), dest.tolist(), length.tolist(), strict=True):
            x[d : d + n] = cx[s : s + n]
            y[d : d + n] = cy[s : s + n]


_LAST: RowCache | None = None
_LOCK = threading.Lock()


def _key(ds: Dataset) -> tuple[str, str]:
    return (os.path.realpath(ds.path), str(ds.uuid))


def load(ds: Dataset, threads: int) -> RowCache:
    """The rows of ``ds`` in memory: the process's cache when it holds ``ds`` already,
    else read now (from the files, ``threads`` reads at once) and kept for the next run."""
    global _LAST
    from .reader import WindowReader

    key = _key(ds)
    with _LOCK:
        if _LAST is not None and _LAST.key == key:
            return _LAST
        _LAST = None  # the old cache is freed before the new one is read
        rows = len(ds)
        x = np.empty((rows, *ds.sample_shape), ds.dtype)
        y = np.empty(rows, LABEL_DTYPE)
        step = max(1, LOAD_BYTES // max(1, ds.row_nbytes))
        reader = WindowReader(ds, pool_buffers=1, compiled=False)
        try:

            def piece(a: int) -> None:
                n = min(step, rows - a)
                one = np.array([a], np.int64)
                reader.read_runs(one, one, np.array([n], np.int64), x, y)

            with ThreadPoolExecutor(max(1, threads), thread_name_prefix="guiapp-cache") as pool:
                list(pool.map(piece, range(0, rows, step)))
        finally:
            reader.close()
        _LAST = RowCache(x, y, key)
        return _LAST


def drop() -> None:
    """Free the process's cache (a test, or memory wanted back)."""
    global _LAST
    with _LOCK:
        _LAST = None


__all__ = ["CACHE_MODES", "CacheChoice", "RowCache", "choose", "dataset_bytes", "drop", "load"]
