"""``RunLock``: one process at a time writes a run (or experiment) folder.

An advisory ``flock`` on ``.NAME.run.lock`` beside the folder ``NAME`` (beside, not inside:
``--restart`` removes the folder, and a lock inside it would go with it while the old run
still wrote). The training process takes it exclusively, without waiting, before it
touches the folder, and holds it until it exits; the kernel drops it when the process
dies however it dies, so a lock is never stale and a recycled pid is never mistaken for
its holder. The file holds the holder's pid and start time, for the message only; the
holder removes it on the way out (a process that opened it meanwhile sees that the file it
locked is no longer the one at the path, and locks afresh).

Children of the run that write nothing of their own (the other workers of a cluster, the
trials of ``--parallel-trials``, which the parent's lock covers) do not take it.
:func:`run_active` tells the GUI whether a run is being written, creating nothing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import TracebackType

from ..errors import FileError
from ..store.lock import same_file as _same_file

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, no protection
    fcntl = None  # type: ignore[assignment]


def lock_path(out: str | os.PathLike[str]) -> Path:
    p = Path(out).resolve()
    return p.with_name(f".{p.name}.run.lock")


class RunLock:
    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.out = Path(out)
        self.path = lock_path(out)
        self.fd: int | None = None

    def __enter__(self) -> RunLock:
        if fcntl is None:
            return self
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                return self  # no folder can be made there: the run's own checks say why
            if not _exclusive(fd, WAIT_S):
                holder = _holder(fd)
                os.close(fd)
                raise FileError(
                    self.out,
                    f"another guiapp process{holder} is writing this run now",
                    "Wait for it to finish, or stop it (Jobs panel, or SIGTERM), then try again",
                ) from None
            if _same_file(fd, self.path):
                break
            os.close(fd)  # its holder removed it after we opened it: lock the new one
        os.ftruncate(fd, 0)
        info = {"pid": os.getpid(), "started": time.time()}
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self.fd = fd
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.fd is not None:
            # Removed while held: whoever opened it meanwhile finds it gone and starts again.
            if _same_file(self.fd, self.path):
                self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


#: How long a start waits for the lock (``run_active`` holds it for an instant).
WAIT_S = 1.0


def _exclusive(fd: int, wait_s: float) -> bool:
    assert fcntl is not None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def _holder_pid(fd: int) -> int | None:
    try:
        return int(json.loads(os.pread(fd, 256, 0) or b"{}")["pid"])
    except (ValueError, KeyError, TypeError, OSError):
        return None


def _holder(fd: int) -> str:
    pid = _holder_pid(fd)
    return "" if pid is None else f" (pid {pid})"


def _probe(out: str | os.PathLike[str]) -> tuple[bool, int | None]:
    """(whether a process holds the run's lock now, its pid as it wrote it)."""
    if fcntl is None:
        return False, None
    try:
        fd = os.open(lock_path(out), os.O_RDONLY)
    except OSError:
        return False, None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False, None  # nobody holds it
    except BlockingIOError:
        return True, _holder_pid(fd)
    finally:
        os.close(fd)


def run_holder(out: str | os.PathLike[str]) -> int | None:
    """The pid of the process writing the run now (None when none is, or it cannot be
    read): the lock's holder, never a pid remembered from before (it may be another
    process's by now)."""
    return _probe(out)[1]


def run_active(out: str | os.PathLike[str]) -> bool:
    """Whether a process holds the run's lock now (creates nothing)."""
    return _probe(out)[0]
