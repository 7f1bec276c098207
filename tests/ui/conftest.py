"""UI tests run offscreen, with settings in a temporary folder and no blocking dialogs."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import QCoreApplication, QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from guiapp.core.project import DatasetRef, ModelEntry, Project, RunEntry  # noqa: E402
from guiapp.ui.close_guard import CloseGuard  # noqa: E402
from guiapp.ui.main_window import MainWindow  # noqa: E402
from guiapp.ui.pages.browser.browser_page import BrowserPage  # noqa: E402
from guiapp.ui.refcount_guard import guard_singletons  # noqa: E402

REAL_ASK_ABOUT_JOBS = CloseGuard._ask_about_jobs
guard_singletons()  # qtbot.waitUntil calls processEvents(), which leaks None refs on 3.11


@pytest.fixture(autouse=True)
def garbage_on_the_gui_thread(qapp: Any) -> Any:
    """As the app does: cyclic garbage collected on the GUI thread only (a collection a
    worker thread set off freed a closed dialog's widgets there and deadlocked the suite),
    and after each test, on this thread."""
    import gc

    from guiapp.ui.background import collect_on_gui_thread

    collect_on_gui_thread()
    yield
    gc.collect()


@pytest.fixture(autouse=True)
def released_modifiers(qtbot: Any) -> Any:
    """Release Shift, Ctrl, Alt and Meta after each test: a key chord whose release a
    shortcut swallowed (Ctrl+Shift+Z) leaves Qt believing Shift is held, and the next
    test's ``selectRow`` would then extend a selection instead of making one."""
    yield
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QWidget

    target = QWidget()
    for key in (Qt.Key.Key_Shift, Qt.Key.Key_Control, Qt.Key.Key_Alt, Qt.Key.Key_Meta):
        qtbot.keyRelease(target, key)
    target.deleteLater()


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path) -> Path:
    """Each test gets its own empty QSettings, never the user's."""
    folder = tmp_path / "settings"
    QCoreApplication.setOrganizationName("guiapp")
    QCoreApplication.setApplicationName("guiapp")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    return folder


@dataclass
class Dialogs:
    """Message boxes shown during a test, and the answer the next question gets."""

    shown: list[tuple[str, str, str]] = field(default_factory=list)
    answer: QMessageBox.StandardButton = QMessageBox.StandardButton.Cancel

    def texts(self) -> list[str]:
        return [text for _, _, text in self.shown]


@pytest.fixture(autouse=True)
def dialogs(monkeypatch: pytest.MonkeyPatch) -> Dialogs:
    """Replace QMessageBox's modal static functions, which would block an offscreen test."""
    record = Dialogs()

    def fake(kind: str) -> Any:
        def show(_parent: object, title: str, text: str, *args: object) -> Any:
            record.shown.append((kind, title, text))
            return record.answer

        return staticmethod(show)

    for kind in ("warning", "critical", "information", "question", "about"):
        monkeypatch.setattr(QMessageBox, kind, fake(kind))

    def ask_about_jobs(_window: object, names: list[str]) -> str:
        """The quit question (a real QMessageBox, see ``modal``): Yes stops, No leaves."""
        record.shown.append(("question", "Jobs are running", "\n".join(names)))
        answers = {QMessageBox.StandardButton.Yes: "stop", QMessageBox.StandardButton.No: "leave"}
        return answers.get(record.answer, "")

    monkeypatch.setattr(CloseGuard, "_ask_about_jobs", ask_about_jobs)
    return record


def write_dataset(
    path: Path, rows: int, shape: tuple[int, ...] = (8, 8), classes: int = 3, shard: int = 4096
) -> Path:
    """A small real dataset: row i has label i % classes and every value equal to i."""
    import numpy as np

    from guiapp.core.store import DatasetWriter

    dtype = "float32" if len(shape) > 1 else "uint16"
    names = [f"class{c}" for c in range(classes)]
    with DatasetWriter(
        path, sample_shape=shape, dtype=dtype, class_names=names, shard_capacity=shard
    ) as w:
        for a in range(0, rows, 4096):
            b = min(rows, a + 4096)
            idx = np.arange(a, b)
            x = np.broadcast_to(idx.reshape(-1, *([1] * len(shape))), (b - a, *shape))
            w.append(x.astype(dtype), (idx % classes).astype(np.int64))
    return path


@pytest.fixture
def make_dataset() -> Any:
    """``make_dataset(path, rows, shape=(8, 8), classes=3)``: see :func:`write_dataset`."""
    return write_dataset


def _answer_modal(button_text: str, seen: list[dict[str, str]], wait_for: Any = None) -> None:
    """From a timer: find the modal QMessageBox, note its wording, press ``button_text``
    (once ``wait_for()`` holds, when given)."""

    def look() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox) or (wait_for is not None and not wait_for()):
            QTimer.singleShot(50, look)
            return
        seen.append({"title": box.windowTitle(), "text": box.text(), "info": box.informativeText()})
        for button in box.buttons():
            if button.text().replace("&", "") == button_text:
                button.click()
                return
        raise AssertionError(f"no {button_text!r} in {[b.text() for b in box.buttons()]}")

    QTimer.singleShot(50, look)


@pytest.fixture
def modal(dialogs: Dialogs, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``modal(button_text, seen, wait_for=None)``: answer the next real QMessageBox; the
    quit question is the real one in a test that asks for this fixture."""
    monkeypatch.setattr(CloseGuard, "_ask_about_jobs", REAL_ASK_ABOUT_JOBS)
    return _answer_modal


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    """Before pytest-qt closes a test's windows (in its own teardown wrapper, before any
    fixture's teardown), the quit question answers "stop" without a dialog: a test that
    failed with a job still running would otherwise open a real QMessageBox that nobody
    answers, inside which no timeout can end the run. The fixtures' monkeypatch puts the
    method back afterwards."""
    CloseGuard._ask_about_jobs = lambda _window, _names: "stop"  # type: ignore[method-assign,assignment]
    return (yield)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests that start and quit the real event loop (``app.exec()``) last.

    Measured here (PySide6 6.12, offscreen): once ``QApplication.exec()`` has returned
    after ``quit()``, later ``processEvents()`` calls still fire timers but no longer
    deliver signals queued from worker threads or ``QProcess`` output, so every later
    test that waits for a background result or a job would time out.
    """
    items.sort(key=lambda item: "run_gui_event_loop" in item.name)


def open_project(
    qtbot: Any,
    tmp_path: Path,
    name: str,
    datasets: dict[str, Path] | None = None,
    runs: list[RunEntry] | None = None,
    *,
    models: dict[str, dict[str, Any]] | None = None,
    saved: bool = False,
    shown: bool = True,
) -> MainWindow:
    """A main window (shown unless not SHOWN) on a new project TMP_PATH/p.gproj holding
    DATASETS (name -> file), RUNS and MODELS (name -> spec); with SAVED, the project is saved
    and loaded back first, as a user reopens it."""
    project = Project.new(tmp_path / "p.gproj", name)
    project.datasets = [DatasetRef(key, path) for key, path in (datasets or {}).items()]
    project.runs.extend(runs or [])
    project.models.extend(ModelEntry(key, spec) for key, spec in (models or {}).items())
    if saved:
        project.save()
        project = Project.load(tmp_path / "p.gproj")
    window = MainWindow(project)
    qtbot.addWidget(window)
    if shown:
        window.show()
    return window


def open_browser(
    qtbot: Any, project: Project, timeout: int = 10_000
) -> tuple[MainWindow, BrowserPage]:
    """The window at 1100 x 720 on the Browser page, its first dataset open (its meta read
    and row 0 shown within TIMEOUT ms)."""
    w = MainWindow(project)
    w.resize(1100, 720)
    qtbot.addWidget(w)
    w.show()
    w.set_page(1)
    page = w.page("Browser")
    assert isinstance(page, BrowserPage)
    qtbot.waitUntil(lambda: page.meta is not None, timeout=timeout)
    qtbot.waitUntil(lambda: page.detail.row == 0, timeout=timeout)
    return w, page
