"""The browser's detail pane: the selected sample large, its label, the value under the cursor."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from guiapp.ui.pages.browser.attribution_view import AttributionView
from guiapp.ui.widgets.steady_range import cache_axes
from guiapp.ui.widgets.thumbnails import as_plane

COLORMAP_STOPS = 16


def coarse_colormap(name: str, stops: int = COLORMAP_STOPS) -> pg.ColorMap:
    """``name`` with 16 stops instead of 256: the same colours to the eye (linear in
    between), but the histogram's gradient editor gets 16 ticks to build and paint,
    not 256 (a third of the Browser's first paint, ``guiapp bench gui``)."""
    full = pg.colormap.get(name)
    at = np.linspace(0.0, 1.0, stops)
    return pg.ColorMap(at, full.map(at, mode="byte"))


class SampleDetail(QWidget):
    """A pyqtgraph ``ImageView`` for 2D samples and a ``PlotWidget`` for 1D ones, with the
    row's lineage (its group and kept fields) and "Show this group", and below them what
    the model sees (``attribution``: the row's attribution map, likely label issues)."""

    #: "Show this group" clicked: the group's id and name.
    group_requested = Signal(object, str)  # (a 63-bit id: not a Qt int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Pick a sample in the grid.")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.lineage = QLabel("")
        self.lineage.setWordWrap(True)
        self.lineage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bases = QLabel("")
        self.bases.setWordWrap(True)
        self.bases.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bases.setToolTip(
            "the genome's bases this row's k-mers were cut from (reverse complemented for a "
            "'-' row; simulated read errors not shown)"
        )
        self.bases.setVisible(False)
        self.group_button = QPushButton("Show this group")
        self.group_button.setToolTip("Show only the rows of this sample's group in the grid")
        self.group_button.setVisible(False)
        self.group_button.clicked.connect(self._group_clicked)
        self._group: tuple[int, str] | None = None
        self.cursor_label = QLabel(" ")
        self.cursor_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        plot_item = pg.PlotItem()
        plot_item.setLabel("bottom", "x (column)")
        plot_item.setLabel("left", "y (row)")
        self.image_view = pg.ImageView(view=plot_item)
        self.image_view.ui.roiBtn.hide()
        self.image_view.ui.menuBtn.hide()
        self.image_view.setColorMap(coarse_colormap("viridis"))
        plot_item.invertY(True)
        plot_item.setAspectLocked(True)
        plot_item.scene().sigMouseMoved.connect(self._image_mouse)
        cache_axes(plot_item)

        self.plot = pg.PlotWidget()
        self.plot.setLabel("bottom", "position")
        self.plot.setLabel("left", "value")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.curve = self.plot.plot([], [], pen=pg.mkPen("#3b82c4", width=1.5))
        cache_axes(self.plot.getPlotItem())
        self.plot.scene().sigMouseMoved.connect(self._plot_mouse)

        self.stack = QStackedWidget()
        self.stack.addWidget(self.image_view)
        self.stack.addWidget(self.plot)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        line = QHBoxLayout()
        line.addWidget(self.lineage, 1)
        line.addWidget(self.group_button)
        layout.addLayout(line)
        layout.addWidget(self.bases)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.cursor_label)
        self.attribution = AttributionView()
        layout.addWidget(self.attribution)
        self.values: np.ndarray | None = None
        self.row = -1

    def show_lineage(self, info: dict[str, Any]) -> None:
        """The row's group and kept fields (``columns.row_lineage``)."""
        if info.get("row") != self.row:
            return
        parts = [f"{k}: <b>{v}</b>" for k, v in info.get("fields", {}).items()]
        if info.get("group") is not None:
            parts.insert(0, f"group <b>{info['group_name']}</b>")
            self._group = (int(info["group"]), str(info["group_name"]))
        else:
            self._group = None
        self.lineage.setText(" · ".join(parts) if parts else "no group (its own group)")
        self.group_button.setVisible(self._group is not None)
        bases = info.get("bases")  # a row of a genomes dataset: the genome's bases it holds
        self.bases.setText(f"bases <tt>{bases}</tt>" if bases else "")
        self.bases.setVisible(bool(bases))

    def _group_clicked(self) -> None:
        if self._group is not None:
            self.group_requested.emit(*self._group)

    def clear(self) -> None:
        self.lineage.setText("")
        self.bases.setText("")
        self.bases.setVisible(False)
        self.group_button.setVisible(False)
        self._group = None
        self.values = None
        self.row = -1
        self.title.setText("Pick a sample in the grid.")
        self.cursor_label.setText(" ")
        self.curve.setData([], [])
        self.image_view.clear()
        self.attribution.clear()

    def show_sample(self, row: int, sample: np.ndarray, label: int, class_name: str) -> None:
        self.row = row
        self.attribution.show_row(row, 2 if sample.ndim >= 2 else 1)
        self.title.setText(
            f"<b>Sample {row:,}</b> · class {label} <b>{class_name}</b> · "
            f"shape {'x'.join(map(str, sample.shape))} {sample.dtype}"
        )
        if sample.ndim >= 2:
            plane = as_plane(sample).astype(np.float32)
            self.values = plane
            self.stack.setCurrentWidget(self.image_view)
            # pyqtgraph's default axis order is (x, y): hand it the transpose.
            self.image_view.setImage(plane.T, autoLevels=True, autoRange=True)
        else:
            flat = np.asarray(sample).reshape(-1).astype(np.float64)
            self.values = flat
            self.stack.setCurrentWidget(self.plot)
            self.curve.setData(np.arange(len(flat)), flat)
            self.plot.enableAutoRange()

    def _image_mouse(self, pos: QPointF) -> None:
        if self.values is None or self.values.ndim != 2:
            return
        point = self.image_view.getView().vb.mapSceneToView(pos)
        x, y = int(np.floor(point.x())), int(np.floor(point.y()))
        h, w = self.values.shape
        if 0 <= x < w and 0 <= y < h:
            self.cursor_label.setText(f"x {x}, y {y}: value {self.values[y, x]:.6g}")

    def _plot_mouse(self, pos: QPointF) -> None:
        if self.values is None or self.values.ndim != 1:
            return
        point = self.plot.getPlotItem().vb.mapSceneToView(pos)
        i = int(round(point.x()))
        if 0 <= i < len(self.values):
            self.cursor_label.setText(f"position {i}: value {self.values[i]:.6g}")
