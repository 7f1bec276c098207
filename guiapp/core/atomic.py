"""Atomic file replacement: write beside the target, fsync, ``os.replace``, fsync the folder."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


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


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str], *, keep_backup: bool = False) -> Iterator[Path]:
    """Yield a temporary path; when the block succeeds, it replaces ``target`` atomically.

    The caller writes the temporary file completely (and closes it). On an exception
    the temporary file is removed and ``target`` is untouched. With ``keep_backup``
    the previous ``target`` is kept as ``target.bak``.
    """
    target = Path(target)
    tmp = temp_path_for(target)
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if keep_backup and target.exists():
            backup = target.with_name(target.name + ".bak")
            with contextlib.suppress(FileNotFoundError):
                backup.unlink()
            try:
                os.link(target, backup)
            except OSError:  # file systems without hard links
                shutil.copy2(target, backup)
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write_bytes(
    target: str | os.PathLike[str], data: bytes, *, keep_backup: bool = False
) -> None:
    """Replace ``target`` with ``data`` atomically."""
    with atomic_path(target, keep_backup=keep_backup) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def atomic_write_text(
    target: str | os.PathLike[str], text: str, *, keep_backup: bool = False
) -> None:
    """Replace ``target`` with UTF-8 ``text`` atomically."""
    atomic_write_bytes(target, text.encode("utf-8"), keep_backup=keep_backup)
