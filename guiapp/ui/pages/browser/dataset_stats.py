"""The browser's statistics: per-class counts, value histogram and per-class mean samples.

Counts and the histogram come from the dataset's header (no rows read); class means and,
when the header has no histogram, the histogram are computed on a worker thread from a
sample of contiguous blocks spread over the dataset.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QTabWidget, QVBoxLayout, QWidget

from guiapp.ui.widgets.plot_legend import LINE, legend_html
from guiapp.ui.widgets.steady_range import cache_axes
from guiapp.ui.widgets.thumbnails import ColorScale, render

SAMPLE_BLOCKS = 8
BLOCK_ROWS = 512
BAR_COLOR = "#3b82c4"


def sample_statistics(path: str, num_classes: int) -> dict[str, Any]:
    """Per-class means and a value histogram from up to 8 blocks of 512 rows (worker thread)."""
    from guiapp.core.store import Dataset

    with Dataset(path) as ds:
        n = len(ds)
        starts = np.unique(np.linspace(0, max(0, n - BLOCK_ROWS), SAMPLE_BLOCKS).astype(np.int64))
        sums = np.zeros((num_classes, *ds.sample_shape), np.float64)
        seen = np.zeros(num_classes, np.int64)
        values = []
        for a in starts.tolist():
            x, y = ds.read_range(a, min(n, a + BLOCK_ROWS))
            xf = x.astype(np.float64)
            for c in np.unique(y).tolist():
                if 0 <= c < num_classes:
                    sums[c] += xf[y == c].sum(axis=0)
                    seen[c] += int((y == c).sum())
            values.append(xf.reshape(-1)[:: max(1, xf[0].size // 64)])
    means = sums / np.maximum(seen, 1).reshape(-1, *([1] * len(ds.sample_shape)))
    flat = np.concatenate(values) if values else np.zeros(0)
    flat = flat[np.isfinite(flat)]
    counts, edges = np.histogram(flat, bins=64) if flat.size else (np.zeros(1), np.zeros(2))
    return {"means": means, "seen": seen, "hist": (counts, edges), "rows": int(sum(seen))}


class DatasetStats(QTabWidget):
    """Tabs: class counts (bar chart), values (histogram), class means (images or curves)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.counts_plot = pg.PlotWidget()
        self.counts_plot.setLabel("left", "rows")
        self.counts_plot.setLabel("bottom", "class")
        self.counts_plot.showGrid(y=True, alpha=0.2)
        self.hist_plot = pg.PlotWidget()
        self.hist_plot.setLabel("left", "count")
        self.hist_plot.setLabel("bottom", "value")
        self.hist_plot.showGrid(y=True, alpha=0.2)
        self.hist_note = ""
        self.means_area = QScrollArea()
        self.means_area.setWidgetResizable(True)
        self.means_plot = pg.PlotWidget()
        self.means_plot.setLabel("left", "mean value")
        self.means_plot.setLabel("bottom", "position")
        self.means_legend = QLabel()  # under the plot: never over the curves
        self.means_legend.setWordWrap(True)
        self.means_legend.setTextFormat(Qt.TextFormat.RichText)
        means_page = QWidget()
        self.means_layout = QVBoxLayout(means_page)
        self.means_layout.setContentsMargins(0, 0, 0, 0)
        self.means_note = QLabel("Class means appear once a sample of rows is read.")
        self.means_layout.addWidget(self.means_note)
        self.means_layout.addWidget(self.means_area, 1)
        self.means_layout.addWidget(self.means_plot, 1)
        self.means_layout.addWidget(self.means_legend)
        self.means_plot.hide()
        self.means_legend.hide()
        for plot in (self.counts_plot, self.hist_plot, self.means_plot):
            cache_axes(plot.getPlotItem())
        self.addTab(self.counts_plot, "Class counts")
        self.addTab(self.hist_plot, "Values")
        self.addTab(means_page, "Class means")
        self.class_names: list[str] = []

    def show_header(self, meta: dict[str, Any]) -> None:
        """Counts and (when the header has one) the histogram: no rows read."""
        self.class_names = list(meta["class_names"])
        counts = np.asarray(meta["class_counts"], dtype=np.float64)
        self.counts_plot.clear()
        xs = np.arange(len(counts))
        self.counts_plot.addItem(pg.BarGraphItem(x=xs, height=counts, width=0.7, brush=BAR_COLOR))
        ticks = [(i, name) for i, name in enumerate(self.class_names)]
        self.counts_plot.getAxis("bottom").setTicks([ticks if len(ticks) <= 20 else ticks[::5]])
        self.counts_plot.setTitle(f"{int(counts.sum()):,} rows in {len(counts)} classes")
        hist = (meta.get("statistics") or {}).get("histogram")
        self.hist_plot.clear()
        if hist:
            counts_h = np.asarray(hist["counts"], dtype=np.float64)
            edges = np.linspace(hist["low"], hist["high"], len(counts_h) + 1)
            self._draw_hist(counts_h, edges, "all rows (from the dataset's statistics)")
        self.means_note.setText("Reading a sample of rows for the class means…")

    def has_histogram(self) -> bool:
        return bool(self.hist_plot.listDataItems())

    def _draw_hist(self, counts: np.ndarray, edges: np.ndarray, note: str) -> None:
        self.hist_plot.clear()
        self.hist_plot.plot(
            edges, counts, stepMode="center", fillLevel=0, brush=(59, 130, 196, 120)
        )
        self.hist_plot.setTitle(note)

    def show_sample_statistics(self, stats: dict[str, Any], sample_shape: list[int]) -> None:
        if not self.has_histogram():
            counts, edges = stats["hist"]
            self._draw_hist(
                np.asarray(counts), np.asarray(edges), f"sample of {stats['rows']:,} rows"
            )
        means, seen = stats["means"], stats["seen"]
        self.means_note.setText(f"Mean sample per class, from {stats['rows']:,} rows.")
        if len(sample_shape) >= 2:
            self.means_plot.hide()
            self.means_legend.hide()
            self.means_area.show()
            grid_widget = QWidget()
            grid = QGridLayout(grid_widget)
            scale = ColorScale(shared=False)
            for c, mean in enumerate(means):
                image = render(mean, scale)
                picture = QLabel()
                picture.setPixmap(QPixmap.fromImage(image).scaled(72, 72))
                name = self.class_names[c] if c < len(self.class_names) else str(c)
                caption = QLabel(f"{name}\n({int(seen[c]):,} rows)")
                caption.setAlignment(Qt.AlignmentFlag.AlignHCenter)
                grid.addWidget(picture, 2 * (c // 6), c % 6, Qt.AlignmentFlag.AlignHCenter)
                grid.addWidget(caption, 2 * (c // 6) + 1, c % 6)
            grid.setRowStretch(grid.rowCount(), 1)
            self.means_area.setWidget(grid_widget)
        else:
            self.means_area.hide()
            self.means_plot.show()
            self.means_legend.show()
            self.means_plot.clear()
            entries = []
            for c, mean in enumerate(means):  # every class, each in its own colour
                name = self.class_names[c] if c < len(self.class_names) else str(c)
                color = pg.intColor(c, hues=max(len(means), 3))
                self.means_plot.plot(
                    np.asarray(mean).reshape(-1), pen=pg.mkPen(color, width=1.2), name=name
                )
                entries.append((name, color.getRgb(), LINE))
            self.means_legend.setText(legend_html(entries))
