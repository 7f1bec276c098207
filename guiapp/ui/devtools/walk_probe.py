"""What a scripted walk needs to see of the window: ``GUIAPP_WALK_PROBE=FILE`` (``make walk``).

The walk (``tests/walk/walk.py``) drives the real window under Xvfb with xdotool: real
mouse clicks and keys through the X server. To know *where* to click, it reads FILE,
which this probe rewrites (atomically) a few times a second: the visible top-level
windows, their buttons, tabs, fields and confusion-matrix cells with global screen
rectangles, the status bar's message, the current page and the Jobs panel's rows.
Nothing here acts on the window; without the variable nothing is installed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QPoint, QPointF, QRect, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QListWidget,
    QMainWindow,
    QTabBar,
    QWidget,
)

from guiapp.ui.pages import TrainingPage

ENV = "GUIAPP_WALK_PROBE"
INTERVAL_MS = 250


def _rect(widget: QWidget, local: QRect | None = None) -> list[int]:
    r = local if local is not None else widget.rect()
    top_left = widget.mapToGlobal(r.topLeft())
    return [top_left.x(), top_left.y(), r.width(), r.height()]


def _entries(top: QWidget) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for w in top.findChildren(QWidget):
        if not w.isVisible():
            continue
        base = {"window": top.windowTitle(), "name": w.objectName(), "enabled": w.isEnabled()}
        if isinstance(w, QAbstractButton):
            out.append({**base, "kind": "button", "text": w.text(), "rect": _rect(w)})
        elif isinstance(w, QTabBar):
            for i in range(w.count()):
                out.append(
                    {**base, "kind": "tab", "text": w.tabText(i), "rect": _rect(w, w.tabRect(i))}
                )
        elif isinstance(w, (QLineEdit, QAbstractSpinBox, QComboBox)):
            text = w.currentText() if isinstance(w, QComboBox) else w.text()
            out.append({**base, "kind": "field", "text": text, "rect": _rect(w)})
        elif isinstance(w, QListWidget):
            port = w.viewport()
            for i in range(w.count()):
                item = w.item(i)
                out.append(
                    {**base, "kind": "item", "text": item.text(),
                     "rect": _rect(port, w.visualItemRect(item))}
                )  # fmt: skip
        elif type(w).__name__ == "ConfusionView" and getattr(w, "names", None):
            out.extend(_confusion_cells(w, base))
    return out


def _confusion_cells(view: Any, base: dict[str, Any]) -> list[dict[str, Any]]:
    left, top, cell = view._geometry()
    out = []
    k = len(view.names)
    for i in range(k):
        for j in range(k):
            center = QPointF(left + (j + 0.5) * cell, top + (i + 0.5) * cell).toPoint()
            g = view.mapToGlobal(center - QPoint(2, 2))
            out.append(
                {
                    **base,
                    "kind": "confusion",
                    "text": f"{i},{j}",
                    "count": int(view.matrix[i, j]),
                    "rect": [g.x(), g.y(), 4, 4],
                }
            )
    return out


def snapshot(app: QApplication) -> dict[str, Any]:
    """The probe's record of every visible top-level window."""
    windows, widgets = [], []
    state: dict[str, Any] = {}
    for top in app.topLevelWidgets():
        if not top.isVisible():
            continue
        windows.append({"title": top.windowTitle(), "rect": _rect(top), "kind": type(top).__name__})
        widgets += _entries(top)
        if isinstance(top, QMainWindow) and hasattr(top, "jobs_panel"):
            state["status"] = top.statusBar().currentMessage()
            page = top.stack.currentWidget() if hasattr(top, "stack") else None
            state["page"] = getattr(page, "title", "")
            state["pages"] = [p.title for p in getattr(top, "pages", [])]
            state["jobs"] = [
                {"name": r.job.name, "command": r.job.command, "status": r.job.status,
                 "pid": r.job.pid(), "progress": r.bar.value()}
                for r in top.jobs_panel.rows
            ]  # fmt: skip
            training = top.page_of(TrainingPage)  # type: ignore[attr-defined]
            state["training"] = {
                "status": training.history.status,
                "run": (training.run or {}).get("path", ""),
                "message": training.message.text(),
            }
    return {"pid": os.getpid(), "windows": windows, "widgets": widgets, **state}


class WalkProbe(QObject):
    def __init__(self, app: QApplication, path: Path) -> None:
        super().__init__(app)
        self.app, self.path = app, path
        self.timer = QTimer(self)
        self.timer.setInterval(INTERVAL_MS)
        self.timer.timeout.connect(self.write)
        self.timer.start()

    def write(self) -> None:
        try:
            text = json.dumps(snapshot(self.app))
        except RuntimeError:  # a widget deleted while we looked: next time
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)


def install_if_asked(app: QApplication) -> WalkProbe | None:
    """Start the probe when ``$GUIAPP_WALK_PROBE`` names a file."""
    where = os.environ.get(ENV)
    return WalkProbe(app, Path(where)) if where else None
