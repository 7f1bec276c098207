"""Background work the pages submit while the window makes its first paint starts after
that paint (the reading threads took the GIL from it and doubled it on 2 cores)."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QLabel

from guiapp.ui.background import hold_until_painted, wait_for, worker_pool


class PaintSeen(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.painted = threading.Event()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.painted.set()
        return False


def test_work_submitted_before_the_first_paint_starts_after_it(qtbot) -> None:
    window = QLabel("a window")
    qtbot.addWidget(window)
    seen = PaintSeen()
    window.installEventFilter(seen)
    pool = worker_pool("test")
    hold_until_painted(window, fallback_ms=60_000)
    ran: list[bool] = []
    future = pool.submit(lambda: ran.append(seen.painted.is_set()) or "result")
    qtbot.wait(50)
    assert ran == [] and not future.done()  # held: no paint yet
    window.show()
    qtbot.waitUntil(future.done, timeout=5000)
    assert ran == [True] and future.result() == "result"  # it ran after the paint
    assert pool.submit(lambda: 7).result(5) == 7  # the gate is open again
    pool.shutdown()


def test_a_window_never_shown_releases_its_work_after_the_fallback(qtbot) -> None:
    window = QLabel("never shown")
    qtbot.addWidget(window)
    pool = worker_pool("test")
    hold_until_painted(window, fallback_ms=100)
    future = pool.submit(lambda: "late")
    qtbot.waitUntil(future.done, timeout=5000)
    assert future.result() == "late"
    hold_until_painted(window, fallback_ms=60_000)
    future = pool.submit(lambda: "now")
    assert wait_for(pool, 5) and future.result() == "now"  # waiting releases the gate
    pool.shutdown()


@pytest.mark.parametrize("submit", ["pool", "calls"])
def test_a_widget_a_finished_task_held_last_is_freed_on_the_gui_thread(qtbot, submit: str) -> None:
    """A task's closure that holds the last reference to a widget (its page was closed
    while the task ran) is released on the GUI thread. Freed on the worker, ~QObject ran
    there and waited for the GIL under a Qt lock the GUI thread was waiting for: the UI
    suite hung for good."""
    from guiapp.ui.background import BackgroundCalls

    freed_on: list[str] = []

    class Page(QLabel):
        def __del__(self) -> None:
            freed_on.append(threading.current_thread().name)

    page = Page("a page")
    started, go = threading.Event(), threading.Event()

    def work(p: QLabel = page) -> str:
        started.set()
        go.wait(10)
        return p.text()

    pool, calls = worker_pool("test"), BackgroundCalls()
    future = pool.submit(work) if submit == "pool" else None
    if future is None:
        calls.submit("k", work)
    del work
    assert started.wait(10)
    del page  # the page is gone; the running task holds the widget's last reference
    go.set()
    if future is not None:
        assert future.result(10) == "a page"
    else:
        assert calls.wait()
    qtbot.waitUntil(lambda: freed_on != [], timeout=5000)
    assert freed_on == ["MainThread"]
