"""The app's plot widget: labelled axes, a light grid, plain tick numbers, and a left axis of
fixed width.

pyqtgraph fits an axis to its tick labels after the first paint; the resize relays out the
plot and paints it again, so a page of four plots painted eight times on its first show
(~120-190 ms on 2 cores, measured with ``guiapp bench gui``'s jobs phase). A fixed width,
room for ``digits`` characters of tick labels, makes that one paint, keeps the plots of a
page aligned, and stops the axis from jumping as the values grow.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF


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
