"""The main window skeleton: pages, shortcuts, title, save/open, settings, smoke run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import QApplication, QFileDialog, QMenu, QMessageBox

from guiapp.core.project import DatasetRef, ModelEntry, Project
from guiapp.ui.app import run_gui
from guiapp.ui.dialogs.about import version_rows
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages import DatasetsPage
from guiapp.ui.theme import apply_theme

PAGE_TITLES = ["Datasets", "Browser", "Model", "Training", "Runs", "Experiments"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    folder = tmp_path / "proj"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "digits.h5").write_bytes(b"")
    p = Project.new(folder / "p.gproj", "Demo")
    p.datasets = [
        DatasetRef("digits", folder / "data" / "digits.h5"),
        DatasetRef("kmers", folder / "missing" / "kmers.h5"),
    ]
    p.save()
    return Project.load(folder / "p.gproj")


@pytest.fixture
def window(qtbot, project: Project) -> MainWindow:
    w = MainWindow(project)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def menu_action(window: MainWindow, menu_title: str, action_text: str) -> QAction:
    for top in window.menuBar().actions():
        if top.text().replace("&", "") == menu_title:
            menu = top.menu()
            assert isinstance(menu, QMenu)
            for action in menu.actions():
                if action.text().replace("&", "") == action_text:
                    return action
    raise AssertionError(f"no {menu_title} > {action_text} action")


def test_window_shows_all_six_pages(window: MainWindow, qtbot) -> None:
    assert [window.sidebar.item(i).text() for i in range(window.sidebar.count())] == PAGE_TITLES
    assert window.stack.count() == 6
    for i, title in enumerate(PAGE_TITLES):
        window.sidebar.setCurrentRow(i)
        page = window.current_page()
        assert page.title == title
        assert page.isVisible()
        assert page.blurb_label.text()
    assert "tensorflow" not in sys.modules
    assert "keras" not in sys.modules


def test_ctrl_number_switches_page(window: MainWindow, qtbot) -> None:
    window.activateWindow()
    assert window.stack.currentIndex() == 0
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert window.stack.currentIndex() == 1
    assert window.current_page().title == "Browser"
    assert window.sidebar.currentRow() == 1
    qtbot.keyClick(window, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
    assert window.current_page().title == "Runs"


def test_datasets_table_lists_project_datasets(window: MainWindow, qtbot) -> None:
    page = window.pages[0]
    assert isinstance(page, DatasetsPage)
    table = page.table
    folder = window.project.folder

    def rows() -> list[list[str]]:
        cols = (page.NAME, page.STATUS, page.PATH)
        return [[table.item(r, c).text() for c in cols] for r in range(table.rowCount())]

    # digits.h5 is an empty file, not a dataset: its header cannot be read (off the GUI thread)
    qtbot.waitUntil(lambda: rows()[0][1].startswith("unreadable"), timeout=10_000)
    assert rows()[1] == ["kmers", "missing: use Locate…", str(folder / "missing" / "kmers.h5")]
    assert rows()[0][2] == str(folder / "data" / "digits.h5")
    assert page.generate_button.isEnabled()
    assert page.import_button.isEnabled()
    assert page.empty_label.isHidden()


def test_jobs_panel_columns_and_toggle(window: MainWindow) -> None:
    table = window.jobs_panel.table
    headers = [table.horizontalHeaderItem(i).text() for i in range(table.columnCount())]
    assert headers == ["Job", "Status", "Progress", "ETA", "Rows/s", "Actions"]
    assert table.rowCount() == 0
    toggle = menu_action(window, "View", "Jobs panel")
    assert toggle.isCheckable() and toggle.isChecked()
    toggle.trigger()
    assert not window.jobs_panel.isVisible()
    toggle.trigger()
    assert window.jobs_panel.isVisible()


def test_title_shows_name_and_dirty_marker(window: MainWindow) -> None:
    assert window.windowTitle() == "Demo — guiapp"
    window.set_modified(True)
    assert window.windowTitle() == "Demo* — guiapp"
    window.set_modified(False)
    assert "*" not in window.windowTitle()


def test_save_via_file_menu_writes_a_file_that_reloads_equal(window: MainWindow) -> None:
    path = window.project.path
    assert path is not None
    window.project.models.append(ModelEntry("cnn", {"layers": [{"type": "Dense", "units": 10}]}))
    window.set_modified(True)
    before = path.read_text()
    menu_action(window, "File", "Save").trigger()
    assert path.read_text() != before
    assert Project.load(path) == window.project
    assert json.loads(path.read_text())["datasets"][0]["path"] == "data/digits.h5"
    assert (path.parent / "p.gproj.bak").read_text() == before
    assert window.windowTitle() == "Demo — guiapp"
    assert window.recent_projects()[0] == str(path)


def test_save_untitled_asks_for_a_path(qtbot, tmp_path: Path, monkeypatch) -> None:
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.windowTitle() == "Untitled — guiapp"
    target = tmp_path / "fresh"
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), ""))
    )
    assert w.save()
    saved = tmp_path / "fresh.gproj"
    assert w.project.path == saved
    assert Project.load(saved).name == "fresh"
    assert w.windowTitle() == "fresh — guiapp"


def test_close_when_dirty_asks_and_cancel_keeps_window(window: MainWindow, dialogs) -> None:
    window.set_modified(True)
    dialogs.answer = QMessageBox.StandardButton.Cancel
    assert not window.close()
    assert window.isVisible()
    assert dialogs.shown[-1][1] == "Unsaved changes"

    dialogs.answer = QMessageBox.StandardButton.Discard
    assert window.close()
    assert not window.isVisible()


def test_close_when_dirty_and_save_writes_the_file(window: MainWindow, dialogs) -> None:
    path = window.project.path
    assert path is not None
    window.project.name = "Renamed"
    window.set_modified(True)
    dialogs.answer = QMessageBox.StandardButton.Save
    assert window.close()
    assert Project.load(path).name == "Renamed"
    assert QSettings().value("window/geometry") is not None


def test_open_broken_project_shows_message_and_keeps_current(
    window: MainWindow, tmp_path: Path, dialogs
) -> None:
    broken = tmp_path / "broken.gproj"
    broken.write_text("{not json")
    assert not window.open_project(broken)
    kind, _, text = dialogs.shown[-1]
    assert kind == "warning"
    assert str(broken) in text and "not valid JSON" in text
    assert window.project.name == "Demo"
    assert broken.read_text() == "{not json"


def test_open_remembers_recent_projects(window: MainWindow, tmp_path: Path) -> None:
    other = Project.new(tmp_path / "other.gproj", "Other")
    other.save()
    assert window.open_project(other.path)
    assert window.project.name == "Other"
    assert window.recent_projects()[0] == str(other.path)
    window._fill_recent_menu()
    tips = [a.toolTip() for a in window.recent_menu.actions()]
    assert str(other.path) in tips


def test_migrated_project_counts_as_changed(qtbot, tmp_path: Path) -> None:
    old = tmp_path / "old.gproj"
    old.write_text(json.dumps({"schema_version": 0, "name": "Old", "data": ["a.h5"]}))
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.open_project(old)
    assert w.is_modified()
    assert w.windowTitle() == "Old* — guiapp"
    w2 = MainWindow(Project.load(old))
    qtbot.addWidget(w2)
    assert w2.is_modified()


def test_theme_switch_changes_palette(window: MainWindow) -> None:
    app = QApplication.instance()
    try:
        menu_action(window, "View", "Dark theme").trigger()
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 80
        assert QSettings().value("ui/theme") == "dark"
        menu_action(window, "View", "Light theme").trigger()
        assert app.palette().color(QPalette.ColorRole.Window).lightness() > 160
    finally:
        apply_theme(app, "light")


def test_about_lists_versions_without_tensorflow(window: MainWindow, dialogs) -> None:
    names = [name for name, _ in version_rows()]
    assert names == ["guiapp", "Python", "Qt", "PySide6", "numpy", "h5py"]
    menu_action(window, "Help", "About guiapp").trigger()
    kind, _, text = dialogs.shown[-1]
    assert kind == "about"
    assert "numpy" in text and "h5py" in text and "PySide6" in text
    assert "tensorflow" not in text.lower()


def test_run_gui_smoke_writes_a_png(qapp, tmp_path: Path) -> None:
    png = tmp_path / "shot.png"
    assert run_gui(["--smoke", str(png), str(REPO / "resources" / "demo" / "demo.gproj")]) == 0
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 1000
    assert run_gui(["--smoke", str(tmp_path / "untitled.png")]) == 0
    assert (tmp_path / "untitled.png").stat().st_size > 1000


def test_run_gui_smoke_with_broken_project_returns_2(qapp, tmp_path: Path, capsys) -> None:
    broken = tmp_path / "broken.gproj"
    broken.write_text('{"schema_version": 99, "name": "x"}')
    assert run_gui(["--smoke", str(tmp_path / "s.png"), str(broken)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "newer than this guiapp supports" in err
    assert not (tmp_path / "s.png").exists()


def test_run_gui_usage_error_returns_2(qapp) -> None:
    assert run_gui(["--theme", "purple"]) == 2


def test_gui_process_never_imports_tensorflow(tmp_path: Path) -> None:
    """In a fresh process (other tests may import TensorFlow): show every page, then look."""
    code = f"""
import sys
from guiapp.ui.app import run_gui
from guiapp.ui.main_window import MainWindow
assert run_gui(["--smoke", {str(tmp_path / "s.png")!r}]) == 0
w = MainWindow()
w.show()
for i in range(w.stack.count()):
    w.set_page(i)
    assert not w.current_page().grab().isNull()
from guiapp.ui.dialogs.about import about_html
assert "numpy" in about_html()
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras"))
print(bad)
sys.exit(1 if bad else 0)
"""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_recent_menu_action_opens_the_project(window: MainWindow, tmp_path: Path) -> None:
    first = window.project.path
    assert first is not None and window.open_project(first)
    other = Project.new(tmp_path / "other.gproj", "Other")
    other.save()
    assert window.open_project(other.path)
    window._fill_recent_menu()
    [action] = [a for a in window.recent_menu.actions() if a.toolTip() == str(first)]
    action.trigger()
    assert window.project.path == first
    assert window.project.name == "Demo"


def test_run_gui_event_loop_with_broken_project_shows_message(
    qapp, tmp_path: Path, dialogs
) -> None:
    broken = tmp_path / "broken.gproj"
    broken.write_text("[]")
    QTimer.singleShot(200, qapp.quit)
    assert run_gui([str(broken)]) == 0
    assert any(str(broken) in text for text in dialogs.texts())
    windows = [w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow)]
    assert windows and windows[-1].project.path is None  # an untitled project instead
    assert not windows[-1].isVisible()  # QApplication.quit() closes the windows (Qt 6)
    for w in windows:
        w.deleteLater()
