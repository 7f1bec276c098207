"""The Predict dialog: a run's model over a dataset or a file, as a ``guiapp predict`` job.

Pick the run (best or last model), the data (a dataset or any file the importers read)
and the output; Start saves the form's :class:`PredictRequest` beside the output and runs
``guiapp predict --request FILE`` through :class:`CliJob` (it also appears in
the Jobs panel, with progress, ETA and stop). When it finishes, the dialog shows the
summary the job emitted: a histogram of the predicted classes and one of the confidence,
and offers to open the result in the Browser (``open_in_browser``) or to save it as CSV.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.predict import PredictionTable
from guiapp.core.predict.output import write_csv
from guiapp.core.requests import PredictRequest, controls
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.dialogs.request_dialog import RequestDialog
from guiapp.ui.jobs.cli_job import CliJob, format_eta, format_rate
from guiapp.ui.jobs.request_job import request_job
from guiapp.ui.widgets.failure_controls import clear_mark, point_at
from guiapp.ui.widgets.form_fields import FileField
from guiapp.ui.widgets.layouts import STRETCH, row_layout
from guiapp.ui.widgets.outputs import (
    export_folder,
    output_path_problem,
    remember_export,
    show_status,
)


def table_rows(path: str) -> np.ndarray:
    """The dataset rows of a predictions file (read on a worker thread)."""
    return PredictionTable(path).read("row")


#: The per-group table's columns the dialog shows (``core/predict/groups.py``'s CSV).
GROUP_COLUMNS = ("group", "rows", "mean_class_name", "mean_prob", "vote_share", "unclassified",
                 "true_class_name")  # fmt: skip


def group_rows(path: str) -> list[dict[str, str]]:
    """The per-group (per-genome) table's lines (read on a worker thread)."""
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class PredictDialog(RequestDialog):
    """``job_ready(job)`` when started; ``open_in_browser(rows, title, dataset, predictions)``."""

    job_ready = Signal(object)
    open_in_browser = Signal(object, str, str, str)
    #: The control of each :class:`PredictRequest` field the form sets (the rest keep
    #: their defaults).
    FIELDS: ClassVar[dict[str, str]] = {
        "model": "run",
        "which": "which",
        "data": "data",
        "out": "out",
        "split": "split",
        "top_k": "top_k",
        "probs": "probs",
        "rc_average": "rc_average",
    }
    #: The control that sets each ``guiapp predict`` option (from :attr:`FIELDS`): a
    #: failed prediction's option is marked and focused there.
    CONTROLS: ClassVar[dict[str, str]] = controls(PredictRequest, FIELDS)

    def __init__(
        self,
        run: str = "",
        datasets: list[tuple[str, str]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Predict")
        self.job: CliJob | None = None
        self.summary: dict[str, Any] = {}
        self.run = FileField("Run folder", folder=True)
        self.run.set_path(run)
        self.which = QComboBox()
        self.which.addItems(["best", "last"])
        self.data = QComboBox()
        self.data.setEditable(True)
        for name, path in datasets or []:
            self.data.addItem(name, path)
        self.data_browse = QPushButton("File…")
        self.data_browse.clicked.connect(self._pick_data)
        data_row = QHBoxLayout()
        data_row.addWidget(self.data, 1)
        data_row.addWidget(self.data_browse)
        self.out = FileField("Predictions", "Predictions (*.h5 *.csv)", save=True)
        self.split = QComboBox()
        self.split.addItems(["all", "val", "test", "train"])
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 100)
        self.top_k.setValue(5)
        self.probs = QCheckBox("keep the full probability vector")
        self.rc_average = QCheckBox("average both strands (k-mer rows: --rc-average)")
        self.rc_average.setToolTip(
            "each row's probabilities averaged with its reversed row's: with canonical k-mers, "
            "the read's reverse complement"
        )
        form = QFormLayout()
        form.addRow("Run", self.run)
        form.addRow("Model", self.which)
        form.addRow("Data", data_row)
        form.addRow("Output", self.out)
        form.addRow("Split", self.split)
        form.addRow("Top k", self.top_k)
        form.addRow("", self.probs)
        form.addRow("", self.rc_average)
        self.start_button = QPushButton("Start")
        self.start_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(lambda: self.job.stop() if self.job else None)
        self.browser_button = QPushButton("Open in Browser")
        self.browser_button.clicked.connect(self.show_in_browser)
        self.csv_button = QPushButton("Export table…")
        self.csv_button.clicked.connect(self.export_csv)
        for b in (self.browser_button, self.csv_button):
            b.setEnabled(False)
        buttons = row_layout(
            self.start_button, self.stop_button, self.browser_button, self.csv_button, STRETCH
        )
        self.progress = QProgressBar()
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.classes_plot = pg.PlotWidget(title="predicted classes")
        self.confidence_plot = pg.PlotWidget(title="confidence (probability of the prediction)")
        for plot in (self.classes_plot, self.confidence_plot):
            plot.setMinimumHeight(150)
            plot.getAxis("left").enableAutoSIPrefix(False)
        plots = QHBoxLayout()
        plots.addWidget(self.classes_plot)
        plots.addWidget(self.confidence_plot)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.message)
        layout.addLayout(plots, 1)
        # Genome (or any grouped) input: one line per genome, from PRED.groups.csv.
        self.groups_table = QTableWidget(0, len(GROUP_COLUMNS))
        self.groups_table.setHorizontalHeaderLabels(
            ["genome / group", "rows", "class", "mean prob", "vote share", "unclassified",
             "true class"]
        )  # fmt: skip
        self.groups_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.groups_table.setVisible(False)
        layout.addWidget(self.groups_table, 1)
        self.calls = BackgroundCalls(threads=1, parent=self)
        self.calls.done.connect(self._call_done)
        self.calls.failed.connect(lambda _k, msg: self.message.setText(msg))
        if run and not self.out.path():
            self.out.set_path(str(Path(run) / "predictions-new.h5"))
        self.resize(760, 560)

    # ------------------------------------------------------------------ the job
    def _pick_data(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Data to predict", str(Path.home()),
            "Datasets and files (*.h5 *.jsonl *.json *.csv *.tsv *.npy *.npz *.fa *.fasta "
            "*.fna *.fq *.fastq *.gz)",
        )  # fmt: skip
        if path:
            self.data.setEditText(path)

    def data_path(self) -> str:
        at = self.data.findText(self.data.currentText())
        if at >= 0 and self.data.itemData(at):
            return str(self.data.itemData(at))
        return self.data.currentText().strip()

    def request(self) -> PredictRequest:
        """The form's request (ValueError: what to fix)."""
        run, data, out = self.run.path(), self.data_path(), self.out.path()
        for value, what in ((run, "Run"), (data, "Data"), (out, "Output")):
            if not value:
                raise ValueError(f"{what}: choose one")
        problem = output_path_problem(out)
        if problem:
            raise ValueError(problem)
        return PredictRequest(
            model=run,
            which=self.which.currentText(),
            data=data,
            out=out,
            split=self.split.currentText(),
            top_k=self.top_k.value(),
            probs=self.probs.isChecked(),
            rc_average=self.rc_average.isChecked(),
        )

    def start(self) -> CliJob | None:
        from guiapp.core.errors import UserError

        clear_mark(self, self.CONTROLS)
        try:
            req = self.request()
            # beside the output, atomically: ``.PRED.request.json`` (the job, once it runs,
            # keeps its own ``PRED.request.json``)
            job = request_job(req, req.out)
        except (ValueError, OSError, UserError) as exc:
            self.message.setText(str(exc))
            return None
        job.progress.connect(self._progress)
        job.event.connect(self._event)
        job.finished.connect(self._finished)
        self.job = job
        self.summary = {}
        self.start_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.message.setText("Starting…")
        self.job_ready.emit(job)
        if job.status == "new":
            job.start()
        return job

    def _progress(self, done: object, total: object, rate: object, eta: object) -> None:
        if isinstance(done, int) and isinstance(total, int) and total > 0:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * done / total))
            self.message.setText(
                f"{done:,} of {total:,} rows · {format_rate(rate)} rows/s · ETA "  # type: ignore[arg-type]
                f"{format_eta(eta)}"  # type: ignore[arg-type]
            )

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("event") == "finished":
            self.summary = event

    def _finished(self, ok: bool, message: str) -> None:
        self.start_button.setEnabled(True)
        self.stop_button.setEnabled(False)
        if not ok:
            self.message.setText(f"Predict {message}. Start again to continue where it stopped.")
            if self.job is not None and self.job.failure is not None:
                point_at(self, self.CONTROLS, self.job.failure)  # the option's control
            return
        self.show_summary(self.summary)

    # ------------------------------------------------------------------ the result
    def show_summary(self, s: dict[str, Any]) -> None:
        names = s.get("class_names", [])
        counts = s.get("pred_counts", [])
        hist, edges = s.get("confidence_hist", []), s.get("confidence_bins", [])
        self.classes_plot.clear()
        self.classes_plot.addItem(
            pg.BarGraphItem(x=np.arange(len(counts)), height=counts, width=0.7, brush="#3b82c4")
        )
        self.classes_plot.getAxis("bottom").setTicks([list(enumerate(names))])
        self.confidence_plot.clear()
        if len(edges) == len(hist) + 1 and hist:
            centres = (np.asarray(edges[:-1]) + np.asarray(edges[1:])) / 2
            width = float(edges[1]) - float(edges[0])
            self.confidence_plot.addItem(
                pg.BarGraphItem(x=centres, height=hist, width=width * 0.9, brush="#e6862a")
            )
        acc = f", accuracy {s['accuracy']:.4f}" if "accuracy" in s else ""
        self.progress.setRange(0, 1000)
        self.progress.setValue(1000)
        self.message.setText(f"{s.get('rows', 0):,} rows predicted into {s.get('out', '')}{acc}.")
        table = str(s.get("out", ""))
        self.browser_button.setEnabled(table.endswith(".h5"))
        self.csv_button.setEnabled(table.endswith(".h5"))
        groups = s.get("groups") or {}
        self.groups_table.setVisible(bool(groups.get("out")))
        if groups.get("out"):
            self.calls.submit(("groups", str(groups["out"])), group_rows, str(groups["out"]))

    def show_groups(self, lines: list[dict[str, str]]) -> None:
        """The per-genome (per-group) table: each group's call, confidence and agreement."""
        self.groups_table.setRowCount(len(lines))
        for i, line in enumerate(lines):
            for j, key in enumerate(GROUP_COLUMNS):
                self.groups_table.setItem(i, j, QTableWidgetItem(line.get(key, "")))
        self.groups_table.resizeColumnsToContents()

    def show_in_browser(self) -> None:
        out = str(self.summary.get("out", ""))
        if out:
            self.calls.submit(("rows", out), table_rows, out)

    def export_csv(self) -> None:
        out = str(self.summary.get("out", ""))
        start = export_folder() / Path(out).with_suffix(".csv").name
        target, _ = QFileDialog.getSaveFileName(self, "Export table", str(start), "CSV (*.csv)")
        problem = output_path_problem(target, "Export table") if target else None
        if problem:
            self.message.setText(problem)
        elif target:
            remember_export(target)
            self.calls.submit(("csv", target), write_csv, out, target)

    def _call_done(self, key: tuple[str, str], result: object) -> None:
        kind, where = key  # as submitted: ("groups" | "rows" | "csv", a path)
        if kind == "groups":
            self.show_groups(result)  # type: ignore[arg-type]
        elif kind == "rows":
            title = f"predictions of {Path(where).name}"
            self.open_in_browser.emit(result, title, str(self.summary.get("data", "")), where)
        else:
            self.message.setText(f"Table written to {where}.")
            parent = self.parentWidget()
            if parent is not None:
                show_status(parent, f"Exported the predictions table to {where}")
