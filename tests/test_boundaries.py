"""Architecture rules: the core never imports Qt; the GUI never imports TensorFlow at module level."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "guiapp"
QT = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "superqt", "shiboken6", "qtpy")
TF = ("tensorflow", "keras")


def imported_modules(path: Path, top_level_only: bool) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def offenders(folder: Path, banned: tuple[str, ...], top_level_only: bool) -> list[str]:
    bad = []
    for py in sorted(folder.rglob("*.py")):
        for line, mod in imported_modules(py, top_level_only):
            if mod.split(".")[0] in banned:
                bad.append(f"{py.relative_to(ROOT.parent)}:{line} imports {mod}")
    return bad


def test_core_never_imports_qt() -> None:
    assert offenders(ROOT / "core", QT, top_level_only=False) == []


def test_gui_never_imports_tensorflow_at_module_level() -> None:
    assert offenders(ROOT / "ui", TF, top_level_only=False) == []
    assert offenders(ROOT, TF, top_level_only=True) == []


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
