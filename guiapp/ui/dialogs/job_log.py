"""A job's log in a window of its own: its command line, a line per event, its stderr."""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from guiapp.ui.jobs.cli_job import CliJob


class JobLogDialog(QDialog):
    """Shows ``job.log_text()`` and follows the job while the dialog is open."""

    def __init__(self, job: CliJob, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("job_log")
        self.job = job
        self.setWindowTitle(f"Log of {job.name}")
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy = buttons.addButton("Copy", QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(lambda: QApplication.clipboard().setText(self.text.toPlainText()))
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.resize(720, 420)
        job.event.connect(self.refresh)
        job.status_changed.connect(self.refresh)
        self.refresh()

    def refresh(self, *_args: object) -> None:
        text = self.job.log_text()
        if text != self.text.toPlainText():
            self.text.setPlainText(text)
            bar = self.text.verticalScrollBar()
            bar.setValue(bar.maximum())
