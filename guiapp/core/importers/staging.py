"""The import's staging folder ``.OUT.h5.import-PID/``: its lock, its checkpoint, and the
folders that killed imports left behind.

The job holds an ``flock`` on ``lock`` inside its folder for its whole life, so a folder
whose lock is free and whose process is gone is stale: the next import of the same output
removes it (or, with ``--resume``, adopts it and continues from its checkpoint). A live
job's folder is never touched. No lock file lives outside a staging folder, so nothing
accumulates beside the output.

``checkpoint.json`` (written atomically) records the last committed work: where pass 1
stands in the input and everything it has counted, or how many shards pass 2 has sealed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text, pid_alive

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

CHECKPOINT = "checkpoint.json"
LOCK = "lock"
CHECKPOINT_VERSION = 2  # 2: pass 2 continues after any bucket (rows, shard_stats)


def staging_dir(out: Path, pid: int | None = None) -> Path:
    return out.parent / f".{out.name}.import-{os.getpid() if pid is None else pid}"


def _locked(folder: Path) -> bool:
    """Whether a live process holds the folder's lock."""
    if fcntl is None:
        return False
    try:
        fd = os.open(folder / LOCK, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def stale_folders(out: Path) -> tuple[list[Path], list[tuple[Path, int]]]:
    """``(stale, live)`` staging folders of imports into ``out`` (live: with their PID)."""
    stale: list[Path] = []
    live: list[tuple[Path, int]] = []
    prefix = f".{out.name}.import-"
    if not out.parent.is_dir():
        return stale, live
    for p in sorted(out.parent.iterdir()):
        if not p.name.startswith(prefix) or not p.is_dir():
            continue
        try:
            pid = int(p.name[len(prefix) :])
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        if _locked(p) or pid_alive(pid):
            live.append((p, pid))
        else:
            stale.append(p)
    return stale, live


def folder_bytes(p: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(p):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def remove(p: Path) -> None:
    shutil.rmtree(p, ignore_errors=True)


class StagingLock:
    """Holds ``folder/lock`` while the job runs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fd: int | None = None

    def acquire(self) -> None:
        self.fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def read_checkpoint(folder: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((folder / CHECKPOINT).read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("version") == CHECKPOINT_VERSION else None


def write_checkpoint(folder: Path, state: dict[str, Any]) -> None:
    """Replace the checkpoint atomically, without fsync: it describes bucket and shard files
    that are not fsynced either, and a rename survives a stop or a SIGKILL without it (the
    page cache outlives the process). A power cut can leave the buckets shorter than the
    checkpoint says; the resume then refuses them (``Scatter.restore``). The fsyncs cost
    25-50 ms a checkpoint here, a tenth of a 1,000,000-row import's serial part."""
    text = json.dumps({"version": CHECKPOINT_VERSION, **state})
    atomic_write_text(folder / CHECKPOINT, text, durable=False)
