"""The Generate dialog: generator, its parameters, size, seed, workers, and the plan first.

Built-in generators are validated in this process with the core's own ``resolve_config``
(pure numpy, no TensorFlow), so the form shows the same messages as the CLI. A user
generator file is code: it is only run by the job, after the user agreed to run it.

Augmentation is a form of the registry's offline ops (:class:`OfflineAugmentForm`, its JSON
beside it), on its own tab, with a preview of a few samples of a built-in generator,
augmented in this process by the job's own numpy ops. The dialog's values come back the
next time it opens (:meth:`GenerateDialog.values`, kept by the Datasets page).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.events import Failure
from guiapp.core.generate import kmer1d, patterns2d
from guiapp.core.generate.spec import BUILTIN_DEFAULTS
from guiapp.core.genomes import source as genomes
from guiapp.core.requests import (
    GenerateRequest,
    controls,
    to_argv,
)
from guiapp.core.store.format import SAMPLE_DTYPES
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.dialogs.request_dialog import RequestDialog
from guiapp.ui.jobs.cli_job import CliJob, format_eta
from guiapp.ui.jobs.request_job import request_job
from guiapp.ui.widgets.augment_form import PREVIEW_ROWS, OfflineAugmentForm
from guiapp.ui.widgets.failure_controls import clear_mark, point_at
from guiapp.ui.widgets.form_fields import FileField, parse_count
from guiapp.ui.widgets.form_state import form_values, set_form_values
from guiapp.ui.widgets.layouts import STRETCH, row_layout, wrapping_label
from guiapp.ui.widgets.outputs import check_dataset_output, resolve_output

#: The genomes source's parameters in the form (the manifest has its own picker).
GENOME_FORM = {k: v for k, v in genomes.DEFAULTS.items() if k not in ("manifest", "class_names")}
GENERATORS = {"patterns2d": patterns2d.DEFAULTS, "kmer1d": kmer1d.DEFAULTS, "genomes": GENOME_FORM}
#: Parameters chosen from a list (the genomes source's).
CHOICES = {
    "mode": genomes.MODES,
    "strand": ("both", "forward"),
    "non_acgt": ("pad", "random", "error"),
    "short": ("pad", "drop"),
    "encoding": ("auto", "exact", "hash"),
}
FLOAT_TEXT = {"coverage"}  # empty or a number, not only whole numbers
USER_FILE = "User file (.py)…"
FORM_KEYS = ("shape", "classes", "dtype")  # shown in the main form, not as parameters
PARAM_HELP = {
    "difficulty": "0 = easy, 1 = hard: noise, overlap between classes",
    "genome_seed": "empty: the job's seed",
    "coverage": "empty: reads per genome instead; else reads = coverage x genome / read length",
    "stride": "tiling: bases between tiles (empty: the row length)",
    "errors": "fraction of each read's bases substituted",
}


class GenerateDialog(RequestDialog):
    """Builds a :class:`GenerateRequest` (:meth:`request`); ``job_ready(job, out)`` when the
    user starts it: the job runs the request, saved beside the output."""

    job_ready = Signal(object, object)
    #: The control of each :class:`GenerateRequest` field the form sets (the rest keep
    #: their defaults: the generator's parameters and the augmentation have their own forms).
    FIELDS: ClassVar[dict[str, str]] = {
        "out": "output",
        "generator": "generator",
        "n": "rows",
        "classes": "classes",
        "shape": "shape",
        "dtype": "dtype",
        "seed": "seed",
        "workers": "workers",
        "overwrite": "overwrite",
    }
    #: The control that sets each ``guiapp generate`` option (from :attr:`FIELDS`; the
    #: genomes' manifest is a parameter of its own): a failed generation's (or plan's)
    #: option is marked and focused there (:meth:`show_failure`).
    CONTROLS: ClassVar[dict[str, str]] = {
        **controls(GenerateRequest, FIELDS),
        "--manifest": "manifest",
    }

    def __init__(self, data_folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Generate a dataset")
        self.data_folder = Path(data_folder)
        self.approved_files: set[str] = set()
        self.plan_job: CliJob | None = None
        self.plan: dict[str, Any] | None = None

        self.generator = QComboBox()
        self.generator.addItems([*GENERATORS, USER_FILE])
        self.user_file = FileField("Generator file", "Python files (*.py)")
        self.output = FileField("Dataset file", "guiapp datasets (*.h5)", save=True)
        self.output.set_path(self._free_name("patterns2d"))
        self.rows = QLineEdit("100,000")
        self.rows.setToolTip("rows to write (after augmentation); 1e7 and 10_000_000 work too")
        self.classes = QSpinBox()
        self.classes.setRange(1, 65535)
        self.classes.setValue(5)
        self.shape = QLineEdit("25x25")
        self.dtype = QComboBox()
        self.dtype.addItems(SAMPLE_DTYPES)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.workers = QSpinBox()
        self.workers.setRange(1, max(1, os.cpu_count() or 1))
        self.workers.setValue(max(1, min(4, (os.cpu_count() or 2) // 2)))
        self.augment_form = OfflineAugmentForm()
        self.augment_form.sample_source = self._preview_source
        self.overwrite = QCheckBox("Replace an existing dataset at this path")

        form = QFormLayout()
        form.addRow("Generator", self.generator)
        form.addRow("Generator file", self.user_file)
        form.addRow("Output", self.output)
        form.addRow("Rows", self.rows)
        form.addRow("Classes", self.classes)
        form.addRow("Sample shape", self.shape)
        form.addRow("Dtype", self.dtype)
        form.addRow("Seed", self.seed)
        form.addRow("Workers", self.workers)
        form.addRow("", self.overwrite)
        self.form = form

        self.params_box = QGroupBox("Generator parameters")
        self.params_form = QFormLayout(self.params_box)
        self.param_widgets: dict[str, QWidget] = {}
        # The genomes source: a manifest (or a folder of class folders) and a preview of a
        # few rows as bases and tokens (read on a worker thread: it reads the genomes).
        self.manifest = FileField(
            "Genome manifest",
            "Manifests and genomes (*.tsv *.csv *.fa *.fasta *.fna *.fq *.fastq *.gz)",
        )
        self.manifest.setToolTip(
            "a TSV/CSV of file, class[, group], or a folder with one sub-folder per class"
        )
        self.manifest.edit.textChanged.connect(self._changed)
        self.genome_preview = QPlainTextEdit()
        self.genome_preview.setReadOnly(True)
        self.genome_preview.setMaximumHeight(120)
        self.genome_preview.setPlaceholderText("Preview: a few rows as bases and tokens")
        self.preview_button = QPushButton("Preview rows")
        self.preview_button.clicked.connect(self.preview_genomes)
        self.preview_calls = BackgroundCalls(threads=1, parent=self)
        self.preview_calls.done.connect(self._preview_done)
        self.preview_calls.failed.connect(
            lambda _k, msg: self.genome_preview.setPlainText(f"No preview: {msg}")
        )
        self.genome_box = QGroupBox("Genomes")
        genome_form = QFormLayout(self.genome_box)
        genome_form.addRow("Manifest", self.manifest)
        genome_form.addRow(self.preview_button, self.genome_preview)
        self.genome_box.setVisible(False)
        self.user_params = QLineEdit()
        self.user_params.setPlaceholderText('JSON object, e.g. {"noise": 0.2}')

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.plan_label = QLabel("Press Plan to see the disk size, shards and time first.")
        self.plan_label.setWordWrap(True)
        self.plan_button = QPushButton("Plan")
        self.start_button = QPushButton("Start")
        self.start_button.setDefault(True)
        cancel = QPushButton("Cancel")
        self.plan_button.clicked.connect(self.run_plan)
        self.start_button.clicked.connect(self.start)
        cancel.clicked.connect(self.reject)
        buttons = row_layout(self.plan_button, STRETCH, self.start_button, cancel)

        self.augment_label = QLabel("")
        form.addRow("Augmentation", self.augment_label)
        data_tab = QWidget()
        data_col = QVBoxLayout(data_tab)
        data_col.addLayout(form)
        data_col.addWidget(self.genome_box)
        data_col.addWidget(self.params_box)
        data_col.addStretch(1)
        augment_tab = QWidget()
        augment_col = QVBoxLayout(augment_tab)
        intro = wrapping_label()
        intro.setText(
            "Each generated sample is written Copies times, each copy through these ops "
            "(in order, each on a random share of the rows: its probability)."
        )
        augment_col.addWidget(intro)
        augment_col.addWidget(self.augment_form)
        augment_col.addStretch(1)
        # the ops and the preview scroll: the dialog's Start stays on a 690-pixel screen
        augment_scroll = QScrollArea()
        augment_scroll.setWidget(augment_tab)
        augment_scroll.setWidgetResizable(True)
        augment_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.tabs = QTabWidget()
        self.tabs.addTab(data_tab, "Dataset")
        self.tabs.addTab(augment_scroll, "Augmentation")

        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.plan_label)
        layout.addWidget(self.message)
        layout.addLayout(buttons)

        self.generator.currentTextChanged.connect(self._generator_changed)
        for edit in (self.rows, self.shape, self.output.edit, self.user_params):
            edit.textChanged.connect(self._changed)
        for spin in (self.classes, self.seed, self.workers):
            spin.valueChanged.connect(self._changed)
        self.dtype.currentTextChanged.connect(self._changed)
        self.augment_form.changed.connect(self._changed)
        self._generator_changed(self.generator.currentText())
        self.resize(560, self.sizeHint().height())

    # ------------------------------------------------------------------ form
    def _free_name(self, stem: str) -> Path:
        path, i = self.data_folder / f"{stem}.h5", 2
        while path.exists():
            path, i = self.data_folder / f"{stem}-{i}.h5", i + 1
        return path

    def generator_name(self) -> str:
        text = self.generator.currentText()
        return self.user_file.path() if text == USER_FILE else text

    def _generator_changed(self, text: str) -> None:
        is_user = text == USER_FILE
        self.form.setRowVisible(self.user_file, is_user)
        is_genomes = text == "genomes"  # its rows and classes come from the genome files
        self.form.setRowVisible(self.rows, not is_genomes)
        self.form.setRowVisible(self.classes, not is_genomes)
        self.genome_box.setVisible(is_genomes)
        while self.params_form.rowCount():
            self.params_form.removeRow(0)
        self.param_widgets = {}
        if is_user:
            self.user_params = QLineEdit()
            self.user_params.setPlaceholderText('JSON object, e.g. {"noise": 0.2}')
            self.user_params.textChanged.connect(self._changed)
            self.params_form.addRow("Parameters", self.user_params)
        else:
            base = BUILTIN_DEFAULTS[text]
            self.shape.setText("x".join(map(str, base["shape"])))
            self.dtype.setCurrentText(str(base["dtype"]))
            for key, value in GENERATORS[text].items():
                if key not in FORM_KEYS:
                    widget = self._param_widget(key, value)
                    self.param_widgets[key] = widget
                    self.params_form.addRow(key.replace("_", " "), widget)
            old = self.output.path()
            if not old or Path(old).parent == self.data_folder:
                self.output.set_path(self._free_name(text))
        self._changed()

    def _param_widget(self, key: str, value: Any) -> QWidget:
        widget: QWidget
        if key in CHOICES:
            widget = QComboBox()
            widget.addItems(list(CHOICES[key]))
            widget.setCurrentText(str(value))
            widget.currentTextChanged.connect(self._changed)
        elif isinstance(value, bool):
            widget = QCheckBox()
            widget.setChecked(value)
            widget.toggled.connect(self._changed)
        elif isinstance(value, float):
            widget = QDoubleSpinBox()
            widget.setRange(0.0, 1.0 if value <= 1.0 else 1e9)
            widget.setDecimals(3)
            widget.setSingleStep(0.05)
            widget.setValue(value)
            widget.valueChanged.connect(self._changed)
        else:
            widget = QLineEdit("" if value is None else str(value))
            widget.textChanged.connect(self._changed)
        widget.setToolTip(PARAM_HELP.get(key, f"default {value!r}"))
        return widget

    def params(self) -> dict[str, Any]:
        """The generator's parameters as the form holds them (ValueError names a bad one)."""
        if self.generator.currentText() == USER_FILE:
            text = self.user_params.text().strip()
            value = json.loads(text) if text else {}
            if not isinstance(value, dict):
                raise ValueError('Parameters: give a JSON object like {"noise": 0.2}')
            return value
        out: dict[str, Any] = {}
        for key, widget in self.param_widgets.items():
            if isinstance(widget, QCheckBox):
                out[key] = widget.isChecked()
            elif isinstance(widget, QComboBox):
                out[key] = widget.currentText()
            elif isinstance(widget, QDoubleSpinBox):
                out[key] = round(widget.value(), 6)
            elif isinstance(widget, QLineEdit):
                text = widget.text().strip().replace(",", "").replace("_", "")
                if not text:
                    out[key] = None
                    continue
                try:
                    out[key] = float(text) if key in FLOAT_TEXT else int(text)
                except ValueError:
                    raise ValueError(f"{key}: {text!r} is not a whole number") from None
        if self.generator.currentText() == "genomes":
            out["manifest"] = self.manifest.path()
        return out

    def request(self) -> GenerateRequest:
        """The form's request (ValueError: what to fix)."""
        out = self.output.path()
        check_dataset_output(self.data_folder, out)
        generator = self.generator_name()
        if not generator:
            raise ValueError("Generator file: choose a .py file defining generate(rng, n, params)")
        genome = generator == "genomes"  # the genome files give the rows and the classes
        if genome and not self.manifest.path():
            raise ValueError("Manifest: choose a genome manifest (file, class, group)")
        n = None if genome else parse_count(self.rows.text(), "Rows")
        params = self.params()
        problem = self.augment_form.text_problem()
        if problem:
            raise ValueError(f"Augmentation: {problem}")
        return GenerateRequest(
            out=out,
            generator=generator,
            n=n,
            classes=None if genome else self.classes.value(),
            shape=self.shape.text().strip(),
            dtype=self.dtype.currentText(),
            seed=self.seed.value(),
            workers=self.workers.value(),
            params=params or None,
            augment=self.augment_form.spec() or None,
            overwrite=self.overwrite.isChecked(),
        )

    def checked_request(self) -> GenerateRequest | None:
        """Check the form (built-ins fully, with the core's checks); show what is wrong and
        return None, or the request."""
        from guiapp.core.errors import UserError
        from guiapp.core.generate import load_spec, resolve_config
        from guiapp.core.store import parse_shape

        try:
            req = self.request()
            # (genomes: the job reads the files; Plan and Preview show what it finds)
            if self.generator.currentText() not in (USER_FILE, "genomes"):
                resolve_config(
                    self.generator.currentText(),
                    n=parse_count(self.rows.text(), "Rows"),
                    seed=self.seed.value(),
                    classes=self.classes.value(),
                    shape=parse_shape(self.shape.text().strip()),
                    dtype=self.dtype.currentText(),
                    params={k: v for k, v in self.params().items() if v is not None},
                    augment=load_spec(self.augment_form.spec()),
                )
            req.check()
        except (ValueError, UserError) as exc:
            self.show_message(str(exc), error=True)
            return None
        self.show_message("")
        return req

    def validate(self) -> list[str] | None:
        """Check the form; the arguments its request stands for (None: the form says why)."""
        req = self.checked_request()
        return None if req is None else to_argv(req)

    def _request_job(self, req: GenerateRequest, **job: Any) -> CliJob | None:
        """The job that runs ``req``, saved beside its output (``.OUT.request.json``,
        atomically; None: the form says why it could not be saved)."""
        from guiapp.core.errors import UserError

        try:
            return request_job(req, req.out, **job)
        except (OSError, UserError) as exc:
            self.show_message(f"Output: cannot save the job's request ({exc})", error=True)
            return None

    def preview_genomes(self) -> None:
        """A few rows as the genomes source cuts them: bases and tokens (worker thread)."""
        from guiapp.core.store import parse_shape

        try:
            params = {k: v for k, v in self.params().items() if v is not None}
            shape = parse_shape(self.shape.text().strip())
        except ValueError as exc:
            self.genome_preview.setPlainText(f"No preview: {exc}")
            return
        self.genome_preview.setPlainText("Reading the genomes…")
        self.preview_calls.submit(
            "genomes", genomes.preview, params, self.seed.value(), int(shape[0])
        )

    def _preview_done(self, _key: object, rows: object) -> None:
        lines = []
        for r in rows:  # type: ignore[attr-defined]
            tokens = " ".join(map(str, r["tokens"][:12]))
            lines.append(
                f"{r['class']} · {r['group']} · {r['contig']}:{r['position']} {r['strand']}\n"
                f"  {r['bases']}\n  {tokens} …"
            )
        self.genome_preview.setPlainText("\n".join(lines))

    def _show_augment(self) -> None:
        from guiapp.core.store import parse_shape

        spec = self.augment_form.spec()
        ops = ", ".join(op["op"] for op in (spec or {}).get("ops", []))
        self.augment_label.setText(
            f"{spec['copies']} cop{'y' if spec['copies'] == 1 else 'ies'} of each sample; "
            f"{ops or 'no ops'} (Augmentation tab)"
            if spec
            else "none (Augmentation tab)"
        )
        try:
            shape = parse_shape(self.shape.text().strip())
        except Exception:  # a shape being typed: the form's message says what is wrong
            return
        self.augment_form.fit_to(shape, self.dtype.currentText())

    def _preview_source(self) -> tuple[Any, list[str]]:
        """A few samples of the chosen built-in generator (a worker thread calls this)."""
        import numpy as np

        from guiapp.core.generate import resolve_config
        from guiapp.core.generate.spec import BUILTIN
        from guiapp.core.store import parse_shape

        name = self.generator.currentText()
        if name not in BUILTIN:
            raise ValueError(
                "the preview draws from a built-in generator; a generator file only runs in "
                "the job, once you agree to run it"
            )
        cfg = resolve_config(
            name,
            n=PREVIEW_ROWS,
            seed=self.seed.value(),
            classes=self.classes.value(),
            shape=parse_shape(self.shape.text().strip()),
            dtype=self.dtype.currentText(),
            params={k: v for k, v in self.params().items() if v is not None},
        )
        x, y = BUILTIN[name].generate(np.random.default_rng(cfg.seed), PREVIEW_ROWS, cfg.params)
        names = cfg.class_names
        return x.astype(cfg.dtype), [names[int(c)] for c in y]

    # ------------------------------------------------------------------ values kept
    def values(self) -> dict[str, Any]:
        """What the user entered (JSON): :meth:`set_values` puts it back in a new dialog."""
        out = form_values(self)
        out.update(
            output=self.output.path(),
            user_file=self.user_file.path(),
            augment=self.augment_form.spec(),
        )
        try:
            out["params"] = self.params()
        except ValueError:
            pass
        return out

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the form again from :meth:`values`: the generator first (it sets its own
        defaults), then the rest; an output that exists by now gets a free name."""
        gen = values.get("generator")
        if isinstance(gen, str) and self.generator.findText(gen) >= 0:
            self.generator.setCurrentText(gen)
        self.user_file.set_path(str(values.get("user_file", "")))
        set_form_values(self, {k: v for k, v in values.items() if k != "generator"})
        params = values.get("params")
        if isinstance(params, dict):
            if isinstance(params.get("manifest"), str):
                self.manifest.set_path(params["manifest"])
            for key, value in params.items():
                widget = self.param_widgets.get(key)
                if isinstance(widget, QCheckBox):
                    widget.setChecked(bool(value))
                elif isinstance(widget, QComboBox) and isinstance(value, str):
                    widget.setCurrentText(value)
                elif isinstance(widget, QDoubleSpinBox) and isinstance(value, (int, float)):
                    widget.setValue(float(value))
                elif isinstance(widget, QLineEdit):
                    widget.setText("" if value is None else str(value))
        augment = values.get("augment")
        self.augment_form.set_spec(augment if isinstance(augment, dict) else None)
        out = str(values.get("output", ""))
        if out and not Path(out).exists():
            self.output.set_path(out)
        elif out and Path(out).parent == self.data_folder:
            self.output.set_path(self._free_name(Path(out).stem.rsplit("-", 1)[0]))
        self._changed()

    def show_message(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet("color: #c62828;" if error else "")

    def _changed(self, *_: object) -> None:
        self.plan = None
        self._show_augment()
        self.plan_label.setText("Press Plan to see the disk size, shards and time first.")
        self.checked_request()

    # ------------------------------------------------------------------ plan and start
    def _user_file_approved(self) -> bool:
        if self.generator.currentText() != USER_FILE:
            return True
        path = str(Path(self.user_file.path()).resolve())
        if path in self.approved_files:
            return True
        answer = QMessageBox.question(
            self,
            "Run a generator file?",
            f"The generator file\n{path}\nis Python code and will run on this computer. "
            "Run it only if you trust it. Run it?",
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.approved_files.add(path)
            return True
        return False

    def run_plan(self) -> CliJob | None:
        req = self.checked_request()
        if req is None or not self._user_file_approved():
            return None
        out = resolve_output(self.data_folder, req.out)
        job = self._request_job(req.replace(out=str(out), plan=True), name="plan", parent=self)
        if job is None:
            return None
        job.working_dir = str(self.data_folder.parent)
        job.event.connect(self._plan_event)
        job.finished.connect(self._plan_finished)
        self.plan_job = job
        self.plan_button.setEnabled(False)
        self.plan_label.setText("Planning…")
        job.start()
        return job

    def _plan_event(self, event: dict[str, Any]) -> None:
        if event.get("event") == "plan":
            self.plan = event
            gib = 2**30
            self.plan_label.setText(
                f"<b>Plan:</b> {event['rows']:,} rows in {event['shards']} shard(s) of up to "
                f"{event['shard_rows']:,} rows; {event['bytes_needed'] / gib:.2f} GiB to write "
                f"({event['free_bytes'] / gib:.1f} GiB free); about "
                f"{format_eta(event['estimated_s'])} with {event['workers']} worker(s)."
            )

    def _plan_finished(self, ok: bool, message: str) -> None:
        self.plan_button.setEnabled(True)
        if not ok:
            self.plan_label.setText("No plan.")
            job = self.plan_job
            failure = job.failure if job is not None else None
            self.show_failure(failure if failure is not None else Failure(message))

    def show_failure(self, failure: Failure) -> QWidget | None:
        """A failed generation (or plan) of this form: its message under the form, and
        the control of the option it concerns marked and focused (None: no control)."""
        self.show_message(failure.message, error=True)
        widget = point_at(self, self.CONTROLS, failure)
        if widget is not None and self.tabs.currentIndex() != 0:
            self.tabs.setCurrentIndex(0)  # the options' controls are on the first tab
            widget.setFocus()
        return widget

    def start(self) -> CliJob | None:
        clear_mark(self, self.CONTROLS)
        req = self.checked_request()
        if req is None or not self._user_file_approved():
            return None
        out = resolve_output(self.data_folder, self.output.path())
        job = self._request_job(req.replace(out=str(out)), resumable=True)
        if job is None:
            return None
        self.job_ready.emit(job, out)
        self.accept()
        return job
