"""Which dataset rows the browser shows, and how its grid of cells maps onto the scroll bar.

Both are plain arithmetic (no Qt widgets), so they are tested with any length, 10^10
included: the scroll bar counts rows of cells, and when even that passes Qt's int range
one scroll step covers several rows of cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

INT_MAX = 2**31 - 1


class SampleSelection:
    """The rows of the grid, in order: all ``total`` rows, or an explicit (growing) list."""

    def __init__(self, total: int, indices: np.ndarray | None = None, title: str = "") -> None:
        self.total = int(total)
        self.title = title
        self._indices = None if indices is None else np.asarray(indices, dtype=np.int64)
        self._size = self.total if self._indices is None else len(self._indices)

    @property
    def is_all(self) -> bool:
        return self._indices is None

    def __len__(self) -> int:
        return self._size

    def rows(self, a: int, b: int) -> np.ndarray:
        """Dataset rows of cells ``[a, b)`` (clipped to the selection)."""
        a, b = max(0, a), min(len(self), b)
        if self._indices is None:
            return np.arange(a, max(a, b), dtype=np.int64)
        return self._indices[a:b]

    def row(self, cell: int) -> int:
        return int(self.rows(cell, cell + 1)[0])

    def extend(self, more: np.ndarray) -> None:
        """Append rows found by a running filter scan."""
        assert self._indices is not None, "an all-rows selection cannot grow"
        if len(more):
            buf = self._indices
            if self._size + len(more) > len(buf):
                grown = np.empty(max(2 * len(buf), self._size + len(more), 1024), np.int64)
                grown[: self._size] = buf[: self._size]
                self._indices = buf = grown
            buf[self._size : self._size + len(more)] = more
            self._size += len(more)

    def cell_of(self, row: int) -> int | None:
        """The cell showing dataset row ``row``, or None when the selection leaves it out."""
        if self._indices is None:
            return row if 0 <= row < self.total else None
        shown = self._indices[: self._size]
        at = int(np.searchsorted(shown, row))
        if at < self._size and shown[at] == row:
            return at
        hits = np.flatnonzero(shown == row)  # unsorted lists (show_indices)
        return int(hits[0]) if len(hits) else None

    def nearest_cell(self, row: int) -> int:
        """The first cell showing ``row`` or a later row of a sorted selection."""
        if self._indices is None:
            return max(0, min(row, self.total - 1))
        at = int(np.searchsorted(self._indices[: self._size], row))
        return max(0, min(at, self._size - 1))


@dataclass(frozen=True)
class GridGeometry:
    """A grid of ``count`` cells of ``cell_w x cell_h`` pixels in a viewport."""

    count: int
    cell_w: int
    cell_h: int
    viewport_w: int
    viewport_h: int

    @property
    def columns(self) -> int:
        return max(1, self.viewport_w // self.cell_w)

    @property
    def rows(self) -> int:
        """Rows of cells (may exceed Qt's int range for 10^10 cells in one column)."""
        return math.ceil(self.count / self.columns)

    @property
    def page_rows(self) -> int:
        """Rows of cells that fit wholly in the viewport (at least 1)."""
        return max(1, self.viewport_h // self.cell_h)

    @property
    def visible_rows(self) -> int:
        """Rows of cells drawn, the partly visible last one included."""
        return math.ceil(self.viewport_h / self.cell_h) if self.viewport_h > 0 else 1

    @property
    def max_top_row(self) -> int:
        return max(0, self.rows - self.page_rows)

    @property
    def rows_per_step(self) -> int:
        """Rows of cells per scroll-bar step: 1 unless the rows pass the int range."""
        return max(1, math.ceil(self.max_top_row / (INT_MAX - 1)))

    @property
    def scroll_maximum(self) -> int:
        return math.ceil(self.max_top_row / self.rows_per_step)

    def top_row_for(self, value: int) -> int:
        return min(max(0, value) * self.rows_per_step, self.max_top_row)

    def value_for(self, top_row: int) -> int:
        return min(self.scroll_maximum, max(0, top_row) // self.rows_per_step)

    def visible_cells(self, top_row: int) -> tuple[int, int]:
        """Cells ``[first, last)`` drawn when ``top_row`` is the first row of cells shown."""
        first = max(0, top_row) * self.columns
        return first, min(self.count, first + self.visible_rows * self.columns)

    def top_row_showing(self, cell: int, top_row: int) -> int:
        """The top row to use so that ``cell`` is wholly visible, moving as little as possible."""
        row = cell // self.columns
        if row < top_row:
            return row
        if row >= top_row + self.page_rows:
            return min(self.max_top_row, row - self.page_rows + 1)
        return top_row

    def cell_at(self, top_row: int, x: int, y: int) -> int | None:
        col, row = x // self.cell_w, y // self.cell_h
        if x < 0 or y < 0 or col >= self.columns:
            return None
        cell = (top_row + row) * self.columns + col
        return cell if cell < self.count else None
