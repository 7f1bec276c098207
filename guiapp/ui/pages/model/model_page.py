"""The Model page: a model spec as a table of layers, a typed editor, training settings and
a live summary.

Specs live in the project (``project.models``: :class:`ModelEntry`); each edit changes the
spec in place, marks the project changed and, after a short pause, checks and summarises
it on a worker thread (``validate``/``summarize`` are pure Python: no TensorFlow here).
The layer list's editing and error marks are in :mod:`.layer_list`.
"""

from __future__ import annotations

import copy
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from guiapp.core import model as specs
from guiapp.core.project import ModelEntry, Project
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.pages.base import SP, Page
from guiapp.ui.pages.model.layer_editor import LayerEditor
from guiapp.ui.pages.model.layer_list import LayerListEditing
from guiapp.ui.pages.model.model_settings import ModelSettings, check_model
from guiapp.ui.pages.model.model_undo import UndoableEdits
from guiapp.ui.pages.model.spec_files import SpecFiles, empty_spec, fitted, take_dtype
from guiapp.ui.widgets.layouts import splitter, wrapping_label
from guiapp.ui.widgets.outputs import (
    show_status,
)
from guiapp.ui.widgets.tables import table

EMPTY = "empty model"
SPEC_FILTER = "Model specs (*.json);;All files (*)"
CHECK_DELAY_MS = 150


class ModelPage(SpecFiles, UndoableEdits, LayerListEditing, Page):
    title = "Model"
    blurb = (
        "Define a Keras CNN as a list of layers, start from a template, and check its "
        "shapes, parameter count and memory before training."
    )
    icon = SP.SP_FileDialogDetailedView

    def build(self) -> None:
        self.index = -1  # the edited entry of project.models
        self.errors: list[dict[str, Any]] = []
        self._generation = 0
        self._init_undo()

        self.model_combo = QComboBox()
        self.model_combo.setMinimumContentsLength(16)
        self.template_combo = QComboBox()
        self.template_combo.addItems([*specs.template_names(), EMPTY])
        self.new_button = QPushButton("New")
        self.new_button.setToolTip("Add a model to the project from the template (or empty)")
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("name")
        self.delete_button = QPushButton("Delete")
        self.import_button = QPushButton("Import…")
        self.export_button = QPushButton("Export…")
        top = QHBoxLayout()  # two groups that wrap under each other in a narrow window
        for label, field in (("Model", self.model_combo), ("Name", self.name_edit)):
            top.addWidget(QLabel(label))
            top.addWidget(field)
        top.addWidget(self.delete_button)
        top.addSpacing(16)
        top.addWidget(QLabel("Template"))
        for tool in (self.template_combo, self.new_button, self.import_button, self.export_button):
            top.addWidget(tool)
        top.addStretch(1)

        self.layers = table(("#", "Layer", "Parameters"))
        self.layers.setSelectionMode(self.layers.SelectionMode.SingleSelection)
        self.type_combo = QComboBox()
        self.type_combo.addItems([t["name"] for t in specs.layer_types()])
        self.name_edit.setMinimumWidth(80)
        self.model_combo.setMinimumContentsLength(10)
        self.template_combo.setMinimumContentsLength(11)
        self.type_combo.setMinimumContentsLength(9)
        for combo in (self.model_combo, self.template_combo, self.type_combo):
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
        self.add_button = QPushButton("Add")
        self.remove_button = QPushButton("Remove")
        self.up_button = QPushButton("Up")
        self.down_button = QPushButton("Down")
        layer_buttons = QHBoxLayout()
        for tool in (self.type_combo, self.add_button, self.remove_button, self.up_button):
            layer_buttons.addWidget(tool)
        layer_buttons.addWidget(self.down_button)
        self.editor = LayerEditor()
        scroll = QScrollArea()
        scroll.setWidget(self.editor)
        scroll.setWidgetResizable(True)
        self.editor_box = QGroupBox("Layer")
        QVBoxLayout(self.editor_box).addWidget(scroll)
        left = QWidget()
        lcol = QVBoxLayout(left)
        lcol.setContentsMargins(0, 0, 0, 0)
        lcol.addWidget(self.layers, 3)
        lcol.addLayout(layer_buttons)
        lcol.addWidget(self.editor_box, 2)

        self.settings = ModelSettings()
        self.summary = table(("Layer", "Output shape", "Params", "Activations"))
        self.totals = wrapping_label()
        self.problems = wrapping_label(problem=True)
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        for part, stretch in ((self.settings, 0), (self.problems, 0), (self.summary, 1)):
            rcol.addWidget(part, stretch)
        rcol.addWidget(self.totals)
        split = splitter(Qt.Orientation.Horizontal, left, right, sizes=(480, 440))
        self.body.addLayout(top)
        self.body.addWidget(split, 1)

        self.checker = BackgroundCalls(threads=1, parent=self, done=self._checked)
        self.check_timer = QTimer(self)
        self.check_timer.setSingleShot(True)
        self.check_timer.setInterval(CHECK_DELAY_MS)
        self.check_timer.timeout.connect(self._check_now)
        self.model_combo.currentIndexChanged.connect(self._model_picked)
        self.name_edit.editingFinished.connect(self._rename)
        self.new_button.clicked.connect(lambda: self.new_model(self.template_combo.currentText()))
        self.delete_button.clicked.connect(self.delete_model)
        self.import_button.clicked.connect(self.import_spec)
        self.export_button.clicked.connect(self.export_spec)
        self.add_button.clicked.connect(lambda: self.add_layer(self.type_combo.currentText()))
        self.remove_button.clicked.connect(self.remove_layer)
        self.up_button.clicked.connect(lambda: self.move_layer(-1))
        self.down_button.clicked.connect(lambda: self.move_layer(1))
        self.layers.itemSelectionChanged.connect(self._layer_picked)
        self.editor.changed.connect(self._layer_edited)
        self.settings.changed.connect(lambda: self.edited(rebuild=False, what="settings"))
        self.settings.recheck.connect(self.check_timer.start)
        self.settings.data_changed.connect(self.refit_template)
        self._show_spec()

    # ------------------------------------------------------------------ project
    @property
    def spec(self) -> dict[str, Any] | None:
        if self._project is None or not 0 <= self.index < len(self._project.models):
            return None
        return self._project.models[self.index].spec

    def set_project(self, project: Project) -> None:
        if project is self._project:  # saved: keep the model and layer being edited
            self.project_updated()
            return
        self._project = project
        self.index = len(project.models) - 1
        chosen = project.ui.get("model")  # the model shown when the project was saved
        names = [m.name for m in project.models]
        if isinstance(chosen, str) and chosen in names:
            self.index = names.index(chosen)
        self.settings.fill_datasets(project)
        self._fill_models()
        self.reset_undo()

    def project_updated(self) -> None:
        if self._project is not None:
            self.settings.fill_datasets(self._project)
            self._fill_models()

    def _fill_models(self) -> None:
        assert self._project is not None
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        for i, entry in enumerate(self._project.models):
            self.model_combo.addItem(entry.name or f"model {i + 1}")
        self.model_combo.setCurrentIndex(self.index)
        self.model_combo.blockSignals(False)
        self._keep_choice()
        self._show_spec()

    def _model_picked(self, index: int) -> None:
        self.index = index
        self._keep_choice()
        self._show_spec()
        self.note_position()

    def _keep_choice(self) -> None:
        """The shown model's name in the project's ``ui``: a reopened project shows it."""
        if self._project is not None:
            spec = self.spec
            if spec is not None:
                self._project.ui["model"] = self._project.models[self.index].name
            else:
                self._project.ui.pop("model", None)

    def _unique_name(self, name: str) -> str:
        taken = {m.name for m in self._project.models} if self._project else set()
        out, n = name, 2
        while out in taken:
            out, n = f"{name}-{n}", n + 1
        return out

    def add_model(self, spec: dict[str, Any], template: str = "") -> None:
        """Add ``spec``; one made from ``template`` is refitted when the dataset changes,
        until the user edits it."""
        assert self._project is not None
        name = self._unique_name(str(spec.get("name") or "model"))
        spec["name"] = name
        self._project.models.append(ModelEntry(name=name, spec=spec, template=template))
        self.index = len(self._project.models) - 1
        self._fill_models()
        self.project_changed.emit()
        self.record(f"Add model {name}")

    def new_model(self, template: str) -> None:
        """Add a model from ``template`` (or empty), fitted to the chosen dataset."""
        if self._project is None:
            return
        info = self.settings.data_info
        if template == EMPTY:
            spec = empty_spec()
            if info:
                spec["input"]["shape"] = list(info["sample_shape"])
                take_dtype(spec, info)
            self.add_model(spec)
            return
        self.add_model(fitted(template, info), template)

    def refit_template(self) -> None:
        """The "Fit to dataset" choice changed: a model still as its template made it is
        fitted again (input shape, classes), as one undoable step."""
        project = self._project
        entry = (
            project.models[self.index] if project is not None and self.spec is not None else None
        )
        info = self.settings.data_info
        if entry is None or entry.spec is None or not entry.template or not info:
            return
        spec = fitted(entry.template, info)
        spec["name"] = entry.name
        if spec == entry.spec:
            return
        entry.spec.clear()
        entry.spec.update(spec)
        self._show_spec()
        self.project_changed.emit()
        shape = " x ".join(str(d) for d in info["sample_shape"])
        self.record(f"Refit {entry.name} to {self.settings.dataset.currentText()}")
        show_status(
            self,
            f"Refitted {entry.name} ({entry.template}) to {shape} samples, "
            f"{len(info['classes'])} classes (Edit > Undo restores it)",
        )

    def delete_model(self) -> None:
        if self.spec is None or self._project is None:
            return
        name = self._project.models[self.index].name
        del self._project.models[self.index]
        self.index = min(self.index, len(self._project.models) - 1)
        self._fill_models()
        self.project_changed.emit()
        self.record(f"Delete model {name}")

    def _rename(self) -> None:
        spec, name = self.spec, self.name_edit.text().strip()
        if spec is None or not name or name == spec.get("name") or self._project is None:
            return
        name = self._unique_name(name)
        spec["name"] = self._project.models[self.index].name = name
        self.model_combo.setItemText(self.index, name)
        self.name_edit.setText(name)
        self._keep_choice()
        self.project_changed.emit()
        self.record(f"Rename model to {name}")

    # ------------------------------------------------------------------ layers
    def edited(
        self, select: int | None = None, rebuild: bool = True, what: str = "", merge: object = None
    ) -> None:
        """The spec changed: store it, mark the project changed, check it soon, and
        record the change as one undoable step called ``what`` (``merge``: a key that
        joins it to the step before with the same key, e.g. keystrokes in one field)."""
        if rebuild:
            self._fill_layers(select)
        self.project_changed.emit()
        self.check_timer.start()
        if what == "settings":
            what, merge = "Change input and training settings", ("settings", self.index)
        if self.spec is not None and self._project is not None and not self._restoring:
            self._project.models[self.index].template = ""  # edited: no more refits
        self.record(what or "Edit model", merge)

    # ------------------------------------------------------------------ showing
    def _show_spec(self) -> None:
        spec = self.spec
        has = spec is not None
        for w in (self.name_edit, self.delete_button, self.export_button, self.add_button):
            w.setEnabled(has)
        self.name_edit.setText(str(spec.get("name", "")) if spec else "")
        self.settings.set_spec(spec)
        self._fill_layers(0 if self.layer_list() else None)
        self._check_now()

    def _check_now(self) -> None:
        spec = self.spec
        self._generation += 1
        if spec is None:
            self._checked(self._generation, {"errors": [], "summary": None})
            return
        batch = self.settings.batch.value()
        info = self.settings.data_info
        self.checker.submit(self._generation, check_model, copy.deepcopy(spec), batch, info)

    def _checked(self, generation: object, result: object) -> None:
        if generation != self._generation or not isinstance(result, dict):
            return  # an older spec's answer
        self.errors = result["errors"]
        self._mark_layers()
        self._show_layer_errors()
        general = [e["message"] for e in self.errors if e["layer"] is None]
        self.problems.setText("\n".join(general))
        self.problems.setVisible(bool(general))
        self.settings.show_summary(self.summary, self.totals, result["summary"], self.errors)
