"""Undo and redo of the project's lists: each edit one ``QUndoCommand`` holding the state
before and after it (copies), which undo and redo hand back to the page.

:class:`StateEdit` is the command (the Model page's edits, ``pages/model/model_undo.py``,
and :class:`ListHistory`'s); :class:`ListHistory` is the undo stack of one list of the
project (the Datasets page's datasets, the Runs page's list of runs): ``record(text)`` after each
change pushes "before -> now". The window's Edit menu binds its Undo/Redo to the current
page's ``undo_stack`` (``main_menus.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QUndoCommand, QUndoStack

MERGE_ID = 17


class StateEdit(QUndoCommand):
    """A state before and after one edit; ``merge_key`` joins consecutive edits (keystrokes).

    Pushed after the edit happened, so the first ``redo`` (Qt's, on push) does nothing;
    undo and redo give ``restore`` a copy of the state to put back.
    """

    def __init__(
        self,
        restore: Callable[[Any], None],
        text: str,
        before: Any,
        after: Any,
        merge_key: object = None,
        copy_state: Callable[[Any], Any] = copy.deepcopy,
    ) -> None:
        super().__init__(text)
        self.restore, self.before, self.after, self.merge_key = restore, before, after, merge_key
        self.copy_state = copy_state
        self._applied = True

    def id(self) -> int:
        return MERGE_ID if self.merge_key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt's name)
        if not isinstance(other, StateEdit) or other.merge_key != self.merge_key:
            return False
        self.after = other.after
        return True

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self.restore(self.copy_state(self.after))

    def undo(self) -> None:
        self.restore(self.copy_state(self.before))


class ListHistory:
    """The undo stack of one list of the project, ``items()`` (edited in place).

    ``record(text)`` after each change; undo and redo put the list back as it was and
    call ``restored()`` (the page redraws and marks the project changed). A list whose
    items are edited in place is kept as deep copies; one whose items are only removed
    and added (``deep=False``) keeps the items themselves, so that other pages holding
    one (the Training page's run) still hold the project's after an undo.
    """

    def __init__(
        self,
        parent: QObject,
        items: Callable[[], list[Any]],
        restored: Callable[[], None],
        deep: bool = True,
    ) -> None:
        self.stack = QUndoStack(parent)
        self.items, self.restored = items, restored
        self.copy: Callable[[Any], Any] = copy.deepcopy if deep else list
        self._state: list[Any] = []
        self._restoring = False

    def reset(self) -> None:
        """A new project: nothing to undo; edits start from its list as it is."""
        self.stack.clear()
        self._state = self.copy(self.items())

    def record(self, text: str) -> None:
        """The list changed: push "before -> now" as one step called ``text``."""
        if self._restoring:
            return
        now = self.copy(self.items())
        if now == self._state:
            return
        before, self._state = self._state, now
        self.stack.push(StateEdit(self._restore, text, before, now, copy_state=self.copy))

    def _restore(self, state: list[Any]) -> None:
        self._restoring = True
        try:
            self.items()[:] = state
            self.restored()
        finally:
            self._restoring = False
        self._state = self.copy(self.items())
