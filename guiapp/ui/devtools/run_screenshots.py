"""``python -m guiapp.ui.devtools.run_screenshots DIR [NAME...]``: the views of runs and
imports that ``guiapp --screenshots`` does not reach, as PNGs in DIR.

``import-preview`` (a line the import would refuse, flagged), ``runs-groups`` (per row and
per group side by side), ``predictions-misclassified`` (a confusion cell's rows in the
Browser, its filter in the controls), ``training-kfold`` and ``runs-kfold`` (a curve per
fold), ``training-crashed`` (a training child killed with SIGKILL). The datasets are
written here, the runs trained by ``guiapp train`` children (a few minutes on a CPU).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget

from guiapp.core.project import DatasetRef, ModelEntry, Project, RunEntry
from guiapp.core.store import DatasetWriter
from guiapp.ui.devtools.cli_runs import train as train_run
from guiapp.ui.devtools.screenshots import Driver
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages import BrowserPage, RunsPage, TrainingPage
from guiapp.ui.refcount_guard import guard_singletons

NAMES = ("import-preview", "runs-groups", "predictions-misclassified", "training-kfold",
         "runs-kfold", "training-crashed")  # fmt: skip
CLASSES = ["grating", "blob", "ring", "edge", "texture"]


def dense(shape: list[int], classes: int) -> dict[str, Any]:
    return {
        "name": "dense",
        "input": {"shape": shape, "dtype": "float32"},
        "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 32, "activation": "relu"},
                   {"type": "Dense", "units": classes, "activation": "softmax"}],
        "loss": "sparse_categorical_crossentropy",
        "optimizer": {"type": "adam", "learning_rate": 0.003},
        "metrics": ["accuracy"],
    }  # fmt: skip


def train(data: Path, out: Path, shape: list[int], classes: int, **options: Any) -> Path:
    return train_run(data, dense(shape, classes), out, **options)


def images(path: Path, rows: int, seed: int, groups: bool = False) -> Path:
    """Noisy 25x25 patterns of five classes (groups of ten rows each, if asked)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, rows).astype(np.int32)
    yy, xx = np.mgrid[0:25, 0:25] / 24.0
    ring = (np.abs(np.hypot(xx - 0.5, yy - 0.5) - 0.3) < 0.06) * 1.0
    base = np.stack([np.sin(xx * 12), np.exp(-((xx - 0.5) ** 2 + (yy - 0.5) ** 2) * 20), ring,
                     (xx + yy > 1.0) * 1.0, rng.normal(size=(25, 25)) * 0.5])  # fmt: skip
    x = (base[y] * 0.5 + rng.normal(size=(rows, 25, 25)) * 2.0).astype("float32")
    columns = {"group": "int64"} if groups else None
    with DatasetWriter(path, sample_shape=(25, 25), dtype="float32", class_names=CLASSES,
                       columns=columns) as w:  # fmt: skip
        w.append(x, y, {"group": np.arange(rows) // 10} if groups else None)
    return path


def window(project: Project, size: tuple[int, int] = (1100, 690)) -> MainWindow:
    w = MainWindow(project)
    w.resize(*size)
    w.show()
    w.resizeDocks([w.jobs_panel], [110], Qt.Orientation.Vertical)
    return w


def shoot_import(out: Path, work: Path, drive: Driver) -> None:
    from guiapp.ui.dialogs.import_dialog import ImportDialog

    lines = [json.dumps({"label": f"sp{i % 3}", "data": [i % 50 + 1] * (104 if i == 18 else 126)})
             for i in range(1, 41)]  # fmt: skip
    lines[4] = '{"label": "sp1", "data": [1, 2'
    src = work / "reads.jsonl"
    src.write_text("\n".join(lines) + "\n")
    dialog = ImportDialog(work / "data")
    dialog.source.set_path(str(src))
    dialog.preview_rows.setValue(40)
    dialog.show()
    dialog.resize(1000, 560)
    row = dialog.preview_table.item(24, 0)
    if row is not None:
        dialog.preview_table.scrollToItem(row)
    grab(dialog, out / "import-preview.png", drive)
    dialog.close()


def shoot_runs(out: Path, work: Path, drive: Driver, names: list[str]) -> None:
    if "runs-groups" in names:
        data = images(work / "grouped.h5", 2000, 0, groups=True)
        run = train(data, work / "runs" / "grouped", [25, 25], 5, epochs=3)
        project = Project.new(work / "g.gproj", "Groups")
        project.datasets.append(DatasetRef("grouped", data))
        project.runs.append(RunEntry(str(run), name="grouped", dataset="grouped", model="dense"))
        w = window(project)
        w.set_page(RunsPage)
        runs = w.page_of(RunsPage)
        drive.wait(lambda: runs.groups_pane.isVisible(), "per group", settle_s=1.0)
        grab(w, out / "runs-groups.png", drive)
        w.close()
    if "predictions-misclassified" in names:
        data = images(work / "cells.h5", 3000, 1)
        run = train(data, work / "runs" / "cells", [25, 25], 5, epochs=2)
        project = Project.new(work / "c.gproj", "Cells")
        project.datasets.append(DatasetRef("cells", data))
        project.runs.append(RunEntry(str(run), name="cells", dataset="cells", model="dense"))
        w = window(project, (1280, 800))
        w.set_page(RunsPage)
        runs = w.page_of(RunsPage)
        drive.wait(lambda: len(runs.confusion.names) == 5, "the run", settle_s=1.0)
        off = runs.confusion.matrix.copy()
        np.fill_diagonal(off, -1)
        i, j = np.unravel_index(int(off.argmax()), off.shape)
        runs.open_cell(int(i), int(j))
        browser: Any = w.page_of(BrowserPage)
        drive.wait(lambda: "predicted" in browser.grid.selection.title, "the cell", settle_s=2.5)
        grab(w, out / "predictions-misclassified.png", drive)
        w.close()
    if {"training-kfold", "runs-kfold"} & set(names):
        data = images(work / "kfold.h5", 1500, 2)
        run = train(data, work / "runs" / "cv", [25, 25], 5, folds=3, epochs=3)
        project = Project.new(work / "k.gproj", "Kfold")
        project.datasets.append(DatasetRef("kfold", data))
        project.runs.append(
            RunEntry(str(run), name="cv", dataset="kfold", model="dense", status="finished")
        )
        w = window(project)
        w.set_page(TrainingPage)
        training: Any = w.page_of(TrainingPage)
        training.show_run(project.runs[-1])
        drive.wait(lambda: training.history.status == "finished", "the folds", settle_s=2.5)
        grab(w, out / "training-kfold.png", drive)
        w.set_page(RunsPage)
        runs = w.page_of(RunsPage)
        drive.wait(lambda: str(run) in runs.runs, "the folds' curves", settle_s=1.5)
        grab(w, out / "runs-kfold.png", drive)
        w.close()


def shoot_crash(out: Path, work: Path, drive: Driver) -> None:
    """A training child killed with SIGKILL in its second epoch."""
    data = images(work / "crash.h5", 3000, 3)
    project = Project.new(work / "x.gproj", "Crash")
    project.datasets.append(DatasetRef("crash", data))
    project.models.append(ModelEntry(name="dense", spec=dense([25, 25], 5)))
    w = window(project)
    w.set_page(TrainingPage)
    training: Any = w.page_of(TrainingPage)
    training.form.select_model("dense")
    training.form.batch.setValue(8)
    training.form.epochs.setValue(3)
    training.form.max_steps.setValue(100)
    job = training.start()
    killed: list[int] = []

    def kill(event: dict[str, Any]) -> None:
        if event.get("event") == "batch" and event.get("global_step", 0) >= 160 and not killed:
            killed.append(job.pid())
            os.kill(killed[0], signal.SIGKILL)

    job.event.connect(kill)
    drive.wait(lambda: job.status == "failed", "the killed run", settle_s=2.0)
    grab(w, out / "training-crashed.png", drive)
    w.close()


def grab(widget: QWidget, path: Path, drive: Driver) -> None:
    drive.wait(lambda: True, "", settle_s=0.8)
    widget.grab().save(str(path))
    print(f"wrote {path}", flush=True)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out, names = Path(argv[0]), argv[1:] or list(NAMES)
    out.mkdir(parents=True, exist_ok=True)
    guard_singletons()  # as the app does: PySide6's processEvents leaks None references
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    drive = Driver(app, time.monotonic() + 900)
    with tempfile.TemporaryDirectory(prefix="guiapp-run-shots-") as tmp:
        work = Path(tmp)
        if "import-preview" in names:
            shoot_import(out, work, drive)
        shoot_runs(out, work, drive, names)
        if "training-crashed" in names:
            shoot_crash(out, work, drive)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
