"""The main window's menus (File, Edit, View, Help) and its list of recent projects.

Edit's Undo and Redo act on the current page's ``undo_stack`` (the Model page's edits), through
one ``QUndoGroup``; Help lists the documentation and the keyboard shortcuts of the actions
actually registered (:mod:`guiapp.ui.dialogs.help_dialogs`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QUndoGroup, QUndoStack
from PySide6.QtWidgets import QApplication, QMainWindow, QMenu, QMessageBox, QStackedWidget

from guiapp.ui.dialogs.about import about_html
from guiapp.ui.dialogs.help_dialogs import show_documentation, show_shortcuts
from guiapp.ui.theme import THEMES, apply_theme, current_theme

if TYPE_CHECKING:
    from guiapp.ui.jobs.jobs_panel import JobsPanel
    from guiapp.ui.pages import Page

    _WindowBase = QMainWindow  # what mypy checks the mixin against: the window it is mixed into
else:
    _WindowBase = object

MAX_RECENT = 10


class MainMenus(_WindowBase):
    """Mixed into :class:`~guiapp.ui.main_window.MainWindow`: its menus and recent projects.

    Uses the window's ``pages``, ``jobs_panel`` and file actions (``new_project``,
    ``open_dialog``, ``open_project``, ``save``, ``save_as``, ``maybe_save``).
    """

    pages: list[Page]
    jobs_panel: JobsPanel
    stack: QStackedWidget
    new_project: Callable[[], None]
    open_dialog: Callable[[], None]
    open_project: Callable[[str], bool]
    save: Callable[[], bool]
    save_as: Callable[[], bool]
    maybe_save: Callable[[], bool]
    set_page: Callable[[int], None]

    # ------------------------------------------------------------------ menus
    def _action(
        self,
        text: str,
        slot: Callable[[], object],
        shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.action_new = self._action("&New", self.new_project, QKeySequence.StandardKey.New)
        self.action_open = self._action("&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.action_save = self._action("&Save", self.save, QKeySequence.StandardKey.Save)
        self.action_save_as = self._action("Save &As…", self.save_as, "Ctrl+Shift+S")
        self.action_quit = self._action("&Quit", self.close, "Ctrl+Q")
        self.action_quit.setMenuRole(QAction.MenuRole.QuitRole)
        self.recent_menu = QMenu("Open &Recent", self)
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addActions([self.action_new, self.action_open])
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        file_menu.addActions([self.action_save, self.action_save_as])
        file_menu.addSeparator()
        file_menu.addAction(self.action_quit)
        self._fill_recent_menu()

        edit_menu = bar.addMenu("&Edit")
        self.undo_group = QUndoGroup(self)
        for page in self.pages:
            stack = getattr(page, "undo_stack", None)
            if isinstance(stack, QUndoStack):
                self.undo_group.addStack(stack)
        self.action_undo = self.undo_group.createUndoAction(self, "&Undo")
        self.action_undo.setShortcut(QKeySequence.StandardKey.Undo)
        self.action_redo = self.undo_group.createRedoAction(self, "&Redo")
        self.action_redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit_menu.addActions([self.action_undo, self.action_redo])
        self.stack.currentChanged.connect(self._page_shown)
        self._page_shown(self.stack.currentIndex())  # the page the window opens on

        view_menu = bar.addMenu("&View")
        self.page_actions: list[QAction] = []
        for i, page in enumerate(self.pages):
            action = self._action(page.title, self._page_switcher(i), f"Ctrl+{i + 1}")
            self.page_actions.append(action)
            view_menu.addAction(action)
        view_menu.addSeparator()
        self.theme_actions: dict[str, QAction] = {}
        group = QActionGroup(self)
        group.setExclusive(True)
        for theme in THEMES:
            action = self._action(f"{theme.capitalize()} theme", self._theme_switcher(theme))
            action.setCheckable(True)
            group.addAction(action)
            view_menu.addAction(action)
            self.theme_actions[theme] = action
        app = QApplication.instance()
        if isinstance(app, QApplication):
            self.theme_actions[current_theme(app)].setChecked(True)
        view_menu.addSeparator()
        self.action_jobs = self.jobs_panel.toggleViewAction()
        self.action_jobs.setText("&Jobs panel")
        view_menu.addAction(self.action_jobs)

        help_menu = bar.addMenu("&Help")
        self.action_docs = self._action("&Documentation", lambda: show_documentation(self), "F1")
        self.action_shortcuts = self._action(
            "&Keyboard shortcuts", lambda: show_shortcuts(self), "Ctrl+/"
        )
        help_menu.addActions([self.action_docs, self.action_shortcuts])
        help_menu.addSeparator()
        self.action_about = self._action("&About guiapp", self.show_about)
        self.action_about.setMenuRole(QAction.MenuRole.AboutRole)
        help_menu.addAction(self.action_about)

    # ------------------------------------------------------------------ pages and themes
    def _page_shown(self, index: int) -> None:
        """Edit > Undo/Redo act on the shown page's edits (none on a page without)."""
        page = self.pages[index] if 0 <= index < len(self.pages) else None
        stack = getattr(page, "undo_stack", None)
        # Qt takes a null stack (no active stack: Undo and Redo disabled); PySide6's stub
        # declares the argument without None.
        active = stack if isinstance(stack, QUndoStack) else cast(QUndoStack, None)
        self.undo_group.setActiveStack(active)

    def _page_switcher(self, index: int) -> Callable[[], None]:
        return lambda: self.set_page(index)

    def _theme_switcher(self, theme: str) -> Callable[[], None]:
        return lambda: self.set_theme(theme)

    def set_theme(self, theme: str) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, theme)
        self.theme_actions[theme].setChecked(True)
        QSettings().setValue("ui/theme", theme)

    def show_about(self) -> None:
        QMessageBox.about(self, "About guiapp", about_html())

    # ------------------------------------------------------------------ recent projects
    def recent_projects(self) -> list[str]:
        value = QSettings().value("recent/projects", [])
        if isinstance(value, str):  # QSettings returns a lone string for a one-item list
            value = [value]
        return [str(v) for v in value] if isinstance(value, list) else []

    def remember_recent(self, path: Path | None) -> None:
        if path is None:
            return
        items = [p for p in self.recent_projects() if p != str(path)]
        QSettings().setValue("recent/projects", [str(path), *items][:MAX_RECENT])
        self._fill_recent_menu()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.recent_projects()
        for i, path in enumerate(recent):
            label = f"&{i + 1} {Path(path).name}" if i < 9 else Path(path).name
            action = self.recent_menu.addAction(label)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _=False, p=path: self._open_recent(p))
        if not recent:
            self.recent_menu.addAction("No recent projects").setEnabled(False)
        else:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", self._clear_recent)

    def _open_recent(self, path: str) -> None:
        if self.maybe_save():
            self.open_project(path)

    def _clear_recent(self) -> None:
        QSettings().remove("recent/projects")
        self._fill_recent_menu()
