"""``SampleGridView``: a virtual grid of sample thumbnails that paints only the visible cells.

A ``QListView`` lays out every item (14 s for 10^7 rows, docs/ARCHITECTURE.md, "Decisions measured here"), so
this is a ``QAbstractScrollArea`` whose vertical scroll bar counts rows of cells
(:class:`GridGeometry`). Thumbnails come from a :class:`SampleLoader` into an LRU cache;
cells not read yet are drawn as placeholders and requested once the view settles.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QHelpEvent,
    QImage,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QAbstractScrollArea, QToolTip, QWidget

from guiapp.ui.widgets.sample_loader import SampleLoader
from guiapp.ui.widgets.sample_selection import GridGeometry, SampleSelection

CACHE_SIZE = 4096
CAPTION_H = 16  # one caption line
PAD = 4
TWO_LINES_BELOW = 120  # cells narrower than this caption in two lines: row, then class


class SampleGridView(QAbstractScrollArea):
    """Cells of ``selection``; ``current_changed(cell, row)`` when the user picks one."""

    current_changed = Signal(int, int)

    def __init__(self, loader: SampleLoader, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loader = loader
        self.selection = SampleSelection(0)
        self.class_names: list[str] = []
        self.thumb = QSize(64, 64)
        self.top_row = 0
        self.current = -1
        self.cache: OrderedDict[int, tuple[QImage, int]] = OrderedDict()
        self.pending: set[int] = set()
        #: An overlay (e.g. predictions): ``prefetch(rows)`` before a paint, then
        #: ``annotate(row) -> (caption, badge colour)`` or None for each painted row.
        self.prefetch: Callable[[np.ndarray], None] | None = None
        self.annotate: Callable[[int], tuple[str, QColor] | None] | None = None
        self._request_timer = QTimer(self)
        self._request_timer.setSingleShot(True)
        self._request_timer.setInterval(15)
        self._request_timer.timeout.connect(self.request_visible)
        self.verticalScrollBar().valueChanged.connect(self._scrolled)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.viewport().setMouseTracking(True)
        loader.thumbnails.connect(self._thumbnails_ready)

    # ------------------------------------------------------------------ configuration
    def set_sample_shape(self, shape: list[int]) -> None:
        """Square image cells for 2D samples, wide heat strips for 1D ones."""
        if len(shape) >= 2:
            self.thumb = QSize(64, 64)
        else:
            length = shape[0] if shape else 1
            self.thumb = QSize(int(min(360, max(128, 2 * length))), 14)
        self.clear_cache()

    def set_selection(self, selection: SampleSelection, class_names: list[str]) -> None:
        self.selection = selection
        self.class_names = class_names
        self.top_row = 0
        self.current = -1
        self.pending.clear()
        self._update_scrollbar()
        self.viewport().update()
        self.schedule_request()

    def selection_grew(self) -> None:
        """A filter scan added rows at the end of the selection."""
        self._update_scrollbar()
        self.viewport().update()
        self.schedule_request()

    def clear_cache(self) -> None:
        self.cache.clear()
        self.pending.clear()
        self.viewport().update()
        self.schedule_request()

    @property
    def caption_lines(self) -> int:
        return 2 if self.thumb.width() < TWO_LINES_BELOW else 1

    @property
    def cell_size(self) -> QSize:
        caption = CAPTION_H * self.caption_lines
        return QSize(self.thumb.width() + 2 * PAD, self.thumb.height() + caption + 2 * PAD)

    def caption(self, row: int) -> list[str]:
        """The caption lines of dataset row ``row``: its number, then its class (or the
        overlay's note, "true → predicted p", over two lines); one line ``row · class`` in
        wide cells."""
        cached = self.cache.get(row)
        text = ""
        if cached is not None:
            label = cached[1]
            names = self.class_names
            text = names[label] if 0 <= label < len(names) else str(label)
        note = self.annotate(row) if self.annotate is not None else None
        if note is not None:
            text = note[0]
        if self.caption_lines == 2:
            if note is not None and " → " in text:  # narrow: "texture →" over "grating 0.94"
                true, predicted = text.split(" → ", 1)
                return [f"{true} →", predicted]
            return [f"{row:,}", text]
        return [f"{row:,} · {text}" if text and note is None else text or f"{row:,}"]

    def geometry_model(self) -> GridGeometry:
        size, vp = self.cell_size, self.viewport().size()
        return GridGeometry(
            len(self.selection), size.width(), size.height(), vp.width(), vp.height()
        )

    def _update_scrollbar(self) -> None:
        g = self.geometry_model()
        self.top_row = min(self.top_row, g.max_top_row)
        bar = self.verticalScrollBar()
        bar.blockSignals(True)
        bar.setRange(0, g.scroll_maximum)
        bar.setPageStep(max(1, g.page_rows // g.rows_per_step))
        bar.setSingleStep(1)
        bar.setValue(g.value_for(self.top_row))
        bar.blockSignals(False)

    # ------------------------------------------------------------------ navigation
    def _scrolled(self, value: int) -> None:
        self.top_row = self.geometry_model().top_row_for(value)
        self.viewport().update()
        self.schedule_request()

    def scroll_to_cell(self, cell: int, select: bool = True) -> None:
        if not 0 <= cell < len(self.selection):
            return
        g = self.geometry_model()
        self.top_row = g.top_row_showing(cell, self.top_row)
        self._update_scrollbar()
        if select:
            self.set_current(cell)
        self.viewport().update()
        self.schedule_request()

    def set_current(self, cell: int) -> None:
        if 0 <= cell < len(self.selection):
            self.current = cell
            self.viewport().update()
            self.current_changed.emit(cell, self.selection.row(cell))

    def visible_rows(self) -> np.ndarray:
        """Dataset rows of the cells on screen now."""
        first, last = self.geometry_model().visible_cells(self.top_row)
        return self.selection.rows(first, last)

    # ------------------------------------------------------------------ reading
    def schedule_request(self) -> None:
        self._request_timer.start()

    def request_visible(self) -> None:
        rows = self.visible_rows()
        missing = np.array([r for r in rows.tolist() if r not in self.cache], dtype=np.int64)
        if len(missing) and not set(missing.tolist()) <= self.pending:
            self.pending = set(missing.tolist())
            self.loader.request(missing)

    def _thumbnails_ready(self, _ticket: int, items: list[tuple[int, QImage, int]]) -> None:
        for row, image, label in items:
            self.cache[row] = (image, label)
            self.cache.move_to_end(row)
            self.pending.discard(row)
        while len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        self.viewport().update()

    # ------------------------------------------------------------------ painting
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self.viewport())
        pal = self.palette()
        painter.fillRect(event.rect(), pal.base())
        g = self.geometry_model()
        first, last = g.visible_cells(self.top_row)
        rows = self.selection.rows(first, last)
        size = self.cell_size
        font = painter.font()
        font.setPointSizeF(max(6.5, font.pointSizeF() * 0.8))
        painter.setFont(font)
        placeholder = QColor(pal.mid().color())
        if self.prefetch is not None and len(rows):
            self.prefetch(rows)
        for i, row in enumerate(rows.tolist()):
            cell = first + i
            x = (cell % g.columns) * size.width()
            y = (cell // g.columns - self.top_row) * size.height()
            target = QRect(x + PAD, y + PAD, self.thumb.width(), self.thumb.height())
            cached = self.cache.get(row)
            if cached is not None:
                painter.drawImage(target, cached[0])
            else:
                painter.fillRect(target, placeholder)
            note = self.annotate(row) if self.annotate is not None else None
            if note is not None:
                painter.fillRect(QRect(target.left(), target.top(), target.width(), 4), note[1])
            painter.setPen(pal.text().color())
            # an overlay's note ("true → predicted 0.94") keeps both ends when elided
            elide = Qt.TextElideMode.ElideMiddle if note else Qt.TextElideMode.ElideRight
            for n, line in enumerate(self.caption(row)):
                text_rect = QRect(
                    x + PAD, target.bottom() + 1 + n * CAPTION_H, self.thumb.width(), CAPTION_H
                )
                painter.drawText(
                    text_rect,
                    Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter,
                    painter.fontMetrics().elidedText(line, elide, text_rect.width()),
                )
            if cell == self.current:
                painter.setPen(pal.highlight().color())
                painter.drawRect(QRect(x + 1, y + 1, size.width() - 3, size.height() - 3))
        painter.end()

    # ------------------------------------------------------------------ events
    def viewportEvent(self, event: QEvent) -> bool:
        """A tooltip with the whole caption of the cell under the pointer."""
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            cell = self.geometry_model().cell_at(self.top_row, event.pos().x(), event.pos().y())
            if cell is not None and 0 <= cell < len(self.selection):
                text = " · ".join(t for t in self.caption(self.selection.row(cell)) if t)
                QToolTip.showText(event.globalPos(), text, self.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_scrollbar()
        self.schedule_request()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position().toPoint()
        cell = self.geometry_model().cell_at(self.top_row, pos.x(), pos.y())
        if cell is not None:
            self.set_current(cell)
        self.setFocus()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = -event.angleDelta().y() / 120
        bar = self.verticalScrollBar()
        bar.setValue(bar.value() + int(round(steps * 3)) if abs(steps) >= 1 / 3 else bar.value())
        event.accept()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        g = self.geometry_model()
        moves: dict[int, int] = {  # by key code: QKeyEvent.key() is an int
            Qt.Key.Key_Left: -1,
            Qt.Key.Key_Right: 1,
            Qt.Key.Key_Up: -g.columns,
            Qt.Key.Key_Down: g.columns,
            Qt.Key.Key_PageUp: -g.columns * g.page_rows,
            Qt.Key.Key_PageDown: g.columns * g.page_rows,
        }
        if event.key() in moves and len(self.selection):
            cell = max(0, min(len(self.selection) - 1, max(self.current, 0) + moves[event.key()]))
            self.scroll_to_cell(cell)
            return
        super().keyPressEvent(event)
