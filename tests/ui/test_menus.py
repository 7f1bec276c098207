"""Issue 17.11: the Edit and Help menus, export feedback, and "Open run folder" where no
file manager can start (offscreen Qt has none: ``QDesktopServices.openUrl`` returns False)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from guiapp.core.project import Project
from guiapp.ui.dialogs.help_dialogs import DocumentationDialog, ShortcutsDialog, shortcut_rows
from guiapp.ui.main_window import MainWindow
from guiapp.ui.widgets.outputs import export_folder, open_folder, output_path_problem

DOCS = Path(__file__).resolve().parents[2] / "docs"


def make_window(qtbot) -> MainWindow:
    w = MainWindow(Project.new(None, "Menus"))
    qtbot.addWidget(w)
    w.show()
    return w


def test_help_lists_docs_and_every_registered_shortcut(qtbot) -> None:
    window = make_window(qtbot)
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus == ["&File", "&Edit", "&View", "&Help"]
    window.action_shortcuts.trigger()
    dialog = window.findChild(ShortcutsDialog)
    assert dialog is not None and dialog.isVisible()
    shown = {
        (dialog.table.item(r, 0).text(), dialog.table.item(r, 1).text())
        for r in range(dialog.table.rowCount())
    }
    rows = shortcut_rows(window)
    assert ("Ctrl+Z", "Undo") in shown and ("Ctrl+Shift+Z, Ctrl+Y", "Redo") in shown
    assert {(keys, command) for _m, keys, command in rows} <= shown
    listed = (DOCS / "SHORTCUTS.md").read_text()
    for _menu, keys, _command in rows:  # the docs page lists every key the window has
        assert f"| {keys} |" in listed or keys.startswith("Ctrl+") and keys[5:].isdigit()

    window.action_docs.trigger()
    docs = window.findChild(DocumentationDialog)
    assert docs is not None
    text = docs.text.toHtml()
    assert "ARCHITECTURE.md" in text and "SHORTCUTS.md" in text and "file://" in text
    missing = DocumentationDialog(None, folder=Path("/nonexistent"))
    qtbot.addWidget(missing)
    assert "guiapp --help" in missing.text.toPlainText()


def test_output_paths_are_checked_with_the_reason(tmp_path: Path) -> None:
    assert "does not exist" in (output_path_problem("/proc/nowhere/x.h5") or "")
    assert "is a folder" in (output_path_problem(str(tmp_path)) or "")
    assert "choose where" in (output_path_problem("  ") or "")
    assert output_path_problem(str(tmp_path / "new.h5")) is None
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        import os

        if os.geteuid() != 0:  # root writes anywhere
            assert "no permission" in (output_path_problem(str(locked / "x.h5")) or "")
    finally:
        locked.chmod(0o700)


def test_export_spec_names_the_file_and_remembers_the_folder(
    qtbot, tmp_path: Path, monkeypatch, dialogs
) -> None:
    window = make_window(qtbot)
    page = window.page("Model")
    page.new_model("cnn2d-small")  # type: ignore[attr-defined]
    out = tmp_path / "exports" / "m.json"
    out.parent.mkdir()
    starts: list[str] = []

    def save_as(_parent: object, _caption: str, start: str, _filter: str) -> tuple[str, str]:
        starts.append(start)
        return str(out), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save_as))
    page.export_spec()  # type: ignore[attr-defined]
    assert out.exists()
    assert str(out) in window.statusBar().currentMessage()
    assert export_folder() == out.parent
    page.export_spec()  # type: ignore[attr-defined]
    assert Path(starts[-1]).parent == out.parent  # the next export starts there
    assert not page.write_spec("/proc/nowhere/m.json")  # type: ignore[attr-defined]
    assert any("does not exist" in text for text in dialogs.texts())


def test_open_folder_without_a_file_manager_says_where(qtbot, tmp_path: Path) -> None:
    window = make_window(qtbot)
    assert not open_folder(window, tmp_path)  # offscreen: nothing can open it
    box = window.findChild(QMessageBox, "open_folder_message")
    assert box is not None and box.isVisible() and str(tmp_path) in box.text()
    assert str(tmp_path) in window.statusBar().currentMessage()
    box.close()
