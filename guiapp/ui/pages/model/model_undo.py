"""Undo and redo on the Model page: every edit of the project's models is a ``StateEdit``
(``ui/widgets/undo.py``, the command the project's other lists use too).

An edit is recorded as the project's model list before and after it (its entries,
copied), so every way the page changes a model (add, remove, move or edit a layer, the
spec-wide settings, a new, deleted, renamed or refitted model) undoes the same way.
Consecutive edits of one layer's fields (typing ``5, 5``) or of the settings merge into
one step. The window's Edit menu binds its Undo/Redo to the page's ``undo_stack``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from PySide6.QtGui import QUndoStack

from guiapp.core.project import ModelEntry
from guiapp.ui.pages.base import PagePart
from guiapp.ui.widgets.undo import StateEdit


class UndoableEdits(PagePart):
    """Mixed into the Model page: ``record(text)`` after each change pushes its command.

    Uses the page's ``_project``, ``index``, ``selected_layer()`` and ``_fill_models()``.
    """

    undo_stack: QUndoStack
    _restoring: bool
    _state: tuple[list[ModelEntry], int, int]
    index: int  # the edited entry of the project's models

    if TYPE_CHECKING:  # the page's own (declared for mypy only: no run-time stand-ins)

        def selected_layer(self) -> int: ...
        def _fill_models(self) -> None: ...
        def _fill_layers(self, select: int | None = None) -> None: ...

    def _init_undo(self) -> None:
        self.undo_stack = QUndoStack(self)
        self._restoring = False
        self._state = ([], -1, -1)

    def _current_state(self) -> tuple[list[ModelEntry], int, int]:
        models = self._project.models if self._project is not None else []
        return copy.deepcopy(models), self.index, self.selected_layer()

    def reset_undo(self) -> None:
        """A new project: nothing to undo, and this is the state edits start from."""
        self.undo_stack.clear()
        self._state = self._current_state()

    def note_position(self) -> None:
        """The user moved to another model or layer: undo comes back to where edits were."""
        if not self._restoring:
            self._state = (self._state[0], self.index, self.selected_layer())

    def record(self, text: str, merge_key: object = None) -> None:
        """The models changed: push "before → now" as one undoable step."""
        if self._restoring:
            return
        now = self._current_state()
        if now[0] == self._state[0]:
            self._state = now
            return
        before, self._state = self._state, now
        self.undo_stack.push(StateEdit(self._restore_state, text, before, now, merge_key))

    def _restore_state(self, state: tuple[list[ModelEntry], int, int]) -> None:
        self.restore_models(*state)

    def restore_models(self, models: list[ModelEntry], index: int, layer: int) -> None:
        """Put the project's models back as an undo/redo step left them."""
        project = self._project
        if project is None:
            return
        self._restoring = True
        try:
            project.models[:] = models
            self.index = index if index < len(models) else len(models) - 1
            self._fill_models()
            if layer >= 0:
                self._fill_layers(layer)
            self.project_changed.emit()
        finally:
            self._restoring = False
        self._state = self._current_state()
