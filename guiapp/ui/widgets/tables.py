"""The table factory every page uses: read-only, whole-row selection, columns fitted to content."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget


def table(columns: tuple[str, ...]) -> QTableWidget:
    t = QTableWidget(0, len(columns))
    t.setHorizontalHeaderLabels(columns)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.verticalHeader().setVisible(False)
    t.setAlternatingRowColors(True)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    t.horizontalHeader().setStretchLastSection(True)
    return t


def select_table_rows(view: QTableWidget, rows: Iterable[int]) -> None:
    """Select exactly ``rows`` of ``view`` (whole rows). Unlike ``selectRow``, this never
    depends on the modifier keys held at that moment (with Shift held, ``selectRow`` would
    extend the selection): for selections the program makes, not the user."""
    model = view.selectionModel()
    flags = QItemSelectionModel.SelectionFlag
    model.clearSelection()
    for row in rows:
        index = view.model().index(row, 0)
        model.select(index, flags.Select | flags.Rows)
        model.setCurrentIndex(index, flags.NoUpdate)
