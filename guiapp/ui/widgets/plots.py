"""The app's plot widget (labelled axes, a light grid, plain tick numbers, a left axis of
fixed width) and :class:`StagedPaint`, which paints a page's plots one per tick.

pyqtgraph fits an axis to its tick labels after the first paint; the resize relays out the
plot and paints it again, so a page of four plots painted three of them twice on its first
show (~120-190 ms on 2 cores, in ``guiapp bench gui``'s jobs phase). A fixed width,
room for ``digits`` characters of tick labels, makes that one paint, keeps the plots of a
page aligned, and stops the axis from jumping as the values grow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QWidget


def new_plot(left: str, bottom: str, *, digits: int, min_height: int = 140) -> pg.PlotWidget:
    """A plot whose left axis has room for tick labels up to ``digits`` characters."""
    widget = pg.PlotWidget()
    widget.setMinimumHeight(min_height)
    plot = widget.getPlotItem()
    plot.setLabel("left", left)
    plot.setLabel("bottom", bottom)
    plot.showGrid(x=True, y=True, alpha=0.25)
    for name in ("left", "bottom"):
        plot.getAxis(name).enableAutoSIPrefix(False)
    axis = plot.getAxis("left")
    font = axis.style["tickFont"] or widget.font()
    text = QFontMetricsF(font).horizontalAdvance("8" * digits)
    # pyqtgraph's own sum for a left axis: the labels, their offset, the rotated title
    title = 0.8 * axis.label.boundingRect().height()
    axis.setWidth(math.ceil(text + axis.style["tickTextOffset"][0] + title))
    return widget


class StagedPaint(QObject):
    """Paints a page's plots one at a time when the page is shown, one per timer tick.

    Qt paints every dirty widget of a window in one go, so showing a page of four plots
    (two axes and a grid each, ~15-40 ms a plot on 2 cores) held the event loop for up to
    150 ms. Here each plot's updates stay off until its turn: the page appears at once,
    the plots follow ``step_ms`` apart (four plots: about 60 ms), and input is served
    between them. Hiding the page turns them off again, so every show is staged."""

    revealed = Signal(int)  # the plot's index, as its updates come back on

    def __init__(self, host: QWidget, plots: Sequence[QWidget], step_ms: int = 15) -> None:
        super().__init__(host)
        self.host = host
        self.plots = list(plots)
        self._next = 0
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(step_ms)
        self.timer.timeout.connect(self._reveal_next)
        self._hold()
        host.installEventFilter(self)

    def _hold(self) -> None:
        self.timer.stop()
        self._next = 0
        for plot in self.plots:
            plot.setUpdatesEnabled(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # While the host is torn down, its Hide may reach a filter whose Python half is
        # already gone (no ``host`` any more): nothing to do then.
        if watched is getattr(self, "host", None):
            if event.type() == QEvent.Type.Show:
                self.timer.start()
            elif event.type() == QEvent.Type.Hide:
                self._hold()
        return False

    def restage(self) -> None:
        """New data for all the plots at once (a dataset opened): hold them and let them
        paint one per tick again, each showing its old picture until its turn."""
        if self.host.isVisible():
            self._hold()
            self.timer.start()

    def _reveal_next(self) -> None:
        if self._next < len(self.plots):
            self.plots[self._next].setUpdatesEnabled(True)
            self.revealed.emit(self._next)
            self._next += 1
        if self._next < len(self.plots):
            self.timer.start()

    def done(self) -> bool:
        """Every plot paints again."""
        return all(plot.updatesEnabled() for plot in self.plots)
