"""The Jobs panel: one row per background job (generate, import, train, evaluate, bench)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHeaderView,
    QTableWidget,
    QWidget,
)


class JobsPanel(QDockWidget):
    """A bottom dock with a table of jobs; rows arrive with the job runner."""

    COLUMNS = ("Job", "Status", "Progress", "ETA", "Rows/s", "Cancel")
    WIDTHS = (110, 160, 90, 100, 80)  # of the columns after "Job", which stretches

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Jobs", parent)
        self.setObjectName("jobs_panel")  # needed by QMainWindow.saveState()
        self.setAllowedAreas(
            Qt.DockWidgetArea.BottomDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column, width in enumerate(self.WIDTHS, start=1):
            self.table.setColumnWidth(column, width)
        self.table.setToolTip("Jobs started from the pages appear here.")
        self.setWidget(self.table)
