"""Small form pieces the dialogs share: a path field with a Browse button, count parsing."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget


def parse_count(text: str, what: str) -> int:
    """A positive row count from ``100000``, ``100,000``, ``100_000`` or ``1e5``."""
    clean = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    try:
        value = float(clean) if "e" in clean.lower() else int(clean)
    except ValueError:
        raise ValueError(f"{what}: {text.strip()!r} is not a number of rows") from None
    if value != int(value) or value < 1:
        raise ValueError(f"{what}: give a whole number of at least 1, got {text.strip()!r}")
    return int(value)


class FileField(QWidget):
    """A line edit for a path and a "Browse…" button opening a file (or folder) dialog."""

    changed = Signal(str)

    def __init__(
        self,
        caption: str,
        file_filter: str = "All files (*)",
        *,
        save: bool = False,
        folder: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.caption = caption
        self.file_filter = file_filter
        self.save = save
        self.folder = folder
        self.edit = QLineEdit()
        self.button = QPushButton("Browse…")
        self.button.clicked.connect(self.browse)
        self.edit.textChanged.connect(self.changed)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(self.button)

    def path(self) -> str:
        return self.edit.text().strip()

    def set_path(self, path: str | Path) -> None:
        self.edit.setText(str(path))

    def browse(self) -> None:
        start = self.path() or str(Path.home())
        if self.folder:
            path = QFileDialog.getExistingDirectory(self, self.caption, start)
        elif self.save:
            path, _ = QFileDialog.getSaveFileName(self, self.caption, start, self.file_filter)
        else:
            path, _ = QFileDialog.getOpenFileName(self, self.caption, start, self.file_filter)
        if path:
            self.set_path(path)
