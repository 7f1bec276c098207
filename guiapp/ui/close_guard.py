"""Before the project or the window goes: one question about running jobs, one about saving.

Quitting with jobs running asks once, naming every job (training and generation alike):
stop them and quit, leave a training run going in the background and quit, or cancel.
Then, if the project changed, Save / Discard / Cancel, asked once. "Stop" waits for each
job's own ``stopped`` (it checkpoints; a job that does not stop within its grace is
killed), so the window never quits under a live child process; what the stops changed
in the project (a run's status, a detached run's pid) is saved without asking again
when the user chose Save.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow, QMessageBox

from guiapp.ui.jobs.cli_job import STOP_GRACE_MS

if TYPE_CHECKING:
    from pathlib import Path

    from guiapp.core.project import Project
    from guiapp.ui.jobs.cli_job import CliJob
    from guiapp.ui.jobs.jobs_panel import JobsPanel
    from guiapp.ui.pages import Page

    _WindowBase = QMainWindow  # what mypy checks the mixin against: the window it is mixed into
else:
    _WindowBase = object

QUIT_WAIT_MS = STOP_GRACE_MS + 5_000  # after this the window quits whatever is left
KINDS = {
    "train": "training",
    "generate": "generation",
    "import": "import",
    "check": "check",
    "predict": "prediction",
}
STOP_AND_QUIT = "Stop them and quit"
LEAVE_AND_QUIT = "Leave training running and quit"


class CloseGuard(_WindowBase):
    """Mixed into :class:`~guiapp.ui.main_window.MainWindow`: the questions before closing.

    Uses the window's ``project``, ``pages``, ``jobs_panel``, ``save``, ``_save_to``,
    ``save_window_state`` and ``remember_ui_state``.
    """

    project: Project
    pages: list[Page]
    jobs_panel: JobsPanel
    _modified: bool
    _quit_ready: bool = False
    _quitting: bool = False
    _save_answer: str = ""
    quit_dialog: QMessageBox | None = None
    save: Callable[[], bool]
    _save_to: Callable[[Path], bool]
    save_window_state: Callable[[], None]
    remember_ui_state: Callable[[], None]

    def maybe_save(self) -> bool:
        """Ask to save a changed project; False when the user cancels."""
        self._save_answer = ""
        if not self._modified:
            return True
        answer = QMessageBox.warning(
            self,
            "Unsaved changes",
            f"The project “{self.project.name}” has unsaved changes. Save them?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Save:
            self._save_answer = "save"
            return self.save()
        self._save_answer = "discard" if answer == QMessageBox.StandardButton.Discard else ""
        return answer == QMessageBox.StandardButton.Discard

    # ------------------------------------------------------------------ what runs
    def _training_page(self) -> Any:
        return next((p for p in self.pages if hasattr(p, "leave_or_stop")), None)

    def running_job_names(self) -> list[str]:
        """One line per running job: its name and kind (a followed detached run too)."""
        names = [f"{job.name} ({KINDS.get(job.command, job.command)})" for job in self._jobs()]
        training = self._training_page()
        if training is not None and training.tail is not None and not training.tail.done:
            run = training.run or {}
            names.append(f"train {run.get('name', '')} (training, in the background)")
        return names

    def _jobs(self) -> list[CliJob]:
        return self.jobs_panel.running_jobs()

    def _ask_about_jobs(self, names: list[str]) -> str:
        """The one quit question when jobs run: "stop", "leave" (training goes on) or ""."""
        training = self._training_page()
        trains = training is not None and training.is_running()
        box = QMessageBox(self)
        box.setObjectName("quit_dialog")
        box.setStyleSheet("QLabel#qt_msgbox_informativelabel { min-width: 460px; }")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Jobs are running")
        count = f"{len(names)} job is" if len(names) == 1 else f"{len(names)} jobs are"
        box.setText(f"{count} still running:\n" + "\n".join(f"•  {n}" for n in names))
        info = (
            "Stop them and quit: each job stops after its current block or batch, keeps "
            "what it made, and Resume continues it when you reopen the project."
        )
        if trains:
            info += (
                " Leave training running: the training goes on in the background and "
                "shows again when you reopen the project."
            )
        box.setInformativeText(info)
        stop = box.addButton(STOP_AND_QUIT, QMessageBox.ButtonRole.AcceptRole)
        leave = box.addButton(LEAVE_AND_QUIT, QMessageBox.ButtonRole.YesRole) if trains else None
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        self.quit_dialog = box
        box.exec()
        self.quit_dialog = None
        clicked = box.clickedButton()
        box.deleteLater()
        if clicked is stop:
            return "stop"
        if leave is not None and clicked is leave:
            return "leave"
        return ""

    # ------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:
        if self._quit_ready:
            self.save_window_state()
            event.accept()
            return
        event.ignore()
        if self._quitting:  # already stopping the jobs; the window closes after them
            return
        names = self.running_job_names()
        choice = "stop"
        if names:
            choice = self._ask_about_jobs(names)
            if not choice:
                return
        if not self.maybe_save():
            return
        resave = self._save_answer == "save" or not self._modified
        if not self.running_job_names():  # nothing runs (any more): quit now
            self._settle(resave)
            self.save_window_state()
            event.accept()
            return
        self._quitting = True
        self._stop_then_quit(choice == "leave", resave)

    def _stop_then_quit(self, leave: bool, resave: bool) -> None:
        jobs = self._jobs()
        training = self._training_page()
        handing_over: list[bool] = []
        if training is not None and training.job is not None and training.job.is_running():
            handing_over.append(True)
            training.leave_or_stop(leave, lambda: handing_over.clear())
        elif training is not None and not leave and training.tail is not None:
            training.stop()  # a detached run: SIGTERM, it checkpoints on its own
        for job in jobs:
            if training is None or job is not training.job:
                job.stop()
        self.statusBar().showMessage(f"Stopping {len(jobs)} job(s) before quitting…")
        waited = [0]

        def check() -> None:
            waited[0] += 100
            done = not handing_over and not any(j.is_running() for j in jobs)
            if done or waited[0] >= QUIT_WAIT_MS:
                timer.stop()
                self._quit(resave)

        timer = QTimer(self)
        timer.setInterval(100)
        timer.timeout.connect(check)
        timer.start()

    def _settle(self, resave: bool) -> None:
        """Save what the stops changed and the window's state, unless the user discarded."""
        path: Path | None = self.project.path
        if not resave or path is None:
            return
        before = json.dumps(self.project.ui, sort_keys=True, default=str)
        self.remember_ui_state()
        if self._modified or json.dumps(self.project.ui, sort_keys=True, default=str) != before:
            self._save_to(path)

    def _quit(self, resave: bool) -> None:
        self._settle(resave)
        self._quitting = False
        self._quit_ready = True
        self.close()
