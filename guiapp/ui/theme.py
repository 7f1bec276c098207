"""Light and dark themes: the platform's default look, or Fusion with a dark palette."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

THEMES = ("light", "dark")

_native_style: str | None = None


def dark_palette() -> QPalette:
    """A dark palette for the Fusion style, with readable disabled text and links."""
    p = QPalette()
    window, base, alt = QColor(45, 45, 48), QColor(30, 30, 32), QColor(53, 53, 57)
    text, dim, accent = QColor(230, 230, 230), QColor(128, 128, 128), QColor(64, 128, 216)
    for role, color in (
        (QPalette.ColorRole.Window, window),
        (QPalette.ColorRole.WindowText, text),
        (QPalette.ColorRole.Base, base),
        (QPalette.ColorRole.AlternateBase, alt),
        (QPalette.ColorRole.ToolTipBase, QColor(60, 60, 64)),
        (QPalette.ColorRole.ToolTipText, text),
        (QPalette.ColorRole.PlaceholderText, dim),
        (QPalette.ColorRole.Text, text),
        (QPalette.ColorRole.Button, window),
        (QPalette.ColorRole.ButtonText, text),
        (QPalette.ColorRole.BrightText, QColor(255, 80, 80)),
        (QPalette.ColorRole.Light, QColor(70, 70, 74)),
        (QPalette.ColorRole.Midlight, QColor(60, 60, 64)),
        (QPalette.ColorRole.Mid, QColor(40, 40, 42)),
        (QPalette.ColorRole.Dark, QColor(25, 25, 27)),
        (QPalette.ColorRole.Shadow, QColor(0, 0, 0)),
        (QPalette.ColorRole.Highlight, accent),
        (QPalette.ColorRole.HighlightedText, QColor(255, 255, 255)),
        (QPalette.ColorRole.Link, QColor(100, 160, 240)),
        (QPalette.ColorRole.LinkVisited, QColor(160, 120, 230)),
    ):
        p.setColor(role, color)
    disabled = QPalette.ColorGroup.Disabled
    for role in (
        QPalette.ColorRole.WindowText,
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
    ):
        p.setColor(disabled, role, dim)
    p.setColor(disabled, QPalette.ColorRole.Highlight, QColor(80, 80, 84))
    return p


def apply_theme(app: QApplication, theme: str) -> None:
    """Switch the whole application to ``theme`` ("light" or "dark")."""
    global _native_style
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}; received: theme={theme!r}")
    if _native_style is None:
        _native_style = app.style().name()
    if theme == "dark":
        app.setStyle(QStyleFactory.create("Fusion"))
        app.setPalette(dark_palette())
    else:
        app.setStyle(QStyleFactory.create(_native_style) or QStyleFactory.create("Fusion"))
        app.setPalette(app.style().standardPalette())
    app.setProperty("guiapp_theme", theme)


def current_theme(app: QApplication) -> str:
    """The theme last applied with :func:`apply_theme` ("light" before any)."""
    value = app.property("guiapp_theme")
    return value if value in THEMES else "light"
