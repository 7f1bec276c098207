"""``python -m guiapp.ui.devtools.experiment_screenshots DIR``: the Experiments page of a
k-fold run, a data-scaling curve and a sweep, as PNGs in DIR.

A small dataset is generated and the three experiments are trained by ``guiapp train``
children (minutes on a CPU); the window then shows each one on the Experiments page.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from guiapp.core.project import DatasetRef, Project, RunEntry
from guiapp.ui.devtools.cli_runs import generate, train
from guiapp.ui.devtools.screenshots import Driver
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages import ExperimentsPage

EXPERIMENTS: dict[str, dict[str, Any]] = {
    "experiments-kfold": {"folds": 5, "epochs": 3},
    "experiments-scaling": {"fractions": [0.05, 0.1, 0.25, 0.5, 1.0], "folds": 3},
    "experiments-sweep": {
        "grid": {"learning_rate": [0.0003, 0.001, 0.003], "dropout": [0.1, 0.4]},
        "epochs": 2,
    },
}


def take_experiment_screenshots(app: QApplication, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="guiapp-experiments-"))
    data = work / "cells.h5"
    generate(data, "patterns2d", 4000, seed=3)
    project = Project.new(work / "experiments.gproj", "Experiments")
    project.datasets.append(DatasetRef("cells", data))
    for name, extra in EXPERIMENTS.items():
        folder = work / "runs" / name.removeprefix("experiments-")
        train(data, "cnn2d-small", folder, batch=64, val=0.2, **extra)
        project.runs.append(RunEntry(str(folder), name=folder.name, status="finished"))
    project.save()
    return retake(app, work, out)


def retake(app: QApplication, work: Path, out: Path) -> int:
    """The Experiments page of each experiment in ``work/experiments.gproj``, as PNGs."""
    out.mkdir(parents=True, exist_ok=True)
    window = MainWindow(Project.load(work / "experiments.gproj"))
    window.resize(1280, 900)
    window.show()
    window.resizeDocks([window.jobs_panel], [90], Qt.Orientation.Vertical)
    window.set_page(ExperimentsPage)
    page = window.page_of(ExperimentsPage)
    drive = Driver(app, time.monotonic() + 120)
    for i, name in enumerate(EXPERIMENTS):
        page.chooser.setCurrentIndex(i)
        drive.wait(lambda: page.history.status == "finished", name, settle_s=0.8)
        window.grab().save(str(out / f"{name}.png"))
    return 0


if __name__ == "__main__":
    application = QApplication(sys.argv[:1])
    if len(sys.argv) > 2:  # DIR WORK: shoot again the experiments trained in WORK
        code = retake(application, Path(sys.argv[2]), Path(sys.argv[1]))
    else:
        code = take_experiment_screenshots(application, Path(sys.argv[1]))
    sys.stdout.flush()
    os._exit(code)  # skip Qt's teardown at exit (PySide6 can crash collecting widgets)
