"""A column of widgets in one widget (no margins; the last one takes the room left)."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget


def column(*widgets: QWidget) -> QWidget:
    box = QWidget()
    col = QVBoxLayout(box)
    col.setContentsMargins(0, 0, 0, 0)
    for i, w in enumerate(widgets):
        col.addWidget(w, 1 if i == len(widgets) - 1 else 0)
    return box
