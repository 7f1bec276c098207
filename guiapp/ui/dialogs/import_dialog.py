"""The Import dialog: format, source, field mapping, length/padding, error policy, preview.

The preview parses the first rows (as many as asked) with the importer's own readers
(``core/importers/preview.py``); Start builds the form's :class:`ImportRequest`, saves it
beside the output and hands the :class:`CliJob` that runs it (``guiapp import --request
FILE``) to the Datasets page. The output follows the source's name until the user types
one. When the job ends having skipped bad rows, a message says how many of how
many, and the first reasons.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.events import Failure
from guiapp.core.importers.preview import TEXT_FORMATS, PreviewRow, guess_format, preview
from guiapp.core.importers.sources import FORMATS
from guiapp.core.requests import ImportRequest, controls
from guiapp.core.store.format import SAMPLE_DTYPES
from guiapp.ui.dialogs.request_dialog import RequestDialog
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.jobs.request_job import request_job
from guiapp.ui.widgets.failure_controls import clear_mark, point_at
from guiapp.ui.widgets.form_fields import FileField
from guiapp.ui.widgets.form_state import form_values, set_form_values
from guiapp.ui.widgets.layouts import PROBLEM_COLOR, STRETCH, row_layout
from guiapp.ui.widgets.outputs import (
    check_dataset_output,
    resolve_output,
    show_status,
)

AUTO = "auto"
PREVIEW_ROWS = 200
SHOWN_REASONS = 5


def skipped_text(summary: dict[str, Any]) -> str | None:
    """What an import with ``--on-error skip`` left out, from its ``finished`` event."""
    skipped = int(summary.get("skipped") or 0)
    if not skipped:
        return None
    read = int(summary.get("rows_read") or 0)
    total = max(read, skipped + int(summary.get("rows") or 0))
    reasons = [str(r) for r in summary.get("row_errors") or []][:SHOWN_REASONS]
    text = (
        f"The import skipped {skipped:,} of {total:,} rows ({skipped / max(total, 1):.0%}) "
        f"and kept {int(summary.get('rows') or 0):,} in {summary.get('output', 'the dataset')}."
    )
    if reasons:
        text += "\nFirst reasons:\n" + "\n".join(f"  {r}" for r in reasons)
    return text


class ImportDialog(RequestDialog):
    """Builds an :class:`ImportRequest` (:meth:`request`); ``job_ready(job, out)`` when the
    user starts it: the job runs the request, saved beside the output."""

    job_ready = Signal(object, object)
    PREVIEW_COLUMNS = ("Line", "Label", "Data", "Length", "Problem", "Group and kept fields")
    #: The control of each :class:`ImportRequest` field the form sets (the rest keep
    #: their defaults).
    FIELDS: ClassVar[dict[str, str]] = {
        "src": "source",
        "out": "output",
        "format": "format",
        "label_field": "label_field",
        "data_field": "data_field",
        "delimiter": "delimiter",
        "group_field": "group_field",
        "keep_fields": "keep_fields",
        "length": "length",
        "pad": "pad",
        "truncate": "truncate",
        "dtype": "dtype",
        "class_names": "class_names",
        "on_error": "on_error",
        "seed": "seed",
        "overwrite": "overwrite",
    }
    #: The control that sets each ``guiapp import`` option (from :attr:`FIELDS`; the
    #: importers name the output ``--out``): a failed import's option (its ``failed``
    #: event's) is marked and focused there (:meth:`show_failure`).
    CONTROLS: ClassVar[dict[str, str]] = {**controls(ImportRequest, FIELDS), "--out": "output"}

    def __init__(self, data_folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import a dataset")
        self.data_folder = Path(data_folder)
        self.format = QComboBox()
        self.format.addItems(FORMATS)
        self.format.setCurrentText("jsonl")
        self.source = FileField(
            "Import source", "Data (*.jsonl *.json *.csv *.tsv *.npy *.npz *.gz)"
        )
        self.output = FileField("Dataset file", "guiapp datasets (*.h5)", save=True)
        self._auto_output = ""  # the output the source's name gave (replaced while unedited)
        self.label_field = QLineEdit("label")
        self.data_field = QLineEdit("data")
        self.delimiter = QLineEdit()
        self.delimiter.setPlaceholderText("default: , for csv, tab for tsv")
        self.group_field = QLineEdit()
        self.group_field.setPlaceholderText("e.g. accession (rows of a group stay together)")
        self.group_field.setToolTip(
            "Each row's group: its lineage (the organism, the patient, the source sample). "
            "Rows of one group never straddle train and validation. npz: an array; a folder "
            "of .npy: file or folder"
        )
        self.keep_fields = QLineEdit()
        self.keep_fields.setPlaceholderText("e.g. _id,name (kept with every row)")
        self.keep_fields.setToolTip(
            "Fields kept with each row, so predictions join back to their source documents"
        )
        self.length = QSpinBox()
        self.length.setRange(0, 10_000_000)
        self.length.setSpecialValueText("keep as is")
        self.pad = QComboBox()
        self.pad.addItems(["post", "pre"])
        self.truncate = QComboBox()
        self.truncate.addItems(["pre", "post"])
        self.dtype = QComboBox()
        self.dtype.addItems([AUTO, *SAMPLE_DTYPES])
        self.class_names = QLineEdit()
        self.class_names.setPlaceholderText("optional: comma-separated, in class-index order")
        self.on_error = QComboBox()
        self.on_error.addItems(["abort", "skip"])
        self.on_error.setToolTip("abort: stop at the first bad row (file:line); skip: leave it out")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.overwrite = QCheckBox("Replace an existing dataset at this path")
        self.skipped_message = ""

        source_form = QFormLayout()
        source_form.addRow("Format", self.format)
        source_form.addRow("Source", self.source)
        source_form.addRow("Output", self.output)
        fields = QGroupBox("Fields and samples")
        grid = QFormLayout(fields)
        grid.addRow("Label field", self.label_field)
        grid.addRow("Data field", self.data_field)
        grid.addRow("Delimiter", self.delimiter)
        grid.addRow("Group field", self.group_field)
        grid.addRow("Keep fields", self.keep_fields)
        pad_row = QHBoxLayout()
        pad_row.addWidget(self.length, 1)
        pad_row.addWidget(QLabel("pad"))
        pad_row.addWidget(self.pad)
        pad_row.addWidget(QLabel("truncate"))
        pad_row.addWidget(self.truncate)
        grid.addRow("Length", pad_row)
        grid.addRow("Dtype", self.dtype)
        grid.addRow("Class names", self.class_names)
        grid.addRow("On a bad row", self.on_error)
        grid.addRow("Shuffle seed", self.seed)
        grid.addRow("", self.overwrite)
        self.fields_form = grid

        self.preview_table = QTableWidget(0, len(self.PREVIEW_COLUMNS))
        self.preview_table.setHorizontalHeaderLabels(self.PREVIEW_COLUMNS)
        self.preview_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.preview_table.verticalHeader().setVisible(False)
        self.preview_table.setWordWrap(False)
        header = self.preview_table.horizontalHeader()
        for col in range(len(self.PREVIEW_COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.preview_label = QLabel("Choose a source to see its first rows.")
        self.preview_label.setWordWrap(True)
        self.preview_rows = QSpinBox()
        self.preview_rows.setRange(10, 5000)
        self.preview_rows.setValue(PREVIEW_ROWS)
        self.preview_rows.setSingleStep(100)
        self.preview_rows.setKeyboardTracking(False)
        self.preview_rows.setToolTip("How many of the first rows to parse and show")
        preview_box = QGroupBox("Preview (first rows, parsed as the import will parse them)")
        preview_layout = QVBoxLayout(preview_box)
        rows_row = QHBoxLayout()
        rows_row.addWidget(self.preview_label, 1)
        rows_row.addWidget(QLabel("rows"))
        rows_row.addWidget(self.preview_rows)
        preview_layout.addLayout(rows_row)
        preview_layout.addWidget(self.preview_table, 1)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.start_button = QPushButton("Start import")
        self.start_button.setDefault(True)
        cancel = QPushButton("Cancel")
        self.start_button.clicked.connect(self.start)
        cancel.clicked.connect(self.reject)
        buttons = row_layout(STRETCH, self.start_button, cancel)

        columns = QHBoxLayout()
        left = QVBoxLayout()
        left.addLayout(source_form)
        left.addWidget(fields)
        left.addStretch(1)
        columns.addLayout(left, 2)
        columns.addWidget(preview_box, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(columns, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)

        self.source.changed.connect(self._source_changed)
        self.format.currentTextChanged.connect(self.update_preview)
        for edit in (
            self.label_field, self.data_field, self.delimiter, self.group_field,
            self.keep_fields,
        ):  # fmt: skip
            edit.textChanged.connect(self.update_preview)
        self.dtype.currentTextChanged.connect(self.update_preview)
        self.preview_rows.valueChanged.connect(self.update_preview)
        self.on_error.currentTextChanged.connect(self.update_preview)
        # the import's own rules: Length with pad/truncate and the class names change rows
        self.length.valueChanged.connect(self.update_preview)
        self.pad.currentTextChanged.connect(self.update_preview)
        self.truncate.currentTextChanged.connect(self.update_preview)
        self.class_names.textChanged.connect(self.update_preview)
        self.resize(1000, 560)

    # ------------------------------------------------------------------ preview
    def _source_changed(self, text: str) -> None:
        path = Path(text.strip())
        fmt = guess_format(path) if text.strip() and path.exists() else None
        if fmt is not None and fmt != self.format.currentText():
            self.format.setCurrentText(fmt)  # updates the preview
        else:
            self.update_preview()
        stem = path.name.split(".")[0] if text.strip() else ""
        if stem and self.output.path() in ("", self._auto_output):
            self._auto_output = str(self.data_folder / f"{stem}.h5")
            self.output.set_path(self._auto_output)

    def update_preview(self) -> list[PreviewRow]:
        """Parse the first rows of the source and show them (a few lines: fast enough here)."""
        from guiapp.core.errors import UserError

        fmt, src = self.format.currentText(), self.source.path()
        text_format = fmt in TEXT_FORMATS
        for edit in (self.label_field, self.data_field, self.delimiter):
            edit.setEnabled(text_format)
        self.preview_table.setRowCount(0)
        if not src:
            self.preview_label.setText("Choose a source to see its first rows.")
            return []
        dtype = self.dtype.currentText()
        fields: dict[str, object] = {}
        if text_format:
            fields = {
                "label_field": self.label_field.text().strip() or "label",
                "data_field": self.data_field.text().strip() or "data",
                "delimiter": self.delimiter.text() or None,
                "dtype": "uint16" if dtype == AUTO else dtype,
                "group_field": self.group_field.text().strip() or None,
                "keep_fields": self._keep_fields(),
                "length": self.length.value() or None,
                "pad": self.pad.currentText(),
                "truncate": self.truncate.currentText(),
                "class_names": self._class_names(),
            }
        try:
            rows = preview(fmt, Path(src), limit=self.preview_rows.value(), **fields)
        except (UserError, OSError, ValueError) as exc:
            self.preview_label.setText(f"Cannot preview: {exc}")
            return []
        self.preview_table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            length = "" if row.length is None else str(row.length)
            length += f" ({row.fitted})" if row.fitted else ""
            cells = (row.where, row.label, row.data, length, row.problem, row.fields)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if row.problem:  # a row the import refuses or skips stands out
                    item.setForeground(QColor(PROBLEM_COLOR))
                self.preview_table.setItem(r, c, item)
        bad = [row for row in rows if row.problem and row.where]
        fatal = next((row.problem for row in rows if not row.where), "")
        text = f"The first {sum(1 for row in rows if row.where):,} row(s)"
        if bad:
            policy = (
                "the import leaves them out (skip) and says how many"
                if self.on_error.currentText() == "skip"
                else f"the import stops at the first, {bad[0].where} (abort)"
            )
            text += f": {len(bad):,} with a problem; {policy}."
        else:
            text += ", all parsed."
        fitted = sum(1 for row in rows if row.fitted)
        if fitted:
            text += f" {fitted:,} padded or truncated to Length."
        if fatal:
            text += f" {fatal[0].upper()}{fatal[1:]}."
        self.preview_label.setText(text)
        return rows

    # ------------------------------------------------------------------ values kept
    def values(self) -> dict[str, Any]:
        """What the user entered (JSON): :meth:`set_values` puts it back in a new dialog."""
        out = form_values(self)
        out.update(source=self.source.path(), output=self.output.path())
        out["auto_output"] = self._auto_output
        return out

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the form again from :meth:`values` (the source first: it guesses the format
        and the output, which the kept ones then replace)."""
        self.source.set_path(str(values.get("source", "")))
        set_form_values(self, values)
        self.output.set_path(str(values.get("output", "")))
        self._auto_output = str(values.get("auto_output", ""))
        self.update_preview()

    # ------------------------------------------------------------------ start
    def request(self) -> ImportRequest:
        """The form's request (ValueError: what to fix)."""
        src, out = self.source.path(), self.output.path()
        if not src:
            raise ValueError("Source: choose the file or folder to import")
        check_dataset_output(self.data_folder, out)
        fmt = self.format.currentText()
        text: dict[str, Any] = {}
        if fmt in TEXT_FORMATS:
            text = {
                "label_field": self.label_field.text().strip() or "label",
                "data_field": self.data_field.text().strip() or "data",
                "delimiter": self.delimiter.text() or None,
            }
        fitted: dict[str, Any] = {}
        if self.length.value():
            fitted = {
                "length": self.length.value(),
                "pad": self.pad.currentText(),
                "truncate": self.truncate.currentText(),
            }
        dtype = self.dtype.currentText()
        return ImportRequest(
            src=src,
            out=out,
            format=fmt,
            **text,
            **fitted,
            dtype=None if dtype == AUTO else dtype,
            class_names=self.class_names.text().strip() or None,
            group_field=self.group_field.text().strip() or None,
            keep_fields=",".join(self._keep_fields()) or None,
            on_error=self.on_error.currentText(),
            seed=self.seed.value(),
            overwrite=self.overwrite.isChecked(),
        )

    def _class_names(self) -> list[str] | None:
        names = [c.strip() for c in self.class_names.text().split(",") if c.strip()]
        return names or None

    def _keep_fields(self) -> list[str]:
        return [k.strip() for k in self.keep_fields.text().split(",") if k.strip()]

    def show_failure(self, failure: Failure) -> QWidget | None:
        """A failed import of this form: its message under the form, and the control of
        the option it concerns marked and focused (None: it names no control here)."""
        self.message.setText(failure.message)
        self.message.setStyleSheet(f"color: {PROBLEM_COLOR};")
        return point_at(self, self.CONTROLS, failure)

    def start(self) -> CliJob | None:
        """Save the form's request beside its output (``.OUT.request.json``, atomically)
        and hand the job that runs it (``--request FILE``) to the page."""
        from guiapp.core.errors import UserError

        clear_mark(self, self.CONTROLS)
        try:
            req = self.request()
            out = resolve_output(self.data_folder, req.out)
            req = req.replace(out=str(out))
            req.check()
            job = request_job(req, out)
        except ValueError as exc:
            self._show_error(str(exc))
            return None
        except (OSError, UserError) as exc:
            self._show_error(f"Output: cannot save the job's request ({exc})")
            return None
        job.event.connect(self._job_event)
        self.job_ready.emit(job, out)
        self.message.setText("")
        self.accept()
        return job

    def _show_error(self, text: str) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {PROBLEM_COLOR};")

    def _job_event(self, event: dict[str, Any]) -> None:
        """The job's ``finished`` event: say what ``skip`` left out (nothing: silent)."""
        if event.get("event") != "finished":
            return
        text = skipped_text(event)
        if text is None:
            return
        self.skipped_message = text
        where = self.parentWidget() or self
        show_status(where, text.splitlines()[0])
        QMessageBox.warning(where, "Import skipped rows", text)
