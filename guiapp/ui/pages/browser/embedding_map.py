"""The embedding map: up to 10^6 rows of a ``guiapp embed`` file as points, coloured by
class, prediction, correctness or confidence; a rectangle or a click selects rows, which
the Browser then shows.

Points are not pyqtgraph spots (10^6 of them take seconds per repaint): :func:`raster`
bins the points in the visible range into one RGBA image at the view's pixel size (per
pixel, the mean colour of its points, more opaque where they are dense), and the view
shows that image. Panning and zooming move the image at once; it is binned again 40 ms
after the range stops changing, on a worker thread, so the GUI thread never waits for it
(``python -m guiapp.bench.embedding_map`` measures both at 10^6 points).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QVBoxLayout, QWidget

from guiapp.core.explain.embed import read_embedding
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.pages.browser.rows_window import RowsWindow
from guiapp.ui.widgets.layouts import STRETCH, row_layout

#: Ten distinct colours (matplotlib's tab10), class i gets colour i % 10.
PALETTE = np.array(
    [[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189],
     [140, 86, 75], [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207]],
    np.float64,
)  # fmt: skip
COLOUR_BY = ("class", "prediction", "correct", "confidence")
CONFIDENCE_LEVELS = 10
#: Points binned per numpy call (each call holds the GIL; the GUI thread waits that long).
CHUNK = 1 << 17
#: Screen pixels per side of one bin of the map (2: a quarter of the bins, dots of 2 px).
PIXEL = 2


def colour_index(data: dict[str, Any], by: str) -> tuple[np.ndarray, np.ndarray]:
    """Each point's colour index and the palette (k, 3) they index."""
    if by == "class":
        return data["label"].astype(np.int64) % 10, PALETTE
    if by == "prediction":
        return data["pred"].astype(np.int64) % 10, PALETTE
    if by == "correct":
        return (data["label"] == data["pred"]).astype(np.int64), np.array(
            [[214.0, 39, 40], [44, 160, 44]]
        )
    levels = np.clip((data["prob"] * CONFIDENCE_LEVELS).astype(np.int64), 0, CONFIDENCE_LEVELS - 1)
    ramp = pg.colormap.get("viridis").map(np.linspace(0, 1, CONFIDENCE_LEVELS), mode="byte")
    return levels, np.asarray(ramp, np.float64)[:, :3]


def raster(
    xy: np.ndarray,
    colour: np.ndarray,
    palette: np.ndarray,
    rect: tuple[float, float, float, float],
    width: int,
    height: int,
) -> np.ndarray:
    """RGBA (height, width, 4) uint8 of the points inside ``rect`` = (x0, y0, x1, y1): each
    pixel the mean colour of its points, its opacity growing with their count (log).
    ``bincount`` of (pixel, colour) pairs, chunk by chunk; points outside go to one spare
    bin, so no boolean copy of the arrays is made."""
    x0, y0, x1, y1 = rect
    width, height = max(1, int(width)), max(1, int(height))
    out = np.zeros((height, width, 4), np.uint8)
    if x1 <= x0 or y1 <= y0 or not len(xy):
        return out
    k = len(palette)
    size = width * height
    counts: np.ndarray = np.zeros(size * k + 1, np.int64)  # flat, then (bins, colours)
    sx, sy = np.float32(width / (x1 - x0)), np.float32(height / (y1 - y0))
    for a in range(0, len(xy), CHUNK):  # short numpy calls: the GUI thread gets the GIL between
        fx = xy[a : a + CHUNK, 0] - np.float32(x0)
        fx *= sx
        fy = xy[a : a + CHUNK, 1] - np.float32(y0)
        fy *= sy
        inside = (fx >= 0) & (fx < width) & (fy >= 0) & (fy < height)
        key = fy.astype(np.int32).astype(np.int64)
        key *= width
        key += fx.astype(np.int32)
        key *= k
        key += colour[a : a + CHUNK]
        key[~inside] = size * k
        counts += np.bincount(key, minlength=size * k + 1)
    counts = counts[: size * k].reshape(size, k)
    total = counts.sum(axis=1)
    hit = np.flatnonzero(total)
    if not len(hit):
        return out
    flat = out.reshape(-1, 4)
    rgb = (counts[hit].astype(np.float32) @ palette.astype(np.float32)) / total[hit, None]
    flat[hit, :3] = np.clip(rgb, 0, 255).astype(np.uint8)
    n = total[hit]
    flat[hit, 3] = (90 + 165 * np.log1p(n) / np.log1p(n.max())).astype(np.uint8)
    return out


def bin_view(
    data: dict[str, Any], by: str, rect: tuple[float, float, float, float], w: int, h: int
) -> np.ndarray:
    """The map's image of ``rect`` at ``w`` x ``h`` bins, coloured ``by``."""
    colour, palette = colour_index(data, by)
    return raster(data["pca"], colour, palette, rect, w, h)


class EmbeddingMap(RowsWindow):
    """A window over one embedding file: the map, its colouring and "Show in Browser"."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Embedding map", (720, 640), parent)
        self.data: dict[str, Any] | None = None
        self.path = ""
        self.redraws = 0
        self._generation = 0
        self.colour_by = QComboBox()
        self.colour_by.addItems(list(COLOUR_BY))
        self.colour_by.currentIndexChanged.connect(lambda _i: self.redraw())
        self.show_button = QPushButton("Show selected in Browser")
        self.show_button.setToolTip("The rows inside the rectangle, in the Browser's grid")
        self.show_button.clicked.connect(self.show_selected)
        self.info = QLabel("")
        self.plot = pg.PlotWidget()
        self.plot.setLabel("bottom", "PC 1")
        self.plot.setLabel("left", "PC 2")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.roi = pg.RectROI([0, 0], [1, 1], pen=pg.mkPen("#111", width=1.5))
        self.plot.addItem(self.roi)
        self.plot.getViewBox().sigRangeChanged.connect(self._range_changed)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self.redraw)
        self.calls = BackgroundCalls(threads=1, parent=self, done=self._done)
        self.calls.failed.connect(self._failed)
        layout = QVBoxLayout(self)
        layout.addLayout(row_layout("colour by", self.colour_by, STRETCH, self.show_button))
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.info)

    # ------------------------------------------------------------------ data
    def load(self, path: str) -> None:
        """Read ``path`` off the GUI thread, then show it."""
        self.info.setText(f"Reading {path}…")
        self.calls.submit(("read", path), read_embedding, path)

    def set_data(self, path: str, data: dict[str, Any]) -> None:
        self.path, self.data = path, data
        xy = data["pca"]
        x0, y0 = (float(v) for v in xy.min(axis=0))
        x1, y1 = (float(v) for v in xy.max(axis=0))
        w, h = max(x1 - x0, 1e-6), max(y1 - y0, 1e-6)
        self.roi.setPos([x0 + w * 0.25, y0 + h * 0.25])
        self.roi.setSize([w * 0.5, h * 0.5])
        self.plot.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0.02)
        n = len(data["row"])
        self.info.setText(f"{n:,} rows of {data['dataset_path']}")
        self.redraw()

    def _done(self, key: object, result: object) -> None:
        if not isinstance(key, tuple):
            return
        if key[0] == "read" and isinstance(result, dict):
            self.set_data(str(key[1]), result)
        elif key[0] == "bin":
            self._show_binned(int(key[1]), result, key[2])

    def _failed(self, key: object, message: str) -> None:
        if isinstance(key, tuple) and key[0] == "read":
            self.info.setText(f"Cannot read {key[1]}: {message}")

    # ------------------------------------------------------------------ drawing
    def _range_changed(self, *_: object) -> None:
        self._timer.start()

    def view_rect(self) -> tuple[float, float, float, float]:
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        return float(x0), float(y0), float(x1), float(y1)

    def redraw(self, wait: bool = False) -> None:
        """Bin the visible points into one image at the view's pixel size, on a worker
        thread (the GUI thread only moves the image); ``wait``: here, now (tests)."""
        if self.data is None:
            return
        self._generation += 1
        generation, data, rect = self._generation, self.data, self.view_rect()
        size = self.plot.getViewBox().size()
        w, h = int(size.width()) // PIXEL, int(size.height()) // PIXEL
        by = self.colour_by.currentText()

        if wait:
            self._show_binned(generation, bin_view(data, by, rect, w, h), rect)
        else:
            self.calls.submit(("bin", generation, rect), bin_view, data, by, rect, w, h)

    def _show_binned(
        self, generation: int, rgba: object, rect: tuple[float, float, float, float]
    ) -> None:
        if generation != self._generation or not isinstance(rgba, np.ndarray):
            return  # a newer range is being binned
        x0, y0, x1, y1 = rect
        self.image.setImage(rgba, autoLevels=False, levels=(0, 255))
        self.image.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))
        self.redraws += 1

    # ------------------------------------------------------------------ selection
    def selected_rows(self) -> np.ndarray:
        """Dataset rows of the points inside the rectangle, ascending."""
        if self.data is None:
            return np.zeros(0, np.int64)
        (x0, y0), (w, h) = self.roi.pos(), self.roi.size()
        xy = self.data["pca"]
        inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x0 + w) & (xy[:, 1] >= y0) & (xy[:, 1] <= y0 + h)
        rows: np.ndarray = self.data["row"][inside]
        return rows

    def show_selected(self) -> None:
        if self.data is None:
            return
        rows = self.selected_rows()
        self.rows_requested.emit(
            rows, f"embedding map selection ({len(rows):,} rows)", self.data["dataset_path"]
        )

    def _clicked(self, event: Any) -> None:
        """A click on the map: the nearest point's row in the Browser."""
        if self.data is None or event.button() != Qt.MouseButton.LeftButton:
            return
        point = self.plot.getViewBox().mapSceneToView(event.scenePos())
        self.show_nearest(point.x(), point.y())

    def show_nearest(self, x: float, y: float) -> None:
        if self.data is None or not len(self.data["row"]):
            return
        xy = self.data["pca"]
        i = int(np.argmin((xy[:, 0] - x) ** 2 + (xy[:, 1] - y) ** 2))
        row = int(self.data["row"][i])
        self.rows_requested.emit(
            np.array([row]), f"embedding map: row {row:,}", self.data["dataset_path"]
        )
