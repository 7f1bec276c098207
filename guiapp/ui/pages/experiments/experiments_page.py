"""The Experiments page: an experiment's trials as a table and plots, live while it runs.

An experiment is a run folder of the project (k folds, fractions, a sweep, or a single run:
an experiment of one trial). The page reads its ``events.jsonl`` into an
:class:`ExperimentHistory` off the GUI thread, then follows the file (:class:`EventsTail`)
whoever runs it: this page, the Training page or a detached process. Stop asks the
experiment's process to checkpoint and stop (its pid, SIGTERM); Resume runs ``guiapp train
--spec SPEC --resume`` (finished trials are skipped, the one in progress resumes exactly).
"Open trial" shows a trial's run folder in the Runs page.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
)

from guiapp.core.errors import UserError
from guiapp.core.project import Project, RunEntry
from guiapp.core.requests import TrainSpecRequest, to_argv
from guiapp.core.train.experiment_history import ExperimentHistory
from guiapp.core.train.experiment_spec import resume_spec_path
from guiapp.core.train.run_lock import run_holder
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.jobs.run_tail import EventsTail, stop_detached
from guiapp.ui.pages.base import SP, Page
from guiapp.ui.pages.experiments.experiment_plots import ExperimentPlots
from guiapp.ui.pages.experiments.trials_table import TrialsTable
from guiapp.ui.widgets.layouts import splitter


def summary_text(h: ExperimentHistory) -> str:
    rows = h.rows()
    done = sum(r["status"] == "finished" for r in rows)
    parts = [f"{len(rows)} trial(s), {done} finished"]
    if "fold" in h.varied:
        groups = [g for g in h.groups() if g["mean_val_accuracy"] is not None]
        for g in groups[:4]:
            label = ", ".join(f"{k}={v}" for k, v in g["params"].items())
            parts.append(
                f"{label + ': ' if label else ''}mean {g['mean_val_accuracy']:.4f} ± "
                f"{g['std_val_accuracy']:.4f} over {len(g['trials'])} folds"
            )
    finished = [r for r in rows if r["final"]["val_accuracy"] is not None]
    if finished:
        best = max(finished, key=lambda r: r["final"]["val_accuracy"])
        parts.append(f"best {best['id']}: {best['final']['val_accuracy']:.4f}")
    return " · ".join(parts)


class ExperimentsPage(Page):
    title = "Experiments"
    blurb = (
        "K-fold cross-validation, data-scaling curves and parameter sweeps: every trial in "
        "a table and in plots, live while the experiment runs; stop it and resume it."
    )
    icon = SP.SP_FileDialogDetailedView

    def build(self) -> None:
        self.history = ExperimentHistory()
        self.tail: EventsTail | None = None
        self.job: CliJob | None = None
        self.folder: Path | None = None
        self._shown_events = -1

        self.chooser = QComboBox()
        self.chooser.setMinimumWidth(260)
        self.chooser.currentIndexChanged.connect(self._chosen)
        self.open_button = QPushButton("Open trial")
        self.open_button.setToolTip("Show the selected trial in the Runs page")
        self.stop_button = QPushButton("Stop")
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Skip finished trials; resume the one in progress exactly")
        self.open_button.clicked.connect(self.open_trial)
        self.stop_button.clicked.connect(self.stop)
        self.resume_button.clicked.connect(self.resume)
        top = QHBoxLayout()
        top.addWidget(QLabel("Experiment"))
        top.addWidget(self.chooser, 1)
        for b in (self.open_button, self.stop_button, self.resume_button):
            top.addWidget(b)
        self.summary = QLabel("No experiment yet: start one on the Training page.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = TrialsTable()
        self.table.doubleClicked.connect(lambda _i: self.open_trial())
        self.plots = ExperimentPlots()
        split = splitter(Qt.Orientation.Vertical, self.table, self.plots, stretch=(2, 5))
        self.body.addLayout(top)
        self.body.addWidget(self.summary)
        self.body.addWidget(split, 1)

        self.loader = BackgroundCalls(threads=1, parent=self, done=self._loaded)
        self.ticker = self.every(100, self._tick)
        self._update_buttons()

    # ------------------------------------------------------------------ project
    def set_project(self, project: Project) -> None:
        self._project = project
        self._fill_chooser(select_last=True)

    def project_updated(self) -> None:
        if self._project is not None:
            self._fill_chooser(select_last=False)

    def _experiments(self) -> list[RunEntry]:
        runs = self._project.runs if self._project is not None else []
        return [r for r in runs if not r.trial_of]

    def _fill_chooser(self, *, select_last: bool) -> None:
        entries = self._experiments()
        paths = [r.path for r in entries]
        current = self.chooser.currentData()
        shown = [self.chooser.itemData(i) for i in range(self.chooser.count())]
        if shown == paths and not select_last:
            return
        select_last = select_last or bool(paths and paths[-1] not in shown)  # a new one
        self.chooser.blockSignals(True)
        self.chooser.clear()
        for r in entries:
            self.chooser.addItem(r.label, r.path)
        at = self.chooser.findData(current) if current is not None and not select_last else -1
        self.chooser.setCurrentIndex(at if at >= 0 else self.chooser.count() - 1)
        self.chooser.blockSignals(False)
        self._chosen()

    def run_entry(self) -> RunEntry | None:
        for r in self._experiments():
            if self.folder is not None and r.path == str(self.folder):
                return r
        return None

    # ------------------------------------------------------------------ showing
    def _chosen(self) -> None:
        path = self.chooser.currentData()
        if path is None:
            return
        if self.folder is not None and str(self.folder) == path and self.tail is not None:
            return
        self.show_experiment(Path(path))

    def show_experiment(self, folder: Path) -> None:
        """Read the experiment in ``folder`` (off the GUI thread), then follow it."""
        if self.tail is not None:
            self.tail.stop()
            self.tail = None
        self.folder = folder
        self.summary.setText(f"Reading {folder.name}…")
        self.loader.submit(str(folder), ExperimentHistory.from_events_file, folder / "events.jsonl")

    def _loaded(self, key: object, history: object) -> None:
        if self.folder is None or key != str(self.folder):
            return
        if not isinstance(history, ExperimentHistory):
            return
        self.history = history
        self.plots.set_history(history)
        self._shown_events = -1
        self.tail = EventsTail(self.folder / "events.jsonl", None, self)
        self.tail.event.connect(self.history.feed)
        self.tail.start(history.offset)
        self._tick()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self._tick()

    def _tick(self) -> None:
        if not self.isVisible():  # a hidden page draws nothing: it catches up when shown
            return
        h = self.history
        if h.events != self._shown_events:
            self._shown_events = h.events
            self.table.show_rows(list(h.varied), h.rows())
            self.summary.setText(summary_text(h) if h.trials else "No trials yet.")
            self.plots.refresh()
        self._update_buttons()

    # ------------------------------------------------------------------ actions
    def is_running(self) -> bool:
        if self.job is not None and self.job.is_running():
            return True
        # The process writing the experiment is its lock's holder: a pid saved in the
        # project may be another process's after a reboot (``core/train/run_lock.py``).
        return self.folder is not None and run_holder(self.folder) is not None

    def _update_buttons(self) -> None:
        running = self.is_running()
        self.stop_button.setEnabled(running)
        folder = self.folder
        resumable = folder is not None and (folder / "spec.json").exists()
        resumable = resumable or (folder is not None and (folder / "config.json").exists())
        ended = self.history.status != "finished" or self.history.events == 0
        self.resume_button.setEnabled(bool(not running and resumable and ended))
        self.open_button.setEnabled(bool(self.history.trials))

    def open_trial(self) -> None:
        if self.folder is None or not self.history.trials:
            return
        tid = self.table.selected_trial() or self.history.trial_ids()[0]
        run_dir = self.history.row(tid).get("run_dir") or str(self.folder / tid)
        single = len(self.history.trials) == 1
        name = self.folder.name if single else f"{self.folder.name}/{tid}"
        self.open_run.emit(str(self.folder if single else run_dir), name)

    def stop(self) -> None:
        if self.job is not None and self.job.is_running():
            self.job.stop()
        else:
            stop_detached(run_holder(self.folder) if self.folder is not None else None)
        self.summary.setText("Stopping: every running trial checkpoints after its batch…")

    def resume(self) -> CliJob | None:
        if self.folder is None or self.is_running():
            return None
        try:
            spec = resume_spec_path(self.folder)
        except UserError as exc:
            self.summary.setText(str(exc))
            return None
        job = CliJob(
            f"resume {self.folder.name}",
            "train",
            to_argv(TrainSpecRequest(spec=str(spec), resume=True)),
            working_dir=str(self.project.folder),
        )
        job.finished.connect(lambda _ok, _msg: self._job_ended())
        self.job = job
        self.job_started.emit(job)
        job.start()
        run = self.run_entry()
        if run is not None:
            run.status, run.pid = "running", job.pid()
            self.project_changed.emit()
        self._update_buttons()
        return job

    def _job_ended(self) -> None:
        run = self.run_entry()
        if run is not None and self.job is not None:
            run.status, run.pid = self.job.status, None
            self.project_changed.emit()
        self._update_buttons()
