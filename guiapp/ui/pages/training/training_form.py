"""The settings of a training run: dataset, model, split or folds, batch, epochs, devices.

``TrainingForm.cli_args`` turns them into ``guiapp train`` arguments. Listing GPUs would
need TensorFlow, which the GUI never imports, so devices are offered as the CLI's own
words (auto, cpu, cpu:N, gpu, gpu:0,1) in an editable list.
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from guiapp.core.model import template_names
from guiapp.core.project import Project

DEVICES = ("auto", "cpu", "cpu:2", "gpu", "gpu:0", "gpu:0,1")
DEVICE_PATTERN = re.compile(r"^(auto|cpu|cpu:\d+|gpu|gpu:\d+(,\d+)*)$")


def safe_name(text: str) -> str:
    """A folder-safe run name: letters, digits, ``-``, ``_`` and ``.``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip()).strip("-.") or "run"


class TrainingForm(QGroupBox):
    """The form on the left of the Training page."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Run settings", parent)
        self.dataset = QComboBox()
        self.model = QComboBox()
        self.split = QComboBox()
        self.split.addItems(["validation fraction", "k-fold cross-validation"])
        self.val = QDoubleSpinBox()
        self.val.setRange(0.0, 0.9)
        self.val.setSingleStep(0.05)
        self.val.setValue(0.1)
        self.folds = QSpinBox()
        self.folds.setRange(2, 50)
        self.folds.setValue(5)
        self.batch = QSpinBox()
        self.batch.setRange(1, 1 << 20)
        self.batch.setValue(256)
        self.epochs = QSpinBox()
        self.epochs.setRange(1, 100_000)
        self.epochs.setValue(5)
        self.max_steps = QSpinBox()
        self.max_steps.setRange(0, 1 << 30)
        self.max_steps.setSpecialValueText("all")
        self.max_steps.setToolTip("Cap the steps (batches) per epoch for a quick run")
        self.devices = QComboBox()
        self.devices.setEditable(True)
        self.devices.addItems(DEVICES)
        self.devices.setToolTip(
            "auto: one GPU if present, else the CPU; gpu: every GPU (MirroredStrategy); "
            "gpu:0,1: those GPUs; cpu:N: N logical CPU devices"
        )
        self.name = QLineEdit()
        self.name.setPlaceholderText("from the model's name")
        form = QFormLayout(self)
        form.addRow("Dataset", self.dataset)
        form.addRow("Model", self.model)
        form.addRow("Split", self.split)
        form.addRow("Validation", self.val)
        form.addRow("Folds", self.folds)
        form.addRow("Batch per device", self.batch)
        form.addRow("Epochs", self.epochs)
        form.addRow("Steps per epoch", self.max_steps)
        form.addRow("Devices", self.devices)
        form.addRow("Run name", self.name)
        self.split.currentIndexChanged.connect(self._split_changed)
        self._split_changed()

    def _split_changed(self) -> None:
        folds = self.split.currentIndex() == 1
        self.folds.setEnabled(folds)
        self.val.setEnabled(not folds)

    def fill(self, project: Project) -> None:
        """List the project's datasets and models (and the templates), keeping the choice."""
        chosen_data, chosen_model = self.dataset.currentData(), self.model.currentData()
        self.dataset.clear()
        for ref in project.datasets:
            self.dataset.addItem(ref.name, str(ref.path))
        self.model.clear()
        for i, entry in enumerate(project.models):
            self.model.addItem(str(entry.get("name", f"model {i + 1}")), ("project", i))
        for name in template_names():
            self.model.addItem(f"template: {name}", ("template", name))
        for combo, data in ((self.dataset, chosen_data), (self.model, chosen_model)):
            at = combo.findData(data) if data is not None else -1
            if at >= 0:
                combo.setCurrentIndex(at)

    def select_model(self, name: str) -> bool:
        """Pick the project model or template called ``name``."""
        for i in range(self.model.count()):
            if self.model.itemText(i) in (name, f"template: {name}"):
                self.model.setCurrentIndex(i)
                return True
        return False

    def problems(self) -> list[str]:
        out = []
        if self.dataset.currentData() is None:
            out.append("add a dataset to the project first (Datasets page)")
        if self.model.currentData() is None:
            out.append("pick a model")
        if not DEVICE_PATTERN.match(self.devices.currentText().strip()):
            out.append(
                f"devices {self.devices.currentText()!r}: use auto, cpu, cpu:N, gpu or gpu:0,1"
            )
        return out

    def model_choice(self, project: Project) -> tuple[str, Any]:
        """``("template", name)`` or ``("spec", spec_dict)`` for the chosen model."""
        kind, value = self.model.currentData()
        if kind == "template":
            return "template", value
        return "spec", project.models[value]["spec"]

    def run_name(self) -> str:
        text = self.name.text().strip() or self.model.currentText().replace("template: ", "")
        return safe_name(text)

    def cli_args(self, data: str, model: str, out: str) -> list[str]:
        args = ["--data", data, "--model", model, "--out", out]
        args += ["--epochs", str(self.epochs.value()), "--batch", str(self.batch.value())]
        if self.split.currentIndex() == 1:
            args += ["--folds", str(self.folds.value())]
        else:
            args += ["--val", f"{self.val.value():g}"]
        if self.max_steps.value():
            args += ["--max-steps", str(self.max_steps.value())]
        args += ["--devices", self.devices.currentText().strip(), "--log-every", "5"]
        return args
