"""The Runs page: every run of the project, their curves side by side, and their evaluation.

Run folders are read on a worker thread (:func:`read_run`); clicking confusion cell
(true i, predicted j) opens exactly that cell's rows in the Browser, most confident first,
read from the run's ``predictions.h5`` (``show_samples``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidgetItem,
)

from guiapp.core.predict import PredictionFilter
from guiapp.core.project import Project
from guiapp.core.train.evaluate import split_text
from guiapp.core.train.experiment_spec import SINGLE_TRIAL
from guiapp.core.train.metrics import run_plot_choices
from guiapp.core.train.run_files import (
    cell_rows,
    checkpoint_text,
    class_rows,
    model_folder,
    predictions_file,
    read_run,
)
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.dialogs.predict_dialog import PredictDialog
from guiapp.ui.jobs.cli_job import format_eta, format_rate
from guiapp.ui.pages.base import SP, Page
from guiapp.ui.pages.runs.evaluation_pane import EvaluationPane
from guiapp.ui.pages.runs.run_export import RunExport
from guiapp.ui.pages.runs.runs_list import RunsList
from guiapp.ui.widgets.layouts import column, splitter
from guiapp.ui.widgets.outputs import (
    open_folder,
)
from guiapp.ui.widgets.plot_legend import LINE, legend_html
from guiapp.ui.widgets.plots import new_plot
from guiapp.ui.widgets.tables import select_table_rows, table
from guiapp.ui.widgets.trial_segments import trial_slices

COLORS = [(80, 190, 255), (255, 150, 40), (90, 200, 90), (240, 80, 80), (180, 140, 230)]
#: what the overlay of the selected runs shows: label, the history's epoch column (every
#: metric a run may compute, core/train/metrics.py; a run without one shows no curve)
METRICS = run_plot_choices()


class RunsPage(RunsList, RunExport, Page):
    title = "Runs"
    blurb = (
        "Compare runs: their learning curves, confusion matrices and per-class scores, "
        "each reproducible from its folder."
    )
    icon = SP.SP_FileDialogListView
    COLUMNS = ("Run", "Status", "Dataset", "Model", "Best val acc", "Duration", "Rows/s")

    def build(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self._shown_key: list[tuple[str, str]] = []
        self._refresh_soon = QTimer(self)  # project_updated's refresh, coalesced
        self._refresh_soon.setSingleShot(True)
        self._refresh_soon.setInterval(0)
        self._refresh_soon.timeout.connect(self.refresh)
        self.table = table(self.COLUMNS)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.refresh_button = QPushButton("Refresh")
        self.open_button = QPushButton("Open run folder")
        self.export_button = QPushButton("Export model…")
        self.export_button.setToolTip("keras, SavedModel or TFLite, checked by reloading it")
        self.predict_button = QPushButton("Predict…")
        self.refresh_button.clicked.connect(self.refresh)
        self.open_button.clicked.connect(self.open_folder)
        self.export_button.clicked.connect(self.export_model)
        self.predict_button.clicked.connect(self.open_predict_dialog)
        self.metric_combo = QComboBox()
        for label, key in METRICS:
            self.metric_combo.addItem(label, key)
        self.metric_combo.setToolTip("What the curves of the selected runs show, per epoch")
        self.metric_combo.currentIndexChanged.connect(self._selection_changed)
        buttons = QHBoxLayout()
        self._init_runs_list()  # Remove from list, and Edit > Undo of it
        for b in (self.refresh_button, self.open_button, self.export_button, self.predict_button,
                  self.remove_button):  # fmt: skip
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(QLabel("Curves"))
        buttons.addWidget(self.metric_combo)
        self.curves = new_plot("validation accuracy", "epoch", digits=6, min_height=160)
        # A run on a dataset with groups has two evaluations, shown side by side: per row
        # and per group (each group's majority true class against its mean-probability class).
        self.rows_pane = EvaluationPane("Per row", "Rows")
        self.groups_pane = EvaluationPane("Per group", "Groups")
        self.groups_pane.confusion.setToolTip(
            "Per group: each group (an organism, a source sample) counted once, its class "
            "the highest mean probability over its rows"
        )
        self.confusion = self.rows_pane.confusion
        self.confusion.cell_clicked.connect(self.open_cell)
        self.report = self.rows_pane.report
        self.summary = self.rows_pane.summary
        self.group_confusion = self.groups_pane.confusion
        self.group_report = self.groups_pane.report
        self.group_summary = self.groups_pane.summary
        self.groups_pane.hide()
        evaluation = splitter(
            Qt.Orientation.Horizontal, self.rows_pane, self.groups_pane, sizes=(450, 450)
        )
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.table)
        self.curves_legend = QLabel()  # above the plot (wraps), never over a point
        self.curves_legend.setWordWrap(True)
        self.curves_legend.setTextFormat(Qt.TextFormat.RichText)
        top.addWidget(column(self.curves_legend, self.curves))
        top.setSizes([520, 380])
        split = splitter(Qt.Orientation.Vertical, top, evaluation, sizes=(180, 340))
        self.body.addLayout(buttons)
        self.body.addWidget(split, 1)
        self.loader = BackgroundCalls(threads=1, parent=self, done=self._loaded)
        self.samples = BackgroundCalls(threads=1, parent=self, done=self._rows_found)
        self.samples.failed.connect(
            lambda _k, msg: self.summary.setText(f"Cannot list rows: {msg}")
        )
        self._update_buttons()

    # ------------------------------------------------------------------ project
    def set_project(self, project: Project) -> None:
        self._project = project
        self.runs.clear()
        self.refresh()
        self.list_history.reset()

    def project_updated(self) -> None:
        """Re-read only when the project's runs changed (not on every model edit), in an
        event of its own: a run's end changes the project in the middle of the Training
        page's own work, and the two together held the event loop ~100 ms."""
        if self._project is not None and self._runs_key() != self._shown_key:
            self._refresh_soon.start()

    def _runs_key(self) -> list[tuple[str, str]]:
        runs = self._project.runs if self._project is not None else []
        return [(r.path, r.status) for r in runs]

    def refresh(self) -> None:
        """Re-read every run folder (on the worker) and redraw."""
        if self._project is None:
            return
        self._shown_key = self._runs_key()
        for run in self._project.runs:
            self.loader.submit(run.path, read_run, run.path)
        self._fill_table()

    def _loaded(self, key: object, info: object) -> None:
        if isinstance(info, dict):
            self.runs[str(key)] = info
            self._fill_table()

    def _fill_table(self) -> None:
        assert self._project is not None
        selected = self.selected_paths()
        runs = self._project.runs
        self.table.blockSignals(True)
        self.table.setRowCount(len(runs))
        keep = []
        for row, run in enumerate(runs):
            info = self.runs.get(run.path, {})
            h = info.get("history")
            best = h.best_val_accuracy() if h is not None else None
            cells = [
                run.label,
                info.get("status", run.status),
                run.dataset,
                run.model,
                f"{best:.4f}" if best is not None else "",
                format_eta(info.get("duration_s")) if h is not None else "",
                format_rate(h.rows_per_s()) if h is not None else "",
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(run.path if c == 0 else text)
                item.setData(Qt.ItemDataRole.UserRole, run.path)
                self.table.setItem(row, c, item)
            if run.path in selected:
                keep.append(row)
        select_table_rows(self.table, keep or ([len(runs) - 1] if runs else []))
        self.table.blockSignals(False)
        self._selection_changed()

    # ------------------------------------------------------------------ selection
    def select_run(self, path: str) -> None:
        """Select the run in ``path`` (the Experiments page opens a trial here)."""
        self.refresh()
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == path:
                select_table_rows(self.table, [row])

    def selected_paths(self) -> list[str]:
        rows = sorted({i.row() for i in self.table.selectedItems()})
        items = [self.table.item(r, 0) for r in rows]
        return [str(i.data(Qt.ItemDataRole.UserRole)) for i in items if i is not None]

    def current(self) -> dict[str, Any] | None:
        """The selected run (the newest when none is selected), once it was read."""
        paths = self.selected_paths()
        if not paths and self._project is not None and self._project.runs:
            paths = [self._project.runs[-1].path]
        return self.runs.get(paths[-1]) if paths else None

    def _update_buttons(self) -> None:
        info = self.current()
        self.open_button.setEnabled(info is not None)
        # an experiment's best trial's model; when there is none, the buttons say why
        folder, note = model_folder(info)
        self.export_button.setEnabled(folder is not None)
        self.predict_button.setEnabled(folder is not None)
        if folder is None:
            self.export_button.setToolTip(f"No model to export: {note}")
            self.predict_button.setToolTip(f"No model to predict with: {note}")
            return
        what = note or checkpoint_text(info.get("best") if info else None)
        self.export_button.setToolTip(
            f"Export {what}: keras, SavedModel or TFLite, checked by reloading it"
        )
        self.predict_button.setToolTip(f"Predict with {what}")

    def _selection_changed(self) -> None:
        self.curves.clear()
        label, key = METRICS[max(0, self.metric_combo.currentIndex())]
        self.curves.setLabel("left", label)
        legend = []
        n = 0
        for path in self.selected_paths():
            info = self.runs.get(path)
            if info is None:
                continue
            h = info["history"]
            x = h.epoch_index.view()  # 1-based, as every file and event counts
            # an experiment's trials (folds, fractions): a curve and a legend entry each
            for trial, at in trial_slices(h):
                color = COLORS[n % len(COLORS)]
                n += 1
                name = Path(path).name
                name += f" · {trial}" if trial not in (None, SINGLE_TRIAL) else ""
                legend.append((name, color, LINE))
                self.curves.plot(
                    x[at],
                    h.epoch[key].view()[at],
                    pen=pg.mkPen(color, width=2),
                    symbol="o",
                    symbolSize=6,
                    symbolBrush=color,
                    name=name,
                )
        self.curves_legend.setText(legend_html(legend))
        epochs = max((len(self.runs[p]["history"].epoch_index) for p in self.selected_paths()
                      if p in self.runs), default=1)  # fmt: skip
        step = max(1, -(-epochs // 10))
        self.curves.getAxis("bottom").setTickSpacing(step, step)  # whole epochs
        self._show_evaluation(self.current())
        self._update_buttons()

    def _show_evaluation(self, info: dict[str, Any] | None) -> None:
        """The run's evaluation per row and, for a run with groups, per group beside it."""
        report = info.get("report", {}) if info else {}
        names = report.get("class_names") or []
        groups = report.get("groups")
        paired = isinstance(groups, dict) and bool(names)
        self.groups_pane.setVisible(paired)
        self.rows_pane.title.setVisible(paired)
        self.rows_pane.set_paired(paired)
        self.groups_pane.set_paired(paired)
        confusion = report.get("confusion")
        if confusion is None and info:
            confusion = _confusion_csv(Path(info["path"]) / "confusion.csv")
        if not names or confusion is None:
            self.rows_pane.clear("This run has no evaluation yet." if info else "")
            self.groups_pane.clear("")
            return
        assert info is not None
        self.rows_pane.show_report(report, confusion, names)
        split = _split_words(split_text(info.get("split")))
        self.summary.setText(
            f"{report.get('split', 'val')} split, rows: accuracy "
            f"{report.get('accuracy', 0):.4f}, macro F1 {report.get('macro_f1', 0):.4f}; "
            f"{split}. Click a cell to browse exactly its samples, most confident first."
        )
        if not paired:
            self.groups_pane.clear("")
            return
        assert isinstance(groups, dict)
        self.groups_pane.show_report(groups, groups.get("confusion"), names)
        self.group_summary.setText(
            f"{report.get('split', 'val')} split, {groups.get('groups', 0):,} groups: accuracy "
            f"{groups.get('accuracy', 0):.4f}, macro F1 {groups.get('macro_f1', 0):.4f}. "
            "Each group is one count; groups.csv in the run folder lists them."
        )

    # ------------------------------------------------------------------ actions
    def open_cell(self, true_class: int, predicted: int) -> None:
        """Browse exactly the rows of cell (``true_class``, ``predicted``), most confident
        first, with true and predicted class and probability on each thumbnail.

        A run from before per-row predictions has no ``predictions.h5``: it shows all
        validation rows of the true class and says so in the title.
        """
        info = self.current()
        if info is None:
            return
        data = info["config"].get("data") or info["dataset"].get("path")
        if not data:
            return
        data = str(Path(self._project.folder if self._project else ".") / data)
        names = self.confusion.names
        predictions = predictions_file(info)
        if predictions.exists():
            title = f"true {names[true_class]}, predicted {names[predicted]}"
            title += ", most confident first" if true_class != predicted else ""
            self.summary.setText(f"Listing {title}…")
            key = (title, data, str(predictions), PredictionFilter(true_class, predicted))
            self.samples.submit(key, cell_rows, predictions, true_class, predicted)
            return
        title = f"validation rows of true class {names[true_class]} (no predictions.h5)"
        self.summary.setText(f"Listing {title}…")
        key = (title, data, "", PredictionFilter(true_class))
        self.samples.submit(key, class_rows, data, info["config"], true_class)

    def _rows_found(self, key: object, rows: object) -> None:
        # The key submitted with the search and its rows, through BackgroundCalls'
        # Signal(object, object): a Qt signal's payload reaches the slot untyped.
        title, data, predictions, flt = cast(tuple[str, str, str, PredictionFilter], key)
        found = cast(np.ndarray, rows)
        self.summary.setText(f"{len(found):,} rows ({title}) shown in the Browser.")
        self.show_samples.emit(rows, title, data, predictions, flt)

    def open_folder(self) -> None:
        info = self.current()
        if info is not None:
            open_folder(self, info["path"])

    def open_predict_dialog(self) -> PredictDialog:
        info = self.current()
        datasets = [(d.name, str(d.path)) for d in self._project.datasets] if self._project else []
        folder, _note = model_folder(info)  # an experiment's: its best trial's
        dialog = PredictDialog(str(folder or (info["path"] if info else "")), datasets, self)
        dialog.job_ready.connect(self.job_started)
        dialog.open_in_browser.connect(
            lambda rows, title, data, where: self.show_samples.emit(rows, title, data, where, None)
        )
        dialog.show()
        return dialog


def _confusion_csv(path: Path) -> list[list[int]] | None:
    try:
        lines = path.read_text().splitlines()[1:]
    except OSError:
        return None
    return [[int(v) for v in line.split(",")[1:]] for line in lines if line]


def _split_words(text: str) -> str:
    """``split_text`` in a sentence: "split by groups: ..." or the note as it is."""
    return f"split {text}" if text.startswith("by ") else text
