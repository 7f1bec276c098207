"""Reading samples for the browser off the GUI thread: visible rows, one sample, label scans.

``SampleLoader`` owns two single-thread pools: one opens the dataset and reads the rows the
grid asks for (rendering their thumbnails there too), the other scans labels for a class
filter in chunks, handing matches over as it goes. Requests carry a ticket; a read whose
ticket is no longer the newest (the user scrolled on) is skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from guiapp.ui.background import emit_safely, wait_for, worker_pool
from guiapp.ui.widgets.thumbnails import ColorScale, render

SCAN_CHUNK = 1 << 20
MAX_MATCHES = 5_000_000


class CountingReader:
    """A dataset opened for the browser, counting every row it reads (tests check this)."""

    def __init__(self, path: str) -> None:
        from guiapp.core.store import Dataset

        self.dataset = Dataset(path)
        self.rows_read = 0
        self.reads = 0

    def read_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Samples and labels of ``rows`` (any order), read as contiguous runs."""
        ds = self.dataset
        x = np.empty((len(rows), *ds.sample_shape), ds.dtype)
        y = np.empty((len(rows),), np.int64)
        if not len(rows):
            return x, y
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        start = 0
        for stop in [*breaks.tolist(), len(rows)]:
            a = int(rows[start])
            xs, ys = ds.read_range(a, a + (stop - start))
            x[start:stop], y[start:stop] = xs, ys
            self.rows_read += stop - start
            self.reads += 1
            start = stop
        return x, y

    def meta(self) -> dict[str, Any]:
        ds = self.dataset
        return {
            "path": str(ds.path),
            "rows": len(ds),
            "sample_shape": list(ds.sample_shape),
            "dtype": ds.dtype.name,
            "class_names": list(ds.class_names),
            "class_counts": ds.class_counts.tolist(),
            "values": ds.value_stats(),
            "statistics": ds.statistics,
            "columns": list(ds.columns),
        }

    def close(self) -> None:
        self.dataset.close()


class SampleLoader(QObject):
    """The browser's reads; every result arrives as a signal on the GUI thread."""

    opened = Signal(dict)
    failed = Signal(str)
    #: ticket, [(row, QImage, label), ...]
    thumbnails = Signal(int, list)
    #: row, sample array, label
    sample = Signal(object, object, int)
    #: scan id, matching rows (int64 array), rows scanned so far
    scan_found = Signal(int, object, object)
    scan_done = Signal(int, bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.reads = worker_pool("reads")
        self.scans = worker_pool("scans")
        self.reader: CountingReader | None = None
        self.scale = ColorScale()
        self._ticket = 0
        self._scan_id = 0
        self._generation = 0

    # ------------------------------------------------------------------ open
    def open(self, path: str) -> None:
        self._generation += 1
        self._ticket += 1
        self._scan_id += 1
        generation = self._generation

        def run() -> None:
            old, self.reader = self.reader, None
            if old is not None:
                old.close()
            try:
                reader = CountingReader(path)
                meta = reader.meta()
            except Exception as exc:  # noqa: BLE001 - one line for the user
                if generation == self._generation:
                    emit_safely(self.failed, str(exc).splitlines()[0] if str(exc) else repr(exc))
                return
            self.reader = reader
            if generation == self._generation:
                emit_safely(self.opened, meta)

        self.reads.submit(run)

    # ------------------------------------------------------------------ thumbnails
    def request(self, rows: np.ndarray) -> int:
        """Read and render ``rows``; stale requests are dropped. Returns the ticket."""
        self._ticket += 1
        ticket, scale, generation = self._ticket, self.scale, self._generation
        rows = np.asarray(rows, dtype=np.int64).copy()

        def run() -> None:
            reader = self.reader
            if ticket != self._ticket or reader is None or generation != self._generation:
                return
            x, y = reader.read_rows(rows)
            out = [(int(r), render(x[i], scale), int(y[i])) for i, r in enumerate(rows.tolist())]
            if generation == self._generation:
                emit_safely(self.thumbnails, ticket, out)

        self.reads.submit(run)
        return ticket

    def request_sample(self, row: int) -> None:
        generation = self._generation

        def run() -> None:
            reader = self.reader
            if reader is None or generation != self._generation:
                return
            x, y = reader.read_rows(np.array([row], dtype=np.int64))
            emit_safely(self.sample, row, x[0], int(y[0]))

        self.reads.submit(run)

    # ------------------------------------------------------------------ label scans
    def scan(self, path: str, classes: set[int], start: int = 0) -> int:
        """Find rows whose label is in ``classes``, chunk by chunk from ``start``."""
        self._scan_id += 1
        scan_id = self._scan_id
        wanted = np.array(sorted(classes), dtype=np.int64)

        def run() -> None:
            from guiapp.core.store import Dataset

            found = 0
            with Dataset(path) as ds:
                n = len(ds)
                for a in range(start, n, SCAN_CHUNK):
                    if scan_id != self._scan_id:
                        return
                    b = min(n, a + SCAN_CHUNK)
                    labels = ds.read_labels(a, b)
                    hits = np.flatnonzero(np.isin(labels, wanted)).astype(np.int64) + a
                    hits = hits[: MAX_MATCHES - found]
                    found += len(hits)
                    emit_safely(self.scan_found, scan_id, hits, b)
                    if found >= MAX_MATCHES:
                        emit_safely(self.scan_done, scan_id, False)
                        return
            emit_safely(self.scan_done, scan_id, True)

        self.scans.submit(run)
        return scan_id

    def stop_scan(self) -> None:
        self._scan_id += 1

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until all reads and scans are done (tests and shutdown only)."""
        return wait_for(self.reads, msecs / 1000) and wait_for(self.scans, msecs / 1000)
