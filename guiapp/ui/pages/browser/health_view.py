"""The dataset health window: class balance per split and fold, the largest groups,
identical rows across splits and the likely label issues, each number a button to its
rows in the Browser. ``core/explain/health.py`` computes the report and the rows, on a
worker thread."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from guiapp.ui.background import BackgroundCalls
from guiapp.ui.pages.browser.rows_window import RowsWindow
from guiapp.ui.widgets.layouts import STRETCH, row_layout


def _report(data: str, model: str, labels_csv: str) -> dict[str, Any]:
    from guiapp.core.explain.health import dataset_health, health_config
    from guiapp.core.store import Dataset

    with Dataset(data) as ds:
        return dataset_health(ds, health_config(model, data), labels_csv or None)


def _rows(data: str, model: str, labels_csv: str, key: tuple[Any, ...]) -> Any:
    from guiapp.core.explain.health import health_config, rows_of
    from guiapp.core.store import Dataset

    with Dataset(data) as ds:
        return rows_of(ds, health_config(model, data), key, labels_csv or None)


class HealthView(RowsWindow):
    """One dataset's health; click a number to see its rows."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Dataset health", (640, 480), parent)
        self.data = self.model = self.labels_csv = ""
        self.report: dict[str, Any] | None = None
        self.keys: dict[tuple[int, int], tuple[Any, ...]] = {}
        self.calls = BackgroundCalls(threads=1, parent=self, done=self._done)
        self.info = QLabel("")
        self.calls.failed.connect(lambda key, message: self.info.setText(message))
        self.info.setWordWrap(True)
        self.table = QTableWidget()
        self.table.cellClicked.connect(self._cell_clicked)
        self.groups = QTableWidget()
        self.groups.cellClicked.connect(self._group_clicked)
        self.duplicates_button = QPushButton("")
        self.duplicates_button.clicked.connect(
            lambda: self.request(("duplicates",), "identical rows across splits")
        )
        self.issues_button = QPushButton("")
        self.issues_button.clicked.connect(lambda: self.request(("issues",), "likely mislabeled"))
        buttons = row_layout(self.duplicates_button, self.issues_button, STRETCH)
        layout = QVBoxLayout(self)
        layout.addWidget(self.info)
        layout.addWidget(QLabel("Rows per class and split (click a number for its rows)"))
        layout.addWidget(self.table, 2)
        layout.addLayout(buttons)
        layout.addWidget(QLabel("Largest groups"))
        layout.addWidget(self.groups, 1)

    def load(self, data: str, model: str = "", labels_csv: str = "") -> None:
        """Compute the report of ``data`` (splits of the run ``model``, or the defaults)."""
        self.data, self.model, self.labels_csv = data, model, labels_csv
        self.report = None
        self.info.setText(f"Reading {data}…")
        self.calls.submit(("report", data), _report, data, model, labels_csv)

    def request(self, key: tuple[Any, ...], title: str) -> None:
        self.calls.submit(("rows", key, title), _rows, self.data, self.model, self.labels_csv, key)

    def _done(self, key: object, result: object) -> None:
        if not isinstance(key, tuple):
            return
        if key[0] == "report" and isinstance(result, dict) and key[1] == self.data:
            self.show_report(result)
        elif key[0] == "rows":
            rows = result
            self.rows_requested.emit(rows, f"{key[2]} ({len(rows):,} rows)", self.data)  # type: ignore[arg-type]

    def show_report(self, rep: dict[str, Any]) -> None:
        self.report = rep
        names: list[str] = rep["class_names"]
        columns = list(rep["columns"])
        self.table.clear()
        self.table.setRowCount(len(names) + 1)
        self.table.setColumnCount(len(columns))
        self.table.setHorizontalHeaderLabels(columns)
        self.table.setVerticalHeaderLabels([*names, "all classes"])
        self.keys = {}
        for j, split in enumerate(columns):
            counts = rep["columns"][split]
            for i, n in enumerate([*counts, sum(counts)]):
                item = QTableWidgetItem(f"{n:,}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                self.table.setItem(i, j, item)
                self.keys[(i, j)] = ("class", split, i if i < len(names) else -1)
        g = rep["groups"]
        self.groups.clear()
        self.groups.setColumnCount(2)
        self.groups.setHorizontalHeaderLabels(["group", "rows"])
        largest = g["largest"] if g else []
        self.groups.setRowCount(len(largest))
        for i, top in enumerate(largest):
            for j, text in enumerate((top["name"], f"{top['rows']:,}")):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                self.groups.setItem(i, j, item)
        dup = rep["duplicates"]["rows"]
        self.duplicates_button.setText(f"Identical rows across splits: {dup:,}")
        self.duplicates_button.setEnabled(dup > 0)
        issues = rep["issues"]
        self.issues_button.setText(
            f"Likely mislabeled: {issues['rows']:,}" if issues else "Likely mislabeled: not ranked"
        )
        self.issues_button.setEnabled(bool(issues and issues["rows"]))
        groups = (
            f"{g['groups']:,} groups of {g['min']:,} to {g['max']:,} rows (median {g['median']:g})"
            if g
            else "no groups (each row its own group)"
        )
        self.info.setText(f"{rep['rows']:,} rows, split by {rep['split_by']}; {groups}.")

    def _cell_clicked(self, i: int, j: int) -> None:
        key = self.keys.get((i, j))
        if key is not None and self.report is not None:
            names = self.report["class_names"]
            what = names[key[2]] if key[2] >= 0 else "all classes"
            self.request(key, f"{what} in {key[1]}")

    def _group_clicked(self, i: int, _j: int) -> None:
        g = self.report["groups"] if self.report else None
        if g and 0 <= i < len(g["largest"]):
            top = g["largest"][i]
            self.request(("group", top["group"]), f"group {top['name']}")
