"""``guiapp --screenshots DIR``: drive the real window through every page and save PNGs.

A copy of the demo project goes to a temporary folder; a small dataset is generated and a
short training run made there, through the same jobs a user starts. One PNG per page
(datasets, browser, model, training, runs) is written to DIR. Works offscreen and stops
after :data:`DEADLINE_S` seconds whatever happens.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from guiapp.core.project import Project
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.main_window import MainWindow

DEADLINE_S = 170.0
DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "demo.gproj"
ROWS = 3000


class Timeout(Exception):
    pass


class Driver:
    def __init__(self, app: QApplication, deadline: float) -> None:
        self.app = app
        self.deadline = deadline

    def wait(self, condition: Callable[[], bool], what: str, settle_s: float = 0.0) -> None:
        """Run the event loop until ``condition()`` holds, then for ``settle_s`` more."""
        while not condition():
            if time.monotonic() > self.deadline:
                raise Timeout(f"timed out waiting for {what}")
            self.app.processEvents()
            time.sleep(0.02)
        end = time.monotonic() + settle_s
        while time.monotonic() < end:
            self.app.processEvents()
            time.sleep(0.02)


def demo_project(folder: Path) -> Project:
    """The demo project copied into ``folder`` (the original is never written)."""
    target = folder / "demo.gproj"
    if DEMO.exists():
        shutil.copyfile(DEMO, target)
        return Project.load(target)
    project = Project.new(target, "Demo")
    project.save()
    return project


def take_screenshots(app: QApplication, out: Path) -> int:
    """Visit every page of a demo project, save one PNG per page in ``out``; exit code."""
    out.mkdir(parents=True, exist_ok=True)
    drive = Driver(app, time.monotonic() + DEADLINE_S)
    work = Path(tempfile.mkdtemp(prefix="guiapp-screens-"))
    window = MainWindow(demo_project(work))
    window.resize(1280, 860)
    window.show()
    window.resizeDocks([window.jobs_panel], [110], Qt.Orientation.Vertical)
    written: list[Path] = []

    def shoot(name: str) -> None:
        drive.wait(lambda: True, name, settle_s=0.6)
        path = out / f"{name}.png"
        if not window.grab().save(str(path)):
            raise OSError(f"could not write {path}")
        written.append(path)

    try:
        datasets = window.page("Datasets")
        data = work / "data" / "patterns.h5"
        job = CliJob("generate patterns", "generate", [str(data), "--n", str(ROWS), "--seed", "1"])
        datasets.start_dataset_job(job, data)  # type: ignore[attr-defined]
        drive.wait(lambda: len(window.project.datasets) == 1, "the generated dataset")
        drive.wait(lambda: str(data) in datasets.info, "the dataset's header")  # type: ignore[attr-defined]
        shoot("datasets")

        window.set_page(1)
        browser = window.page("Browser")
        drive.wait(lambda: browser.meta is not None, "the browser")  # type: ignore[attr-defined]
        shoot("browser")

        window.set_page(2)
        model = window.page("Model")
        drive.wait(lambda: model.settings.data_info is not None, "the model page's dataset")  # type: ignore[attr-defined]
        model.new_model("cnn2d-small")  # type: ignore[attr-defined]
        drive.wait(lambda: model.summary.rowCount() > 0, "the model summary")  # type: ignore[attr-defined]
        shoot("model")

        window.set_page(3)
        training = window.page("Training")
        form = training.form  # type: ignore[attr-defined]
        form.select_model("cnn2d-small")
        form.batch.setValue(64)
        form.epochs.setValue(2)
        form.max_steps.setValue(20)
        if training.start() is None:  # type: ignore[attr-defined]
            raise RuntimeError(f"training did not start: {training.message.text()}")  # type: ignore[attr-defined]
        drive.wait(lambda: training.plots.points("loss_smooth") > 0, "plot points")  # type: ignore[attr-defined]
        drive.wait(lambda: not training.is_running(), "the training run")  # type: ignore[attr-defined]
        shoot("training")

        window.set_page(4)
        runs = window.page("Runs")
        drive.wait(lambda: len(runs.confusion.names) > 0, "the confusion matrix")  # type: ignore[attr-defined]
        shoot("runs")
    except (Timeout, RuntimeError, OSError) as exc:
        print(f"guiapp: screenshots: {exc}", file=sys.stderr)
        return 1
    finally:
        window.set_modified(False)
        window.hide()
        window.deleteLater()
        app.processEvents()
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {len(written)} screenshots to {out}: " + ", ".join(p.name for p in written))
    return 0
