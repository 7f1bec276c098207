"""``guiapp --screenshots DIR``: drive the real window through every page and save PNGs.

The demo project's first start is made in a temporary data folder (``GUIAPP_DATA_DIR``):
its builder generates a small dataset and trains a short run there, through the same jobs
a user starts (``demo-first-start``, while the run trains). One PNG per page (datasets,
browser, model, training, runs) follows, then a failed training run (``training-failed``),
a failed import's error panel (``error-panel``) and the quit question with a job running
(``quit-dialog``). Works offscreen and stops after :data:`DEADLINE_S` seconds whatever
happens.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from guiapp.core.requests import GenerateRequest, ImportRequest
from guiapp.ui.jobs.request_job import request_job
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages import BrowserPage, DatasetsPage, ModelPage, RunsPage, TrainingPage

DEMO_ENV = {"GUIAPP_DEMO_ROWS": "3000", "GUIAPP_DEMO_STEPS": "20"}
BAD_CSV = "label,data\n0,1 2 3\n1,4 5 6\n0,x 8 9\n"

DEADLINE_S = 230.0


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


def shoot_failure_and_quit(
    window: MainWindow, drive: Driver, work: Path, shoot: Callable[..., None]
) -> None:
    """A failed import's error panel, then the quit question while a generation runs."""
    window.set_page(DatasetsPage)
    window.resizeDocks([window.jobs_panel], [300], Qt.Orientation.Vertical)
    csv = work / "bad.csv"
    csv.write_text(BAD_CSV)
    bad_out = work / "bad.h5"
    bad_req = ImportRequest(src=str(csv), out=str(bad_out), format="csv")
    bad = request_job(bad_req, bad_out, name="import bad")
    window.page_of(DatasetsPage).start_dataset_job(bad, bad_out)
    drive.wait(lambda: window.jobs_panel.error_panel.isVisible(), "the error panel")
    shoot("error-panel")

    big = work / "big.h5"
    big_req = GenerateRequest(out=str(big), n=3_000_000, shape="8x8", shard_rows=100_000)
    job = request_job(big_req, big, name="generate big", resumable=True)
    window.page_of(DatasetsPage).start_dataset_job(job, big)
    drive.wait(lambda: job.last_event.get("event") == "progress", "the generation")
    shots: list[bool] = []

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(50, answer)
            return
        box.adjustSize()
        drive.wait(lambda: True, "the quit dialog", settle_s=0.3)
        shoot("quit-dialog", box)
        shots.append(True)
        box.button(QMessageBox.StandardButton.Cancel).click()

    QTimer.singleShot(50, answer)
    window.close()  # the question comes; Cancel keeps the window
    drive.wait(lambda: bool(shots), "the quit dialog")
    job.stop()
    drive.wait(lambda: not job.is_running(), "the generation to stop")


def shoot_failed_training(window: MainWindow, drive: Driver, shoot: Callable[..., None]) -> None:
    """The Training page after a run failed (asked for a GPU no machine has): the error panel."""
    window.set_page(TrainingPage)
    training = window.page_of(TrainingPage)
    training.form.devices.setCurrentText("gpu:97")
    if training.start() is None:
        raise RuntimeError("the failing training run did not start")
    drive.wait(lambda: training.error_panel.isVisible(), "the failed run's error panel")
    training.form.devices.setCurrentText("auto")
    shoot("training-failed")


def shoot_generate_dialog(datasets: Any, drive: Driver, shoot: Callable[..., None]) -> None:
    """The Generate dialog, and its Augmentation tab with two ops and their preview."""
    dialog = datasets.open_generate_dialog()
    dialog.resize(640, 640)
    shoot("generate", dialog)
    form = dialog.augment_form
    form.add_op.setCurrentIndex(form.add_op.findData("flip"))
    form.append_op("flip")
    form.append_op("shift", {"max": 3})
    form.copies.setValue(2)
    dialog.tabs.setCurrentIndex(1)
    form.preview()
    drive.wait(lambda: bool(form.preview_grid.cells), "the augmentation preview")
    shoot("generate-augment", dialog)
    dialog.reject()


def take_screenshots(app: QApplication, out: Path) -> int:
    """Visit every page of a demo project, save one PNG per page in ``out``; exit code."""
    out.mkdir(parents=True, exist_ok=True)
    drive = Driver(app, time.monotonic() + DEADLINE_S)
    work = Path(tempfile.mkdtemp(prefix="guiapp-screens-"))
    saved_env = {k: os.environ.get(k) for k in ("GUIAPP_DATA_DIR", *DEMO_ENV)}
    os.environ.update({"GUIAPP_DATA_DIR": str(work / "share"), **DEMO_ENV})
    from guiapp.ui.app import start_demo_build
    from guiapp.ui.demo import open_demo

    window = MainWindow(open_demo())
    window.resize(1280, 860)
    window.show()
    window.resizeDocks([window.jobs_panel], [150], Qt.Orientation.Vertical)
    written: list[Path] = []

    def shoot(name: str, widget: QWidget | None = None) -> None:
        drive.wait(lambda: True, name, settle_s=0.6)
        path = out / f"{name}.png"
        if not (widget or window).grab().save(str(path)):
            raise OSError(f"could not write {path}")
        written.append(path)

    try:
        start_demo_build(window)
        panel = window.jobs_panel
        drive.wait(
            lambda: any(r.job.command == "train" and r.bar.value() > 0 for r in panel.rows),
            "the demo's training run in the Jobs panel",
        )
        shoot("demo-first-start")
        drive.wait(lambda: window.demo.failed or not window.demo.needed(), "the demo project")  # type: ignore[attr-defined]
        window.resizeDocks([window.jobs_panel], [110], Qt.Orientation.Vertical)
        datasets = window.page_of(DatasetsPage)
        data = window.project.datasets[0].path
        drive.wait(lambda: str(data) in datasets.info, "the dataset's header")
        shoot("datasets")
        shoot_generate_dialog(datasets, drive, shoot)

        window.set_page(BrowserPage)
        browser = window.page_of(BrowserPage)
        drive.wait(lambda: browser.meta is not None, "the browser")
        shoot("browser")

        window.set_page(ModelPage)
        model = window.page_of(ModelPage)
        drive.wait(lambda: model.settings.data_info is not None, "the model page's dataset")
        if not window.project.models:  # the demo adds the model it trains
            model.new_model("cnn2d-small")
        drive.wait(lambda: model.summary.rowCount() > 0, "the model summary")
        shoot("model")

        window.set_page(TrainingPage)
        training = window.page_of(TrainingPage)
        drive.wait(lambda: training.plots.points("loss_smooth") > 0, "plot points")
        shoot("training")

        window.set_page(RunsPage)
        runs = window.page_of(RunsPage)
        drive.wait(lambda: len(runs.confusion.names) > 0, "the confusion matrix")
        shoot("runs")
        shoot_failed_training(window, drive, shoot)
        shoot_failure_and_quit(window, drive, work, shoot)
    except (Timeout, RuntimeError, OSError) as exc:
        print(f"guiapp: screenshots: {exc}", file=sys.stderr)
        return 1
    finally:
        for job in window.jobs_panel.running_jobs():
            job.stop()
        drive.deadline = time.monotonic() + 20
        try:
            drive.wait(lambda: not window.jobs_panel.running_jobs(), "the jobs to stop")
        except Timeout:
            pass
        window.set_modified(False)
        window.hide()
        window.deleteLater()
        app.processEvents()
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {len(written)} screenshots to {out}: " + ", ".join(p.name for p in written))
    return 0
