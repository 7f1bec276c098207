"""The error panel: a failed job's message, the fix in the GUI's own words, its log.

A failure is not a table cell with a tooltip: the panel says which job failed, what went
wrong (the CLI's one line, whole and selectable), what to do about it (the catalogue's
fix, in the dialogs' words where the job's ``failed`` event names the option it concerns:
:mod:`guiapp.ui.jobs.gui_words`), and offers the job's log and a way to dismiss it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from guiapp.core.events import Failure
from guiapp.ui.jobs.gui_words import explain

STYLE = (
    "QFrame#error_panel { background: #fdecea; border: 1px solid #e0a8a0; border-radius: 4px; }"
    " QFrame#error_panel QLabel { color: #611a15; background: transparent; }"
)


class ErrorPanel(QFrame):
    """Hidden until :meth:`show_failure`; ``log_requested`` when its log button is pressed."""

    log_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("error_panel")
        self.setStyleSheet(STYLE)
        self.title = QLabel()
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.what = QLabel()
        self.fix = QLabel()
        for label in (self.title, self.what, self.fix):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.log_button = QPushButton("Show the log")
        self.dismiss_button = QPushButton("Dismiss")
        self.log_button.clicked.connect(self.log_requested)
        self.dismiss_button.clicked.connect(self.hide)
        text = QVBoxLayout()
        text.setSpacing(2)
        for label in (self.title, self.what, self.fix):
            text.addWidget(label)
        buttons = QVBoxLayout()
        buttons.addWidget(self.log_button)
        buttons.addWidget(self.dismiss_button)
        buttons.addStretch(1)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 6, 8, 6)
        row.addLayout(text, 1)
        row.addLayout(buttons)
        self.hide()

    def show_failure(
        self, job_name: str, message: str, failure: Failure | None = None, command: str = ""
    ) -> None:
        """Show that ``job_name`` (a ``command`` job) failed with the one-line ``message``;
        ``failure``, the fields its ``failed`` event carried (option, fix, ...)."""
        if failure is None or failure.message != message:
            failure = Failure(message)
        what, fix = explain(failure, command)
        self.title.setText(f"{job_name} failed")
        self.what.setText(what)
        self.fix.setText(f"What to do: {fix}")
        self.show()
