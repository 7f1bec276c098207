"""Where guiapp's logs go, and TensorFlow's native start-up lines kept off the user's terminal.

TensorFlow's C++ side writes notices to file descriptor 2 at import whatever
``TF_CPP_MIN_LOG_LEVEL`` says, on some CPUs and not on others ("All log messages before
absl::InitializeLog() ...", "oneDNN custom operations are on ..."). A user-facing error
must be one line on any machine, so a process about to import TensorFlow calls
:func:`divert_native_stderr`: from then on descriptor 2 (what C and C++ code write) goes
to a log file, while Python's ``sys.stderr`` (our messages, tracebacks, warnings) keeps
writing to the terminal through a duplicate of the original descriptor.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_diverted: Path | None = None


def log_dir() -> Path:
    """``$GUIAPP_LOG_DIR``, else ``$XDG_CACHE_HOME/guiapp/logs`` (``~/.cache/guiapp/logs``)."""
    base = os.environ.get("GUIAPP_LOG_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "guiapp", "logs"
    )
    return Path(base)


def native_log_path() -> Path:
    return log_dir() / "native-stderr.log"


def divert_native_stderr(path: Path | None = None) -> Path | None:
    """Send descriptor 2 to ``path`` (default :func:`native_log_path`); keep ``sys.stderr``.

    Idempotent; returns the log's path, or None when nothing could be diverted (no writable
    log folder, or ``sys.stderr`` is not descriptor 2, as under a test's capture), in which
    case everything stays as it was.
    """
    global _diverted
    if _diverted is not None:
        return _diverted
    target = path or native_log_path()
    try:
        if sys.stderr is None or sys.stderr.fileno() != 2:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except (OSError, ValueError, AttributeError):
        return None
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    terminal = os.dup(2)
    os.set_inheritable(terminal, False)
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    sys.stderr = open(  # noqa: SIM115 - lives as long as the process
        terminal, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=True
    )
    os.dup2(log_fd, 2)
    os.close(log_fd)
    _diverted = target
    return target
