"""The Runs page's list of runs: remove runs from the project (their folders stay), undone
and redone from the Edit menu (:class:`~guiapp.ui.widgets.undo.ListHistory`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QUndoStack
from PySide6.QtWidgets import QPushButton

from guiapp.core.project import RunEntry
from guiapp.ui.pages.base import PagePart
from guiapp.ui.widgets.outputs import show_status
from guiapp.ui.widgets.undo import ListHistory


class RunsList(PagePart):
    """Mixed into :class:`~.runs_page.RunsPage`; uses its project, ``selected_paths()``,
    ``refresh()`` and ``project_changed``."""

    undo_stack: QUndoStack

    if TYPE_CHECKING:  # the page's own (declared for mypy only: no run-time stand-ins)

        def selected_paths(self) -> list[str]: ...
        def refresh(self) -> None: ...

    def _init_runs_list(self) -> None:
        self.list_history = ListHistory(
            self,
            lambda: self.project.runs,
            self._runs_restored,
            deep=False,  # the Training page holds its run's entry: keep the same entries
        )
        self.undo_stack = self.list_history.stack
        self.remove_button = QPushButton("Remove from list")
        self.remove_button.setToolTip("Remove the selected runs from the project (folders stay)")
        self.remove_button.clicked.connect(self.remove_selected)

    def remove_selected(self) -> int:
        """Remove the selected runs that are not running from the list; how many went."""
        chosen = set(self.selected_paths())
        gone: list[RunEntry] = [
            r for r in self.project.runs if r.path in chosen and r.status != "running"
        ]
        if len(gone) < len(chosen):
            show_status(self, "A running run stays in the list; stop it first")
        if not gone:
            return 0
        self.project.runs[:] = [r for r in self.project.runs if all(r is not g for g in gone)]
        name = gone[0].label
        self.list_history.record(
            f"Remove run {name}" if len(gone) == 1 else f"Remove {len(gone)} runs"
        )
        self._runs_restored()
        return len(gone)

    def _runs_restored(self) -> None:
        self.project_changed.emit()
        self.refresh()
