"""Live training plots: loss, accuracy, rows/s and the input-wait fraction of one run.

Curves are created once; a ~10 Hz timer copies the :class:`RunHistory` arrays into them
with ``setData`` only when new points arrived, with clip-to-view and peak downsampling so
10^6 points stay smooth (the pyqtgraph way, STYLE.md); the ranges move in steps and the
axes are painted from a cache (:class:`SteadyRange`), so a refresh redraws only the curves
(a fraction of the cost, ``guiapp bench gui``). The smoothed batch curve is a
centred mean of a few logged batches (:func:`centred_mean`): it follows the raw curve
without the lag of a long moving average. Legends are a line above each plot, never a box
over the points. The run's other metrics (top-k accuracy, ``core/train/metrics.py``) share
the accuracy plot: a smoothed batch curve and the validation per epoch each, in a colour
of their own, named in the legend when the run computes them.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from guiapp.core.train.history import RunHistory
from guiapp.core.train.metrics import ALL_METRICS, extra_metrics
from guiapp.core.train.metrics import label as metric_label
from guiapp.ui.widgets.plot_legend import DOT, LINE, SQUARE, legend_html
from guiapp.ui.widgets.plots import StagedPaint, new_plot
from guiapp.ui.widgets.steady_range import SteadyRange
from guiapp.ui.widgets.trial_segments import TrialMarks

REFRESH_MS = 100
# on pyqtgraph's black background: a light raw curve, a bright smoothed one
TRAIN, VAL, RAW = (80, 190, 255), (255, 150, 40), (150, 175, 210, 170)
SMOOTH_HALF = 5  # the smoothed curve averages up to 5 logged batches either side
BANDS = ((0.05, "5%: moderate"), (0.20, "20%: input-bound"))
#: the colours of the other metrics' curves on the accuracy plot
METRIC_COLORS = ((90, 200, 90), (200, 140, 240), (240, 220, 90))


def make_plot(grid: QGridLayout, row: int, col: int, left: str, digits: int) -> pg.PlotItem:
    widget = new_plot(left, "step", digits=digits)
    grid.addWidget(widget, row, col)
    plot = widget.getPlotItem()
    plot.setClipToView(True)
    plot.setDownsampling(auto=True, mode="peak")
    return plot


def centred_mean(y: np.ndarray, half: int = SMOOTH_HALF) -> np.ndarray:
    """The mean of ``y`` over a window of up to ``half`` points either side, narrowed
    symmetrically at the ends (so the last point is not pulled towards old values);
    NaNs (a metric a batch did not log) are left out of each mean."""
    n = len(y)
    if n == 0:
        return np.asarray(y, np.float64)
    finite = np.isfinite(y)
    sums = np.concatenate(([0.0], np.cumsum(np.where(finite, y, 0.0))))
    counts = np.concatenate(([0], np.cumsum(finite)))
    i = np.arange(n)
    h = np.minimum(half, np.minimum(i, n - 1 - i))
    lo, hi = i - h, i + h + 1
    c = counts[hi] - counts[lo]
    out: np.ndarray = (sums[hi] - sums[lo]) / np.maximum(c, 1)
    out[c == 0] = np.nan
    return out


class RangeOptions(TypedDict, total=False):
    """The keywords of :meth:`SteadyRange.update` a plot's range moves with."""

    y_fixed: tuple[float, float] | None
    fit: bool
    x_planned: tuple[float, float] | None


def planned_steps(history: RunHistory) -> int:
    """The run's planned steps (epochs x steps per epoch, from its ``started``), 0 unknown."""
    epochs, steps = history.started.get("epochs"), history.started.get("steps_per_epoch")

    def count(v: object) -> int:  # a whole number above 0, else 0 (unknown)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

    return count(epochs) * count(steps)


def curve(plot: pg.PlotItem, name: str, color: tuple[int, ...], **kw: object) -> pg.PlotDataItem:
    return plot.plot([], [], name=name, pen=pg.mkPen(color, width=kw.pop("width", 2)), **kw)


class TrainingPlots(QWidget):
    """Four plots over global steps; call :meth:`set_history` and they follow it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.history = RunHistory()
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(2)
        self.legend = QLabel()  # one line above the loss and accuracy plots, over no point
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        grid.addWidget(self.legend, 0, 0, 1, 2)
        # tick labels up to "0.0025", "0.875", "2000000" (then "3e+07"), "0.25"
        self.loss_plot = make_plot(grid, 1, 0, "loss", digits=6)
        self.acc_plot = make_plot(grid, 1, 1, "accuracy", digits=5)
        self.rate_plot = make_plot(grid, 2, 0, "rows/s", digits=7)
        self.wait_plot = make_plot(grid, 2, 1, "input wait (fraction)", digits=4)
        self.curves: dict[str, pg.PlotDataItem] = {}
        for key, plot in (("loss", self.loss_plot), ("accuracy", self.acc_plot)):
            self.curves[f"{key}_raw"] = curve(plot, "batch", RAW, width=1)
            self.curves[f"{key}_smooth"] = curve(plot, "batch (smoothed)", TRAIN, width=2)
            self.curves[f"{key}_epoch"] = curve(
                plot, "epoch: train", TRAIN, symbol="o", symbolSize=6, symbolBrush=TRAIN
            )
            self.curves[f"val_{key}_epoch"] = curve(
                plot, "epoch: validation", VAL, symbol="s", symbolSize=6, symbolBrush=VAL
            )
        self.metric_colors = dict(zip(extra_metrics(ALL_METRICS), METRIC_COLORS, strict=False))
        for m, color in self.metric_colors.items():
            self.curves[f"{m}_smooth"] = curve(self.acc_plot, metric_label(m), color)
            self.curves[f"val_{m}_epoch"] = curve(
                self.acc_plot, f"validation {metric_label(m)}", color,
                symbol="s", symbolSize=6, symbolBrush=color,
            )  # fmt: skip
        self._legend_metrics: tuple[str, ...] | None = None
        self._set_legend(())
        self.curves["rows_per_s"] = curve(self.rate_plot, "rows/s", TRAIN)
        self.curves["input_wait"] = curve(self.wait_plot, "input wait", TRAIN)
        # ranges that move in steps, axes painted from a cache: a refresh redraws curves
        self.ranges = {
            name: SteadyRange(plot)
            for name, plot in (
                ("loss", self.loss_plot),
                ("accuracy", self.acc_plot),
                ("rows_per_s", self.rate_plot),
                ("input_wait", self.wait_plot),
            )
        }
        self.wait_plot.setYRange(0, 0.3, padding=0)
        for level, label in BANDS:
            line = pg.InfiniteLine(
                pos=level,
                angle=0,
                pen=pg.mkPen((200, 60, 60), width=1, style=pg.QtCore.Qt.PenStyle.DashLine),
                label=label,
                labelOpts={
                    "position": 0.15,
                    "color": (200, 60, 60),
                    "anchors": [(0, 1), (0, 1)],
                    "fill": (0, 0, 0, 200),  # readable where the curve passes under it
                },
            )
            line.setZValue(10)  # the band and its label above the data, never covered by it
            self.wait_plot.addItem(line)
        for item in self.curves.values():
            item.setClipToView(True)
            item.setDownsampling(auto=True, method="peak")
        plots = (self.loss_plot, self.acc_plot, self.rate_plot, self.wait_plot)
        self.staged = StagedPaint(self, [p.getViewWidget() for p in plots])
        # an experiment's trials: no line joins two, a labelled dashed line where each starts
        self.trials = TrialMarks(
            self.curves, plots, (self.loss_plot, self.acc_plot), lambda: self.history
        )
        self._shown_events = -1
        self._moved = self._pending = False  # a range moved / one waits (see _move_range)
        self._first = "loss"  # whose turn it is to move first
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    def _set_legend(self, extras: tuple[str, ...]) -> None:
        """The legend line, naming the run's other metrics (``extras``) when it has them."""
        if extras == self._legend_metrics:
            return
        self._legend_metrics = extras
        items = [
            ("batch", RAW, LINE),
            (f"smoothed (mean of {2 * SMOOTH_HALF + 1} logged batches)", TRAIN, LINE),
            ("epoch: train", TRAIN, DOT),
            ("epoch: validation", VAL, SQUARE),
        ]
        for m in extras:
            color = self.metric_colors[m]
            items += [(f"{metric_label(m)} (smoothed)", color, LINE)]
            items += [(f"{metric_label(m)}: validation", color, SQUARE)]
        self.legend.setText(legend_html(items))

    def set_history(self, history: RunHistory) -> None:
        self.history = history
        self._shown_events = -1
        for steady in self.ranges.values():
            steady.reset()
        self.refresh()

    def points(self, key: str) -> int:
        """How many points the curve ``key`` shows (tests watch it grow)."""
        x, _ = self.curves[key].getData()
        return 0 if x is None else len(x)

    def _move_range(
        self,
        name: str,
        xs: tuple[np.ndarray, ...],
        ys: tuple[np.ndarray, ...],
        options: RangeOptions,
    ) -> None:
        """Move plot ``name``'s range if it needs it and this refresh has not moved one yet.

        A moved range repaints its axes from scratch (~10-25 ms a plot on 2 cores), so at
        most one plot moves per refresh, in turns; the others wait a tick (a run's end used
        to refit all four in one paint)."""
        if self._moved:
            self._pending = True
            return
        if self.ranges[name].update(xs, ys, **options):
            self._moved = True
            keys = list(self.ranges)
            self._first = keys[(keys.index(name) + 1) % len(keys)]

    def refresh(self) -> None:
        """Copy new points into the curves; nothing happens when none arrived (and no
        range waits for its turn)."""
        h = self.history
        if h.events == self._shown_events and not self._pending:
            return
        self._shown_events = h.events
        self._moved = self._pending = False
        x = h.step.view()
        ex = h.epoch_step.view()
        fit = h.status not in ("new", "running")  # an ended run: no room left for growth
        planned = planned_steps(h)
        kw: RangeOptions = {"fit": fit, "x_planned": (0.0, planned * 1.02) if planned else None}
        moves: dict[str, tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], RangeOptions]] = {}
        for key in ("loss", "accuracy"):
            raw, smooth = h.batch[key].view(), centred_mean(h.batch[key].view())
            train, val = h.epoch[key].view(), h.epoch[f"val_{key}"].view()
            self.curves[f"{key}_raw"].setData(x, raw, skipFiniteCheck=True)
            self.curves[f"{key}_smooth"].setData(x, smooth, skipFiniteCheck=True)
            self.curves[f"{key}_epoch"].setData(ex, train, skipFiniteCheck=True)
            self.curves[f"val_{key}_epoch"].setData(ex, val, skipFiniteCheck=True)
            moves[key] = ((x, ex), (raw, train, val), kw)
        extras = extra_metrics(h.metrics)
        self._set_legend(extras)
        shown: list[np.ndarray] = []
        for m in self.metric_colors:
            on = m in extras
            smooth_m = centred_mean(h.batch[m].view()) if on else np.zeros(0)
            val_m = h.epoch[f"val_{m}"].view() if on else np.zeros(0)
            self.curves[f"{m}_smooth"].setData(x if on else [], smooth_m, skipFiniteCheck=True)
            self.curves[f"val_{m}_epoch"].setData(ex if on else [], val_m, skipFiniteCheck=True)
            shown += [smooth_m, val_m] if on else []
        if shown:
            xs, ys, options = moves["accuracy"]
            moves["accuracy"] = (xs, (*ys, *shown), options)
        rate = h.batch["rows_per_s"].view()
        self.curves["rows_per_s"].setData(x, rate, skipFiniteCheck=True)
        moves["rows_per_s"] = ((x,), (rate,), kw)
        wait = h.batch["input_wait"].view()
        self.curves["input_wait"].setData(x, wait, skipFiniteCheck=True)
        finite = wait[np.isfinite(wait)]
        # from 0 to 0.3 (the bands), or to the highest wait rounded up to a tenth
        top = 0.3 if not len(finite) else min(1.0, math.ceil(float(finite.max()) * 11) / 10)
        moves["input_wait"] = ((x,), (), {**kw, "y_fixed": (0.0, max(0.3, top))})
        keys = list(self.ranges)
        start = keys.index(self._first)
        for name in keys[start:] + keys[:start]:
            self._move_range(name, *moves[name])
        self.trials.update(h)
