"""One evaluation of a run: its confusion matrix, a sentence, and the per-class report.

The Runs page shows two of them side by side for a run on a dataset with groups: per row
(click a cell to browse its rows) and per group (each group counted once, its class the
highest mean probability over its rows). The sentence sits above the matrix and the
report, which sit side by side (in half the page's width each for a pair).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QTableWidgetItem, QVBoxLayout, QWidget

from guiapp.ui.pages.runs.confusion_view import ConfusionView
from guiapp.ui.widgets.tables import table


class EvaluationPane(QWidget):
    """A title, a :class:`ConfusionView`, a summary line and the per-class report."""

    COLUMNS = ("Class", "Precision", "Recall", "F1", "Support")

    def __init__(self, title: str, unit: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: the short headers of half the width, the support counted in ``unit``s
        self.narrow = ("Class", "Prec.", "Recall", "F1", unit)
        self.title = QLabel(f"<b>{title}</b>")
        self.confusion = ConfusionView()
        self.summary = QLabel("Select a run to see its evaluation.")
        self.summary.setWordWrap(True)
        self.report = table(self.COLUMNS)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.confusion)
        self.split.addWidget(self.report)
        self.split.setSizes([440, 360])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.summary)
        layout.addWidget(self.split, 1)

    def set_paired(self, paired: bool) -> None:
        """Half the width (two panes side by side) or the whole (one pane)."""
        self.report.setHorizontalHeaderLabels(self.narrow if paired else self.COLUMNS)
        self.report.horizontalHeader().setStretchLastSection(not paired)  # fits its numbers
        if paired:
            self.confusion.setMinimumSize(200, 160)
            self.split.setSizes([200, 250])
        else:
            self.confusion.setMinimumSize(260, 220)
            self.split.setSizes([440, 360])

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
