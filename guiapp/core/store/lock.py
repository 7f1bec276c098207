"""``DatasetLock``: one generation job per dataset, and no leftover worker writing into it.

An advisory ``flock`` on ``.NAME.h5.lock`` beside the dataset. The job takes it exclusively
(waiting a little, for workers of a killed job to notice and exit), then holds it shared;
each worker holds it shared for its whole life. A second job on the same dataset therefore
waits for every process of the first one, including orphaned workers, to be gone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

from ..errors import DatasetError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, no protection
    fcntl = None  # type: ignore[assignment]


def lock_path(index_path: Path) -> Path:
    return index_path.with_name(f".{index_path.name}.lock")


class DatasetLock:
    def __init__(self, index_path: Path, *, shared: bool, wait_s: float = 20.0) -> None:
        self.index_path = Path(index_path)
        self.shared = shared
        self.wait_s = wait_s
        self.fd: int | None = None

    def __enter__(self) -> DatasetLock:
        path = lock_path(self.index_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            return self
        if self.shared:
            fcntl.flock(self.fd, fcntl.LOCK_SH)
            return self
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise DatasetError(
                        self.index_path,
                        "is being written by another job (or its worker processes)",
                        "Wait for it to finish or stop it first",
                    ) from None
                time.sleep(0.1)
        fcntl.flock(self.fd, fcntl.LOCK_SH)  # let our own workers in
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
