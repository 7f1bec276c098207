"""Live plots whose axes stay put: a view range that moves only when the data leaves it.

pyqtgraph's auto range follows the data exactly, so a plot that gets new points ten times a
second gets a new range each time: new ticks, a new axis picture (with its grid lines over
the whole view) and a full repaint, ~10 ms per plot and refresh (``guiapp bench gui``).
:class:`SteadyRange` moves the range in steps, the data's bounds plus headroom, only when
the data leaves it or fills under a third of it; with the axes cached (:func:`cache_axes`)
a refresh then repaints the curves and blits the axes. A user's pan or zoom is kept until
the plot's "A" (auto range) button is pressed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsItem

FILL = 1 / 3  # data filling less of the range than this: the range is fitted again
FIT_MARGIN = 0.05  # around data that grows no more (a run that ended)


def cache_axes(plot: pg.PlotItem) -> None:
    """Paint each axis (ticks, labels, grid) from a pixmap until its range changes."""
    for name in ("left", "bottom"):
        plot.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


def data_bounds(arrays: Iterable[np.ndarray]) -> tuple[float, float] | None:
    """The finite minimum and maximum over ``arrays`` (None when there is no finite value)."""
    lows, highs = [], []
    for a in arrays:
        a = np.asarray(a, np.float64)
        a = a[np.isfinite(a)]
        if a.size:
            lows.append(a.min())
            highs.append(a.max())
    return (float(min(lows)), float(max(highs))) if lows else None


def steady_span(
    data: tuple[float, float] | None,
    shown: Sequence[float],
    headroom: tuple[float, float],
    fit: bool = False,
) -> tuple[float, float] | None:
    """The new (low, high) range for ``data`` shown in ``shown``, or None to keep it.

    ``headroom`` is the room left (low side, high side) as a share of the data's span;
    ``fit``: the data grows no more, fit it with a small margin."""
    if data is None:
        return None
    lo, hi = data
    span = hi - lo or abs(hi) or 1.0
    if fit:
        new = (lo - span * FIT_MARGIN, hi + span * FIT_MARGIN)
        return None if np.allclose(new, shown) else new
    inside = shown[0] <= lo and hi <= shown[1]
    if inside and span >= (shown[1] - shown[0]) * FILL:
        return None
    return lo - span * headroom[0], hi + span * headroom[1]


class SteadyRange:
    """Keeps ``plot``'s range steady while its data grows (see the module's text)."""

    def __init__(
        self,
        plot: pg.PlotItem,
        x_headroom: tuple[float, float] = (0.0, 0.5),
        y_headroom: tuple[float, float] = (0.1, 0.1),
    ) -> None:
        self.plot = plot
        self.view = plot.getViewBox()
        self.headroom = (x_headroom, y_headroom)
        self.user = False  # the user panned or zoomed: the range is theirs
        self.view.sigRangeChangedManually.connect(self._by_user)
        self.view.disableAutoRange()
        cache_axes(plot)

    def _by_user(self, *_args: object) -> None:
        self.user = True

    def reset(self) -> None:
        """New data (another run): the range is the data's again, even after a zoom."""
        self.user = False
        self.view.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)

    def update(
        self,
        xs: Iterable[np.ndarray],
        ys: Iterable[np.ndarray],
        y_fixed: tuple[float, float] | None = None,
        fit: bool = False,
        x_planned: tuple[float, float] | None = None,
    ) -> bool:
        """Fit the range to the data when it left it (``fit``: to the data as it is, which
        grows no more); ``y_fixed`` replaces the y data's bounds (a fraction plot shown
        from 0); ``x_planned`` is where x will go (a run's planned steps): shown from the
        first point while the data stays in it. True when the range moved."""
        if any(self.view.autoRangeEnabled()):  # "A" pressed: follow the data again
            self.user = False
            self.view.disableAutoRange()
        if self.user:
            return False
        (x0, x1), (y0, y1) = self.view.viewRange()
        x_data = data_bounds(xs)
        planned = x_planned is not None and x_data is not None and not fit
        if planned and x_planned[0] <= x_data[0] and x_data[1] <= x_planned[1]:  # type: ignore[index]
            new_x = None if np.allclose((x0, x1), x_planned) else x_planned  # type: ignore[arg-type]
        else:
            new_x = steady_span(x_data, (x0, x1), self.headroom[0], fit)
        if y_fixed is not None:
            new_y = None if (y0, y1) == y_fixed else y_fixed
        else:
            new_y = steady_span(data_bounds(ys), (y0, y1), self.headroom[1], fit)
        if new_x is None and new_y is None:
            return False
        self.view.setRange(xRange=new_x or (x0, x1), yRange=new_y or (y0, y1), padding=0)
        return True
