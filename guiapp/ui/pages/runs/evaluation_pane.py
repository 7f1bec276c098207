"""One evaluation of a run: its confusion matrix, a sentence, and the per-class report.

The Runs page shows two of them side by side for a run on a dataset with groups: per row
(click a cell to browse its rows) and per group (each group counted once, its class the
highest mean probability over its rows). Alone, the matrix and the report sit side by
side; as a pair, each pane stacks them, so the two matrices line up.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QTableWidgetItem, QVBoxLayout, QWidget

from guiapp.ui.pages.runs.confusion_view import ConfusionView
from guiapp.ui.widgets.tables import table


class EvaluationPane(QWidget):
    """A title, a :class:`ConfusionView`, a summary line and the per-class report."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(f"<b>{title}</b>")
        self.confusion = ConfusionView()
        self.summary = QLabel("Select a run to see its evaluation.")
        self.summary.setWordWrap(True)
        self.report = table(("Class", "Precision", "Recall", "F1", "Support"))
        right = QWidget()
        col = QVBoxLayout(right)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.summary)
        col.addWidget(self.report, 1)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.confusion)
        self.split.addWidget(right)
        self.split.setSizes([440, 360])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.split, 1)

    def set_paired(self, paired: bool) -> None:
        """Stack the matrix over the report (two panes side by side) or not (one pane)."""
        vertical = Qt.Orientation.Vertical
        self.split.setOrientation(vertical if paired else Qt.Orientation.Horizontal)
        self.split.setSizes([260, 140] if paired else [440, 360])

    def clear(self, text: str) -> None:
        self.confusion.set_matrix([], [])
        self.report.setRowCount(0)
        self.summary.setText(text)

    def show_report(self, report: dict[str, Any], confusion: Any, names: list[str]) -> None:
        """The matrix and the per-class rows of ``report`` (the summary is the caller's)."""
        self.confusion.set_matrix(confusion, names)
        classes = report.get("classes", [])
        self.report.setRowCount(len(classes))
        for r, c in enumerate(classes):
            cells = [c.get("name", str(r))]
            cells += [f"{c.get(k, 0):.3f}" for k in ("precision", "recall", "f1")]
            cells.append(f"{c.get('support', 0):,}")
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.report.setItem(r, col, item)
