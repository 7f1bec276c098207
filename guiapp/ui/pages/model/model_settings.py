"""The spec-wide fields of the Model page (input, loss, optimizer, metrics) and its summary.

``check_model`` is the worker-thread function: ``validate`` (against the chosen dataset
when one is picked) and ``summarize``, both pure Python.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from guiapp.core import model as specs
from guiapp.core.project import Project
from guiapp.core.store.dataset import read_info
from guiapp.core.units import human_bytes
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.pages.model.layer_editor import parse_value

NO_DATASET = "(none)"


def check_model(spec: dict[str, Any], batch: int, info: dict[str, Any] | None) -> dict[str, Any]:
    """Problems of ``spec`` (as dicts) and, when it has no errors, its summary."""
    data: dict[str, Any] = {}
    if info:
        data = {
            "input_shape": info["sample_shape"],
            "num_classes": len(info["classes"]),
            "input_dtype": info["dtype"],
        }
    found = specs.validate(spec, warnings=True, **data)
    summary = None
    if not any(e.severity == "error" for e in found):
        summary = specs.summarize(spec, batch).to_dict()
    return {"errors": [e.to_dict() for e in found], "summary": summary}


class ModelSettings(QGroupBox):
    """Input shape and dtype, loss, optimizer, learning rate, metrics, summary batch, data."""

    #: the spec changed
    changed = Signal()
    #: only what the spec is checked against changed (dataset, summary batch)
    recheck = Signal()
    #: the chosen dataset's header was read (``data_info`` is its info)
    data_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Input, training and summary", parent)
        self.spec: dict[str, Any] | None = None
        self.data_info: dict[str, Any] | None = None
        self.shape = QLineEdit()
        self.shape.setToolTip("One sample's shape, e.g. 25, 25, 1")
        self.dtype = QComboBox()
        self.dtype.addItems(list(specs.INPUT_DTYPES))
        self.loss = QComboBox()
        self.loss.addItems(list(specs.LOSSES))
        self.optimizer = QComboBox()
        self.optimizer.addItems(specs.optimizer_types())
        self.rate = QDoubleSpinBox()
        self.rate.setDecimals(6)
        self.rate.setRange(1e-6, 10.0)
        self.rate.setSingleStep(1e-4)
        self.metrics = {name: QCheckBox(name) for name in specs.METRICS}
        metric_row = QWidget()
        row = QHBoxLayout(metric_row)
        row.setContentsMargins(0, 0, 0, 0)
        for name, box in self.metrics.items():
            box.setToolTip(specs.METRICS[name])
            row.addWidget(box)
        row.addStretch(1)
        self.batch = QSpinBox()
        self.batch.setRange(1, 1 << 20)
        self.batch.setValue(256)
        self.batch.setToolTip("Batch size for the activation memory estimate")
        self.dataset = QComboBox()
        self.dataset.setToolTip("Check the model against this dataset's shape and classes")
        self.shape_error = QLabel()
        self.shape_error.setStyleSheet("color: #c62828;")
        self.shape_error.setVisible(False)
        form = QFormLayout(self)
        form.addRow("Input shape", self.shape)
        form.addRow("", self.shape_error)
        form.addRow("Input dtype", self.dtype)
        form.addRow("Loss", self.loss)
        input_row = QWidget()
        opt = QHBoxLayout(input_row)
        opt.setContentsMargins(0, 0, 0, 0)
        opt.addWidget(self.optimizer)
        opt.addWidget(QLabel("learning rate"))
        opt.addWidget(self.rate)
        form.addRow("Optimizer", input_row)
        form.addRow("Metrics", metric_row)
        form.addRow("Fit to dataset", self.dataset)
        form.addRow("Summary batch", self.batch)
        self.info_calls = BackgroundCalls(threads=1, parent=self, done=self._info_read)
        self.shape.textChanged.connect(self._shape_edited)
        self.dtype.currentTextChanged.connect(lambda v: self._set_input("dtype", v))
        self.loss.currentTextChanged.connect(lambda v: self._set("loss", v))
        self.optimizer.currentTextChanged.connect(self._optimizer_picked)
        self.rate.valueChanged.connect(self._rate_changed)
        for box in self.metrics.values():
            box.toggled.connect(self._metrics_changed)
        self.batch.valueChanged.connect(lambda _v: self.recheck.emit())
        self.dataset.currentIndexChanged.connect(self._dataset_picked)

    # ------------------------------------------------------------------ data
    def fill_datasets(self, project: Project) -> None:
        current = self.dataset.currentData()
        self.dataset.blockSignals(True)
        self.dataset.clear()
        self.dataset.addItem(NO_DATASET, None)
        for ref in project.datasets:
            if ref.path.exists():
                self.dataset.addItem(ref.name, str(ref.path))
        self.dataset.blockSignals(False)
        at = self.dataset.findData(current) if current else -1
        self.dataset.setCurrentIndex(at if at >= 0 else min(1, self.dataset.count() - 1))
        if at < 0:
            self._dataset_picked()

    def _dataset_picked(self, _index: int = 0) -> None:
        path = self.dataset.currentData()
        self.data_info = None
        if path:
            self.info_calls.submit(path, read_info, path)
        self.recheck.emit()

    def _info_read(self, key: object, info: object) -> None:
        if key == self.dataset.currentData() and isinstance(info, dict):
            self.data_info = info
            self.data_changed.emit()
            self.recheck.emit()

    # ------------------------------------------------------------------ spec fields
    def set_spec(self, spec: dict[str, Any] | None) -> None:
        self.spec = None  # no edits while the widgets are filled
        self.setEnabled(spec is not None)
        if spec is not None:
            inp = spec.get("input", {})
            self.shape.setText(", ".join(str(d) for d in inp.get("shape", [])))
            self.dtype.setCurrentText(str(inp.get("dtype", "float32")))
            self.loss.setCurrentText(str(spec.get("loss", "")))
            opt = spec.get("optimizer", {}) if isinstance(spec.get("optimizer"), dict) else {}
            self.optimizer.setCurrentText(str(opt.get("type", "adam")))
            self.rate.setValue(float(opt.get("learning_rate", 1e-3)))
            for name, box in self.metrics.items():
                box.setChecked(name in spec.get("metrics", []))
        self.spec = spec

    def _set(self, key: str, value: Any) -> None:
        if self.spec is not None:
            self.spec[key] = value
            self.changed.emit()

    def _set_input(self, key: str, value: Any) -> None:
        if self.spec is not None:
            self.spec.setdefault("input", {})[key] = value
            self.changed.emit()

    def _shape_edited(self, text: str) -> None:
        if self.spec is None:
            return
        try:
            shape = parse_value(text, {"kind": "shape"})
        except ValueError as exc:
            self.shape_error.setText(f"input shape: {exc}")
            self.shape_error.setVisible(True)
            return
        self.shape_error.setVisible(False)
        self._set_input("shape", shape)

    def _optimizer_picked(self, kind: str) -> None:
        if self.spec is not None:
            self._set(
                "optimizer", {"type": kind, "learning_rate": self.rate.value(), "schedule": None}
            )

    def _rate_changed(self, value: float) -> None:
        if self.spec is not None and isinstance(self.spec.get("optimizer"), dict):
            self.spec["optimizer"]["learning_rate"] = value
            self.changed.emit()

    def _metrics_changed(self) -> None:
        self._set("metrics", [n for n, box in self.metrics.items() if box.isChecked()])

    # ------------------------------------------------------------------ summary
    def show_summary(
        self,
        table: QTableWidget,
        totals: QLabel,
        summary: dict[str, Any] | None,
        errors: list[dict[str, Any]],
    ) -> None:
        rows = summary["rows"] if summary else []
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            name = f"{row['index']} {row['type']}".strip()
            cells = [
                name,
                " x ".join(str(d) for d in row["output_shape"]),
                f"{row['params']:,}",
                human_bytes(row["activation_bytes"]),
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c >= 2:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                table.setItem(r, c, item)
        if summary:
            totals.setText(
                f"{summary['total_params']:,} parameters ({human_bytes(summary['weight_bytes'])}); "
                f"activations {human_bytes(summary['activation_bytes'])} per batch of "
                f"{summary['batch_size']}; optimizer state {human_bytes(summary['optimizer_bytes'])}"
            )
        else:
            totals.setText(problems_text(errors))


def problems_text(errors: list[dict[str, Any]], most: int = 6) -> str:
    """The spec's errors named in the summary's place (not only in a layer's tooltip):
    where each is and what is wrong, the first ``most`` of them."""
    found = [e for e in errors if e["severity"] == "error"]
    if not found:
        return ""
    lines = [f"{len(found)} problem(s); fix them to see the summary:"]
    for e in found[:most]:
        where = e.get("where") or ""
        if e.get("layer") is not None:
            where = f"layer {'.'.join(map(str, e['layer']))} ({e.get('layer_type') or ''})"
        lines.append(
            f"• {where}: {e.get('problem') or e['message']}" if where else f"• {e['message']}"
        )
    if len(found) > most:
        lines.append(f"… and {len(found) - most} more (marked in the layer list)")
    return "\n".join(lines)
