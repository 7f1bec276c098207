"""The Jobs panel: one row per background job (generate, import, check, train, bench).

Each row shows the job's name, status, a progress bar, ETA (h:mm:ss), rows/s and
Cancel / Resume / Log buttons; training shows its steps like generation its rows. Finished
jobs stay listed until "Clear finished"; a failed one opens the error panel above the
table. A training run left running in the background is listed as well, with its
progress read from its events file (:class:`~guiapp.ui.jobs.run_tail.FollowedJob`).
:meth:`JobsPanel.history` and :meth:`JobsPanel.restore` keep the list in the project.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.train.run_lock import run_active
from guiapp.ui.jobs.cli_job import CliJob, format_eta, format_rate, written_run
from guiapp.ui.widgets.error_panel import ErrorPanel

HISTORY_KEEP = 50  # jobs kept in the project's history
LOG_SAVED = 200  # lines of each job's log saved with it

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
        self.log_button = QPushButton("Log")
        self.log_button.setToolTip("Open the job's log: its command, events and messages")
        self.cancel_button.clicked.connect(job.stop)
        self.resume_button.clicked.connect(self.resume)
        self.log_button.clicked.connect(lambda: panel.show_log(job))
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(2, 0, 2, 0)
        row.setSpacing(4)
        row.addWidget(self.cancel_button)
        row.addWidget(self.resume_button)
        row.addWidget(self.log_button)
        self.buttons = buttons
        job.progress.connect(self.on_progress)
        job.status_changed.connect(self.on_status)

    def live_elsewhere(self) -> bool:
        """Whether another process writes this job's run now (its lock's holder): a
        second writer is never offered (issue 35.4)."""
        run = written_run(self.job)
        return run is not None and not self.job.is_running() and run_active(run)

    def resume(self) -> None:
        if self.live_elsewhere():
            self.resume_button.setEnabled(False)
            self.set_text(JobsPanel.STATUS, "another process is writing this run now")
            return
        self.job.resume()

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
        if item.text() != text or item.toolTip() != (tooltip or text):
            item.setText(text)
            item.setToolTip(tooltip or text)

    def on_progress(self, done: object, total: object, rate: object, eta: object) -> None:
        if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total > 0:
            share = max(0.0, min(1.0, float(done) / float(total)))
            value = int(share * 1000)
            # QProgressBar.setValue repaints at once (not at the next paint): move the bar
            # by whole percents only, not on each of a job's many progress events
            if abs(value - self.bar.value()) >= 10 or (value == 1000) != (self.bar.value() == 1000):
                self.bar.setValue(value)
                self.bar.setFormat(f"{share:.0%}")
        self.set_text(JobsPanel.ETA, format_eta(eta if isinstance(eta, (int, float)) else None))
        self.set_text(JobsPanel.RATE, format_rate(rate if isinstance(rate, (int, float)) else None))

    def on_status(self, status: str) -> None:
        job = self.job
        text = STATUS_TEXT.get(status, status)
        if status == "stopped" and job.message and job.message != "stopped":
            text = f"{text}: {job.message}"  # failures: the error panel and the tooltip
        self.set_text(JobsPanel.STATUS, text, job.message or text)
        running = status == "running"
        self.cancel_button.setEnabled(running)
        self.resume_button.setVisible(job.resumable)
        # a job refused before it started (a failed event, no started one) has nothing to
        # resume: it is started again once the cause is fixed
        self.resume_button.setEnabled(
            job.resumable
            and status in ("stopped", "failed")
            and not job.refused()
            and not self.live_elsewhere()
        )
        if not running:  # an ended job: no ETA, no rows/s of a job no longer running
            self.set_text(JobsPanel.ETA, "")
            if status != "finished":
                self.set_text(JobsPanel.RATE, "")
            end = job.last_event  # a stopped generation's real progress: its committed rows
            rows, total = end.get("rows"), end.get("total")
            if status == "stopped" and isinstance(rows, int) and isinstance(total, int) and total:
                self.bar.setValue(int(1000 * rows / total))
                self.bar.setFormat(f"{rows / total:.0%}")
        if status == "finished":
            self.bar.setValue(1000)
            self.bar.setFormat("100%")
            self.set_text(JobsPanel.ETA, "")
        elif running:
            self.bar.setValue(0)
            self.bar.setFormat("")


class JobsPanel(QDockWidget):
    """A bottom dock with the error panel, a table of jobs and "Clear finished"."""

    COLUMNS = ("Job", "Status", "Progress", "ETA", "Rows/s", "Actions")
    STATUS, PROGRESS, ETA, RATE, ACTIONS = 1, 2, 3, 4, 5
    WIDTHS = (200, 140, 80, 80, 230)  # of the columns after "Job", which stretches
    #: the list changed (a job added, ended or cleared): the window saves it with the project
    changed = Signal()
    #: A listed job ended (however it was started: a page, Resume here, a reopened project).
    job_ended = Signal(object)

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
        for col, width in enumerate(self.WIDTHS, start=1):
            self.table.setColumnWidth(col, width)
        self.table.setToolTip("Jobs started from the pages appear here.")
        self.table.cellDoubleClicked.connect(lambda r, _c: self.show_log(self.rows[r].job))
        self.error_panel = ErrorPanel()
        self.error_panel.log_requested.connect(self._log_of_failure)
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.setToolTip("Remove the jobs that are no longer running from the list")
        self.clear_button.clicked.connect(self.clear_finished)
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addStretch(1)
        bar.addWidget(self.clear_button)
        body = QWidget()
        column = QVBoxLayout(body)
        for widget, stretch in ((self.error_panel, 0), (self.table, 1)):
            column.addWidget(widget, stretch)
        column.addLayout(bar)
        column.setContentsMargins(4, 2, 4, 2)
        self.setWidget(body)
        self.rows: list[JobRow] = []
        self.failed_job: CliJob | None = None
        self.log_dialogs: list[QWidget] = []

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
        job.finished.connect(lambda ok, message, job=job: self._job_ended(job, ok, message))
        job.status_changed.connect(lambda _s: self.changed.emit())
        job.status_changed.connect(lambda s, job=job: self._job_resumed(job, s))
        self.changed.emit()
        return row

    def running_jobs(self) -> list[CliJob]:
        """This GUI's running child jobs (a followed background run is not one of them:
        the Training page stops it or leaves it running)."""
        return [r.job for r in self.rows if r.job.is_running() and not r.job.followed]

    # ------------------------------------------------------------------ failures and logs
    def _job_ended(self, job: CliJob, ok: bool, message: str) -> None:
        self.job_ended.emit(job)
        if job.status == "failed":
            self.failed_job = job
            failure = getattr(job, "failure", None)  # (a followed run has only its line)
            self.error_panel.show_failure(job.name, message, failure, job.command)
            self.show()
            self.raise_()
        elif self.failed_job is job:  # resumed and done: its failure is over
            self.error_panel.hide()

    def _job_resumed(self, job: CliJob, status: str) -> None:
        """A failed job resumed (here or on its page): its failure is over, its panel goes."""
        if status == "running" and self.failed_job is job:
            self.failed_job = None
            self.error_panel.hide()

    def _log_of_failure(self) -> None:
        if self.failed_job is not None:
            self.show_log(self.failed_job)

    def show_log(self, job: CliJob) -> QWidget:
        """Open (non-modal) the log of ``job``."""
        from guiapp.ui.dialogs.job_log import JobLogDialog

        dialog = JobLogDialog(job, self)
        self.log_dialogs = [d for d in self.log_dialogs if d.isVisible()] + [dialog]
        dialog.show()
        return dialog

    def clear_finished(self) -> int:
        """Remove every job that is not running; how many went."""
        gone = [r for r in self.rows if not r.job.is_running()]
        for row in gone:
            self.table.removeRow(row.index())
            self.rows.remove(row)
            if row.job is self.failed_job:
                self.failed_job = None
                self.error_panel.hide()
            row.job.setParent(None)  # a page may still hold it (the Training page's run)
        if gone:
            self.changed.emit()
        return len(gone)

    # ------------------------------------------------------------------ kept in the project
    def history(self) -> list[dict[str, Any]]:
        """The listed jobs as JSON (oldest first): what :meth:`restore` lists again."""
        out = []
        for row in reversed(self.rows[:HISTORY_KEEP]):
            job = row.job
            if job.followed:  # a reopen follows the run again
                continue
            out.append(
                {
                    "name": job.name,
                    "command": job.command,
                    "args": job.args,
                    "events": job.events,
                    "resumable": job.resumable,
                    "working_dir": job.working_dir,
                    "status": "stopped" if job.is_running() else job.status,
                    "message": job.message,
                    "log": job.log[-LOG_SAVED:],
                }
            )
        return out

    def restore(self, history: object) -> None:
        """List the jobs of a reopened project (none runs; a stopped one can be resumed)."""
        if not isinstance(history, list):
            return
        for entry in history:
            if not isinstance(entry, dict) or not isinstance(entry.get("args"), list):
                continue
            job = CliJob(
                str(entry.get("name", "job")),
                str(entry.get("command", "")),
                [str(a) for a in entry["args"]],
                events=bool(entry.get("events", True)),
                resumable=bool(entry.get("resumable", False)),
                working_dir=entry.get("working_dir") or None,
            )
            job.status = str(entry.get("status", "finished"))
            if job.status in ("running", "new"):
                job.status = "stopped"
            job.message = str(entry.get("message", ""))
            job.log = [str(line) for line in entry.get("log", [])]
            self.add_job(job)
