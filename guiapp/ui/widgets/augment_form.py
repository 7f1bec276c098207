"""Augmentation as forms built from the one registry of ops (``guiapp.core.augment.registry``).

:class:`OfflineAugmentForm` (the Generate dialog) lists the offline ops: each added op is a
row of its parameters (ranges and defaults from the registry, its probability ``p``), and
``copies``. :class:`OnlineAugmentForm` (the Training page) holds the online keys (flips,
rot90, noise). Both keep the JSON as text beside the form, two ways: a change in the form
rewrites the text, and text that parses (and names only what the registry knows) fills the
form; text that does not says why under it and leaves the form as it was.

Both preview a few augmented samples before anything starts (:class:`AugmentPreview`):
the host gives a function returning source samples; the ops run in numpy (the offline ops
of ``offline.py``, the online ops' numpy twin ``augment_numpy``, the same ops the training
pipeline runs in TensorFlow) on a worker thread. No TensorFlow in the GUI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPixmap, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.augment.registry import (
    OFFLINE,
    ONLINE_KEYS,
    OP_DEFS,
    Param,
    online_param,
    ops_that_run,
)
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.widgets.layouts import STRETCH, row_layout
from guiapp.ui.widgets.thumbnails import ColorScale, render

#: Source samples for a preview: ``(x, captions)``, a few rows of the data to augment.
SampleSource = Callable[[], tuple[np.ndarray, list[str]]]
PREVIEW_ROWS = 4
PREVIEW_COPIES = 3
INT_LIMIT = 2**31 - 1
ONLINE_LABELS = {
    "flip_h": "flip left-right",
    "flip_v": "flip up-down",
    "rot90": "turn 0/90/180/270°",
    "noise_std": "noise std",
    "reverse": "read backwards",
}
ONLINE_HELP = {
    "flip_h": "mirror half the samples of each batch left to right",
    "flip_v": "mirror half the samples of each batch top to bottom",
    "rot90": "turn each sample by 0, 90, 180 or 270 degrees (square samples)",
    "reverse": "read half the rows backwards (1-D k-mer rows: the reverse strand)",
}


# ---------------------------------------------------------------------- preview (numpy)
def offline_preview(x: np.ndarray, spec: dict[str, Any], seed: int = 0) -> list[np.ndarray]:
    """``PREVIEW_COPIES`` augmented copies of the rows ``x`` (each ``(n, *shape)``), by the
    offline ops the job runs (checked against the samples' shape and dtype: a UserError
    names what does not fit)."""
    from guiapp.core.augment.offline import Augmenter

    aug = Augmenter(spec, x.shape[1:], x.dtype)
    rng = np.random.default_rng(seed)
    return [aug.apply(rng, np.array(x, copy=True)) for _ in range(PREVIEW_COPIES)]


def online_preview(x: np.ndarray, spec: dict[str, Any], seed: int = 0) -> list[np.ndarray]:
    """``PREVIEW_COPIES`` batches of ``x`` as training would augment them (the numpy twin of
    the pipeline's TensorFlow ops; a ValueError says what does not fit)."""
    from guiapp.core.augment.online import AugmentSpec, augment_numpy

    s = AugmentSpec.from_json(spec)
    s.check_shape(tuple(x.shape[1:]))
    rng = np.random.default_rng(seed)
    return [augment_numpy(x, s, rng) for _ in range(PREVIEW_COPIES)]


class AugmentPreview(QWidget):
    """A grid: one line per source sample, the original then its augmented copies."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(2)
        self.cells: list[QLabel] = []

    def clear(self) -> None:
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.setParent(None)
                widget.deleteLater()
        self.cells = []

    def show_samples(self, x: np.ndarray, copies: list[np.ndarray], captions: list[str]) -> None:
        self.clear()
        finite = x[np.isfinite(x)] if x.dtype.kind == "f" else x
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        scale = ColorScale(True, lo, hi if hi > lo else lo + 1)
        size = 48 if x.ndim >= 3 else 96
        for c, title in enumerate(["original", *[f"draw {i + 1}" for i in range(len(copies))]]):
            head = QLabel(title)
            head.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.grid.addWidget(head, 0, c + 1)
        for r in range(len(x)):
            self.grid.addWidget(QLabel(captions[r] if r < len(captions) else ""), r + 1, 0)
            for c, arr in enumerate([x, *copies]):
                cell = QLabel()
                image = render(arr[r], scale)
                h = size if x.ndim >= 3 else 8
                pix = QPixmap.fromImage(image).scaled(size, h, Qt.AspectRatioMode.IgnoreAspectRatio)
                cell.setPixmap(pix)
                cell.setToolTip("original" if c == 0 else f"draw {c}")
                self.grid.addWidget(cell, r + 1, c + 1)
                self.cells.append(cell)
        for c in range(len(copies) + 2):
            self.grid.setColumnStretch(c, 0)
        self.grid.setColumnStretch(len(copies) + 2, 1)


class _AugmentForm(QWidget):
    """What both forms share: the JSON text kept in step, and the preview."""

    changed = Signal()
    preview_kind = OFFLINE

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._syncing = False
        self.sample_source: SampleSource | None = None
        self.json_problem = QLabel("")
        self.json_problem.setWordWrap(True)
        self.json_problem.setStyleSheet("color: #c62828;")
        self.json_problem.setVisible(False)
        self.preview_button = QPushButton("Preview")
        self.preview_button.setToolTip("Augment a few samples with these settings (numpy)")
        self.preview_button.clicked.connect(self.preview)
        self.preview_note = QLabel("")
        self.preview_note.setWordWrap(True)
        self.preview_grid = AugmentPreview()
        self.calls = BackgroundCalls(threads=1, parent=self, done=self._previewed)
        self.calls.failed.connect(lambda _k, text: self._preview_failed(text))
        self._preview_key = 0

    def _lay_out(self, *parts: QWidget | QLayout) -> None:
        """The form's column: ``parts`` (its controls and its JSON text), then what both
        forms show under them: the JSON's problem, Preview with its note, the preview."""
        preview_row = QHBoxLayout()
        preview_row.addWidget(self.preview_button)
        preview_row.addWidget(self.preview_note, 1)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        for part in (*parts, self.json_problem, preview_row, self.preview_grid):
            if isinstance(part, QLayout):
                col.addLayout(part)
            else:
                col.addWidget(part)

    # ------------------------------------------------------------------ to implement
    def spec(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def _fill(self, spec: dict[str, Any]) -> None:
        """Set the form's controls to ``spec`` (``{}``: augment nothing)."""
        raise NotImplementedError

    def _text(self) -> str:
        raise NotImplementedError

    def _set_text(self, text: str) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ two-way JSON
    @contextmanager
    def _syncing_now(self) -> Iterator[None]:
        """While the form sets its text, or the text its form: no change echoes back."""
        syncing, self._syncing = self._syncing, True
        try:
            yield
        finally:
            self._syncing = syncing

    def set_spec(self, spec: dict[str, Any] | None) -> None:
        """Show ``spec`` (None: augment nothing) in the form, and in the text unless the
        text is what set it."""
        syncing = self._syncing
        with self._syncing_now():
            self._fill(spec or {})
        if not syncing:
            self._form_changed()

    def _form_changed(self) -> None:
        if self._syncing:
            return
        spec = self.spec()
        with self._syncing_now():
            self._set_text(self._dump(spec) if spec else "")
        self.json_problem.setVisible(False)
        self.changed.emit()

    @staticmethod
    def _dump(spec: dict[str, Any]) -> str:
        return json.dumps(spec)

    def _text_changed(self) -> None:
        if self._syncing:
            return
        text = self._text().strip()
        problem = ""
        if text:
            try:
                value = json.loads(text)
            except ValueError as exc:
                problem = f"JSON: {exc}"
            else:
                problem = self.problem_of(value)
        else:
            value = None
        if problem:
            self.json_problem.setText(problem + " (the form keeps its last valid values)")
            self.json_problem.setVisible(True)
        else:
            self.json_problem.setVisible(False)
            with self._syncing_now():
                self.set_spec(value)
        self.changed.emit()

    def problem_of(self, value: Any) -> str:
        raise NotImplementedError

    def text_problem(self) -> str:
        """Why the JSON text is not what the form holds ("" when it is)."""
        return self.json_problem.text() if self.json_problem.isVisibleTo(self) else ""

    # ------------------------------------------------------------------ preview
    def preview(self) -> None:
        spec = self.spec()
        if self.sample_source is None:
            self._preview_failed("No samples to preview: choose the data first.")
            return
        if not spec:
            self._preview_failed("Add an augmentation first.")
            return
        self._preview_key += 1
        self.preview_note.setText("Augmenting a few samples…")
        fn = offline_preview if self.preview_kind == OFFLINE else online_preview
        source = self.sample_source

        def work() -> tuple[np.ndarray, list[np.ndarray], list[str]]:
            x, captions = source()
            return x, fn(x, spec), captions

        self.calls.submit(self._preview_key, work)

    def _previewed(self, key: object, result: object) -> None:
        if key != self._preview_key:
            return
        # What ``work`` returned, through BackgroundCalls' ``Signal(object, object)``: a Qt
        # signal's payload reaches the slot untyped.
        x, copies, captions = cast(tuple[np.ndarray, list[np.ndarray], list[str]], result)
        self.preview_grid.show_samples(x, copies, captions)
        where = (
            "as the generation writes them"
            if self.preview_kind == OFFLINE
            else ("by the numpy twin of the ops training runs in TensorFlow")
        )
        self.preview_note.setText(f"{len(x)} sample(s), augmented {where}.")

    def _preview_failed(self, text: str) -> None:
        self.preview_grid.clear()
        self.preview_note.setText(f"No preview: {text}")


# ---------------------------------------------------------------------- offline
def _param_widget(param: Param) -> QWidget:
    widget: QWidget
    if isinstance(param.kind, tuple):
        widget = QComboBox()
        widget.addItems([str(v) for v in param.kind])
        widget.setCurrentText(str(param.default))
    elif param.kind == "int":
        widget = QSpinBox()
        widget.setRange(int(max(param.low, -INT_LIMIT)), int(min(param.high, INT_LIMIT)))
        widget.setValue(int(param.default))
    else:
        widget = QDoubleSpinBox()
        widget.setDecimals(3)
        widget.setRange(max(param.low, -1e9), min(param.high, 1e9))
        widget.setSingleStep(0.05 if param.high <= 1 else 0.1)
        widget.setValue(float(param.default))
    widget.setToolTip(_range_text(param))
    return widget


def _range_text(param: Param) -> str:
    if isinstance(param.kind, tuple):
        return f"one of {', '.join(map(str, param.kind))}; default {param.default}"
    return f"{param.low:g} to {param.high:g}; default {param.default:g}"


def _widget_value(widget: QWidget, param: Param) -> Any:
    if isinstance(widget, QComboBox):
        kind = param.kind
        assert isinstance(kind, tuple)
        return kind[widget.currentIndex()]
    if isinstance(widget, QSpinBox):
        return widget.value()
    assert isinstance(widget, QDoubleSpinBox)
    return round(widget.value(), 6)


def _set_widget(widget: QWidget, value: Any) -> None:
    if isinstance(widget, QComboBox):
        widget.setCurrentText(str(value))
    elif isinstance(widget, QSpinBox):
        widget.setValue(int(value))
    elif isinstance(widget, QDoubleSpinBox):
        widget.setValue(float(value))


class OpRow(QFrame):
    """One offline op: its name, a field per parameter, and a remove button."""

    changed = Signal()
    remove_requested = Signal(object)

    def __init__(self, name: str, values: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.name = name
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.fields: dict[str, QWidget] = {}
        head = QHBoxLayout()
        head.addWidget(QLabel(f"<b>{name}</b>"))
        head.addStretch(1)
        self.remove_button = QToolButton()
        self.remove_button.setText("✕")
        self.remove_button.setToolTip(f"Remove {name}")
        self.remove_button.clicked.connect(lambda: self.remove_requested.emit(self))
        head.addWidget(self.remove_button)
        form = QFormLayout()
        form.setContentsMargins(4, 0, 4, 2)
        for key, param in OP_DEFS[name].params.items():
            widget = _param_widget(param)
            if values and key in values:
                _set_widget(widget, values[key])
            self.fields[key] = widget
            if isinstance(widget, QComboBox):
                widget.currentIndexChanged.connect(self.changed)
            elif isinstance(widget, (QSpinBox, QDoubleSpinBox)):
                widget.valueChanged.connect(self.changed)
            form.addRow("probability" if key == "p" else key.replace("_", " "), widget)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 2, 4, 2)
        col.setSpacing(2)
        col.addLayout(head)
        col.addLayout(form)

    def values(self) -> dict[str, Any]:
        params = OP_DEFS[self.name].params
        return {"op": self.name, **{k: _widget_value(w, params[k]) for k, w in self.fields.items()}}


class OfflineAugmentForm(_AugmentForm):
    """Offline augmentation for ``guiapp generate --augment``: copies and a list of ops."""

    preview_kind = OFFLINE

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.copies = QSpinBox()
        self.copies.setRange(1, 1000)
        self.copies.setToolTip(
            "Each generated sample is written this many times, each copy "
            "augmented on its own (rows count the copies)"
        )
        self.add_op = QComboBox()
        for name in ops_that_run(OFFLINE):
            self.add_op.addItem(name, name)
        self.add_button = QPushButton("Add op")
        self.add_button.clicked.connect(lambda: self.append_op(str(self.add_op.currentData())))
        self.rows: list[OpRow] = []
        self.ops_box = QVBoxLayout()
        self.ops_box.setSpacing(2)
        self.json_text = QPlainTextEdit()
        self.json_text.setPlaceholderText('JSON, e.g. {"copies": 2, "ops": [{"op": "flip"}]}')
        self.json_text.setMaximumHeight(64)
        self.json_text.textChanged.connect(self._text_changed)
        self.copies.valueChanged.connect(self._form_changed)

        top = row_layout("Copies", self.copies, STRETCH, self.add_op, self.add_button)
        self._lay_out(top, self.ops_box, QLabel("As JSON (edit either):"), self.json_text)

    def append_op(self, name: str, values: dict[str, Any] | None = None) -> OpRow:
        row = OpRow(name, values)
        row.changed.connect(self._form_changed)
        row.remove_requested.connect(self.remove_op)
        self.rows.append(row)
        self.ops_box.addWidget(row)
        self._form_changed()
        return row

    def remove_op(self, row: OpRow) -> None:
        if row in self.rows:
            self.rows.remove(row)
            self.ops_box.removeWidget(row)
            row.hide()
            row.setParent(None)
            row.deleteLater()
            self._form_changed()

    def spec(self) -> dict[str, Any] | None:
        """``{"copies": N, "ops": [...]}``, or None when it augments nothing."""
        if not self.rows and self.copies.value() == 1:
            return None
        return {"copies": self.copies.value(), "ops": [r.values() for r in self.rows]}

    def _fill(self, spec: dict[str, Any]) -> None:
        for row in list(self.rows):
            self.remove_op(row)
        self.copies.setValue(int(spec.get("copies", 1)))
        for op in spec.get("ops", []):
            self.append_op(op["op"], op)

    def _text(self) -> str:
        return self.json_text.toPlainText()

    def _set_text(self, text: str) -> None:
        self.json_text.setPlainText(text)

    def problem_of(self, value: Any) -> str:
        """What in parsed JSON the registry does not know ("" when the form can hold it)."""
        if isinstance(value, list):
            value = {"ops": value}
        if not isinstance(value, dict):
            return 'give an object like {"copies": 1, "ops": [...]}'
        unknown = sorted(set(value) - {"copies", "ops"})
        if unknown:
            return f"unknown key '{unknown[0]}' (known: copies, ops)"
        copies = value.get("copies", 1)
        if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= 1000:
            return f"copies must be an integer in 1..1000, got {copies!r}"
        ops = value.get("ops", [])
        if not isinstance(ops, list):
            return "ops must be a list"
        known = ops_that_run(OFFLINE)
        for i, op in enumerate(ops):
            name = op.get("op") if isinstance(op, dict) else None
            if name not in known:
                return f"ops[{i}]: unknown op {name!r}; known: {', '.join(known)}"
            params = OP_DEFS[name].params
            for key, v in op.items():
                if key == "op":
                    continue
                if key not in params:
                    return f"ops[{i}] ({name}): unknown parameter '{key}'"
                bad = _out_of_range(v, params[key])
                if bad:
                    return f"ops[{i}] ({name}): parameter '{key}' {bad}"
        return ""

    def fit_to(self, shape: tuple[int, ...], dtype: str) -> None:
        """Mark the ops that cannot work on samples of this shape and dtype (their tooltip
        says why); the job's check refuses them anyway."""
        from guiapp.core.augment.check import check_spec
        from guiapp.core.errors import UserError

        # A QComboBox's own model is a QStandardItemModel (Qt's documentation); the stub
        # returns the abstract model it may be replaced by.
        model = cast(QStandardItemModel, self.add_op.model())
        for i in range(self.add_op.count()):
            name = str(self.add_op.itemData(i))
            try:
                check_spec({"ops": [{"op": name}]}, tuple(shape), np.dtype(dtype))
                why = ""
            except UserError as exc:
                why = str(exc).split(": ", 2)[-1]
            except (TypeError, ValueError):
                why = ""
            item = model.item(i)
            item.setEnabled(not why)
            item.setToolTip(why or _op_summary(name))
        if not model.item(self.add_op.currentIndex()).isEnabled():
            fits = [i for i in range(self.add_op.count()) if model.item(i).isEnabled()]
            if fits:
                self.add_op.setCurrentIndex(fits[0])


def _op_summary(name: str) -> str:
    params = OP_DEFS[name].params
    return ", ".join(f"{k} ({_range_text(p)})" for k, p in params.items()) or "no parameters"


def _out_of_range(v: Any, param: Param) -> str:
    if isinstance(param.kind, tuple):
        return "" if v in param.kind else f"must be one of {', '.join(map(repr, param.kind))}"
    ok = (int, float) if param.kind == "num" else (int,)
    if isinstance(v, bool) or not isinstance(v, ok):
        return "must be a number" if param.kind == "num" else "must be an integer"
    if not param.low <= v <= param.high:
        return f"must be in [{param.low:g}, {param.high:g}], got {v!r}"
    return ""


# ---------------------------------------------------------------------- online
class OnlineAugmentForm(_AugmentForm):
    """On-the-fly augmentation for ``guiapp train --augment``: one field per online key.

    ``text`` is the JSON as a one-line edit (what the project keeps with the form)."""

    preview_kind = "online"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fields: dict[str, QWidget] = {}
        self._help: dict[str, str] = {}
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        for key, k in ONLINE_KEYS.items():
            widget: QWidget
            if k.value is None:
                widget = QCheckBox(ONLINE_LABELS.get(key, key))
                widget.setToolTip(ONLINE_HELP.get(key, ""))
                widget.toggled.connect(self._form_changed)
                form.addRow(widget)
            else:
                param = online_param(key)
                widget = QDoubleSpinBox()
                widget.setDecimals(3)
                widget.setRange(param.low, min(param.high, 1e6))
                widget.setSingleStep(0.05)
                widget.setSpecialValueText("off")
                widget.setToolTip(f"{_range_text(param)}; 0 is off")
                widget.valueChanged.connect(self._form_changed)
                form.addRow(ONLINE_LABELS.get(key, key), widget)
            self.fields[key] = widget
            self._help[key] = widget.toolTip()
        self.text = QLineEdit()
        self.text.setPlaceholderText('JSON, e.g. {"flip_h": true}')
        self.text.textChanged.connect(self._text_changed)
        self._lay_out(form, self.text)

    def fit_to(self, shape: tuple[int, ...], dtype: str) -> None:
        """Grey the fields that cannot act on samples of this shape and dtype, saying why
        (flips and rot90 need 2D samples, rot90 square ones; noise float ones: on integer
        samples it would change nothing)."""
        from guiapp.core.augment.online import AugmentSpec

        for key, widget in self.fields.items():
            why = ""
            if key == "noise_std":
                if np.dtype(dtype).kind != "f":
                    why = f"noise works on float samples; these are {dtype}"
            else:
                try:
                    AugmentSpec.from_json({key: True}).check_shape(tuple(shape))
                except ValueError as exc:
                    why = str(exc)
            widget.setEnabled(not why)
            widget.setToolTip(why or self._help[key])

    def spec(self) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        for key, widget in self.fields.items():
            if isinstance(widget, QCheckBox):
                if widget.isChecked():
                    out[key] = True
            elif isinstance(widget, QDoubleSpinBox) and widget.value() > 0:
                out[key] = round(widget.value(), 6)
        return out or None

    def _fill(self, spec: dict[str, Any]) -> None:
        for key, widget in self.fields.items():
            if isinstance(widget, QCheckBox):
                widget.setChecked(bool(spec.get(key, False)))
            elif isinstance(widget, QDoubleSpinBox):
                widget.setValue(float(spec.get(key, 0.0)))

    def _text(self) -> str:
        return self.text.text()

    def _set_text(self, text: str) -> None:
        self.text.setText(text)

    def problem_of(self, value: Any) -> str:
        from guiapp.core.augment.online import AugmentSpec

        if not isinstance(value, dict):
            return 'give an object like {"flip_h": true}'
        try:
            AugmentSpec.from_json(value)
        except (TypeError, ValueError) as exc:
            return str(exc)
        return ""
