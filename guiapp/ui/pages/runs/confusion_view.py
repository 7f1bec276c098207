"""A confusion matrix painted as a heatmap: class names on both axes, counts in the cells.

Colour is the share of the true class (row-normalised), so small classes read as well as
large ones; clicking a cell emits ``cell_clicked(true_class, predicted_class)``.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget


class ConfusionView(QWidget):
    cell_clicked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.matrix = np.zeros((0, 0), np.int64)
        self.names: list[str] = []
        self.setMinimumSize(260, 220)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMouseTracking(True)
        self.setToolTip("Rows: true class; columns: predicted class. Click a cell to browse it.")

    def sizeHint(self) -> QSize:
        return QSize(420, 360)

    def set_matrix(self, matrix: object, names: list[str]) -> None:
        self.matrix = np.asarray(matrix, dtype=np.int64).reshape(len(names), len(names))
        self.names = list(names)
        self.update()

    def _geometry(self) -> tuple[float, float, float]:
        """Left margin, top margin and cell size of the current layout."""
        fm = QFontMetrics(self.font())
        k = max(1, len(self.names))
        label = max((fm.horizontalAdvance(n) for n in self.names), default=0) + 12
        left = label + fm.height() + 6
        top = fm.height() * 2 + 10
        bottom = fm.height() + label
        cell = min((self.width() - left - 8) / k, (self.height() - top - bottom) / k)
        return left, top, max(cell, 4.0)

    def cell_at(self, pos: QPointF) -> tuple[int, int] | None:
        left, top, cell = self._geometry()
        col, row = int((pos.x() - left) // cell), int((pos.y() - top) // cell)
        k = len(self.names)
        if 0 <= row < k and 0 <= col < k and pos.x() >= left and pos.y() >= top:
            return row, col
        return None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        hit = self.cell_at(event.position())
        if hit is not None and event.button() == Qt.MouseButton.LeftButton:
            self.cell_clicked.emit(*hit)

    def paintEvent(self, _event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().windowText().color()
        k = len(self.names)
        if not k:
            p.setPen(text)
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No evaluation yet.")
            return
        left, top, cell = self._geometry()
        fm = QFontMetrics(self.font())
        totals = self.matrix.sum(axis=1, keepdims=True).clip(min=1)
        share = self.matrix / totals
        p.setPen(text)
        self._caption(p, 0, "predicted class")
        for i in range(k):
            for j in range(k):
                rect = QRectF(left + j * cell, top + i * cell, cell, cell)
                v = float(share[i, j])
                color = (
                    QColor.fromRgbF(0.12, 0.47, 0.71, 0.15 + 0.85 * v)
                    if i == j
                    else QColor.fromRgbF(0.84, 0.15, 0.16, 0.1 + 0.9 * v)
                )
                p.fillRect(rect, color if self.matrix[i, j] else QColor(0, 0, 0, 0))
                p.setPen(QColor(128, 128, 128, 90))
                p.drawRect(rect)
                p.setPen(QColor(255, 255, 255) if v > 0.55 else text)
                count = f"{self.matrix[i, j]:,}"
                if fm.horizontalAdvance(count) <= cell - 2:  # each count where it fits
                    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, count)
        p.setPen(text)
        for i, name in enumerate(self.names):
            p.drawText(
                QRectF(fm.height() + 6, top + i * cell, left - fm.height() - 12, cell),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                name,
            )
            p.save()  # column labels, rotated, below the matrix
            p.translate(left + (i + 0.5) * cell + fm.ascent() / 2, top + k * cell + 6)
            p.rotate(90)
            p.drawText(QPointF(0, 0), name)
            p.restore()
        p.save()
        p.translate(fm.ascent(), top + k * cell / 2)
        p.rotate(-90)
        p.drawText(
            QRectF(-cell * k / 2, -fm.ascent(), cell * k, fm.height()),
            Qt.AlignmentFlag.AlignCenter,
            "true class",
        )
        p.restore()
        self._caption(p, fm.height() + 2, "colour: share of the true class")

    def _caption(self, p: QPainter, y: float, text: str) -> None:
        """A line centred over the matrix, as wide as the widget allows around that centre
        (a narrow matrix must not cut "colour: share of the true class" to "r: share of")."""
        left, _top, cell = self._geometry()
        fm = QFontMetrics(self.font())
        centre = left + cell * len(self.names) / 2
        half = max(1.0, min(centre, self.width() - centre))
        if fm.horizontalAdvance(text) > 2 * half:  # too wide there: the widget's width
            centre, half = self.width() / 2, self.width() / 2
        shown = fm.elidedText(text, Qt.TextElideMode.ElideRight, int(2 * half))
        p.drawText(
            QRectF(centre - half, y, 2 * half, fm.height() + 4), Qt.AlignmentFlag.AlignCenter, shown
        )
