"""The main window: sidebar of pages, Jobs panel, project open/save and settings.

Its menus and recent projects are in :mod:`guiapp.ui.main_menus`; the questions asked
before the project or the window goes are in :mod:`guiapp.ui.close_guard`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from PySide6.QtCore import QSettings, QSize, Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QWidget,
)

from guiapp.core.project import SUFFIX, Project, ProjectError, RunEntry
from guiapp.ui.background import hold_until_painted
from guiapp.ui.close_guard import CloseGuard
from guiapp.ui.jobs.cli_job import written_dataset
from guiapp.ui.jobs.jobs_panel import JobsPanel
from guiapp.ui.main_menus import MainMenus
from guiapp.ui.pages import PAGE_TYPES, BrowserPage, DatasetsPage, Page, RunsPage
from guiapp.ui.widgets.form_state import form_values, set_form_values

if TYPE_CHECKING:
    from guiapp.core.predict import PredictionFilter

P = TypeVar("P", bound=Page)
UNTITLED = "Untitled"
FILE_FILTER = f"guiapp projects (*{SUFFIX});;All files (*)"


class MainWindow(MainMenus, CloseGuard, QMainWindow):
    """The workbench window for one open :class:`Project` at a time."""

    demo: object = None  # the demo's first-start builder (:mod:`guiapp.ui.demo`), if any

    def __init__(self, project: Project | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("main_window")
        self.project = project if project is not None else Project.new(None, UNTITLED)
        self._modified = False
        hold_until_painted(self)  # the pages' first reads start after the first paint

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
        self.jobs_panel.job_ended.connect(self._job_ended)
        for page in self.pages:  # the requests every page may make (``Page``'s signals)
            page.show_samples.connect(self.show_samples)
            page.run_ended.connect(self._run_ended)
            page.open_run.connect(self.open_run)
        self._shown_project: Project | None = None

        self.path_label = QLabel()
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statusBar().addPermanentWidget(self.path_label)  # messages get the room left of it

        self._build_menus()
        self.resize(1100, 720)
        self._restore_window()
        self.set_page(0)
        # Each form's own defaults: a project that kept no values starts from them, never
        # from the previous project's (issue 34.2).
        self._form_defaults = {key: form_values(form) for key, form in self._forms().items()}
        self.set_project(self.project)

    # ------------------------------------------------------------------ pages and themes
    def set_page(self, page: int | type[Page] | Page) -> None:
        """Show a page: by its type (``window.set_page(RunsPage)``), itself, or its row."""
        if isinstance(page, int):
            self.sidebar.setCurrentRow(page)
        else:
            shown = page if isinstance(page, Page) else self.page_of(page)
            self.sidebar.setCurrentRow(self.pages.index(shown))

    def page_of(self, page_type: type[P]) -> P:
        """The window's page of type ``page_type`` (``window.page_of(BrowserPage)``)."""
        for page in self.pages:
            if isinstance(page, page_type):
                return page
        raise KeyError(page_type.__name__)

    def page(self, title: str) -> Page:
        """The page called ``title`` ("Datasets", "Browser", ...), as the user reads it."""
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

    def _job_ended(self, job: object) -> None:
        """A job that writes a dataset ended (resumed from the Jobs panel too): every page
        that shows the dataset reads it again (issue 34.3)."""
        path = written_dataset(job)
        if path is None or not path.exists():
            return
        if any(ref.path == path for ref in self.project.datasets):
            self.page_of(DatasetsPage).add_dataset(path)  # (known: read again)
        self.page_of(BrowserPage).reload_if_open(str(path))

    def _run_ended(self, _status: str, _path: str) -> None:
        self.page_of(RunsPage).refresh()

    def open_run(self, path: str, name: str) -> None:
        """Show the run folder ``path`` (an experiment's trial) in the Runs page; a trial
        is listed there as a run of its own (marked ``trial_of`` its experiment)."""
        if not any(r.path == path for r in self.project.runs):
            trial_of = str(Path(path).parent)
            entry = RunEntry(path=path, name=name, status="finished", trial_of=trial_of)
            self.project.runs.append(entry)
            self._on_project_changed()
        runs = self.page_of(RunsPage)
        runs.select_run(path)
        self.set_page(runs)

    def show_samples(
        self,
        rows: object,
        title: str,
        dataset: str,
        predictions: str = "",
        flt: PredictionFilter | None = None,
    ) -> None:
        """Open dataset rows (e.g. one confusion cell's samples) in the Browser page, with
        the predictions file whose rows they are on their thumbnails; ``flt``: the
        prediction filter they are, which the Browser's controls then show."""
        browser = self.page_of(BrowserPage)
        browser.show_indices(rows, title, dataset=dataset, predictions=predictions, flt=flt)
        self.set_page(browser)

    def current_page(self) -> Page:
        page = self.stack.currentWidget()
        assert isinstance(page, Page)
        return page

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
        """Show ``project``; a project upgraded from an older schema counts as changed.

        What the project kept of the window (the Jobs panel's history, the forms'
        values) is shown again; running jobs of the previous project stay listed.
        """
        self.project = project
        fresh = project is not self._shown_project
        self._shown_project = project
        if fresh:
            self.jobs_panel.clear_finished()
            self.jobs_panel.restore(project.ui.get("jobs"))
        self._show_project()
        if fresh:
            self._restore_forms()
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

    def _forms(self) -> dict[str, object]:
        """The forms whose values the project keeps: each page's ``form`` (and its parts)."""
        out: dict[str, object] = {}
        for page in self.pages:
            form = getattr(page, "form", None)
            if form is not None:
                out[page.title] = form
                if getattr(form, "experiment", None) is not None:
                    out[f"{page.title}.experiment"] = form.experiment
        return out

    def _restore_forms(self) -> None:
        saved = self.project.ui.get("forms")
        for key, form in self._forms().items():
            set_form_values(form, self._form_defaults.get(key))
            if isinstance(saved, dict):
                set_form_values(form, saved.get(key))

    def remember_ui_state(self) -> None:
        """Put what the window should show again (jobs, forms) into the project's ``ui``."""
        ui = self.project.ui
        ui["jobs"] = self.jobs_panel.history()
        ui["forms"] = {key: form_values(form) for key, form in self._forms().items()}

    # ------------------------------------------------------------------ file actions
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
        # in the project's own folder (an untitled one's: where its relative paths point)
        start = str(self.project.path) if self.project.path else str(self.project.folder)
        path, _ = QFileDialog.getSaveFileName(self, "Save project as", start, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(SUFFIX):
            path += SUFFIX
        if self.project.name == UNTITLED:
            self.project.name = Path(path).stem
        return self._save_to(Path(path))

    def _save_to(self, path: Path) -> bool:
        self.remember_ui_state()
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
