"""Before the project or the window goes: save changes, settle a training run, stop jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMessageBox

if TYPE_CHECKING:
    from guiapp.core.project import Project
    from guiapp.ui.jobs.jobs_panel import JobsPanel
    from guiapp.ui.pages import Page


class CloseGuard:
    """Mixed into :class:`~guiapp.ui.main_window.MainWindow`: the questions before closing.

    Uses the window's ``project``, ``pages``, ``jobs_panel``, ``save``, ``_save_to`` and
    ``save_window_state``.
    """

    project: Project
    pages: list[Page]
    jobs_panel: JobsPanel
    _modified: bool
    _closing_after_training: bool

    def maybe_save(self) -> bool:
        """Ask to save a changed project; False when the user cancels."""
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
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def _ask_about_training(self) -> bool:
        """A run is training: stop it, leave it running, or cancel. True: close now."""
        training = next((p for p in self.pages if hasattr(p, "leave_or_stop")), None)
        if training is None or self._closing_after_training or not training.is_running():  # type: ignore[attr-defined]
            return True
        answer = QMessageBox.question(
            self,
            "Training is running",
            "A training run is still going. Stop it? Yes: stop it now (Resume continues "
            "it later). No: leave it running in the background; reopening the project "
            "shows it again. Cancel: keep the window open.",
            QMessageBox.StandardButton.Yes
            | QMessageBox.StandardButton.No
            | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        leave = answer == QMessageBox.StandardButton.No
        self.statusBar().showMessage(
            "Checkpointing the run" + (" to continue it in the background…" if leave else "…")
        )

        def close_again() -> None:
            if leave and self._modified and self.project.path is not None:
                self._save_to(self.project.path)  # the run's new process id
            self._closing_after_training = True
            self.close()

        training.leave_or_stop(leave, close_again)  # type: ignore[attr-defined]
        return False

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_save():
            event.ignore()
            return
        if not self._ask_about_training():
            event.ignore()
            return
        running = self.jobs_panel.running_jobs()
        if running:
            answer = QMessageBox.question(
                self,
                "Jobs still running",
                f"{len(running)} job(s) are still running. Stop them and quit? "
                "Stopped generation jobs can be resumed later.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                QMessageBox.StandardButton.Cancel,
            )
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
            self.jobs_panel.stop_all()
        self.save_window_state()
        event.accept()
