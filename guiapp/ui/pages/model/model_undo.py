"""Undo and redo on the Model page: every edit of the project's models is a ``QUndoCommand``.

An edit is recorded as the project's model list before and after it (small JSON dicts,
copied), so every way the page changes a model (add, remove, move or edit a layer, the
spec-wide settings, a new, deleted, renamed or refitted model) undoes the same way.
Consecutive edits of one layer's fields (typing ``5, 5``) or of the settings merge into
one step. The window's Edit menu binds its Undo/Redo to the page's ``undo_stack``.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from PySide6.QtGui import QUndoCommand, QUndoStack

MERGE_ID = 17


class ModelHistory(Protocol):
    undo_stack: QUndoStack

    def restore_models(self, models: list[dict[str, Any]], index: int, layer: int) -> None: ...


class ModelEdit(QUndoCommand):
    """The project's models before and after one edit; ``merge_key`` joins keystrokes."""

    def __init__(
        self,
        page: ModelHistory,
        text: str,
        before: tuple[list[dict[str, Any]], int, int],
        after: tuple[list[dict[str, Any]], int, int],
        merge_key: object = None,
    ) -> None:
        super().__init__(text)
        self.page, self.before, self.after, self.merge_key = page, before, after, merge_key
        self._applied = True  # pushed after the edit happened: the first redo does nothing

    def id(self) -> int:
        return MERGE_ID if self.merge_key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, ModelEdit) or other.merge_key != self.merge_key:
            return False
        self.after = other.after
        return True

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self.page.restore_models(*_copy(self.after))

    def undo(self) -> None:
        self.page.restore_models(*_copy(self.before))


def _copy(
    state: tuple[list[dict[str, Any]], int, int],
) -> tuple[list[dict[str, Any]], int, int]:
    return copy.deepcopy(state[0]), state[1], state[2]


class UndoableEdits:
    """Mixed into the Model page: ``record(text)`` after each change pushes its command.

    Uses the page's ``_project``, ``index``, ``selected_layer()`` and ``_fill_models()``.
    """

    undo_stack: QUndoStack
    _restoring: bool
    _state: tuple[list[dict[str, Any]], int, int]

    def _init_undo(self) -> None:
        self.undo_stack = QUndoStack(self)  # type: ignore[arg-type]
        self._restoring = False
        self._state = ([], -1, -1)

    def _current_state(self) -> tuple[list[dict[str, Any]], int, int]:
        models = self._project.models if self._project is not None else []  # type: ignore[attr-defined]
        return copy.deepcopy(models), self.index, self.selected_layer()  # type: ignore[attr-defined]

    def reset_undo(self) -> None:
        """A new project: nothing to undo, and this is the state edits start from."""
        self.undo_stack.clear()
        self._state = self._current_state()

    def note_position(self) -> None:
        """The user moved to another model or layer: undo comes back to where edits were."""
        if not self._restoring:
            self._state = (self._state[0], self.index, self.selected_layer())  # type: ignore[attr-defined]

    def record(self, text: str, merge_key: object = None) -> None:
        """The models changed: push "before → now" as one undoable step."""
        if self._restoring:
            return
        now = self._current_state()
        if now[0] == self._state[0]:
            self._state = now
            return
        before, self._state = self._state, now
        self.undo_stack.push(ModelEdit(self, text, before, now, merge_key))  # type: ignore[arg-type]

    def restore_models(self, models: list[dict[str, Any]], index: int, layer: int) -> None:
        """Put the project's models back as an undo/redo step left them."""
        project = self._project  # type: ignore[attr-defined]
        if project is None:
            return
        self._restoring = True
        try:
            project.models[:] = models
            self.index = index if index < len(models) else len(models) - 1  # type: ignore[attr-defined]
            self._fill_models()  # type: ignore[attr-defined]
            if layer >= 0:
                self._fill_layers(layer)  # type: ignore[attr-defined]
            self.project_changed.emit()  # type: ignore[attr-defined]
        finally:
            self._restoring = False
        self._state = self._current_state()
