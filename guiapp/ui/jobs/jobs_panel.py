"""The Jobs panel: one row per background job (generate, import, check, train, bench).

Each row shows the job's name, status, a progress bar, ETA (h:mm:ss), rows/s and
Cancel / Resume buttons. Finished jobs stay listed until the user clears them.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from guiapp.ui.jobs.cli_job import CliJob, format_eta, format_rate

STATUS_TEXT = {
    "new": "waiting",
    "running": "running",
    "finished": "done",
    "stopped": "stopped",
    "failed": "failed",
}


class JobRow:
    """The widgets of one job's row, kept in step with its :class:`CliJob`."""

    def __init__(self, panel: JobsPanel, job: CliJob) -> None:
        self.job = job
        self.table = panel.table
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setValue(0)
        self.bar.setTextVisible(True)
        self.bar.setFormat("")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Ask the job to stop after its current block")
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Run the job again; it continues where it stopped")
        self.cancel_button.clicked.connect(job.stop)
        self.resume_button.clicked.connect(job.resume)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(2, 0, 2, 0)
        row.setSpacing(4)
        row.addWidget(self.cancel_button)
        row.addWidget(self.resume_button)
        self.buttons = buttons
        job.progress.connect(self.on_progress)
        job.status_changed.connect(self.on_status)

    def index(self) -> int:
        for r in range(self.table.rowCount()):
            if self.table.cellWidget(r, JobsPanel.PROGRESS) is self.bar:
                return r
        return -1

    def set_text(self, column: int, text: str, tooltip: str = "") -> None:
        r = self.index()
        if r < 0:
            return
        item = self.table.item(r, column)
        if item is None:
            item = QTableWidgetItem()
            self.table.setItem(r, column, item)
        item.setText(text)
        item.setToolTip(tooltip or text)

    def on_progress(self, done: object, total: object, rate: object, eta: object) -> None:
        if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total > 0:
            share = max(0.0, min(1.0, float(done) / float(total)))
            self.bar.setValue(int(share * 1000))
            self.bar.setFormat(f"{share:.0%}")
        self.set_text(JobsPanel.ETA, format_eta(eta if isinstance(eta, (int, float)) else None))
        self.set_text(JobsPanel.RATE, format_rate(rate if isinstance(rate, (int, float)) else None))

    def on_status(self, status: str) -> None:
        job = self.job
        text = STATUS_TEXT.get(status, status)
        if status in ("failed", "stopped") and job.message and job.message != "stopped":
            text = f"{text}: {job.message}"
        self.set_text(JobsPanel.STATUS, text, job.message or text)
        running = status == "running"
        self.cancel_button.setEnabled(running)
        self.resume_button.setVisible(job.resumable)
        self.resume_button.setEnabled(job.resumable and status in ("stopped", "failed"))
        if status == "finished":
            self.bar.setValue(1000)
            self.bar.setFormat("100%")
            self.set_text(JobsPanel.ETA, "")
        elif running:
            self.bar.setValue(0)
            self.bar.setFormat("")


class JobsPanel(QDockWidget):
    """A bottom dock with a table of jobs."""

    COLUMNS = ("Job", "Status", "Progress", "ETA", "Rows/s", "Actions")
    STATUS, PROGRESS, ETA, RATE, ACTIONS = 1, 2, 3, 4, 5
    WIDTHS = (200, 140, 80, 80, 170)  # of the columns after "Job", which stretches

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
        self.table.verticalHeader().setDefaultSectionSize(30)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column, width in enumerate(self.WIDTHS, start=1):
            self.table.setColumnWidth(column, width)
        self.table.setToolTip("Jobs started from the pages appear here.")
        self.setWidget(self.table)
        self.rows: list[JobRow] = []

    def add_job(self, job: CliJob) -> JobRow:
        """List ``job`` (newest at the top); its row follows the job's signals from now on."""
        job.setParent(self)  # the panel keeps finished jobs alive while they are listed
        self.table.insertRow(0)
        name = QTableWidgetItem(job.name)
        name.setToolTip(" ".join(job.argv()))
        self.table.setItem(0, 0, name)
        row = JobRow(self, job)
        self.table.setCellWidget(0, self.PROGRESS, row.bar)
        self.table.setCellWidget(0, self.ACTIONS, row.buttons)
        self.rows.insert(0, row)
        row.on_status(job.status)
        return row

    def running_jobs(self) -> list[CliJob]:
        return [r.job for r in self.rows if r.job.is_running()]

    def stop_all(self) -> None:
        for job in self.running_jobs():
            job.stop()
