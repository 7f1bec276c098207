"""``BackgroundCalls``: run plain functions on worker threads, get the result on the GUI thread.

The pages call ``calls.submit(key, fn, *args)``; when ``fn`` returns, ``done(key, result)``
arrives on the GUI thread (``failed(key, message)`` if it raised).

The threads are Python's (``ThreadPoolExecutor``), not a ``QThreadPool`` owned by a widget:
a ``QThreadPool`` destroyed with its widget waits for its threads while holding the GIL
they need, which deadlocks when a task is still running.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, Signal


def emit_safely(signal: Any, *args: Any) -> None:
    """Emit from a worker thread; the receiver may be gone (its page was closed)."""
    with contextlib.suppress(RuntimeError):
        signal.emit(*args)


def worker_pool(name: str, threads: int = 1) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"guiapp-{name}")


def wait_for(pool: ThreadPoolExecutor, timeout: float = 30.0) -> bool:
    """Block until the tasks queued so far ran (single-thread pools run them in order)."""
    try:
        pool.submit(lambda: None).result(timeout)
    except TimeoutError:
        return False
    return True


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class BackgroundCalls(QObject):
    """A small private thread pool whose results come back as signals on the GUI thread."""

    done = Signal(object, object)
    failed = Signal(object, str)

    def __init__(
        self,
        threads: int = 1,
        parent: QObject | None = None,
        done: Callable[[object, object], None] | None = None,
    ) -> None:
        super().__init__(parent)
        self.pool = worker_pool("calls", threads)
        if done is not None:
            self.done.connect(done)

    def submit(self, key: object, fn: Callable[..., Any], *args: Any) -> None:
        def run() -> None:
            try:
                result = fn(*args)
            except Exception as exc:  # noqa: BLE001 - shown to the user as one line
                emit_safely(self.failed, key, _one_line(exc))
                return
            emit_safely(self.done, key, result)

        self.pool.submit(run)

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until the queue is empty (tests and shutdown only, never in a slot)."""
        return wait_for(self.pool, msecs / 1000)
