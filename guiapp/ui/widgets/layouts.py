"""Small layout pieces the pages share: a button with its tooltip, a column of widgets in
one widget, a row of widgets, a splitter of widgets, a wrapping label (red for a problem the user must fix)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

#: the colour of a problem the user must fix, wherever it is shown
PROBLEM_COLOR = "#c62828"
#: in a :func:`row_layout`: the room left over, which pushes what follows to the right end
STRETCH = None


def column(*widgets: QWidget) -> QWidget:
    box = QWidget()
    col = QVBoxLayout(box)
    col.setContentsMargins(0, 0, 0, 0)
    for i, w in enumerate(widgets):
        col.addWidget(w, 1 if i == len(widgets) - 1 else 0)
    return box


def button(text: str, tip: str, slot: Callable[..., Any] | None = None) -> QPushButton:
    """A push button with its tooltip (and, given ``slot``, what a click does)."""
    b = QPushButton(text)
    b.setToolTip(tip)
    if slot is not None:
        b.clicked.connect(slot)
    return b


def row_layout(*items: QWidget | str | None) -> QHBoxLayout:
    """A row of ``items``, left to right: widgets, texts (each a label) and
    :data:`STRETCH`."""
    layout = QHBoxLayout()
    for item in items:
        if item is STRETCH:
            layout.addStretch(1)
        elif isinstance(item, str):
            layout.addWidget(QLabel(item))
        else:
            layout.addWidget(item)
    return layout


def wrapping_label(*, problem: bool = False) -> QLabel:
    """An empty label that wraps its text; red when it says what the user must fix."""
    label = QLabel()
    label.setWordWrap(True)
    if problem:
        label.setStyleSheet(f"color: {PROBLEM_COLOR};")
    return label


def splitter(
    orientation: Qt.Orientation,
    *widgets: QWidget,
    sizes: Sequence[int] = (),
    stretch: Sequence[int] = (),
) -> QSplitter:
    """A splitter of ``widgets`` with initial ``sizes`` (pixels) or ``stretch`` factors."""
    split = QSplitter(orientation)
    for w in widgets:
        split.addWidget(w)
    if sizes:
        split.setSizes(list(sizes))
    for i, factor in enumerate(stretch):
        split.setStretchFactor(i, factor)
    return split
