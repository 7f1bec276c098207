"""A typed editor for one layer, built from ``layer_params`` metadata.

Integers get spin boxes, choices combo boxes, booleans check boxes; numbers, integer
tuples (``3`` or ``3, 3``), shapes and nested layers get line edits parsed on each edit.
Every parameter has a message line under it for the problems ``validate`` found there.
"""

from __future__ import annotations

import json
import re
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

INT_MAX = 2**31 - 1
ERROR_STYLE = "color: #c62828;"


def format_value(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "layers":
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def parse_value(text: str, meta: dict[str, Any]) -> Any:
    """The JSON value of a line edit's text; raises ValueError with a short message."""
    kind, text = meta["kind"], text.strip()
    if not text:
        if meta.get("nullable"):
            return None
        raise ValueError("needs a value")
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    if kind == "layers":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON list of layers ({exc.msg})") from None
    parts = [p for p in re.split(r"[,\sx]+", text) if p]
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"{text!r}: give whole numbers like 3 or 3, 3") from None
    if kind == "ints" and len(numbers) == 1:
        return numbers[0]
    return numbers


def summary_text(layer: dict[str, Any]) -> str:
    """``filters=16, kernel_size=3, activation=relu``: the non-default parameters."""
    from guiapp.core.model import layer_params

    try:
        metas = layer_params(str(layer.get("type")))
    except KeyError:
        return ""
    parts = []
    for meta in metas:
        if meta["name"] not in layer:
            continue
        value = layer[meta["name"]]
        default = meta["default"]
        same = value == default or (isinstance(default, list) and [value] * len(default) == default)
        if meta.get("required") or not same:
            if meta["kind"] == "layers":
                parts.append(f"{meta['name']}=[{len(value) if isinstance(value, list) else '?'}]")
            else:
                parts.append(f"{meta['name']}={format_value(value, meta['kind']).replace(' ', '')}")
    return ", ".join(parts)


class LayerEditor(QWidget):
    """Edits one layer dict in place; ``changed`` after every accepted edit."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layer: dict[str, Any] = {}
        self.widgets: dict[str, QWidget] = {}
        self.errors: dict[str, QLabel] = {}
        self.form = QFormLayout(self)
        self.form.setContentsMargins(4, 4, 4, 4)
        self.empty = QLabel("Select a layer to edit its parameters.")
        self.empty.setEnabled(False)
        self.form.addRow(self.empty)

    def set_layer(self, layer: dict[str, Any] | None) -> None:
        """Build the editors for ``layer`` (a dict that is edited in place), or clear."""
        from guiapp.core.model import layer_params

        while self.form.rowCount():
            self.form.removeRow(0)
        self.widgets.clear()
        self.errors.clear()
        self.layer = layer if layer is not None else {}
        if layer is None:
            self.empty = QLabel("Select a layer to edit its parameters.")
            self.empty.setEnabled(False)
            self.form.addRow(self.empty)
            return
        metas = layer_params(str(layer["type"]))
        if not metas:
            self.form.addRow(QLabel(f"{layer['type']} has no parameters."))
        for meta in metas:
            editor = self._editor(meta, layer.get(meta["name"], meta["default"]))
            editor.setToolTip(meta.get("doc", ""))
            error = QLabel()
            error.setStyleSheet(ERROR_STYLE)
            error.setWordWrap(True)
            error.setVisible(False)
            cell = QWidget()
            column = QVBoxLayout(cell)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(1)
            column.addWidget(editor)
            column.addWidget(error)
            label = QLabel(meta["name"] + ("*" if meta.get("required") else ""))
            label.setToolTip(meta.get("doc", ""))
            self.form.addRow(label, cell)
            self.widgets[meta["name"]] = editor
            self.errors[meta["name"]] = error

    def _editor(self, meta: dict[str, Any], value: Any) -> QWidget:
        name, kind = meta["name"], meta["kind"]
        if kind == "int" and not meta.get("nullable"):
            spin = QSpinBox()
            low = int(meta.get("minimum", -INT_MAX))
            spin.setRange(low, int(meta.get("maximum", INT_MAX)))
            spin.setValue(int(value) if value is not None else low)
            spin.valueChanged.connect(lambda v, n=name: self._set(n, int(v)))
            return spin
        if kind == "bool":
            box = QCheckBox()
            box.setChecked(bool(value))
            box.toggled.connect(lambda v, n=name: self._set(n, bool(v)))
            return box
        if kind == "choice":
            combo = QComboBox()
            combo.addItems(meta.get("choices", []))
            combo.setCurrentText(str(value))
            combo.currentTextChanged.connect(lambda v, n=name: self._set(n, v))
            return combo
        edit = QLineEdit(format_value(value, kind))
        hint = {"ints": "3 or 3, 3", "shape": "e.g. -1, 4", "layers": "JSON list of layers"}
        edit.setPlaceholderText("null" if meta.get("nullable") else hint.get(kind, ""))
        edit.textChanged.connect(lambda text, m=meta: self._parse(m, text))
        return edit

    def _parse(self, meta: dict[str, Any], text: str) -> None:
        try:
            value = parse_value(text, meta)
        except ValueError as exc:
            self.show_error(meta["name"], f"{meta['name']}: {exc}")
            return
        self.show_error(meta["name"], "")
        self._set(meta["name"], value)

    def _set(self, name: str, value: Any) -> None:
        self.layer[name] = value
        self.changed.emit()

    def show_error(self, name: str, message: str) -> None:
        label = self.errors.get(name)
        if label is not None:
            label.setText(message)
            label.setVisible(bool(message))

    def show_errors(self, by_param: dict[str, str]) -> None:
        """Show ``validate``'s messages next to their parameters (and clear the others)."""
        for name, label in self.errors.items():
            message = by_param.get(name, "")
            label.setText(message)
            label.setVisible(bool(message))
