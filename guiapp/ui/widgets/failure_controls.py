"""A failed job's option, shown on the control that sets it.

A job's ``failed`` event names the option its error concerns (``--on-error``: docs/ERRORS.md,
"The failed event"); each dialog or page that builds such jobs declares, once, which of
its controls sets which option (a dict ``option -> attribute name``), and
:func:`point_at` marks that control and puts the keyboard focus on it. Nothing here reads
the message: a failure without an option (or with one the form has no control for) marks
nothing, and the form shows its message as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtWidgets import QWidget

from guiapp.core.events import Failure
from guiapp.ui.widgets.layouts import PROBLEM_COLOR

#: the property a marked control carries (tests and style sheets can select on it)
MARK = "failedOption"
MARK_STYLE = f"border: 2px solid {PROBLEM_COLOR};"


def control_for(owner: object, controls: Mapping[str, str], option: str | None) -> QWidget | None:
    """The control of ``owner`` that sets ``option`` (None: no such control)."""
    name = controls.get(option or "")
    widget: object = owner if name else None
    for part in (name or "").split("."):  # "experiment.early_stopping": a nested form's
        widget = getattr(widget, part, None)
    return widget if isinstance(widget, QWidget) else None


def point_at(owner: object, controls: Mapping[str, str], failure: Failure) -> QWidget | None:
    """Mark the control of ``owner`` that sets ``failure.option`` (a red border, the
    failure's message as its tooltip) and give it the focus; None when it has none."""
    widget = control_for(owner, controls, failure.option)
    if widget is None:
        return None
    target = _target(widget)
    clear_mark(owner, controls)
    target.setProperty(MARK, True)
    target.setProperty("_tooltip_before_failure", target.toolTip())
    target.setStyleSheet(MARK_STYLE)
    target.setToolTip(failure.message)
    target.setFocus()
    return target


def _target(widget: QWidget) -> QWidget:
    """The widget that takes the mark and the focus: a file field's line edit."""
    edit = getattr(widget, "edit", None)
    return edit if isinstance(edit, QWidget) else widget


def marked(owner: object, controls: Mapping[str, str]) -> list[QWidget]:
    """The controls of ``owner`` that :func:`point_at` marked."""
    out = []
    for option in controls:
        widget = control_for(owner, controls, option)
        if widget is None:
            continue
        target = _target(widget)
        if target.property(MARK):
            out.append(target)
    return out


def clear_mark(owner: object, controls: Mapping[str, str]) -> None:
    """Undo :func:`point_at` (the next Start, or a new failure elsewhere)."""
    for target in marked(owner, controls):
        target.setProperty(MARK, False)
        target.setStyleSheet("")
        target.setToolTip(str(target.property("_tooltip_before_failure") or ""))
