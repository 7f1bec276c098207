"""Background work the pages submit while the window makes its first paint starts after
that paint (the reading threads took the GIL from it and doubled it on 2 cores)."""

from __future__ import annotations

import threading

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
