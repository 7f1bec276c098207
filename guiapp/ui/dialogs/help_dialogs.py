"""Help > Documentation and Help > Keyboard shortcuts.

The shortcut list is read from the window's own actions (every menu, every action with a
shortcut), so it cannot drift from what the keys do; docs/SHORTCUTS.md is checked against
it by a test. The documentation dialog links the ``docs/*.md`` files, or says where they
are when this installation has none.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMainWindow,
    QMenu,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from guiapp.ui.widgets.tables import table

#: keys that widgets handle themselves (no action): shown after the actions
WIDGET_KEYS = (
    ("Browser grid", "Arrows", "Move to the next sample"),
    ("Browser grid", "PgUp / PgDown", "Move a page of samples"),
    ("Model page", "Ctrl+Z / Ctrl+Shift+Z in a text field", "Undo typing in that field"),
)


def docs_folder() -> Path:
    """The ``docs/`` folder next to the package (a source checkout or an sdist)."""
    return Path(__file__).resolve().parents[3] / "docs"


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip(".…")


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str, str]]:
    """``(menu, keys, command)`` for every action of ``window`` that has a shortcut."""
    rows: list[tuple[str, str, str]] = []
    seen: set[int] = set()

    def walk(menu: QMenu, where: str) -> None:
        for action in menu.actions():
            sub = action.menu()
            if isinstance(sub, QMenu):
                walk(sub, f"{where} > {_plain(sub.title())}")
                continue
            seen.add(id(action))
            keys = keys_of(action)
            if keys:
                rows.append((where, keys, _plain(action.text())))

    for top in window.menuBar().actions():
        menu = top.menu()
        if isinstance(menu, QMenu):
            walk(menu, _plain(menu.title()))
    for action in window.findChildren(QAction):
        if id(action) not in seen and keys_of(action) and action.text():
            rows.append(("Window", keys_of(action), _plain(action.text())))
    return rows


def keys_of(action: QAction) -> str:
    return ", ".join(
        k.toString(QKeySequence.SequenceFormat.PortableText) for k in action.shortcuts()
    )


class ShortcutsDialog(QDialog):
    """A table of the window's shortcuts, then the keys widgets handle themselves."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setObjectName("shortcuts_dialog")
        self.setWindowTitle("Keyboard shortcuts")
        rows = [(keys, command, menu) for menu, keys, command in shortcut_rows(window)]
        rows += [(keys, what, where) for where, keys, what in WIDGET_KEYS]
        self.table = table(("Keys", "Command", "Where"))
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
        _close_below(self, self.table)
        self.resize(560, 480)


def documentation_html(folder: Path | None = None) -> str:
    """Links to each ``docs/*.md`` (its first heading as the title), or where to find them."""
    folder = folder or docs_folder()
    pages = sorted(folder.glob("*.md")) if folder.is_dir() else []
    if not pages:
        return (
            "<p>This installation has no documentation files. They are the <tt>docs/</tt> "
            "folder of guiapp's source; <tt>guiapp --help</tt> and "
            "<tt>guiapp COMMAND --help</tt> describe every command.</p>"
        )
    items = []
    for page in pages:
        lines = page.read_text(encoding="utf-8", errors="replace").splitlines()
        title = next((ln.lstrip("# ").strip() for ln in lines if ln.startswith("#")), page.stem)
        url = QUrl.fromLocalFile(str(page)).toString()
        items.append(f'<li><a href="{url}">{html.escape(title)}</a> ({page.name})</li>')
    return (
        f"<p>The documentation is in <tt>{html.escape(str(folder))}</tt>:</p>"
        f"<ul>{''.join(items)}</ul>"
        "<p>Help &gt; Keyboard shortcuts lists the keys.</p>"
    )


class DocumentationDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, folder: Path | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("documentation_dialog")
        self.setWindowTitle("Documentation")
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.text.setHtml(documentation_html(folder))
        _close_below(self, self.text)
        self.resize(560, 420)


def _close_below(dialog: QDialog, content: QWidget) -> None:
    """``content`` over a Close button."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(content)
    layout.addWidget(buttons)


def show_shortcuts(window: QMainWindow) -> ShortcutsDialog:
    dialog = ShortcutsDialog(window)
    dialog.show()
    return dialog


def show_documentation(window: QMainWindow) -> DocumentationDialog:
    dialog = DocumentationDialog(window)
    dialog.show()
    return dialog
