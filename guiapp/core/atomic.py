"""Atomic file replacement: write beside the target, fsync, ``os.replace``, fsync the folder.

The one place in the core that replaces files by renaming: project files, run files,
checkpoints, dataset index files and new shard files all go through :func:`atomic_path`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict, Unpack


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Make a rename inside ``folder`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(os.fspath(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path_for(target: str | os.PathLike[str]) -> Path:
    """A temporary name in the target's folder, unique to this process."""
    target = Path(target)
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _keep_backup(target: Path, *, durable: bool) -> None:
    """Replace ``target.bak`` with the current ``target``; the old ``.bak`` stays whole until then."""
    backup = target.with_name(target.name + ".bak")
    tmp = temp_path_for(backup)
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        try:
            os.link(target, tmp)
        except OSError:  # file systems without hard links
            shutil.copy2(target, tmp)
            if durable:
                _fsync_file(tmp)
        os.replace(tmp, backup)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_path(
    target: str | os.PathLike[str], *, keep_backup: bool = False, durable: bool = True
) -> Iterator[Path]:
    """Yield a temporary path; when the block succeeds, it replaces ``target`` atomically.

    The caller writes the temporary file completely (and closes it). On an exception
    the temporary file is removed and ``target`` is untouched. With ``keep_backup``
    the previous ``target`` is kept as ``target.bak`` (replaced atomically too, so a
    ``.bak`` is always whole). ``durable=False`` skips the fsyncs: the rename is still
    atomic for other processes, but may not survive a power cut (new shard files, whose
    rows are made durable, or not, by their writer).
    """
    target = Path(target)
    tmp = temp_path_for(target)
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        yield tmp
        if durable:
            _fsync_file(tmp)
        if keep_backup and target.exists():
            _keep_backup(target, durable=durable)
        os.replace(tmp, target)
        if durable:
            fsync_dir(target.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


class WriteOptions(TypedDict, total=False):
    """:func:`atomic_path`'s options, as the writers below take them."""

    keep_backup: bool
    durable: bool


def atomic_write_bytes(
    target: str | os.PathLike[str], data: bytes, **options: Unpack[WriteOptions]
) -> None:
    """Replace ``target`` with ``data`` atomically (the options: see :func:`atomic_path`)."""
    with atomic_path(target, **options) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def atomic_write_text(
    target: str | os.PathLike[str], text: str, **options: Unpack[WriteOptions]
) -> None:
    """Replace ``target`` with UTF-8 ``text`` atomically."""
    atomic_write_bytes(target, text.encode("utf-8"), **options)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (ours or another user's)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - no signal 0 on Windows
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)
        if not handle:
            return False
        code = ctypes.c_ulong()
        ctypes.windll.kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        ctypes.windll.kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files (:func:`temp_path_for`) of ``target`` that processes no
    longer running left behind (a SIGKILL during a write); return what was removed."""
    target = Path(target)
    removed: list[Path] = []
    prefix = f".{target.name}.tmp-"
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return removed
    for p in entries:
        if not p.name.startswith(prefix):
            continue
        pid = p.name[len(prefix) :]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed
