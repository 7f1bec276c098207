"""The Datasets page: the project's datasets, and the jobs that make, import and check them.

Dataset headers are read with ``Dataset(path).info()`` on a worker thread; generation,
import and check run as :class:`CliJob` child processes listed in the Jobs panel. A
dataset joins the project as soon as its job wrote anything, so a stopped or half-made
one is listed ("unfinished") with a Resume button that reruns its recorded command
(``project.recipes``, kind ``dataset_job``) with ``--resume``. A check's result is kept in
``project.ui["checks"]`` while the dataset's index file is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from guiapp.core.project import DatasetRef, Project
from guiapp.core.store.dataset import read_info
from guiapp.core.units import human_bytes
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from guiapp.ui.dialogs.import_dialog import ImportDialog
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.pages.base import SP, Page

DATASET_FILTER = "guiapp datasets (*.h5);;All files (*)"


def classes_text(info: dict[str, Any]) -> str:
    classes = info.get("classes", [])
    parts = ", ".join(f"{c['name']} {c['count']:,}" for c in classes)
    return f"{len(classes)}: {parts}"


class DatasetsPage(Page):
    title = "Datasets"
    blurb = (
        "Generate or import labelled arrays once into a fast on-disk HDF5 store, "
        "and see which datasets this project uses."
    )
    icon = SP.SP_DirIcon
    COLUMNS = ("Name", "Rows", "Sample", "Classes", "Size on disk", "Status", "Path")
    NAME, ROWS, SAMPLE, CLASSES, SIZE, STATUS, PATH = range(7)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
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
        self.loader = BackgroundCalls(threads=1, parent=self)
        self.loader.done.connect(self._info_loaded)
        self.loader.failed.connect(self._info_failed)
        self._project: Project | None = None
        self._update_buttons()

    # ------------------------------------------------------------------ project
    def set_project(self, project: Project) -> None:
        self._project = project
        self.info.clear()
        self.errors.clear()
        self.checks.clear()
        saved = project.ui.get("checks")
        for ref in project.datasets if isinstance(saved, dict) else []:
            entry = saved.get(project.relativize(ref.path))
            if isinstance(entry, dict) and entry.get("mtime") == _mtime(ref.path):
                self.checks[str(ref.path)] = str(entry.get("status", ""))
        self.refresh()

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
        self._changed()

    def forget(self, path: Path) -> None:
        """Drop what is known about ``path`` so that the next refresh reads it again."""
        for store in (self.info, self.errors, self.checks):
            store.pop(str(path), None)

    # ------------------------------------------------------------------ table
    def _fill_table(self) -> None:
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
                item.setToolTip(text)
                if col in (self.ROWS, self.SIZE):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if col == self.STATUS and warn:
                    item.setForeground(self._warning_color())
                self.table.setItem(row, col, item)
        self.empty_label.setVisible(not datasets)
        if 0 <= selected < len(datasets):
            self.table.selectRow(selected)
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
            self._changed()

    def remove_selected(self) -> None:
        ref = self.selected_ref()
        if ref is not None:
            self.project.datasets.remove(ref)
            self._changed()

    def open_generate_dialog(self) -> GenerateDialog:
        dialog = GenerateDialog(self.project.folder / "data", self)
        dialog.job_ready.connect(self.start_dataset_job)
        dialog.setModal(True)
        dialog.show()
        return dialog

    def open_import_dialog(self) -> ImportDialog:
        dialog = ImportDialog(self.project.folder / "data", self)
        dialog.job_ready.connect(self.start_dataset_job)
        dialog.setModal(True)
        dialog.show()
        return dialog

    def start_dataset_job(self, job: CliJob, out: Path) -> None:
        """Run a job that writes ``out``; when it ends with anything written (finished,
        stopped, failed midway), the dataset joins the project; its command is recorded
        so that an unfinished one can be resumed, after a reopen too."""
        job.working_dir = str(self.project.folder)
        job.finished.connect(lambda ok, _msg, out=out: self._dataset_job_done(ok, Path(out)))
        args = [a for a in job.args if a not in ("--resume", "--overwrite")]
        recipe = {"kind": "dataset_job", "path": str(Path(out).absolute()), "name": job.name}
        recipe.update(command=job.command, args=args)
        self.project.recipes[:] = [
            r for r in self.project.recipes if r.get("path") != recipe["path"]
        ] + [recipe]
        self.job_started.emit(job)
        job.start()

    def _dataset_job_done(self, ok: bool, out: Path) -> None:
        if ok or out.exists():
            self.add_dataset(out)

    def _resumable(self, ref: DatasetRef) -> dict[str, Any] | None:
        """The recorded job of an unfinished dataset (None when complete or unknown)."""
        info = self.info.get(str(ref.path))
        if info is None or info.get("complete", True):
            return None
        return next(
            (
                r
                for r in self.project.recipes
                if r.get("kind") == "dataset_job"
                and r.get("path") == str(ref.path)
                and isinstance(r.get("args"), list)
            ),
            None,
        )

    def resume_selected(self) -> CliJob | None:
        """Resume the selected unfinished dataset's job where it stopped."""
        ref = self.selected_ref()
        recipe = self._resumable(ref) if ref is not None else None
        if ref is None or recipe is None:
            return None
        job = CliJob(
            str(recipe.get("name") or f"resume {ref.name}"),
            str(recipe["command"]),
            [*map(str, recipe["args"]), "--resume"],
            resumable=True,
        )
        self.forget(ref.path)
        self.start_dataset_job(job, ref.path)
        return job

    def check_selected(self) -> CliJob | None:
        ref = self.selected_ref()
        if ref is None:
            return None
        key = str(ref.path)
        job = CliJob(f"check {ref.name}", "check", [key, "--json"], events=False)
        job.finished.connect(lambda ok, msg, job=job, key=key: self._check_done(job, key))
        self.checks[key] = "checking…"
        self._fill_table()
        self.job_started.emit(job)
        job.start()
        return job

    def _check_done(self, job: CliJob, key: str) -> None:
        try:
            report = json.loads(job.output)
        except json.JSONDecodeError:
            report = None
        if isinstance(report, dict):
            problems = report.get("problems") or []
            self.checks[key] = "checked OK" if report.get("ok") else f"{len(problems)} problem(s)"
            self._keep_check(key)
            if problems:
                QMessageBox.warning(self, "Dataset check", "\n".join(map(str, problems[:20])))
        else:
            self.checks[key] = f"check failed: {job.message}"
        self._fill_table()

    def _keep_check(self, key: str) -> None:
        """Keep the check's result in the project while the index file stays as it is."""
        checks = self.project.ui.setdefault("checks", {})
        checks[self.project.relativize(key)] = {
            "status": self.checks[key],
            "mtime": _mtime(Path(key)),
        }
        self.project_changed.emit()


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
