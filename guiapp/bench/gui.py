"""The GUI responsiveness benchmark: the event loop's longest stall while real work goes on.

A 10 ms ``QTimer`` probe records the time between its ticks; a tick later than 10 ms is the
event loop being busy (a stall). Phases, each measured separately, in one offscreen window:

- ``idle``: the window alone (the probe's own jitter);
- ``jobs``: a generation job and a training job run at once through ``CliJob`` (the
  Training page's live plots and log update as in normal use);
- ``open_big``: the Browser is shown, then a 10^7-row dataset is picked in it (until a
  second after its header was read);
- ``browser_scroll``: the Browser scrolls through a 10^7-row dataset (written first with
  ``DatasetWriter``: one shard, 4x4 uint8 samples, large appends).

``run_gui_bench(out_json)`` returns (and optionally writes) the figures; the target (docs/BENCHMARKS.md)
is a longest stall under 100 ms.
"""

from __future__ import annotations

import cProfile
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

PROBE_MS = 10
BROWSE_ROWS = 10_000_000


def write_big_dataset(path: Path, rows: int = BROWSE_ROWS) -> float:
    """A ``rows``-row dataset of 4x4 uint8 samples in one shard; seconds it took."""
    from guiapp.core.store import DatasetWriter

    t0 = time.perf_counter()
    chunk = 1 << 20
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, size=(chunk, 4, 4), dtype=np.uint8)
    names = [f"class{c}" for c in range(5)]
    with DatasetWriter(
        path, sample_shape=(4, 4), dtype="uint8", class_names=names, shard_capacity=rows
    ) as w:
        for a in range(0, rows, chunk):
            n = min(chunk, rows - a)
            w.append(x[:n], (np.arange(a, a + n) % 5).astype(np.int64))
    return time.perf_counter() - t0


class Probe:
    """Ticks every 10 ms; ``gaps`` holds the milliseconds between ticks since ``reset``."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.timer = QTimer()
        self.timer.setInterval(PROBE_MS)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []
        self.busy: list[float] = []
        self.at: list[float] = []
        self.last = self.t0 = time.perf_counter()
        self.cpu_last = self.cpu_t0 = time.thread_time()
        self.timer.start()

    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        self.gaps.append((now - self.last) * 1000)
        self.busy.append((cpu - self.cpu_last) * 1000)
        self.at.append(now - self.t0)
        self.last, self.cpu_last = now, cpu

    def reset(self) -> None:
        self.gaps, self.busy, self.at = [], [], []
        self.last = self.t0 = time.perf_counter()
        self.cpu_last = self.cpu_t0 = time.thread_time()

    def figures(self, seconds: float) -> dict[str, Any]:
        gaps = np.asarray(self.gaps) if self.gaps else np.zeros(1)
        stall = np.maximum(gaps - PROBE_MS, 0)
        busy = np.asarray(self.busy) if self.busy else np.zeros(1)
        return {
            "seconds": round(seconds, 2),
            "ticks": len(self.gaps),
            "max_stall_ms": round(float(stall.max()), 1),
            # the GUI thread's own CPU time: between two ticks (its longest stretch of work,
            # which other processes' load does not lengthen) and over the whole phase
            "max_busy_ms": round(float(busy.max()), 1),
            "gui_cpu_s": round(time.thread_time() - self.cpu_t0, 2),
            "p99_stall_ms": round(float(np.percentile(stall, 99)), 1),
            "stalls_over_50ms": int((stall > 50).sum()),
            "stalls_over_100ms": int((stall > 100).sum()),
            "worst": [
                [round(self.at[i], 2), round(float(stall[i]), 1)]
                for i in np.argsort(stall)[::-1][:5]
                if stall[i] > 50
            ],
            "busiest": [  # [seconds into the phase, GUI-thread CPU ms since the last tick]
                [round(self.at[i], 2), round(float(busy[i]), 1)]
                for i in np.argsort(busy)[::-1][:5]
                if busy[i] > 20
            ],
        }


def run_gui_bench(out_json: str | None = None) -> dict[str, Any]:
    """Measure the event loop's stalls per phase; write JSON to ``out_json`` when given."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from guiapp.core.project import DatasetRef, Project
    from guiapp.ui.jobs.cli_job import CliJob
    from guiapp.ui.main_window import MainWindow
    from guiapp.ui.refcount_guard import guard_singletons

    guard_singletons()
    app = QApplication.instance() or QApplication(["guiapp-bench"])
    work = Path(tempfile.mkdtemp(prefix="guiapp-bench-gui-"))
    result: dict[str, Any] = {"probe_ms": PROBE_MS, "phases": {}}
    try:
        big = work / "big.h5"
        result["setup"] = {"browse_rows": BROWSE_ROWS, "write_s": round(write_big_dataset(big), 2)}
        small = work / "small.h5"
        gen = CliJob("generate small", "generate", [str(small), "--n", "4000", "--seed", "1"])
        gen.start()
        while gen.is_running():
            app.processEvents()
            time.sleep(0.01)
        project = Project.new(work / "bench.gproj", "GUI bench")
        project.datasets += [DatasetRef("small", small), DatasetRef("big", big)]
        window = MainWindow(project)
        window.resize(1280, 820)
        window.show()
        probe = Probe()

        profile_dir = os.environ.get("GUIAPP_BENCH_PROFILE", "")
        if profile_dir:
            os.makedirs(profile_dir, exist_ok=True)

        def phase(name: str, seconds: float, step: Callable[[], bool] | None = None) -> None:
            profiler = cProfile.Profile() if profile_dir else None
            probe.reset()
            t0 = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            while time.perf_counter() - t0 < seconds:
                app.processEvents()
                if step is not None and step():
                    break
                time.sleep(0.002)
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(str(Path(profile_dir) / f"{name}.prof"))
            result["phases"][name] = probe.figures(time.perf_counter() - t0)

        phase("idle", 2.0)

        window.set_page(3)
        training = window.page("Training")
        form = training.form  # type: ignore[attr-defined]
        form.dataset.setCurrentIndex(0)
        form.select_model("cnn2d-small")
        form.batch.setValue(32)
        form.epochs.setValue(2)
        form.max_steps.setValue(60)
        out = work / "data" / "gen.h5"
        gen2 = CliJob("generate", "generate", [str(out), "--n", "300000", "--seed", "2"])
        window.page("Datasets").start_dataset_job(gen2, out)  # type: ignore[attr-defined]
        train = training.start()  # type: ignore[attr-defined]
        ended: list[float] = []

        def jobs_done() -> bool:  # both ended, then a second for what their ends start
            if not ended and not gen2.is_running() and not training.is_running():  # type: ignore[attr-defined]
                ended.append(time.perf_counter())
            return bool(ended) and time.perf_counter() - ended[0] > 1.0

        phase("jobs", 120.0, jobs_done)
        result["phases"]["jobs"]["generation"] = gen2.status
        result["phases"]["jobs"]["training"] = train.status if train is not None else "not started"

        browser = window.page("Browser")
        steps: dict[str, float] = {}

        def show_then_open() -> bool:
            """The user shows the Browser, then a moment later picks the 10^7-row dataset;
            the phase ends a second after its header was read (the first paints are in)."""
            now = time.perf_counter()
            if "shown" not in steps:
                window.set_page(1)
                steps["shown"] = now
            elif "picked" not in steps and now - steps["shown"] > 0.5:
                browser.dataset_combo.setCurrentIndex(browser.dataset_combo.findText("big"))  # type: ignore[attr-defined]
                steps["picked"] = now  # (the page forgets the shown dataset's header at once)
            elif "picked" in steps and "opened" not in steps and browser.meta is not None:  # type: ignore[attr-defined]
                steps["opened"] = now
            return "opened" in steps and now - steps["opened"] > 1.0

        phase("open_big", 30.0, show_then_open)
        bar = browser.grid.verticalScrollBar()  # type: ignore[attr-defined]
        rng = np.random.default_rng(0)
        targets = iter(
            [int(v) for v in rng.integers(0, max(1, bar.maximum()), 150)] + list(range(0, 2000, 10))
        )

        def scroll() -> bool:
            value = next(targets, None)
            if value is None:
                return True
            bar.setValue(value)
            return False

        phase("browser_scroll", 30.0, scroll)
        result["phases"]["browser_scroll"]["scroll_maximum"] = bar.maximum()

        # the embedding map over 10^6 points, panned and zoomed (guiapp/bench/embedding_map.py)
        from .embedding_map import map_phase

        emb_map, emb_steps = map_phase(browser.detail.attribution)  # type: ignore[attr-defined]
        phase("embedding_map", 30.0, emb_steps)
        result["phases"]["embedding_map"]["points"] = len(emb_map.data["row"])
        emb_map.calls.wait()
        emb_map.close()
        result["max_stall_ms"] = max(p["max_stall_ms"] for p in result["phases"].values())
        result["target_ms"] = 100
        window.set_modified(False)
        window.hide()
        window.deleteLater()
        app.processEvents()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if out_json:
        Path(out_json).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":  # pragma: no cover - ``python -m guiapp.bench.gui [OUT.json]``
    import sys

    print(json.dumps(run_gui_bench(sys.argv[1] if len(sys.argv) > 1 else None), indent=2))
