"""``BackgroundCalls``: run plain functions on worker threads, get the result on the GUI thread.

The pages call ``calls.submit(key, fn, *args)``; when ``fn`` returns, ``done(key, result)``
arrives on the GUI thread (``failed(key, message)`` if it raised).

The threads are Python's (``ThreadPoolExecutor``), not a ``QThreadPool`` owned by a widget:
a ``QThreadPool`` destroyed with its widget waits for its threads while holding the GIL
they need, which deadlocks when a task is still running. Work submitted while the main
window makes its first paint starts just after it (:func:`hold_until_painted`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget


def emit_safely(signal: Any, *args: Any) -> None:
    """Emit from a worker thread; the receiver may be gone (its page was closed)."""
    with contextlib.suppress(RuntimeError):
        signal.emit(*args)


class _Gate:
    """Work submitted while the main window makes its first paint, started after it.

    The pages start reading (dataset headers, samples, run folders) as the window is built;
    on 2 cores those threads took the GIL from the first paint and doubled it (~50 ->
    ~100-135 ms, ``guiapp bench gui``'s idle phase). :func:`hold_until_painted` holds new
    work until the window's first paint is done (or ``fallback_ms`` passed, for a window
    that is never shown); :func:`wait_for` releases it (waiting means "now")."""

    held: list[Callable[[], None]] | None = None

    @classmethod
    def release(cls) -> None:
        starts, cls.held = cls.held or [], None
        for start in starts:
            start()


class WorkerPool(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose submissions wait while the gate is held, and whose
    threads never drop the last reference to what a task holds.

    A task is usually a closure over a widget or another QObject (``self``). Were its last
    reference dropped on a worker thread (the page closed meanwhile), ~QObject would run
    there and wait for the GIL under a Qt lock the GUI thread may be waiting for: the
    process hung for good (seen in the UI suite). A finished task's function and arguments
    go back to the GUI thread, which drops them in its event loop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        global _releaser
        if _releaser is None:  # made on the GUI thread, with the first pool
            _releaser = _Releaser()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        box: list[Any] = [fn, args, kwargs]

        def task() -> Any:
            call, call_args, call_kwargs = box
            try:
                return call(*call_args, **call_kwargs)
            finally:
                del call, call_args, call_kwargs  # (``box`` holds them: not the last)
                hand_to_gui_thread(box)

        return self._submit(task)

    def _submit(self, fn: Callable[[], Any]) -> Future[Any]:
        if _Gate.held is None:
            return super().submit(fn)
        future: Future[Any] = Future()

        def start() -> None:
            try:
                inner = super(WorkerPool, self).submit(fn)
            except RuntimeError as exc:  # the pool was shut down meanwhile
                future.set_exception(exc)
                return
            inner.add_done_callback(lambda done: _copy_outcome(done, future))

        _Gate.held.append(start)
        return future


def _copy_outcome(source: Future[Any], target: Future[Any]) -> None:
    exc = source.exception()
    if exc is not None:
        target.set_exception(exc)
    else:
        target.set_result(source.result())


def hold_until_painted(window: QWidget, fallback_ms: int = 1000) -> None:
    """Hold new background work until ``window``'s first paint is done."""
    _Gate.held = [] if _Gate.held is None else _Gate.held

    class FirstPaint(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.UpdateRequest:
                watched.removeEventFilter(self)
                QTimer.singleShot(0, _Gate.release)  # after this paint
            return False

    watcher = FirstPaint(window)
    window.installEventFilter(watcher)
    QTimer.singleShot(fallback_ms, _Gate.release)


def worker_pool(name: str, threads: int = 1) -> ThreadPoolExecutor:
    return WorkerPool(max_workers=threads, thread_name_prefix=f"guiapp-{name}")


def wait_for(pool: ThreadPoolExecutor, timeout: float = 30.0) -> bool:
    """Block until the tasks queued so far ran (single-thread pools run them in order)."""
    _Gate.release()
    try:
        pool.submit(lambda: None).result(timeout)
    except TimeoutError:
        return False
    return True


class _Releaser(QObject):
    """Holds what worker threads are done with until the GUI thread drops it."""

    release = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Any] = []
        self.lock = threading.Lock()
        self.release.connect(self._drop)

    def _drop(self) -> None:
        with self.lock:
            held, self.held = self.held, []
        del held  # here, on the GUI thread


_releaser: _Releaser | None = None


def hand_to_gui_thread(items: list[Any]) -> None:
    """Move ``items``' references to the GUI thread, which drops them in its event loop
    (``items`` is emptied; the calling thread must hold no other reference to them)."""
    releaser = _releaser
    if releaser is None:  # (made on the GUI thread by the first BackgroundCalls)
        return
    with releaser.lock:  # the GUI thread takes the list only after both lines
        releaser.held.append(tuple(items))
        items.clear()
    emit_safely(releaser.release)


_collector: Any = None


def collect_on_gui_thread() -> None:
    """Cyclic garbage is collected on the GUI thread only, by a timer (pyqtgraph's
    ``GarbageCollector``: automatic collection off). Left on, a collection that a worker
    thread's allocation set off freed widgets caught in cycles (closed dialogs) on that
    thread, and ~QObject there deadlocked with the GUI thread (seen in the UI suite)."""
    global _collector
    if _collector is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _collector = GarbageCollector(interval=1.0)


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
