"""The settings of a training experiment: dataset, model, split or folds, batch, epochs,
devices, and (in :class:`.experiment_fields.ExperimentFields`) what varies.

``TrainingForm.experiment_spec`` turns them into the typed
:class:`~guiapp.core.train.experiment_spec.ExperimentSpec` that the page writes to
``spec.json`` and runs with ``guiapp train --spec``. Listing GPUs would need TensorFlow,
which the GUI never imports, so devices are offered as the CLI's own words (auto, cpu,
cpu:N, gpu, gpu:0,1) in an editable list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from guiapp.core.errors import UserError, problems_error
from guiapp.core.events import Failure
from guiapp.core.model import fit_template, template_names
from guiapp.core.project import Project
from guiapp.core.store import Dataset
from guiapp.core.train.config import TrainConfig
from guiapp.core.train.experiment_spec import ExperimentSpec
from guiapp.ui.pages.training.experiment_fields import ExperimentFields
from guiapp.ui.widgets.augment_form import PREVIEW_ROWS, OnlineAugmentForm
from guiapp.ui.widgets.failure_controls import clear_mark, point_at

DEVICES = ("auto", "cpu", "cpu:2", "gpu", "gpu:0", "gpu:0,1")
DEVICE_PATTERN = re.compile(r"^(auto|cpu|cpu:\d+|gpu|gpu:\d+(,\d+)*)$")


def safe_name(text: str) -> str:
    """A folder-safe run name: letters, digits, ``-``, ``_`` and ``.``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip()).strip("-.") or "run"


def check_fits(cfg: TrainConfig) -> None:
    """The checks ``guiapp train`` makes before it starts (the model against the dataset:
    input shape, dtype, classes; the dataset ready), so a mismatch is said at Start, not
    seconds later by a failed run. Reads the dataset's header only."""
    from guiapp.core.train import preflight

    with Dataset(cfg.data) as ds:
        preflight.check_model_against_data(cfg.model, ds)
        preflight.check_augment_fits(cfg, ds)


class TrainingForm(QGroupBox):
    """The form on the left of the Training page."""

    #: The control that sets each ``guiapp train`` option (the spec's field of that
    #: name): a failed run's (or a refused Start's) option is marked and focused there.
    CONTROLS: ClassVar[dict[str, str]] = {
        "--data": "dataset",
        "--model": "model",
        "--val": "val",
        "--folds": "folds",
        "--test": "test",
        "--split-by": "split_by",
        "--batch": "batch",
        "--epochs": "epochs",
        "--max-steps": "max_steps",
        "--devices": "devices",
        "--augment": "augment_form",
        "--class-weights": "class_weights",
        "--out": "name",
        "--fractions": "experiment.fractions",
        "--grid": "experiment.grid",
        "--random": "experiment.random",
        "--space": "experiment.space",
        "--early-stopping": "experiment.early_stopping",
    }

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
        self.test = QDoubleSpinBox()
        self.test.setRange(0.0, 0.9)
        self.test.setSingleStep(0.05)
        self.test.setToolTip("Fraction held out as a test split (whole groups)")
        self.split_by = QComboBox()
        self.split_by.addItem("groups (related rows together)", "groups")
        self.split_by.addItem("rows (groups may cross)", "rows")
        self.split_by.setToolTip(
            "By groups (the default), every group of related rows (augmented copies of one "
            "sample, the reads of one genome) stays in one split, fold and fraction. By rows, "
            "copies of a training row can land in validation and inflate its scores."
        )
        for combo in (self.split, self.split_by):  # the form fits its 340-pixel column
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
            combo.setMinimumContentsLength(12)
        self.split_info = QLabel("")
        self.split_info.setWordWrap(True)
        self.split_info.setObjectName("splitInfo")
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
        # on-the-fly augmentation: a form of the registry's online ops; its JSON text
        # (``augment``) is what the spec and the project keep
        self.augment_form = OnlineAugmentForm()
        self.augment = self.augment_form.text
        self.augment_form.sample_source = self._preview_samples
        self.class_weights = QCheckBox("balanced class weights")
        self.name = QLineEdit()
        self.name.setPlaceholderText("from the model's name")
        self.experiment = ExperimentFields()
        form = QFormLayout(self)
        form.addRow("Dataset", self.dataset)
        form.addRow("Model", self.model)
        form.addRow("Split", self.split)
        form.addRow("Validation", self.val)
        form.addRow("Folds", self.folds)
        form.addRow("Test", self.test)
        form.addRow("Split by", self.split_by)
        form.addRow(self.split_info)
        form.addRow("Batch per device", self.batch)
        form.addRow("Epochs", self.epochs)
        form.addRow("Steps per epoch", self.max_steps)
        form.addRow("Devices", self.devices)
        form.addRow("Augment", self.augment_form)
        form.addRow("", self.class_weights)
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
            self.model.addItem(entry.name or f"model {i + 1}", ("project", i))
        for name in template_names():
            self.model.addItem(f"template: {name}", ("template", name))
        for combo, data in ((self.dataset, chosen_data), (self.model, chosen_model)):
            at = combo.findData(data) if data is not None else -1
            if at >= 0:
                combo.setCurrentIndex(at)

    def _preview_samples(self) -> tuple[Any, list[str]]:
        """A few rows of the chosen dataset, one per class where it can (a worker thread
        calls this for the augmentation preview)."""
        import numpy as np

        data = self.dataset.currentData()
        if data is None:
            raise ValueError("add a dataset to the project first")
        with Dataset(str(data)) as ds:
            n = min(len(ds), 256)
            x, y = ds.read_range(0, n)
            names = ds.class_names
        firsts = [int(np.flatnonzero(y == c)[0]) for c in np.unique(y)][:PREVIEW_ROWS]
        rows = (firsts + [i for i in range(n) if i not in firsts])[:PREVIEW_ROWS]
        return x[rows], [names[int(y[i])] if int(y[i]) < len(names) else str(y[i]) for i in rows]

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

    def model_spec(self, project: Project) -> dict[str, Any]:
        """The chosen model as a spec: a project model, or a template fitted to the data."""
        kind, value = self.model.currentData()
        if kind == "template":
            with Dataset(str(self.dataset.currentData())) as ds:
                try:
                    return dict(fit_template(value, ds.sample_shape, ds.num_classes))
                except (UserError, ValueError, KeyError) as exc:
                    raise UserError(
                        f"template {value} cannot fit {ds.path}: {exc}", option="--model"
                    ) from None
        return dict(project.models[value].spec or {})

    def split_signals(self) -> tuple[SignalInstance, ...]:
        """The changes of the controls that decide the split (:meth:`split_config` reads
        them): the dataset, the split and its fractions, folds and groups."""
        return (
            self.dataset.currentIndexChanged,
            self.split.currentIndexChanged,
            self.split_by.currentIndexChanged,
            self.val.valueChanged,
            self.test.valueChanged,
            self.folds.valueChanged,
        )

    def split_config(self) -> TrainConfig | None:
        """The form's split settings as a config (no model), or None without a dataset."""
        data = self.dataset.currentData()
        if data is None:
            return None
        kfold = self.split.currentIndex() == 1
        return TrainConfig(
            data=str(data),
            model={},
            out="",
            val=self.val.value(),
            test=self.test.value(),
            folds=self.folds.value() if kfold else 0,
            split_by=str(self.split_by.currentData()),
        )

    def show_split(self, lines: list[str], warn: bool) -> None:
        self.split_info.setText("\n".join(lines))
        self.split_info.setStyleSheet("color: #8a4b00;" if warn else "color: #555;")

    def run_name(self) -> str:
        text = self.name.text().strip() or self.model.currentText().replace("template: ", "")
        return safe_name(text)

    def experiment_spec(self, project: Project, out: Path) -> ExperimentSpec:
        """The experiment the form describes, run in ``out``; a UserError when it has
        problems (the same checks ``guiapp train`` makes: ``ExperimentSpec.check``)."""
        augment: dict[str, Any] = {}
        if self.augment.text().strip():
            try:
                augment = json.loads(self.augment.text())
            except ValueError as exc:
                raise UserError(f"Augment: not JSON ({exc})") from None
        kfold = self.split.currentIndex() == 1
        base = TrainConfig(
            data=str(self.dataset.currentData()),
            model=self.model_spec(project),
            out=str(out),
            epochs=self.epochs.value(),
            batch=self.batch.value(),
            val=self.val.value(),
            test=self.test.value(),
            folds=self.folds.value() if kfold else 0,
            devices=self.devices.currentText().strip(),
            log_every=5,
            augment=augment,
            class_weights="balanced" if self.class_weights.isChecked() else None,
            max_steps=self.max_steps.value(),
            early_stopping=self.experiment.early_stopping.value(),
            split_by=str(self.split_by.currentData()),
        )
        spec = ExperimentSpec(
            base=base,
            folds=list(range(base.folds)),
            **self.experiment.values(),
        )
        problems = spec.check()
        if problems:
            raise problems_error(problems)
        check_fits(base)
        return spec

    def show_failure(self, failure: Failure) -> QWidget | None:
        """Mark and focus the control of the option a failed run (or a refused Start)
        names; None when it names none of this form's."""
        return point_at(self, self.CONTROLS, failure)

    def clear_failure(self) -> None:
        clear_mark(self, self.CONTROLS)
