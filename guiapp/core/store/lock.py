"""``DatasetLock``: one generation job per dataset, and no leftover worker writing into it.

An advisory ``flock`` on ``.NAME.h5.lock`` beside the dataset. The job takes it exclusively
(waiting a little, for workers of a killed job to notice and exit), then holds it shared;
each worker holds it shared for its whole life. A second job on the same dataset therefore
waits for every process of the first one, including orphaned workers, to be gone.

The lock file does not outlive the job: the job removes it on the way out, while it holds
the lock exclusively again (once its workers are gone). Whoever takes the lock checks that
the file it locked is still the one at the path (else another job removed it in between,
and it locks afresh), so removing it never lets two jobs in. :func:`writer_active` lets a
reader (training) ask whether a job is writing, without creating the file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

from ..errors import being_written

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
        deadline = time.monotonic() + self.wait_s
        while True:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            if fcntl is None:
                return self
            if self.shared:
                fcntl.flock(self.fd, fcntl.LOCK_SH)
            elif not self._exclusive(deadline):
                os.close(self.fd)
                self.fd = None
                raise being_written(self.index_path)
            if same_file(self.fd, path):
                break
            os.close(self.fd)  # the job before us removed it after we opened it: again
            self.fd = None
        if not self.shared:
            fcntl.flock(self.fd, fcntl.LOCK_SH)  # let our own workers in
        return self

    def _exclusive(self, deadline: float) -> bool:
        assert self.fd is not None and fcntl is not None
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.fd is None:
            return
        if not self.shared and fcntl is not None:
            try:  # our workers are gone when nobody else holds it: remove the file
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if same_file(self.fd, lock_path(self.index_path)):
                    os.unlink(lock_path(self.index_path))
            except OSError:
                pass  # a leftover worker still holds it: the next job waits for it
        os.close(self.fd)
        self.fd = None


def same_file(fd: int, path: Path) -> bool:
    """Whether ``fd`` is the file at ``path`` now (not one removed and made again)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def writer_active(index_path: Path, *, tries: int = 5) -> bool:
    """Whether a job (or a worker of one) holds the dataset's lock now. Creates nothing.

    It takes the lock exclusively for an instant when nobody holds it (a job starting at
    that moment waits a tenth of a second); it asks ``tries`` times, 50 ms apart, so that
    another reader's instant is not taken for a writer.
    """
    if fcntl is None:
        return False
    for attempt in range(tries):
        try:
            fd = os.open(lock_path(Path(index_path)), os.O_RDONLY)
        except OSError:
            return False  # no lock file: no job
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
        if attempt + 1 < tries:
            time.sleep(0.05)
    return True
