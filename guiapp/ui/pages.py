"""The pages the sidebar switches between. For now each says what it will do."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
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

    def set_project(self, project: Project) -> None:
        """Show ``project``; pages that display project content override this."""


class PlaceholderPage(Page):
    """A page whose content arrives later: the sentence and, centred, what it waits for."""

    arrives_with = ""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pending_label = QLabel(f"This page arrives with {self.arrives_with}.")
        self.pending_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.pending_label.setEnabled(False)
        self.body.addWidget(self.pending_label, 1)


class DatasetsPage(Page):
    title = "Datasets"
    blurb = (
        "Generate or import labelled arrays once into a fast on-disk HDF5 store, "
        "and see which datasets this project uses."
    )
    icon = SP.SP_DirIcon
    COLUMNS = ("Name", "Path", "Exists")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        buttons = QHBoxLayout()
        self.generate_button = QPushButton("Generate…")
        self.import_button = QPushButton("Import…")
        for button in (self.generate_button, self.import_button):
            button.setEnabled(False)
            button.setToolTip("arrives with the generation engine")
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.empty_label = QLabel("This project has no datasets yet.")
        self.empty_label.setEnabled(False)
        self.body.addLayout(buttons)
        self.body.addWidget(self.table, 1)
        self.body.addWidget(self.empty_label)
        self._project: Project | None = None

    def set_project(self, project: Project) -> None:
        self._project = project
        self.table.setRowCount(len(project.datasets))
        for row, ref in enumerate(project.datasets):
            exists = ref.path.exists()
            cells = (ref.name, str(ref.path), "yes" if exists else "no")
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if col == 2 and not exists:
                    item.setForeground(self._warning_color())
                self.table.setItem(row, col, item)
        self.empty_label.setVisible(not project.datasets)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._project is not None:
            self.set_project(self._project)  # recolour for the new theme

    def _warning_color(self) -> QColor:
        """Red that reads on the current background, light or dark."""
        dark = self.palette().color(QPalette.ColorRole.Base).lightness() < 128
        return QColor(255, 110, 110) if dark else QColor(190, 30, 30)


class BrowserPage(PlaceholderPage):
    arrives_with = "the sample browser"
    title = "Browser"
    blurb = (
        "Scroll through any dataset as a grid of thumbnails with labels, reading only "
        "the rows on screen, even for billions of samples."
    )
    icon = SP.SP_FileDialogContentsView


class ModelPage(PlaceholderPage):
    arrives_with = "the model editor"
    title = "Model"
    blurb = (
        "Define a Keras CNN as a list of layers, start from a template, and check its "
        "shapes and parameter count before training."
    )
    icon = SP.SP_FileDialogDetailedView


class TrainingPage(PlaceholderPage):
    arrives_with = "the training runner"
    title = "Training"
    blurb = (
        "Train a model on one GPU, several GPUs or several machines, and watch loss, "
        "metrics and the input-bound fraction live."
    )
    icon = SP.SP_ComputerIcon


class RunsPage(PlaceholderPage):
    arrives_with = "the run store"
    title = "Runs"
    blurb = (
        "Compare finished runs: their configs, learning curves, confusion matrices "
        "and per-class scores, each reproducible from its folder."
    )
    icon = SP.SP_FileDialogListView


PAGE_TYPES: tuple[type[Page], ...] = (DatasetsPage, BrowserPage, ModelPage, TrainingPage, RunsPage)
