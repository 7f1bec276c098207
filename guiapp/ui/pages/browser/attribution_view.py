"""The sample detail's "what the model sees": the current row's attribution map (a heat
map over a 2-D sample, a curve over a 1-D row), computed by a child ``guiapp explain
--events -`` (the GUI never imports TensorFlow) and cached by it; and "Likely
mislabeled…", which runs ``guiapp labels`` on an experiment and shows its rows in the
Browser, most likely first, with each row's suggested label here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.explain.job import read_explained
from guiapp.core.explain.label_issues import read_ranked
from guiapp.core.requests import EmbedRequest, ExplainRequest, LabelsRequest, to_argv
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.jobs.cli_job import CliJob, error_line
from guiapp.ui.pages.browser.embedding_map import EmbeddingMap
from guiapp.ui.pages.browser.health_view import HealthView

METHODS = (
    ("integrated gradients", "integrated_gradients"),
    ("occlusion", "occlusion"),
    ("Grad-CAM", "gradcam"),
    ("HiResCAM", "hirescam"),
)


class AttributionView(QWidget):
    """Explain the current row with a run's model; show likely label issues."""

    #: rows to show in the grid (most likely mislabeled first), a title, their dataset
    rows_requested = Signal(object, str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.dataset = ""
        self.model = ""
        self.class_names: list[str] = []
        self.row = -1
        self.ndim = 0
        self.job: CliJob | None = None
        self.labels_job: CliJob | None = None
        self.maps: dict[str, Any] | None = None  # the shown file's arrays and meta
        self.issues: dict[int, tuple[int, str, bool]] = {}  # row -> (rank, suggested, issue)

        self.model_button = QPushButton("Model…")
        self.model_button.setToolTip("The run (or .keras file) whose model explains the row")
        self.model_button.clicked.connect(self._pick_model)
        self.method = QComboBox()
        for text, key in METHODS:
            self.method.addItem(text, key)
        self.method.currentIndexChanged.connect(self._draw)
        self.target = QComboBox()
        self.target.setMinimumContentsLength(8)
        self.target.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.target.addItem("predicted", "pred")
        self.explain_button = QPushButton("Explain")
        self.explain_button.setToolTip("Which inputs drove the model's score (guiapp explain)")
        self.explain_button.clicked.connect(self.explain)
        self.labels_button = QPushButton("Likely mislabeled…")
        self.labels_button.setToolTip(
            "Rank an experiment's rows by how likely their label is wrong (guiapp labels)"
        )
        self.labels_button.clicked.connect(self._pick_experiment)
        self.map_button = QPushButton("Embedding map")
        self.map_button.setToolTip(
            "The rows' penultimate activations on a 2-D map (guiapp embed); select to browse"
        )
        self.map_button.clicked.connect(self.open_map)
        self.map: EmbeddingMap | None = None
        self.health_button = QPushButton("Health")
        self.health_button.setToolTip(
            "The dataset's class balance per split and fold, groups, identical rows across "
            "splits and likely label issues; each number opens its rows"
        )
        self.health_button.clicked.connect(self.open_health)
        self.health: HealthView | None = None
        self.labels_csv = ""
        self.embed_job: CliJob | None = None
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.issue_label = QLabel("")

        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(120)
        item = self.plot.getPlotItem()
        item.invertY(True)
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("CET-D1"))
        self.plot.addItem(self.image)
        self.curve = self.plot.plot([], [], pen=pg.mkPen("#d62728", width=1.5))
        self.plot.setVisible(False)

        buttons = QHBoxLayout()  # two short rows: the detail pane is narrow
        buttons.setContentsMargins(0, 0, 0, 0)
        for w in (self.model_button, self.explain_button, self.labels_button):
            buttons.addWidget(w)
        buttons.addStretch(1)
        choices = QHBoxLayout()
        choices.setContentsMargins(0, 0, 0, 0)
        choices.addWidget(self.method)
        choices.addWidget(QLabel("for"))
        choices.addWidget(self.target)
        choices.addStretch(1)
        choices.addWidget(self.map_button)
        choices.addWidget(self.health_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addLayout(choices)
        layout.addWidget(self.issue_label)
        layout.addWidget(self.status)
        layout.addWidget(self.plot, 1)
        self.calls = BackgroundCalls(threads=1, parent=self, done=self._read_done)
        self._update_enabled()

    # ------------------------------------------------------------------ context
    def set_context(self, dataset: str, predictions: str, class_names: list[str]) -> None:
        """The Browser's dataset and predictions file (its run's model is the default)."""
        self.dataset = dataset
        if class_names != self.class_names:
            self.class_names = list(class_names)
            self.target.clear()
            self.target.addItem("predicted", "pred")
            for name in self.class_names:
                self.target.addItem(name, name)
        if predictions and not self.model:
            model = _model_of(predictions)
            if model:
                self.set_model(model)
        self._update_enabled()

    def set_model(self, path: str) -> None:
        self.model = path
        self.model_button.setText(f"Model: {Path(path).name}")
        self.model_button.setToolTip(path)
        self._update_enabled()

    def _pick_model(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Run folder", str(Path.home()))
        if path:
            self.set_model(path)

    def _update_enabled(self) -> None:
        running = self.job is not None and self.job.is_running()
        self.explain_button.setEnabled(
            bool(self.model and self.dataset and self.row >= 0) and not running
        )

    def show_row(self, row: int, ndim: int) -> None:
        """A new current sample: its map is gone until explained; its label issue shown."""
        self.row, self.ndim = row, ndim
        self.maps = None
        self.plot.setVisible(False)
        self.status.setText("")
        got = self.issues.get(row)
        if got is None:
            self.issue_label.setText("")
        else:
            rank, suggested, issue = got
            what = "likely mislabeled" if issue else "label looks right"
            self.issue_label.setText(
                f"{what} (rank {rank:,} of {len(self.issues):,}): suggested <b>{suggested}</b>"
            )
        self._update_enabled()

    def clear(self) -> None:
        self.show_row(-1, 0)

    # ------------------------------------------------------------------ explain
    def explain_request(self) -> ExplainRequest:
        """What the Explain button runs: the current row of this model, for the chosen class."""
        target = str(self.target.currentData() or "pred")
        return ExplainRequest(
            model=self.model, data=self.dataset, rows=str(self.row), target=target
        )

    def explain(self) -> None:
        if not (self.model and self.dataset and self.row >= 0):
            return
        job = CliJob(
            f"explain row {self.row}", "explain", to_argv(self.explain_request()), parent=self
        )
        job.event.connect(self._explain_event)
        job.finished.connect(self._explain_finished)
        self.job = job
        self.status.setText(f"Explaining row {self.row:,}…")
        job.start()
        self._update_enabled()

    def _explain_event(self, event: dict[str, Any]) -> None:
        if event.get("event") == "finished" and event.get("files"):
            try:
                got = read_explained(event["files"][0])
            except (OSError, ValueError, KeyError) as exc:
                self.status.setText(f"Cannot read the attribution: {exc}")
                return
            if got["meta"]["row"] == self.row:
                self.maps = got
                self._draw()

    def _explain_finished(self, ok: bool, message: str) -> None:
        if not ok and self.job is not None:
            self.status.setText(error_line(self.job.stderr) or message)
        self._update_enabled()

    def _draw(self) -> None:
        if self.maps is None:
            return
        key = str(self.method.currentData())
        meta = self.maps["meta"]
        if key not in self.maps:
            self.plot.setVisible(False)
            self.status.setText(f"{self.method.currentText()}: not available for this model")
            return
        values = np.asarray(self.maps[key], np.float64)
        top = float(np.abs(values).max()) or 1.0
        self.plot.setVisible(True)
        if values.ndim == 2:
            self.curve.setData([], [])
            self.image.setVisible(True)
            self.image.setImage(values.T, levels=(-top, top))  # pyqtgraph's (x, y) order
            self.plot.getPlotItem().invertY(True)
        else:
            self.image.setVisible(False)
            self.plot.getPlotItem().invertY(False)
            self.curve.setData(np.arange(len(values)), values)
        self.plot.autoRange()
        self.status.setText(
            f"{self.method.currentText()} for class <b>{meta['target_name']}</b> "
            f"(predicted {self.class_name(meta['predicted'])}, "
            f"p {float(self.maps['probs'][meta['target']]):.3f})"
        )

    def class_name(self, i: int) -> str:
        return self.class_names[i] if 0 <= i < len(self.class_names) else str(i)

    def shown_map(self) -> np.ndarray | None:
        """The array on screen (None when none is)."""
        if self.maps is None or not self.plot.isVisible():
            return None
        return np.asarray(self.maps[str(self.method.currentData())])

    # ------------------------------------------------------------------ embedding map
    def embedding_path(self) -> Path:
        """Where the map of this model over this dataset is kept (``RUN/explain/``)."""
        model = Path(self.model)
        folder = model if model.is_dir() else model.parent
        return folder / "explain" / f"embedding-{Path(self.dataset).stem}.h5"

    def open_map(self) -> None:
        """Open the map; first run ``guiapp embed`` when this model has none of this data."""
        if not (self.model and self.dataset):
            self.status.setText("Pick a model (Model…) and a dataset first.")
            return
        out = self.embedding_path()
        if out.exists():
            self._show_map(str(out))
            return
        request = EmbedRequest(model=self.model, data=self.dataset, out=str(out))
        job = CliJob(f"embed {Path(self.dataset).name}", "embed", to_argv(request), parent=self)
        job.finished.connect(lambda ok, message: self._embedded(ok, message, str(out)))
        self.embed_job = job
        self.map_button.setEnabled(False)
        self.status.setText(f"Embedding {Path(self.dataset).name} (guiapp embed)…")
        out.parent.mkdir(parents=True, exist_ok=True)
        job.start()

    def _embedded(self, ok: bool, message: str, out: str) -> None:
        self.map_button.setEnabled(True)
        if ok:
            self.status.setText("")
            self._show_map(out)
        elif self.embed_job is not None:
            self.status.setText(error_line(self.embed_job.stderr) or message)

    def _show_map(self, path: str) -> None:
        if self.map is None:
            self.map = EmbeddingMap(self)
            self.map.rows_requested.connect(self.rows_requested)
        self.map.show()
        self.map.raise_()
        self.map.load(path)

    # ------------------------------------------------------------------ dataset health
    def open_health(self) -> None:
        """The dataset's health (the splits of the current run, when one is picked)."""
        if not self.dataset:
            return
        if self.health is None:
            self.health = HealthView(self)
            self.health.rows_requested.connect(self.rows_requested)
        self.health.show()
        self.health.raise_()
        self.health.load(self.dataset, self.model, self.labels_csv)

    # ------------------------------------------------------------------ label issues
    def _pick_experiment(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "K-fold experiment", str(Path.home()))
        if path:
            self.find_label_issues(path)

    def find_label_issues(self, experiment: str) -> None:
        """Run ``guiapp labels`` on ``experiment``; its rows then fill the grid."""
        out = str(Path(experiment) / "labels.csv")
        request = LabelsRequest(experiment=experiment, out=out, all=True)
        job = CliJob(f"labels {Path(experiment).name}", "labels", to_argv(request), parent=self)
        job.event.connect(self._labels_event)
        job.finished.connect(self._labels_finished)
        self.labels_job = job
        self.labels_button.setEnabled(False)
        self.status.setText(f"Ranking the labels of {Path(experiment).name}…")
        job.start()

    def _labels_event(self, event: dict[str, Any]) -> None:
        if event.get("event") != "finished":
            return
        out, dataset = str(event["out"]), str(event.get("dataset", ""))
        issues = int(event.get("issues", 0))
        self.labels_csv = out
        self.calls.submit(("labels", out, dataset, issues), read_ranked, out)

    def _read_done(self, key: object, result: object) -> None:
        if isinstance(key, tuple) and key[0] == "labels" and isinstance(result, dict):
            result["dataset"], result["issues"] = key[2], key[3]
            self._show_ranked(str(key[1]), result)

    def _labels_finished(self, ok: bool, message: str) -> None:
        self.labels_button.setEnabled(True)
        if not ok and self.labels_job is not None:
            self.status.setText(error_line(self.labels_job.stderr) or message)

    def _show_ranked(self, path: str, got: object) -> None:
        if not isinstance(got, dict):
            return
        rows, suggested, issue = got["rows"], got["suggested"], got["issue"]
        n = int(got["issues"])
        self.issues = {
            int(r): (i + 1, suggested[i], bool(issue[i])) for i, r in enumerate(rows.tolist())
        }
        self.status.setText(f"{n:,} likely mislabeled of {len(rows):,} rows ({path})")
        self.rows_requested.emit(
            rows[:n], f"likely mislabeled ({n:,}), most likely first", str(got["dataset"])
        )


def _model_of(predictions: str) -> str:
    """The run folder (or model file) that wrote a predictions file, when it still exists."""
    try:
        from guiapp.core.predict.table import PredictionTable

        model = Path(str(PredictionTable(predictions).attrs.get("model_path", "")))
    except Exception:  # noqa: BLE001 - any unreadable file: no default model
        return ""
    if (model.parent / "config.json").exists():
        return str(model.parent)
    return str(model) if model.exists() else ""
