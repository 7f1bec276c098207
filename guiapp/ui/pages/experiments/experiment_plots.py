"""The Experiments page's four plots, drawn from an :class:`ExperimentHistory`.

- per-trial loss: each trial's smoothed batch loss over its own steps (one curve per trial,
  none ever dropped);
- validation accuracy per epoch, one curve per trial, with the mean ± std band over the
  folds of the best group (k-fold);
- the data-scaling curve: training rows (log axis) against validation accuracy, with the
  spread over folds as error bars;
- a parameter (chosen in the combo box) against the final validation accuracy, a point per
  trial (a sweep's scatter; text values are placed by their order).

Curves are created once per trial and updated with ``setData`` only when events arrived.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QGridLayout, QVBoxLayout, QWidget

from guiapp.core.train.experiment_history import ExperimentHistory
from guiapp.ui.widgets.plots import new_plot

BAND = (255, 127, 14, 60)
MAX_LEGEND = 8  # trials named in the legend; the table names them all
MEAN = (255, 127, 14)


def trial_color(i: int) -> tuple[int, int, int]:
    color = pg.intColor(i, hues=9, values=1, maxValue=220).getRgb()
    return int(color[0]), int(color[1]), int(color[2])


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def log_ticks(x: np.ndarray) -> list[tuple[float, str]]:
    """Ticks at 1, 2 and 5 times the powers of ten that span ``x`` (log10 positions)."""
    lo, hi = float(np.min(x)), float(np.max(x))
    ticks = []
    for k in range(int(math.floor(math.log10(lo))) - 1, int(math.ceil(math.log10(hi))) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**k
            if lo / 1.5 <= v <= hi * 1.5:
                ticks.append((math.log10(v), f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    return ticks


class ExperimentPlots(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(2)
        self.loss = new_plot("loss (smoothed)", "step", digits=6, min_height=150)
        self.val = new_plot("validation accuracy", "epoch", digits=5, min_height=150)
        self.scaling = new_plot(
            "validation accuracy", "training rows (log)", digits=5, min_height=150
        )
        self.scaling.getPlotItem().setLogMode(x=True, y=False)
        self.scatter = new_plot("final validation accuracy", "parameter", digits=5, min_height=150)
        self.param = QComboBox()
        self.param.setToolTip("The parameter on the scatter's horizontal axis")
        self.param.currentIndexChanged.connect(lambda _i: self._draw_scatter())
        scatter_box = QWidget()
        col = QVBoxLayout(scatter_box)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.param)
        col.addWidget(self.scatter, 1)
        grid.addWidget(self.loss, 0, 0)
        grid.addWidget(self.val, 0, 1)
        grid.addWidget(self.scaling, 1, 0)
        grid.addWidget(scatter_box, 1, 1)
        self.legend = self.val.getPlotItem().addLegend(offset=(8, 8), labelTextSize="8pt")
        self.loss_curves: dict[str, pg.PlotDataItem] = {}
        self.val_curves: dict[str, pg.PlotDataItem] = {}
        self.band_mean = self.val.plot([], [], pen=pg.mkPen(MEAN, width=3))
        self._band_top = pg.PlotDataItem([], [])
        self._band_bottom = pg.PlotDataItem([], [])
        self.band = pg.FillBetweenItem(self._band_top, self._band_bottom, brush=BAND)
        self.val.addItem(self.band)
        self.scaling_curve = self.scaling.plot(
            [], [], pen=pg.mkPen(MEAN, width=2), symbol="o", symbolBrush=MEAN
        )
        self.scaling_bars = pg.ErrorBarItem(
            x=np.zeros(0), y=np.zeros(0), height=np.zeros(0), beam=0.0
        )
        self.scaling.addItem(self.scaling_bars)
        self.scatter_points = pg.ScatterPlotItem(size=10, brush=pg.mkBrush(31, 119, 180, 200))
        self.scatter.addItem(self.scatter_points)
        self.history = ExperimentHistory()
        self._shown = -1

    # ------------------------------------------------------------------ drawing
    def set_history(self, history: ExperimentHistory) -> None:
        self.history = history
        for curves, widget in ((self.loss_curves, self.loss), (self.val_curves, self.val)):
            for item in curves.values():
                widget.removeItem(item)
            curves.clear()
        names = [n for n in history.varied if n != "fold"] or list(history.varied)
        self.param.blockSignals(True)
        self.param.clear()
        self.param.addItems(names)
        self.param.blockSignals(False)
        self._shown = -1
        self.refresh()

    def refresh(self) -> None:
        """Redraw what changed since the last call (nothing when no event arrived)."""
        h = self.history
        if h.events == self._shown:
            return
        self._shown = h.events
        if not self.param.count() and h.varied:
            self.param.addItems([n for n in h.varied if n != "fold"] or list(h.varied))
        for i, (tid, run) in enumerate(h.trials.items()):
            color = trial_color(i)
            if tid not in self.loss_curves:
                self.loss_curves[tid] = self.loss.plot([], [], pen=pg.mkPen(color, width=1.5))
                self.val_curves[tid] = self.val.plot(
                    [], [], pen=pg.mkPen(color, width=1), symbol="o", symbolSize=7,
                    symbolBrush=color, name=tid if i < MAX_LEGEND else None,
                )  # fmt: skip
            self.loss_curves[tid].setData(run.step.view(), run.smooth["loss"].view())
            epochs = run.epoch_index.view()  # 1-based
            self.val_curves[tid].setData(epochs, run.epoch["val_accuracy"].view())
        most = max((len(run.epoch_index) for run in h.trials.values()), default=0)
        if most <= 1:  # one epoch per trial: a column of points, centred
            self.val.getPlotItem().setXRange(0.0, 2.0, padding=0)
        else:
            self.val.getPlotItem().enableAutoRange(axis="x")
        self._draw_band()
        self._draw_scaling()
        self._draw_scatter()

    def _draw_band(self) -> None:
        h = self.history
        ids: list[str] = []
        if "fold" in h.varied:
            groups = [g for g in h.groups() if len(g["trials"]) > 1]
            best = max(groups, key=lambda g: g["mean_val_accuracy"] or -1.0, default=None)
            ids = best["trials"] if best else []
        x, mean, std = h.fold_band(ids) if ids else (np.zeros(0),) * 3
        self.legend.removeItem(self.band_mean)
        if len(x):
            self.legend.addItem(self.band_mean, "mean ± std over folds")
        self.band_mean.setData(x, mean)
        self._band_top.setData(x, mean + std)
        self._band_bottom.setData(x, mean - std)

    def _draw_scaling(self) -> None:
        points = [
            p
            for p in self.history.curve()
            if p["train_rows"] and p["mean_val_accuracy"] is not None
        ]
        x = np.array([float(p["train_rows"]) for p in points])
        y = np.array([float(p["mean_val_accuracy"]) for p in points])
        err = np.array([float(p["std_val_accuracy"] or 0.0) for p in points])
        self.scaling_curve.setData(x, y)
        # the plot's x axis is log10; the error bars are drawn in its coordinates
        self.scaling_bars.setData(x=np.log10(x) if len(x) else x, y=y, height=2 * err)
        plot = self.scaling.getPlotItem()
        plot.setTitle(None if len(x) else "no data fractions in this experiment (--fractions)")
        plot.getAxis("bottom").setTicks([log_ticks(x)] if len(x) else None)

    def scaling_points(self) -> int:
        x, _ = self.scaling_curve.getData()
        return 0 if x is None else len(x)

    def val_points(self) -> int:
        """Validation points over all trials (tests watch one per fold arrive)."""
        return sum(
            len(c.getData()[0] if c.getData()[0] is not None else [])
            for c in self.val_curves.values()
        )

    def _draw_scatter(self) -> None:
        name = self.param.currentText()
        rows = [r for r in self.history.rows() if r["final"]["val_accuracy"] is not None]
        values = [r["params"].get(name) for r in rows]
        numbers = [_number(v) for v in values]
        if any(n is None for n in numbers):  # text values (optimizer=adam,sgd): by order
            order = sorted({str(v) for v in values})
            numbers = [float(order.index(str(v))) for v in values]
            ticks = [[(float(i), text) for i, text in enumerate(order)]]
            self.scatter.getPlotItem().getAxis("bottom").setTicks(ticks)
        else:
            self.scatter.getPlotItem().getAxis("bottom").setTicks(None)
        self.scatter.getPlotItem().setLabel("bottom", name or "parameter")
        spots = [
            {"pos": (float(n or 0.0), float(r["final"]["val_accuracy"])), "data": r["id"]}
            for n, r in zip(numbers, rows, strict=True)
        ]
        self.scatter_points.setData(spots)
