"""The embedding map at 10^6 points: ``python -m guiapp.bench.embedding_map`` (and the
``embedding_map`` phase of ``guiapp bench gui``, :func:`map_phase`).

An offscreen :class:`~guiapp.ui.pages.browser.embedding_map.EmbeddingMap` (the Browser's)
over ``--points`` synthetic points in 10 gaussian clusters; then ``--steps`` pans and
zooms, each followed by the wait for the map to be binned again (on its worker thread),
while a 5 ms timer ticks on the GUI thread: the longest gap between two ticks is the worst
stall of the event loop. Also: the time from a range change to the new image, and a
selection of the rectangle's rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np


def synthetic(points: int) -> dict[str, Any]:
    """``points`` rows of an embedding in 10 gaussian clusters (as ``read_embedding`` gives)."""
    rng = np.random.default_rng(0)
    label = rng.integers(0, 10, points)
    centres = rng.normal(0, 6, (10, 2))
    pca = (centres[label] + rng.normal(0, 1.5, (points, 2))).astype(np.float32)
    pred = np.where(rng.random(points) < 0.9, label, rng.integers(0, 10, points))
    return {
        "row": np.arange(points, dtype=np.int64),
        "label": label.astype(np.int32),
        "pred": pred.astype(np.int32),
        "prob": rng.random(points).astype(np.float32),
        "pca": pca,
        "class_names": [f"c{i}" for i in range(10)],
        "dataset_path": "synthetic",
    }


def range_steps(vb: Any, steps: int) -> Iterator[tuple[float, float, float, float]]:
    """Pans by a tenth and zooms by 0.7 (in, then out), each from the view's current range:
    ``(x0, x1, y0, y1)``."""
    for i in range(steps):
        (x0, x1), (y0, y1) = vb.viewRange()
        w, h = x1 - x0, y1 - y0
        if i % 3 == 0:
            f = 0.7 if (i // 3) % 2 == 0 else 1 / 0.7
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            yield (cx - w * f / 2, cx + w * f / 2, cy - h * f / 2, cy + h * f / 2)
        else:
            dx = 0.1 * w * (1 if i % 2 else -1)
            yield (x0 + dx, x1 + dx, y0, y1)


def map_phase(
    parent: Any, points: int = 1_000_000, steps: int = 30
) -> tuple[Any, Callable[[], bool]]:
    """``guiapp bench gui``'s phase: the Browser's map window over ``points`` synthetic
    points, and a step function that pans or zooms every 150 ms (the map bins again in
    between) and returns True a second after the last step."""
    from ..ui.pages.browser.embedding_map import EmbeddingMap

    view = EmbeddingMap(parent)
    view.resize(900, 700)
    view.show()
    view.set_data("synthetic", synthetic(points))
    vb = view.plot.getViewBox()
    moves = range_steps(vb, steps)
    state: dict[str, float] = {"next": time.perf_counter() + 0.5, "end": 0.0}

    def step() -> bool:
        now = time.perf_counter()
        if state["end"]:
            return now > state["end"]
        if now >= state["next"]:
            rect = next(moves, None)
            if rect is None:
                state["end"] = now + 1.0
            else:
                vb.setRange(xRange=rect[:2], yRange=rect[2:], padding=0)
                state["next"] = now + 0.15
        return False

    return view, step


def measure(points: int, steps: int) -> dict[str, object]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ..ui.pages.browser.embedding_map import EmbeddingMap
    from ..ui.refcount_guard import guard_singletons

    guard_singletons()  # as the app does: PySide6's processEvents leaks None references
    app = QApplication.instance() or QApplication([])
    view = EmbeddingMap()
    view.resize(900, 700)
    view.show()
    app.processEvents()
    view.set_data("synthetic", synthetic(points))
    deadline = time.perf_counter() + 30
    while view.redraws < 1 and time.perf_counter() < deadline:
        app.processEvents()
    vb = view.plot.getViewBox()

    # a 5 ms tick on the GUI thread; the longest gap between ticks is the worst stall
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    binned: list[float] = []
    start_redraws = view.redraws
    t_start = time.perf_counter()
    for rect in range_steps(vb, steps):
        vb.setRange(xRange=rect[:2], yRange=rect[2:], padding=0)
        t = time.perf_counter()
        before = view.redraws
        while time.perf_counter() - t < 0.4:  # the user holds still: the map is binned again
            app.processEvents()
            if view.redraws > before:
                binned.append(1000 * (time.perf_counter() - t))
                break
    elapsed = time.perf_counter() - t_start
    timer.stop()
    gaps = np.diff(np.asarray(ticks)) * 1000 if len(ticks) > 1 else np.zeros(1)
    t = time.perf_counter()
    selected = view.selected_rows()
    select_ms = 1000 * (time.perf_counter() - t)
    view.calls.wait()
    view.close()
    view.deleteLater()
    app.processEvents()
    return {
        "points": points,
        "range_changes": steps,
        "rebinned": view.redraws - start_redraws,
        "seconds": round(elapsed, 1),
        "gui_stall_ms_max": round(float(gaps.max()), 1),
        "gui_stall_ms_p99": round(float(np.percentile(gaps, 99)), 1),
        "rebin_ms_median": round(statistics.median(binned), 1) if binned else None,
        "rebin_ms_max": round(max(binned), 1) if binned else None,
        "selection_ms": round(select_ms, 1),
        "selected_rows": len(selected),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guiapp.bench.embedding_map", description=__doc__)
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--steps", type=int, default=30)
    a = p.parse_args(argv)
    print(json.dumps(measure(a.points, a.steps), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
