"""A form's values as JSON and back: what the window keeps in the project to show again.

:func:`form_values` reads every spin box, combo box, check box and line edit that is an
attribute of a form object (``form.epochs``, ``form.devices``, ...); :func:`set_form_values`
puts them back, skipping names the form no longer has and combo entries it does not list.
A combo box is kept by its text (an editable one may hold text of its own).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QAbstractSpinBox, QCheckBox, QComboBox, QLineEdit, QSpinBox


def _fields(form: object) -> dict[str, Any]:
    out = {}
    for name, value in vars(form).items():
        if not name.startswith("_") and isinstance(
            value, (QAbstractSpinBox, QComboBox, QCheckBox, QLineEdit)
        ):
            out[name] = value
    return out


def form_values(form: object) -> dict[str, Any]:
    """``{attribute: value}`` of the form's fields (JSON)."""
    out: dict[str, Any] = {}
    for name, w in _fields(form).items():
        if isinstance(w, QComboBox):
            out[name] = w.currentText()
        elif isinstance(w, QCheckBox):
            out[name] = w.isChecked()
        elif isinstance(w, QLineEdit):
            out[name] = w.text()
        elif hasattr(w, "value"):
            out[name] = w.value()
    return out


def set_form_values(form: object, values: object) -> None:
    """Put ``values`` (from :func:`form_values`) back into the form's fields."""
    if not isinstance(values, dict):
        return
    fields = _fields(form)
    for name, value in values.items():
        w = fields.get(name)
        if w is None:
            continue
        if isinstance(w, QComboBox) and isinstance(value, str):
            at = w.findText(value)
            if at >= 0:
                w.setCurrentIndex(at)
            elif w.isEditable():
                w.setEditText(value)
        elif isinstance(w, QCheckBox) and isinstance(value, bool):
            w.setChecked(value)
        elif isinstance(w, QLineEdit) and isinstance(value, str):
            w.setText(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(w, QSpinBox):
                w.setValue(int(value))
            elif hasattr(w, "setValue"):
                w.setValue(float(value))
