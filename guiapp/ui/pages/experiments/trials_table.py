"""The trials table: one row per trial, its parameters as columns, sortable by any column."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem, QWidget

from guiapp.ui.widgets.tables import select_table_rows

FIXED = ("trial", "status")
METRICS = ("epochs", "rows", "best val accuracy", "final val accuracy", "final val loss")


class NumberItem(QTableWidgetItem):
    """Sorts by the number it holds (text cells sort as text)."""

    def __init__(self, text: str, value: Any) -> None:
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole + 1, value)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        a = self.data(Qt.ItemDataRole.UserRole + 1)
        b = other.data(Qt.ItemDataRole.UserRole + 1)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a < b
        if isinstance(a, (int, float)) != isinstance(b, (int, float)):
            return isinstance(a, (int, float))  # numbers before blanks
        return super().__lt__(other)


def _cell(value: Any, digits: int = 4) -> NumberItem:
    if value is None:
        return NumberItem("", None)
    if isinstance(value, float):
        return NumberItem(f"{value:.{digits}f}" if digits else f"{value:g}", value)
    if isinstance(value, int) and not isinstance(value, bool):
        return NumberItem(f"{value:,}", value)
    return NumberItem(str(value), str(value))


class TrialsTable(QTableWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 0, parent)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSortingEnabled(True)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setMinimumHeight(150)
        self.params: list[str] = []

    def show_rows(self, params: list[str], rows: list[dict[str, Any]]) -> None:
        """Fill the table; the selected trial stays selected."""
        chosen = self.selected_trial()
        self.setSortingEnabled(False)
        self.params = params
        headers = [*FIXED, *params, *METRICS]
        self.setColumnCount(len(headers))
        self.setHorizontalHeaderLabels(headers)
        self.setRowCount(len(rows))
        for i, r in enumerate(rows):
            cells = [
                _cell(r["id"]),
                _cell(r["status"]),
                *(_cell(r["params"].get(p), 0) for p in params),
                _cell(r.get("epochs")),
                _cell(r.get("train_rows")),
                _cell(r["best"].get("val_accuracy")),
                _cell(r["final"].get("val_accuracy")),
                _cell(r["final"].get("val_loss")),
            ]
            for c, item in enumerate(cells):
                item.setData(Qt.ItemDataRole.UserRole, r["id"])
                self.setItem(i, c, item)
        self.setSortingEnabled(True)
        self.resizeColumnsToContents()
        if chosen is not None:
            self.select_trial(chosen)

    def selected_trial(self) -> str | None:
        items = self.selectedItems()
        return str(items[0].data(Qt.ItemDataRole.UserRole)) if items else None

    def select_trial(self, tid: str) -> None:
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == tid:
                select_table_rows(self, [row])
                return

    def column_values(self, header: str) -> list[str]:
        """The texts of a column, top to bottom (tests read the table through it)."""
        for c in range(self.columnCount()):
            head = self.horizontalHeaderItem(c)
            if head is not None and head.text() == header:
                return [
                    item.text() if (item := self.item(r, c)) is not None else ""
                    for r in range(self.rowCount())
                ]
        raise KeyError(header)
