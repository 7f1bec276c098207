"""Where the GUI writes and shows files: output paths checked before a dialog accepts,
one remembered export folder, "open folder" that says where when nothing can open it,
and a status-bar message naming what was written."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMainWindow, QMessageBox, QWidget

EXPORT_KEY = "export/folder"
STATUS_MS = 15000


def output_path_problem(text: str, what: str = "Output", creates: Path | None = None) -> str | None:
    """Why ``text`` cannot be written as a new file (None when it can): empty, an existing
    folder, a folder that does not exist (only ``creates``, the project's data folder, is
    made by the job), or one this user cannot write in."""
    text = text.strip()
    if not text:
        return f"{what}: choose where to write the file"
    path = Path(text).expanduser()
    if path.is_dir():
        return f"{what}: {path} is a folder; give a file name inside it"
    parent = path.parent if str(path.parent) else Path(".")
    if creates is not None and parent == Path(creates) and not parent.exists():
        parent = parent.parent  # the job makes the data folder inside the project's
    if not parent.is_dir():
        return f"{what}: the folder {parent} does not exist; create it or choose another"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{what}: cannot write in {parent} (no permission); choose another folder"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{what}: {path} exists and cannot be replaced (no permission)"
    return None


def resolve_output(data_folder: Path, text: str) -> Path:
    """A dialog's output path: relative ones are relative to the project's folder (the
    parent of its ``data/`` folder)."""
    out = Path(text.strip()).expanduser()
    return out if out.is_absolute() else Path(data_folder).parent / out


def check_dataset_output(data_folder: Path, text: str) -> None:
    """ValueError naming what to fix when a dialog's dataset output ``text`` cannot be
    written (relative paths are in the project's ``data_folder``, which the job creates)."""
    if not text:
        raise ValueError("Output: choose where to write the dataset (NAME.h5)")
    problem = output_path_problem(str(resolve_output(data_folder, text)), creates=data_folder)
    if problem:
        raise ValueError(problem)


def export_folder() -> Path:
    """The folder the last export went to (home at first): every export starts there."""
    value = QSettings().value(EXPORT_KEY, "")
    folder = Path(str(value)) if value else Path.home()
    return folder if folder.is_dir() else Path.home()


def remember_export(path: str | os.PathLike[str]) -> None:
    QSettings().setValue(EXPORT_KEY, str(Path(path).parent))


def show_status(widget: QWidget, text: str) -> None:
    """``text`` in the window's status bar (a widget outside a main window: nowhere)."""
    window = widget.window()
    if isinstance(window, QMainWindow):
        window.statusBar().showMessage(text, STATUS_MS)


def open_folder(widget: QWidget, path: str | os.PathLike[str]) -> bool:
    """Open ``path`` in the desktop's file manager; where none can, say where it is."""
    if QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
        return True
    box = QMessageBox(
        QMessageBox.Icon.Information,
        "Open folder",
        f"No file manager could be started here. The folder is:\n{path}",
        QMessageBox.StandardButton.Ok,
        widget,
    )
    box.setObjectName("open_folder_message")
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.open()
    show_status(widget, f"Folder: {path}")
    return False
