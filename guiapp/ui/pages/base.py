"""The base of every page: a heading, one sentence of purpose, then the page's content."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QLabel,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.project import Project

SP = QStyle.StandardPixmap


class Page(QWidget):
    """A titled page: a heading, one sentence of purpose, then the page's own content."""

    title = ""
    blurb = ""
    icon = SP.SP_FileIcon

    #: the page changed the project's content (the window marks it unsaved)
    project_changed = Signal()
    #: the page started a background job (a ``CliJob``); the window lists it in the Jobs panel
    job_started = Signal(object)
    # What a page may ask of the window, declared once here so that the window wires every
    # page the same way (a page that never asks simply never emits):
    #: open dataset rows in the Browser: (rows, title, dataset, predictions file, filter)
    show_samples = Signal(object, str, str, str, object)
    #: a training run ended: (status, run folder); the Runs page reads the runs again
    run_ended = Signal(str, str)
    #: show a run folder in the Runs page: (path, name)
    open_run = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"page_{self.title.lower()}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        heading = QLabel(self.title)
        font = QFont(heading.font())
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        heading.setFont(font)
        self.blurb_label = QLabel(self.blurb)
        self.blurb_label.setWordWrap(True)
        self.blurb_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(heading)
        layout.addWidget(self.blurb_label)
        self.body = QVBoxLayout()
        layout.addLayout(self.body, 1)
        self._project: Project | None = None
        self.build()

    def build(self) -> None:
        """The page's own content under its heading, laid out in :attr:`body`: each page
        makes its widgets here (its ``__init__`` is this class's)."""

    @property
    def project(self) -> Project:
        """The project shown (set by :meth:`set_project` before the page is used)."""
        assert self._project is not None
        return self._project

    def every(self, ms: int, slot: Callable[[], None]) -> QTimer:
        """A started timer of the page calling ``slot`` every ``ms`` milliseconds."""
        timer = QTimer(self)
        timer.setInterval(ms)
        timer.timeout.connect(slot)
        timer.start()
        return timer

    def set_project(self, project: Project) -> None:
        """Show ``project``; pages that display project content override this."""

    def project_updated(self) -> None:
        """Another page changed the current project (e.g. added a dataset)."""


if TYPE_CHECKING:
    #: The base of a part of a page mixed into it (``class RunExport(PagePart)``): mypy
    #: checks the part as a :class:`Page`; at run time it is a plain class, and the page
    #: that mixes it in is the one ``QWidget``.
    PagePart = Page
else:
    PagePart = object
