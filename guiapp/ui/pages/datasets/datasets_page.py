"""The Datasets page: the project's datasets, and the jobs that make, import and check them.

Dataset headers are read with ``Dataset(path).info()`` on a worker thread; generation,
import and check run as :class:`CliJob` child processes listed in the Jobs panel. Its jobs
(making, resuming and checking a dataset) are in :mod:`.dataset_jobs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
)

from guiapp.core.project import DatasetRef, Project
from guiapp.core.store.dataset import read_info
from guiapp.core.units import human_bytes
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from guiapp.ui.dialogs.import_dialog import ImportDialog
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.pages.base import SP, Page
from guiapp.ui.pages.datasets.dataset_jobs import DatasetJobs, saved_checks
from guiapp.ui.widgets.tables import select_table_rows
from guiapp.ui.widgets.undo import ListHistory

DATASET_FILTER = "guiapp datasets (*.h5);;All files (*)"
JobDialog = TypeVar("JobDialog", GenerateDialog, ImportDialog)


def classes_text(info: dict[str, Any]) -> str:
    classes = info.get("classes", [])
    parts = ", ".join(f"{c['name']} {c['count']:,}" for c in classes)
    return f"{len(classes)}: {parts}"


class DatasetsPage(DatasetJobs, Page):
    title = "Datasets"
    blurb = (
        "Generate or import labelled arrays once into a fast on-disk HDF5 store, "
        "and see which datasets this project uses."
    )
    icon = SP.SP_DirIcon
    COLUMNS = ("Name", "Rows", "Sample", "Classes", "Size on disk", "Status", "Path")
    NAME, ROWS, SAMPLE, CLASSES, SIZE, STATUS, PATH = range(7)

    def build(self) -> None:
        buttons = QHBoxLayout()
        self.add_button = QPushButton("Add existing…")
        self.generate_button = QPushButton("Generate…")
        self.import_button = QPushButton("Import…")
        self.check_button = QPushButton("Check")
        self.resume_button = QPushButton("Resume")
        self.locate_button = QPushButton("Locate…")
        self.remove_button = QPushButton("Remove")
        self.add_button.setToolTip("Add a dataset file (NAME.h5) that already exists")
        self.generate_button.setToolTip("Make a new dataset with a built-in or your own generator")
        self.import_button.setToolTip("Bring .npy/.npz/CSV/TSV/JSON-lines data into a new dataset")
        self.check_button.setToolTip("Validate the selected dataset (guiapp check)")
        self.resume_button.setToolTip("Finish the selected unfinished dataset where it stopped")
        self.locate_button.setToolTip("Point the selected dataset at the file's new place")
        self.remove_button.setToolTip("Remove the selected dataset from the project (files stay)")
        for button, slot in (
            (self.add_button, self.add_existing),
            (self.generate_button, self.open_generate_dialog),
            (self.import_button, self.open_import_dialog),
            (self.check_button, self.check_selected),
            (self.resume_button, self.resume_selected),
            (self.locate_button, self.locate_selected),
            (self.remove_button, self.remove_selected),
        ):
            button.clicked.connect(slot)
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        for col in range(len(self.COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(self.CLASSES, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(self.PATH, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(self.CLASSES, 260)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.empty_label = QLabel("This project has no datasets yet.")
        self.empty_label.setEnabled(False)
        self.body.addLayout(buttons)
        self.body.addWidget(self.table, 1)
        self.body.addWidget(self.empty_label)
        self.info: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self.checks: dict[str, str] = {}
        self.loader = BackgroundCalls(threads=1, parent=self, done=self._info_loaded)
        self.loader.failed.connect(self._info_failed)
        self._project: Project | None = None
        self._filling = False
        self.import_values: dict[str, Any] = {}  # the last import's form, until one succeeds
        self.generate_values: dict[str, Any] = {}  # the last Generate dialog's form
        self.failures = {}  # the last failed import and generation (DatasetJobs)
        # Edit > Undo/Redo: adding, removing, renaming and locating the project's datasets
        self.list_history = ListHistory(self, lambda: self.project.datasets, self._changed)
        self.undo_stack = self.list_history.stack
        self.table.itemChanged.connect(self._item_edited)
        self._update_buttons()

    # ------------------------------------------------------------------ project
    def set_project(self, project: Project) -> None:
        self._project = project
        self.info.clear()
        self.errors.clear()
        self.checks.clear()
        self.checks.update(saved_checks(project))
        self.refresh()
        self.list_history.reset()

    def project_updated(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Redraw the table and read the headers not read yet (on the worker thread)."""
        for ref in self.project.datasets:
            key = str(ref.path)
            if key not in self.info and key not in self.errors and ref.path.exists():
                self.errors[key] = ""  # "" = reading
                self.loader.submit(key, read_info, key)
        self._fill_table()

    def _changed(self) -> None:
        self.project_changed.emit()
        self.refresh()

    def add_dataset(self, path: Path, name: str | None = None) -> None:
        """Add ``path`` to the project (once) and show it."""
        path = Path(path).absolute()
        if any(ref.path == path for ref in self.project.datasets):
            self.forget(path)
        else:
            self.project.datasets.append(DatasetRef(name or path.stem, path))
            self.list_history.record(f"Add dataset {name or path.stem}")
        self._changed()

    def forget(self, path: Path) -> None:
        """Drop what is known about ``path`` so that the next refresh reads it again."""
        for store in (self.info, self.errors, self.checks):
            store.pop(str(path), None)

    # ------------------------------------------------------------------ table
    def _fill_table(self) -> None:
        self._filling = True
        try:
            self._fill_rows()
        finally:
            self._filling = False

    def _fill_rows(self) -> None:
        selected = self.selected_row()
        datasets = self.project.datasets
        self.table.setRowCount(len(datasets))
        for row, ref in enumerate(datasets):
            key = str(ref.path)
            info, error = self.info.get(key), self.errors.get(key)
            warn = False
            if not ref.path.exists():
                cells = ["", "", "", "", "missing: use Locate…"]
                warn = True
            elif info is not None:
                shape = "x".join(map(str, info["sample_shape"])) + f" {info['dtype']}"
                status = self.checks.get(key, "not checked")
                if not info.get("complete", True):
                    status = "unfinished (resume it) · " + status
                warn = "problem" in status or "failed" in status
                cells = [
                    f"{info['rows']:,}",
                    shape,
                    classes_text(info),
                    human_bytes(info["size_on_disk"]),
                    status,
                ]
            elif error:
                cells = ["", "", "", "", f"unreadable: {error}"]
                warn = True
            else:
                cells = ["…", "", "", "", "reading…"]
            for col, text in enumerate([ref.name, *cells, key]):
                item = QTableWidgetItem(text)
                item.setToolTip(text + (" (double-click to rename)" if col == self.NAME else ""))
                if col != self.NAME:  # only the name is edited in place
                    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                if col in (self.ROWS, self.SIZE):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if col == self.STATUS and warn:
                    item.setForeground(self._warning_color())
                self.table.setItem(row, col, item)
        self.empty_label.setVisible(not datasets)
        if 0 <= selected < len(datasets):
            select_table_rows(self.table, [selected])
        self._update_buttons()

    def selected_row(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def selected_ref(self) -> DatasetRef | None:
        row = self.selected_row()
        if self._project is None or not 0 <= row < len(self.project.datasets):
            return None
        return self.project.datasets[row]

    def _update_buttons(self) -> None:
        ref = self.selected_ref()
        self.check_button.setEnabled(ref is not None and ref.path.exists())
        self.resume_button.setEnabled(ref is not None and self._resumable(ref) is not None)
        self.locate_button.setEnabled(ref is not None)
        self.remove_button.setEnabled(ref is not None)

    def _info_loaded(self, key: object, info: object) -> None:
        self.errors.pop(str(key), None)
        if isinstance(info, dict):
            self.info[str(key)] = info
        self._fill_table()

    def _info_failed(self, key: object, message: str) -> None:
        self.errors[str(key)] = message or "cannot be read"
        self._fill_table()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._project is not None:
            self._fill_table()  # recolour for the new theme

    def _warning_color(self) -> QColor:
        """Red that reads on the current background, light or dark."""
        dark = self.palette().color(QPalette.ColorRole.Base).lightness() < 128
        return QColor(255, 110, 110) if dark else QColor(190, 30, 30)

    # ------------------------------------------------------------------ actions
    def add_existing(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Add a dataset", str(self.project.folder), DATASET_FILTER
        )
        if path:
            self.add_dataset(Path(path))

    def locate_selected(self) -> None:
        ref = self.selected_ref()
        if ref is None:
            return
        start = ref.path.parent if ref.path.parent.exists() else self.project.folder
        path, _ = QFileDialog.getOpenFileName(
            self, f"Locate {ref.path.name}", str(start), DATASET_FILTER
        )
        if path:
            self.forget(ref.path)
            ref.path = Path(path).absolute()
            self.list_history.record(f"Locate dataset {ref.name}")
            self._changed()

    def remove_selected(self) -> None:
        ref = self.selected_ref()
        if ref is not None:
            self.project.datasets.remove(ref)
            self.list_history.record(f"Remove dataset {ref.name}")
            self._changed()

    def rename(self, row: int, name: str) -> None:
        """Call the dataset in ``row`` ``name`` (its Name cell edited; its file stays)."""
        name = name.strip()
        if not 0 <= row < len(self.project.datasets):
            return
        ref = self.project.datasets[row]
        if name and name != ref.name:
            old, ref.name = ref.name, name
            self.list_history.record(f"Rename dataset {old} to {name}")
            self.project_changed.emit()
        self._fill_table()

    def _item_edited(self, item: QTableWidgetItem) -> None:
        if item.column() == self.NAME and not self._filling:
            self.rename(item.row(), item.text())

    def _keep_import_values(self, job: CliJob, dialog: ImportDialog) -> None:
        self.import_values = dialog.values()

        def forget_values(ok: bool, _message: str) -> None:
            if ok:
                self.import_values.clear()

        job.finished.connect(forget_values)

    def _keep_generate_values(self, job: CliJob, dialog: GenerateDialog) -> None:
        self.generate_values = dialog.values()
        # once written, its output is taken: the next dialog names a free one
        job.finished.connect(lambda ok, _msg: ok and self.generate_values.pop("output", None))

    def open_generate_dialog(self) -> GenerateDialog:
        """The Generate dialog, holding what the user entered the last time."""
        dialog = GenerateDialog(self.project.folder / "data", self)
        dialog.job_ready.connect(lambda job, _out: self._keep_generate_values(job, dialog))
        return self._show_job_dialog(dialog, "generate", self.generate_values)

    def open_import_dialog(self) -> ImportDialog:
        """The Import dialog; after a failed import it holds what the user had entered,
        says why it failed and puts the focus on the control of the option it names."""
        dialog = ImportDialog(self.project.folder / "data", self)
        dialog.job_ready.connect(lambda job, _out: self._keep_import_values(job, dialog))
        return self._show_job_dialog(dialog, "import", self.import_values)

    def _show_job_dialog(
        self, dialog: JobDialog, command: str, values: dict[str, Any]
    ) -> JobDialog:
        """Show ``dialog`` (modal) filled with ``values`` (the form the user left, if any),
        its job started here; the last ``command`` job failed: why, at its option's control."""
        if values:
            dialog.set_values(values)
        dialog.job_ready.connect(self.start_dataset_job)
        dialog.setModal(True)
        dialog.show()
        if command in self.failures:
            dialog.show_failure(self.failures[command])
        return dialog
