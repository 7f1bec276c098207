"""Start the GUI: parse arguments, create the application, open a project, run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QApplication, QMessageBox

from guiapp.core.project import Project, ProjectError
from guiapp.ui.background import collect_on_gui_thread
from guiapp.ui.main_window import MainWindow
from guiapp.ui.refcount_guard import guard_singletons
from guiapp.ui.theme import THEMES, apply_theme


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="guiapp", description="Open the guiapp workbench.")
    parser.add_argument("project", nargs="?", type=Path, help="a .gproj project file to open")
    parser.add_argument(
        "--smoke",
        metavar="PNG",
        type=Path,
        help="open the window, save a screenshot to PNG and exit (for tests and CI)",
    )
    parser.add_argument(
        "--screenshots",
        metavar="DIR",
        type=Path,
        help="drive a demo project through every page, save one PNG per page to DIR, exit",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="open the demo project in your data folder (made there, with a small dataset "
        "and a short training run, on first start)",
    )
    parser.add_argument("--theme", choices=THEMES, help="colour theme (default: last used)")
    return parser


def _application() -> QApplication:
    QCoreApplication.setOrganizationName("guiapp")
    QCoreApplication.setApplicationName("guiapp")
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    return QApplication([sys.argv[0] if sys.argv else "guiapp"])


def run_gui(argv: list[str]) -> int:
    """Run the GUI with ``argv`` (without the program name); returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help or a usage error, already printed by argparse
        return int(exc.code or 0)

    guard_singletons()  # PySide6 6.12 on CPython < 3.12: see refcount_guard.py
    app = _application()
    collect_on_gui_thread()
    theme = args.theme or QSettings().value("ui/theme", "light")
    apply_theme(app, theme if theme in THEMES else "light")
    if args.screenshots is not None:
        from guiapp.ui.devtools.screenshots import take_screenshots

        return take_screenshots(app, args.screenshots)

    project: Project | None = None
    error: ProjectError | None = None
    if args.demo and args.project is None:
        from guiapp.ui.demo import open_demo

        try:
            project = open_demo()
        except (ProjectError, OSError) as exc:
            print(f"guiapp: the demo project cannot be made: {exc}", file=sys.stderr)
            return 2
    elif args.project is not None:
        try:
            project = Project.load(args.project)
        except ProjectError as exc:
            error = exc
    if error is not None and args.smoke is not None:
        print(f"guiapp: {error}", file=sys.stderr)
        return 2

    window = MainWindow(project)
    window.show()
    from guiapp.ui.devtools.walk_probe import install_if_asked

    probe = install_if_asked(app)  # `make walk` only: where the widgets are  # noqa: F841
    if args.smoke is not None:
        return _smoke(app, window, args.smoke)
    if project is not None:
        window.remember_recent(project.path)
    if args.demo and project is not None:
        start_demo_build(window)
    if error is not None:
        QMessageBox.warning(window, "Cannot open project", str(error))
    return app.exec()


def start_demo_build(window: MainWindow) -> bool:
    """Fill the demo project in the background if it is not complete yet; True if started."""
    from guiapp.ui.demo import DemoBuilder

    builder = DemoBuilder(window)
    if not builder.needed():
        return False
    window.demo = builder
    builder.start()
    return True


def _smoke(app: QApplication, window: MainWindow, png: Path) -> int:
    """Let the window lay out and paint, save a screenshot, and go away.

    The window is hidden, not closed: a smoke run asks nothing and writes no settings.
    """
    for _ in range(5):
        app.processEvents()
    ok = window.grab().save(str(png))
    window.hide()
    window.deleteLater()
    app.processEvents()
    if not ok:
        print(f"guiapp: could not write the screenshot {png}; check the folder.", file=sys.stderr)
        return 2
    return 0
