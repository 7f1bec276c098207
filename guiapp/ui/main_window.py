"""The main window: sidebar of pages, Jobs panel, menus, project open/save and settings."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings, QSize, Qt
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMenu,
    QMessageBox,
    QStackedWidget,
    QWidget,
)

from guiapp.core.project import SUFFIX, Project, ProjectError
from guiapp.ui.dialogs.about import about_html
from guiapp.ui.jobs.jobs_panel import JobsPanel
from guiapp.ui.pages import PAGE_TYPES, Page
from guiapp.ui.theme import THEMES, apply_theme, current_theme

UNTITLED = "Untitled"
MAX_RECENT = 10
FILE_FILTER = f"guiapp projects (*{SUFFIX});;All files (*)"


class MainWindow(QMainWindow):
    """The workbench window for one open :class:`Project` at a time."""

    def __init__(self, project: Project | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("main_window")
        self.project = project if project is not None else Project.new(None, UNTITLED)
        self._modified = False

        self.sidebar = QListWidget()
        self.sidebar.setObjectName("sidebar")
        self.sidebar.setIconSize(QSize(20, 20))
        self.sidebar.setSpacing(2)
        self.stack = QStackedWidget()
        self.pages: list[Page] = []
        for page_type in PAGE_TYPES:
            page = page_type()
            self.pages.append(page)
            self.stack.addWidget(page)
            icon = self.style().standardIcon(page_type.icon)
            self.sidebar.addItem(QListWidgetItem(icon, page_type.title))
        self.sidebar.currentRowChanged.connect(self.stack.setCurrentIndex)
        for page in self.pages:
            page.project_changed.connect(self._on_project_changed)
        width = self.sidebar.sizeHintForColumn(0) + 2 * self.sidebar.frameWidth() + 24
        self.sidebar.setFixedWidth(max(width, 140))

        central = QWidget()
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.sidebar)
        row.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self.jobs_panel = JobsPanel(self)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.jobs_panel)
        for page in self.pages:
            page.job_started.connect(self.jobs_panel.add_job)
        for page in self.pages:
            if hasattr(page, "show_samples"):  # the Runs page opens samples in the Browser
                page.show_samples.connect(self.show_samples)
            if hasattr(page, "run_ended"):  # a run ended: the Runs page reads it again
                page.run_ended.connect(self._run_ended)
        self._closing_after_training = False

        self.path_label = QLabel()
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statusBar().addPermanentWidget(self.path_label, 1)

        self._build_menus()
        self.resize(1100, 720)
        self._restore_window()
        self.set_page(0)
        self.set_project(self.project)

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
        self.action_about = self._action("&About guiapp", self.show_about)
        self.action_about.setMenuRole(QAction.MenuRole.AboutRole)
        help_menu.addAction(self.action_about)

    # ------------------------------------------------------------------ pages and themes
    def _page_switcher(self, index: int) -> Callable[[], None]:
        return lambda: self.set_page(index)

    def _theme_switcher(self, theme: str) -> Callable[[], None]:
        return lambda: self.set_theme(theme)

    def set_page(self, index: int) -> None:
        self.sidebar.setCurrentRow(index)

    def page(self, title: str) -> Page:
        """The page called ``title`` ("Datasets", "Browser", ...)."""
        for page in self.pages:
            if page.title == title:
                return page
        raise KeyError(title)

    def _on_project_changed(self) -> None:
        """A page changed the project: mark it unsaved and let the other pages catch up."""
        self.set_modified(True)
        sender = self.sender()
        for page in self.pages:
            if page is not sender:
                page.project_updated()

    def _run_ended(self, _status: str, _path: str) -> None:
        for page in self.pages:
            if hasattr(page, "refresh") and hasattr(page, "show_samples"):
                page.refresh()

    def show_samples(self, rows: object, title: str, dataset: str) -> None:
        """Open dataset rows (e.g. one confusion cell's samples) in the Browser page."""
        browser = self.page("Browser")
        browser.show_indices(rows, title, dataset=dataset)  # type: ignore[attr-defined]
        self.set_page(self.pages.index(browser))

    def current_page(self) -> Page:
        page = self.stack.currentWidget()
        assert isinstance(page, Page)
        return page

    def set_theme(self, theme: str) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, theme)
        self.theme_actions[theme].setChecked(True)
        QSettings().setValue("ui/theme", theme)

    def show_about(self) -> None:
        QMessageBox.about(self, "About guiapp", about_html())

    # ------------------------------------------------------------------ project state
    def is_modified(self) -> bool:
        return self._modified

    def set_modified(self, modified: bool = True) -> None:
        """Mark the project as changed (or saved); the title shows ``*`` when changed."""
        self._modified = modified
        self._update_title()

    def _update_title(self) -> None:
        star = "*" if self._modified else ""
        self.setWindowTitle(f"{self.project.name}{star} — guiapp")

    def set_project(self, project: Project) -> None:
        """Show ``project``; a project upgraded from an older schema counts as changed."""
        self.project = project
        self._show_project()
        if project.migrated_from is not None:
            self.set_modified(True)
            self.statusBar().showMessage(
                f"Upgraded from project schema version {project.migrated_from}; "
                "saving writes the new version and keeps the old file as .bak.",
                15000,
            )

    def _show_project(self) -> None:
        for page in self.pages:
            page.set_project(self.project)
        path = self.project.path
        self.path_label.setText(str(path) if path else "Untitled project (not saved yet)")
        self.set_modified(False)

    # ------------------------------------------------------------------ file actions
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

    def new_project(self) -> None:
        if self.maybe_save():
            self.set_project(Project.new(None, UNTITLED))

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open project", self._dialog_dir(), FILE_FILTER)
        if path:
            self.open_project(path)

    def open_project(self, path: str | os.PathLike[str]) -> bool:
        """Open ``path`` (no save prompt); on error show it and keep the current project."""
        try:
            project = Project.load(path)
        except ProjectError as exc:
            QMessageBox.warning(self, "Cannot open project", str(exc))
            return False
        self.set_project(project)
        self.remember_recent(project.path)
        return True

    def save(self) -> bool:
        if self.project.path is None:
            return self.save_as()
        return self._save_to(self.project.path)

    def save_as(self) -> bool:
        start = str(self.project.path) if self.project.path else self._dialog_dir()
        path, _ = QFileDialog.getSaveFileName(self, "Save project as", start, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(SUFFIX):
            path += SUFFIX
        if self.project.name == UNTITLED:
            self.project.name = Path(path).stem
        return self._save_to(Path(path))

    def _save_to(self, path: Path) -> bool:
        try:
            saved = self.project.save(path)
        except ProjectError as exc:
            QMessageBox.warning(self, "Cannot save project", str(exc))
            return False
        self._show_project()
        self.remember_recent(saved)
        self.statusBar().showMessage(f"Saved {saved}", 5000)
        return True

    def _dialog_dir(self) -> str:
        recent = self.recent_projects()
        return str(Path(recent[0]).parent) if recent else str(Path.home())

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

    # ------------------------------------------------------------------ window state
    def _restore_window(self) -> None:
        settings = QSettings()
        geometry = settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = settings.value("window/state")
        self._state_restored = state is not None and self.restoreState(state)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._state_restored:  # first start: a short Jobs panel, pages get the room
            self._state_restored = True
            self.resizeDocks([self.jobs_panel], [140], Qt.Orientation.Vertical)

    def save_window_state(self) -> None:
        settings = QSettings()
        settings.setValue("window/geometry", self.saveGeometry())
        settings.setValue("window/state", self.saveState())

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
