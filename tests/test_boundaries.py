"""Architecture rules, read from the source (AST) and from a fresh interpreter.

The core never imports Qt; the GUI never imports TensorFlow at module level; the core and
the CLI never import the GUI; pages never import each other; the shared widgets, dialogs
and jobs never import a page.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "guiapp"
QT = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "superqt", "shiboken6", "qtpy")
TF = ("tensorflow", "keras")
UI = ("guiapp.ui",)
PAGES = "guiapp.ui.pages"


def module_name(path: Path) -> str:
    """``guiapp/ui/pages/model/layer_list.py`` -> ``guiapp.ui.pages.model.layer_list``."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, top_level_only: bool) -> list[tuple[int, str]]:
    """(line, module) for each import; relative imports are made absolute, and
    ``from a import b`` also gives ``a.b`` (``b`` may be a module)."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if node.module:
                found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{a.name}") for a in node.names if a.name != "*"]
    return found


def is_under(module: str, banned: tuple[str, ...]) -> bool:
    return any(module == b or module.startswith(b + ".") for b in banned)


def offenders(folder: Path, banned: tuple[str, ...], top_level_only: bool) -> list[str]:
    """``file:line imports module`` for each import of a ``banned`` module or one below it."""
    bad = []
    files = [folder] if folder.is_file() else sorted(folder.rglob("*.py"))
    for py in files:
        lines = set()
        for line, mod in imported_modules(py, top_level_only):
            if is_under(mod, banned) and line not in lines:
                lines.add(line)
                bad.append(f"{py.relative_to(ROOT.parent)}:{line} imports {mod}")
    return bad


def page_offenders(pages: Path) -> list[str]:
    """Imports of one page (a folder or a module under ``pages``) by another."""
    own = {pages / "__init__.py", pages / "base.py"}
    each = [
        p for p in sorted(pages.iterdir()) if p not in own and (p.is_dir() or p.suffix == ".py")
    ]
    each = [p for p in each if p.name != "__pycache__"]
    bad = []
    for page in each:
        others = tuple(f"{PAGES}.{p.stem}" for p in each if p != page)
        bad += offenders(page, others, top_level_only=False)
    return bad


def test_core_never_imports_qt() -> None:
    assert offenders(ROOT / "core", QT, top_level_only=False) == []


def test_gui_never_imports_tensorflow_at_module_level() -> None:
    assert offenders(ROOT / "ui", TF, top_level_only=False) == []
    assert offenders(ROOT, TF, top_level_only=True) == []


def test_core_and_cli_never_import_the_gui() -> None:
    assert offenders(ROOT / "core", UI, top_level_only=False) == []
    # the CLI may load the GUI benchmark inside a command, never when it is imported
    assert offenders(ROOT / "cli", (*UI, "guiapp.bench.gui"), top_level_only=True) == []


def test_pages_never_import_each_other() -> None:
    assert page_offenders(ROOT / "ui" / "pages") == []


def test_widgets_dialogs_and_jobs_never_import_a_page() -> None:
    for folder in ("widgets", "dialogs", "jobs"):
        assert offenders(ROOT / "ui" / folder, (PAGES,), top_level_only=False) == []


def test_importing_core_and_cli_loads_no_qt_and_no_tensorflow() -> None:
    code = (
        "import sys, guiapp.cli, guiapp.core.store, guiapp.core.store.check\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {QT + TF!r}]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_detector_catches_an_offender(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f():\n    from PySide6 import QtCore\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert offenders(tmp_path, QT, top_level_only=False) != []
    finally:
        ROOT = saved


def test_detectors_catch_gui_and_cross_page_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "guiapp"
    pages = pkg / "ui" / "pages"
    for folder in ("a", "b", "c"):
        (pages / folder).mkdir(parents=True)
        (pages / folder / "__init__.py").write_text("")
    (pages / "__init__.py").write_text("from guiapp.ui.pages.a.view import A\n")
    (pages / "base.py").write_text("")
    (pages / "a" / "fine.py").write_text(
        "from guiapp.ui.pages.base import Page\nfrom . import view\nfrom .view import A\n"
        "from ..base import SP\nfrom guiapp.ui.pages.a import fine\n"
    )
    (pages / "b" / "absolute.py").write_text("from guiapp.ui.pages.a.view import A\n")
    (pages / "b" / "package.py").write_text("import guiapp.ui.pages.a\n")
    (pages / "c" / "relative.py").write_text("def f():\n    from ..a.view import A\n")
    (pages / "c" / "sibling.py").write_text("from .. import b\n")
    (pkg / "core").mkdir()
    (pkg / "core" / "lazy.py").write_text("def f():\n    from guiapp.ui import theme\n")
    (pkg / "cli").mkdir()
    (pkg / "cli" / "lazy.py").write_text("def f():\n    from ..bench.gui import run\n")
    (pkg / "cli" / "eager.py").write_text("from ..ui.theme import THEMES\n")
    (pkg / "ui" / "widgets").mkdir()
    (pkg / "ui" / "widgets" / "w.py").write_text("from ..pages.a.view import A\n")
    global ROOT
    saved, ROOT = ROOT, pkg
    try:
        assert module_name(pages / "a" / "fine.py") == "guiapp.ui.pages.a.fine"
        assert sorted(page_offenders(pages)) == [
            "guiapp/ui/pages/b/absolute.py:1 imports guiapp.ui.pages.a.view",
            "guiapp/ui/pages/b/package.py:1 imports guiapp.ui.pages.a",
            "guiapp/ui/pages/c/relative.py:2 imports guiapp.ui.pages.a.view",
            "guiapp/ui/pages/c/sibling.py:1 imports guiapp.ui.pages.b",
        ]
        assert offenders(pkg / "core", UI, top_level_only=False) == [
            "guiapp/core/lazy.py:2 imports guiapp.ui",
        ]
        assert offenders(pkg / "cli", UI, top_level_only=True) == [
            "guiapp/cli/eager.py:1 imports guiapp.ui.theme",
        ]
        assert offenders(pkg / "cli", ("guiapp.bench.gui",), top_level_only=False) == [
            "guiapp/cli/lazy.py:2 imports guiapp.bench.gui",
        ]
        assert offenders(pkg / "ui" / "widgets", (PAGES,), top_level_only=False) == [
            "guiapp/ui/widgets/w.py:1 imports guiapp.ui.pages.a.view",
        ]
    finally:
        ROOT = saved
