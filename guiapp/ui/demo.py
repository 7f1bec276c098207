"""The demo project: made in the user's data folder on first start, never in the checkout.

``guiapp --demo`` (what ``make run`` runs) opens ``DATA/demo/demo.gproj``, where DATA is
``$GUIAPP_DATA_DIR`` when set (tests point it at a temporary folder), else Qt's
application data folder (``$XDG_DATA_HOME/guiapp`` on Linux). The first time, the project
is created from ``resources/demo/demo.gproj`` and :class:`DemoBuilder` fills it in the
background, through the jobs a user starts, shown in the Jobs panel with their progress:
a small generated dataset, then a short training run, so every page has something to
show. A build cut short (the window closed) carries on at the next start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QStandardPaths, QTimer, Signal

from guiapp.core.errors import UserError
from guiapp.core.project import Project, ProjectError
from guiapp.core.requests import GenerateRequest
from guiapp.core.store.dataset import read_info
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.jobs.request_job import request_job
from guiapp.ui.pages import DatasetsPage, ModelPage, TrainingPage

if TYPE_CHECKING:
    from guiapp.ui.main_window import MainWindow

TEMPLATE = Path(__file__).resolve().parents[1].parent / "resources" / "demo" / "demo.gproj"
ROWS = 20_000  # rows of the demo's dataset ($GUIAPP_DEMO_ROWS in tests)
EPOCHS = 2
STEPS = 60  # steps per epoch of the demo's run ($GUIAPP_DEMO_STEPS in tests)
DATASET = "patterns"


def data_dir() -> Path:
    """The user's data folder for guiapp (``$GUIAPP_DATA_DIR`` wins)."""
    env = os.environ.get("GUIAPP_DATA_DIR")
    if env:
        return Path(env).expanduser().absolute()
    where = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(where) if where else Path.home() / ".local" / "share" / "guiapp"


def demo_path() -> Path:
    return data_dir() / "demo" / "demo.gproj"


def open_demo() -> Project:
    """The demo project in the data folder, created from the template the first time."""
    path = demo_path()
    if path.exists():
        try:
            return Project.load(path)
        except ProjectError:
            path.replace(path.with_suffix(".broken"))  # start over, keep the file to look at
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        template = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        template = {"schema_version": 1, "name": "Demo"}
    project = Project.from_dict(template, path)
    project.save(path)
    return Project.load(path)


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


class DemoBuilder(QObject):
    """Fill the open demo project: generate the dataset, then train a run, one job each.

    Works on the window's own pages (Datasets, Training) so that what it makes is what a
    user would have made; ``done`` when the project holds both (or a step failed).
    """

    done = Signal(bool)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.failed = False
        self.jobs: list[CliJob] = []

    def needed(self) -> bool:
        project: Project = self.window.project
        return not self._dataset_done(project) or not self._run_done(project)

    def start(self) -> None:
        self.window.statusBar().showMessage(
            "First start: making the demo project's dataset and a short training run in "
            "the background (see the Jobs panel)…",
            30_000,
        )
        QTimer.singleShot(0, self.step)

    # ------------------------------------------------------------------ the steps
    def _dataset(self, project: Project) -> Path:
        return project.folder / "data" / f"{DATASET}.h5"

    def _dataset_done(self, project: Project) -> bool:
        data = self._dataset(project)
        if not any(ref.path == data for ref in project.datasets):
            return False
        try:
            return bool(read_info(data).get("complete"))  # the header only: a small read
        except (UserError, OSError):
            return False

    def _run_done(self, project: Project) -> bool:
        return any(r.status == "finished" for r in project.runs)

    def step(self) -> None:
        window = self.window
        project: Project = window.project
        if self.failed:
            return
        if not self._dataset_done(project):
            self._generate(project)
        elif not self._run_done(project):
            self._train()
        else:
            window.statusBar().showMessage("The demo project is ready.", 10_000)
            if project.path is not None:
                window._save_to(project.path)
            self.done.emit(True)

    def _say(self, text: str) -> None:
        self.window.statusBar().showMessage(f"Demo project, first start: {text}", 120_000)

    def _generate(self, project: Project) -> None:
        self._say("1 of 2, generating a small dataset (progress in the Jobs panel)…")
        data = self._dataset(project)
        req = GenerateRequest(
            out=str(data), n=_env_int("GUIAPP_DEMO_ROWS", ROWS), seed=1, resume=data.exists()
        )
        try:  # saved beside the dataset and run as the Generate dialog's jobs are
            job = request_job(req, data, name=f"generate {DATASET} (demo)", resumable=True)
        except (OSError, UserError) as exc:
            self._fail(f"cannot save the demo's generation request ({exc})")
            return
        job.finished.connect(self._after)
        self.jobs.append(job)
        datasets = self.window.page_of(DatasetsPage)
        datasets.start_dataset_job(job, data)

    def _train(self) -> None:
        self._say("2 of 2, training a short run of a small CNN (progress in the Jobs panel)…")
        training = self.window.page_of(TrainingPage)
        form = training.form
        form.fill(self.window.project)
        at = form.dataset.findText(DATASET)
        if at >= 0:
            form.dataset.setCurrentIndex(at)
        form.select_model(self._demo_model())
        form.batch.setValue(64)
        form.epochs.setValue(EPOCHS)
        form.max_steps.setValue(_env_int("GUIAPP_DEMO_STEPS", STEPS))
        form.name.setText("demo")
        job = training.start()
        if job is None:
            self._fail(f"the demo's training did not start: {training.message.text()}")
            return
        self.jobs.append(job)
        job.finished.connect(self._after)

    def _demo_model(self) -> str:
        """The model the demo trains, added to the project (the Model page shows it):
        the cnn2d-small template fitted to the demo's dataset. Its name."""
        from guiapp.core.model import fit_template

        project: Project = self.window.project
        for entry in project.models:
            if entry.template == "cnn2d-small" or entry.name == "cnn2d-small":
                return entry.name
        info = read_info(self._dataset(project))
        spec = fit_template("cnn2d-small", info["sample_shape"], len(info["classes"]))
        model_page = self.window.page_of(ModelPage)
        model_page.add_model(spec, "cnn2d-small")
        self.window.page_of(TrainingPage).form.fill(project)
        return project.models[-1].name

    def _after(self, ok: bool, message: str) -> None:
        if not ok:
            self._fail(f"the demo project could not be made: {message}")
            return
        QTimer.singleShot(0, self.step)

    def _fail(self, text: str) -> None:
        self.failed = True
        self.window.statusBar().showMessage(text, 30_000)
        self.done.emit(False)
