"""The base of the Browser's own windows (the embedding map, the dataset health): a
top-level window that asks the Browser to show rows."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QWidget


class RowsWindow(QWidget):
    """A window of its own (``parent`` keeps it alive, not inside it), ``title``d and
    ``size``d; ``rows_requested(rows, title, dataset)`` shows rows in the Browser."""

    #: rows to show in the Browser, a title, their dataset
    rows_requested = Signal(object, str, str)

    def __init__(self, title: str, size: tuple[int, int], parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle(title)
        self.resize(*size)
