"""The Training page: start, stop and resume ``guiapp train`` and watch it live.

The run is a child process (:class:`CliJob`); its events feed a :class:`RunHistory` that
the plots copy at ~10 Hz. A run this GUI does not own (left running when the window
closed, or started elsewhere) is followed through its ``events.jsonl`` (:class:`EventsTail`):
that part is in :mod:`.detached_runs`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QScrollArea,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)

from guiapp.core.errors import UserError
from guiapp.core.events import Failure
from guiapp.core.project import Project, RunEntry
from guiapp.core.requests import TrainSpecRequest, to_argv
from guiapp.core.train.history import RunHistory
from guiapp.core.train.run_lock import run_active
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.jobs.cli_job import CliJob, format_eta, format_rate
from guiapp.ui.jobs.run_tail import EventsTail, stop_detached
from guiapp.ui.pages.base import SP, Page
from guiapp.ui.pages.training.detached_runs import DetachedRuns, resume_command
from guiapp.ui.pages.training.training_form import TrainingForm
from guiapp.ui.pages.training.training_plots import TrainingPlots
from guiapp.ui.widgets.error_panel import ErrorPanel
from guiapp.ui.widgets.layouts import button, splitter, wrapping_label
from guiapp.ui.widgets.outputs import show_status


class TrainingPage(DetachedRuns, Page):
    title = "Training"
    blurb = (
        "Train a model on one GPU, several GPUs or several machines, and watch loss, "
        "accuracy, throughput and the input-bound fraction live."
    )
    icon = SP.SP_ComputerIcon

    def build(self) -> None:
        self.job: CliJob | None = None
        self.tail: EventsTail | None = None
        self.followed = None
        self.run: RunEntry | None = None  # the shown run's entry in project.runs
        self.history = RunHistory()
        self._log_lines = 0
        self._after_stop: list[Any] = []

        self.form = TrainingForm()
        self.start_button = button(
            "Start", "Start a new run in the project's runs/ folder", self.start
        )
        self.stop_button = button("Stop", "Checkpoint and stop after the current batch", self.stop)
        self.resume_button = button(
            "Resume", "Continue the stopped run exactly where it stopped", self.resume
        )
        buttons = QHBoxLayout()
        for b in (self.start_button, self.stop_button, self.resume_button):
            buttons.addWidget(b)
        # Start/Stop/Resume and why Start refused stay at the top, above the scrolling
        # form: a refusal printed under a long form was never seen (issue 34.1).
        self.message = wrapping_label(problem=True)
        # where Start will write the run, before it starts (issue 35.3)
        self.where_label = wrapping_label()
        self.where_label.setObjectName("runWhere")
        self.where_label.setStyleSheet("color: #555;")
        self.where_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.form)
        column.addWidget(self.form.experiment)
        column.addStretch(1)
        form_scroll = QScrollArea()
        form_scroll.setWidget(left)
        form_scroll.setWidgetResizable(True)
        form_scroll.setFrameShape(QFrame.Shape.NoFrame)
        form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll = QWidget()
        side = QVBoxLayout(scroll)
        side.setContentsMargins(0, 0, 0, 0)
        side.addLayout(buttons)
        side.addWidget(self.message)
        side.addWidget(self.where_label)
        side.addWidget(form_scroll, 1)
        scroll.setFixedWidth(340)
        for signal in (self.form.dataset.currentIndexChanged, self.form.model.currentIndexChanged):
            signal.connect(self._clear_refusal)
        # dataset path -> rows, sample shape, dtype (its header, read once)
        self._rows_of: dict[str, tuple[int, tuple[int, ...], str]] = {}
        f = self.form
        for signal in (
            *f.split_signals(),
            f.model.currentIndexChanged,
            f.name.textChanged,
            f.batch.valueChanged,
            f.max_steps.valueChanged,
            f.devices.currentTextChanged,
            f.experiment.fractions.textChanged,
        ):
            signal.connect(self._show_plan)

        self.run_label = QLabel("No run yet.")
        self.run_label.setWordWrap(True)
        self.run_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress_label = QLabel("")
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setVisible(False)
        self.banner.setStyleSheet("background: #dff0d8; color: #1e4620; padding: 4px;")
        # its line stays reserved while hidden: a run's end shows it, and a plot area that
        # shrank then repainted all four plots' axes in one go
        policy = self.banner.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.banner.setSizePolicy(policy)
        # a failed run: the Jobs panel's error panel (message, fix, log), never the banner
        self.error_panel = ErrorPanel()
        self.error_panel.log_requested.connect(self.show_log)
        self.log_dialog: QWidget | None = None
        self.plots = TrainingPlots()
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(5000)
        self.log.setPlaceholderText("The run's log appears here.")
        split = splitter(Qt.Orientation.Vertical, self.plots, self.log, stretch=(4, 1))
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        for w in (self.run_label, self.progress_label, self.banner, self.error_panel):
            rcol.addWidget(w)
        rcol.addWidget(split, 1)
        row = QHBoxLayout()
        row.addWidget(scroll)
        row.addWidget(right, 1)
        self.body.addLayout(row, 1)

        self.loader = BackgroundCalls(threads=1, parent=self, done=self._history_loaded)
        # How the form splits the dataset (and identical rows across it), read off the GUI
        # thread a moment after the last change of a split setting.
        self.splits = BackgroundCalls(threads=1, parent=self, done=self._split_shown)
        self.splits.failed.connect(lambda _key, text: self.form.show_split([text], True))
        self._split_key: object = None
        self._split_timer = QTimer(self)
        self._split_timer.setSingleShot(True)
        self._split_timer.setInterval(300)
        self._split_timer.timeout.connect(self._preview_split)
        for signal in self.form.split_signals():
            signal.connect(self._split_timer.start)
        self.ticker = self.every(100, self._tick)
        self._update_buttons()

    def _preview_split(self) -> None:
        cfg = self.form.split_config()
        if cfg is None:
            self.form.show_split([], False)
            return
        from guiapp.core.pipeline.leakage import split_preview

        key = (cfg.data, cfg.val, cfg.test, cfg.folds, cfg.split_by)
        self._split_key = key
        self.splits.submit(key, split_preview, cfg.data, cfg)

    def _split_shown(self, key: object, result: object) -> None:
        if key != self._split_key:  # settings changed since: a newer preview is coming
            return
        # split_preview's (lines, warn), through BackgroundCalls' Signal(object, object):
        # a Qt signal's payload reaches the slot untyped.
        lines, warn = cast(tuple[list[str], bool], result)
        self.form.show_split(list(lines), bool(warn))

    # ------------------------------------------------------------------ project
    def set_project(self, project: Project) -> None:
        if project is self._project:  # saved (the window shows it again): keep the run
            self.project_updated()
            return
        if self.tail is not None:
            self.tail.stop()
            self.tail = None
            self.end_followed("stopped", unfollowed=True)
        self._project = project
        self.form.fill(project)
        self._rows_of.clear()
        self._show_plan()
        self.run = None
        if self.is_running():
            self._update_buttons()
            return
        self._clear_outcome()
        self.refuse("")
        if project.runs:
            self.show_run(project.runs[-1])
        else:  # nothing of the previous project's run stays on screen
            self._set_history(RunHistory())
            self.run_label.setText("No run yet.")
            self.progress_label.setText("")
        self._update_buttons()

    def project_updated(self) -> None:
        if self._project is None:
            return
        self.form.fill(self.project)
        self._show_plan()
        self._update_buttons()

    # ------------------------------------------------------------------ state
    def is_running(self) -> bool:
        owned = self.job is not None and self.job.is_running()
        return owned or (self.tail is not None and not self.tail.done)

    def _update_buttons(self) -> None:
        running = self.is_running()
        self.start_button.setEnabled(not running and self._project is not None)
        self.stop_button.setEnabled(running)
        resumable = self.run is not None and self.history.status in ("stopped", "failed")
        folder = Path(self.run.path) if self.run is not None else None
        # a run refused before it started (no ``started`` event, no checkpoint) has nothing
        # to resume: Start again once the cause is fixed
        has_state = folder is not None and (
            (folder / "checkpoints" / "last.h5").exists()
            or ((folder / "spec.json").exists() and bool(self.history.started))
        )
        live = folder is not None and run_active(folder)  # another process writes it
        self.resume_button.setEnabled(not running and resumable and has_state and not live)
        if live and not running:
            self.resume_button.setToolTip("Another process is writing this run now")
        else:
            self.resume_button.setToolTip("Continue the stopped run exactly where it stopped")

    def _set_history(self, history: RunHistory) -> None:
        self.history = history
        self.plots.set_history(history)
        self.log.clear()
        self._log_lines = 0
        self._tick()

    # ------------------------------------------------------------------ start / stop / resume
    def refuse(self, text: str) -> None:
        """Why Start (or Resume) did nothing: at the top of the page and in the status bar;
        it clears when the dataset or model changes, or at the next Start."""
        self.message.setText(text)
        if text:
            show_status(self, text)

    def _clear_refusal(self) -> None:
        self.message.setText("")

    def runs_folder(self) -> Path | None:
        """The folder Start writes a new run into (None without a project)."""
        return self._project.folder / "runs" if self._project is not None else None

    def _show_plan(self, *_: object) -> None:
        """Before Start: where the run will be written, and what a steps cap does to a
        data-scaling experiment."""
        folder = self.runs_folder()
        if folder is None:
            self.where_label.setText("")
        else:
            self.where_label.setText(
                f"Start writes the run to {folder / self.form.run_name()}-<date-time>"
            )
        self.form.experiment.scaling_info.setText(self.scaling_note())
        data = self.form.dataset.currentData()
        header = self._header(str(data)) if data is not None else None
        if header is not None:
            self.form.augment_form.fit_to(header[1], header[2])

    def _header(self, data: str) -> tuple[int, tuple[int, ...], str] | None:
        """Rows, sample shape and dtype of a dataset, read once (its header only)."""
        if data not in self._rows_of:
            from guiapp.core.store import Dataset

            try:
                with Dataset(data) as ds:
                    self._rows_of[data] = (len(ds), tuple(ds.sample_shape), str(ds.dtype))
            except Exception:  # unreadable: the Datasets page says why
                return None
        return self._rows_of[data]

    def scaling_note(self) -> str:
        """The warning for fractions whose rows a steps-per-epoch cap leaves out."""
        from guiapp.ui.pages.training.experiment_fields import scaling_note

        f = self.form
        fractions = f.experiment.fraction_list()
        data = f.dataset.currentData()
        if not fractions or not f.max_steps.value() or data is None:
            return ""
        header = self._header(str(data))
        if header is None:
            return ""
        rows = header[0]
        held = f.test.value() + (0.0 if f.split.currentIndex() == 1 else f.val.value())
        train = rows * (1 - held)
        if f.split.currentIndex() == 1:
            train *= (f.folds.value() - 1) / f.folds.value()
        return scaling_note(
            fractions, f.max_steps.value(), f.batch.value() * _devices(f), int(train)
        )

    def start(self) -> CliJob | None:
        self.form.clear_failure()
        problems = self.form.problems()
        self.refuse("; ".join(problems))
        if problems or self.is_running():
            return None
        project = self.project
        name = f"{self.form.run_name()}-{time.strftime('%Y%m%d-%H%M%S')}"
        run_dir = project.folder / "runs" / name
        try:
            spec = self.form.experiment_spec(project, run_dir)
        except UserError as exc:
            self.refuse(str(exc))
            self.form.show_failure(Failure.of_error(exc))  # the control of its option
            return None
        spec.save()
        args = to_argv(TrainSpecRequest(spec=str(spec.path)))
        self.run = RunEntry(
            path=str(run_dir),
            name=name,
            dataset=self.form.dataset.currentText(),
            model=self.form.model.currentText().replace("template: ", ""),
            status="running",
        )
        project.runs.append(self.run)
        self.project_changed.emit()
        self._clear_outcome()
        self._set_history(RunHistory())
        job = CliJob(
            f"train {name}", "train", args, resumable=True, working_dir=str(project.folder)
        )
        self._own(job)
        self.job_started.emit(job)
        job.start()
        self.run.pid = job.pid()  # information only: liveness goes by the run's lock
        self._update_buttons()
        return job

    def _own(self, job: CliJob) -> None:
        self.job = job
        job.event.connect(self._job_event)
        job.finished.connect(self._job_finished)
        job.status_changed.connect(self._job_status)  # a resume clears its failure

    def _job_event(self, event: dict[str, Any]) -> None:
        if self.sender() is self.job:
            self.history.feed(event)

    def stop(self) -> None:
        if self.job is not None and self.job.is_running():
            self.job.stop()
        elif self.tail is not None and self.run is not None:
            stop_detached(self.tail.pid)  # its lock's holder, never the pid saved
        self.progress_label.setText("Stopping after the current batch…")

    def resume(self) -> CliJob | None:
        if self.run is None or self.is_running():
            return None
        try:
            args = resume_command(Path(self.run.path))
        except UserError as exc:
            self.refuse(str(exc))
            return None
        self._clear_outcome()
        self.run.status = "running"
        self.project_changed.emit()
        if self.job is not None and self.job.args[:2] == args[:2]:
            self.job.resume()
        else:
            job = CliJob(f"train {self.run.name}", "train", args, resumable=True)
            job.working_dir = str(self.project.folder)
            self._own(job)
            self.job_started.emit(job)
            job.start()
        if self.job is not None:
            self.run.pid = self.job.pid()
        self._update_buttons()
        return self.job

    def _job_finished(self, _ok: bool, message: str) -> None:
        job = self.job
        if job is None:
            return
        status = job.status
        message = self.process_gone(status, message)  # killed: what the crash lost
        line = f"failed: {message}"
        if status == "failed" and message and line not in self.history.log[-3:]:
            self.history.log.append(line)
        self._ended(status, message)
        callbacks, self._after_stop = self._after_stop, []
        for callback in callbacks:
            callback()

    def _ended(self, status: str, message: str = "") -> None:
        if self.run is not None:
            self.run.status, self.run.pid = status, None
            self.project_changed.emit()
        self._tick()
        self.plots.refresh()
        self._update_buttons()
        best = self.history.best_val_accuracy()
        text = {
            "finished": "Training finished"
            + (f": best validation accuracy {best:.4f}" if best is not None else ""),
            "stopped": "Training stopped; Resume continues it exactly where it stopped",
        }.get(status, f"Training {status}")
        if status == "failed":
            message = message or str(self.history.end.get("reason") or "")
            text = f"Training failed: {message or 'see the log'}"
            name = self.run.name if self.run is not None else ""
            failure = self.job.failure if self.job is not None else None
            if failure is None or failure.message != message:
                failure = Failure(message)  # a followed run's, or a crash's: its line only
            self.error_panel.show_failure(f"Training run {name}".strip(), message, failure, "train")
            self.form.show_failure(failure)
        self.notify(text, failed=status == "failed")
        self.run_ended.emit(status, self.run.path if self.run else "")

    def _clear_outcome(self) -> None:
        self.banner.setVisible(False)
        self.error_panel.hide()

    def show_log(self) -> None:
        """The failed run's whole log: the job's own window (command, stderr) when this GUI
        ran it, else the page's log, scrolled to its end."""
        if self.job is not None:
            from guiapp.ui.dialogs.job_log import JobLogDialog

            self.log_dialog = JobLogDialog(self.job, self)
            self.log_dialog.show()
            return
        self.log.moveCursor(QTextCursor.MoveOperation.End)
        self.log.setFocus()

    def notify(self, text: str, failed: bool = False) -> None:
        """Status bar, a tray message where there is a tray, and a banner on the page
        (a failure shows in the error panel instead)."""
        self.banner.setText(text)
        self.banner.setVisible(not failed)
        window = self.window()
        if isinstance(window, QMainWindow):
            window.statusBar().showMessage(text, 15000)
            QApplication.alert(window)
        if QSystemTrayIcon.isSystemTrayAvailable():
            tray = QSystemTrayIcon(self.style().standardIcon(SP.SP_ComputerIcon), self)
            tray.show()
            tray.showMessage("guiapp", text)
            QTimer.singleShot(10_000, tray.deleteLater)

    # ------------------------------------------------------------------ 10 Hz view update
    def _tick(self) -> None:
        h = self.history
        if len(h.log) > self._log_lines:
            self.log.appendPlainText("\n".join(h.log[self._log_lines :]))
            self._log_lines = len(h.log)
        if self.run is not None:
            self.run_label.setText(
                f"Run {self.run.label} · {h.status} · {self.run.dataset} · "
                f"{self.run.model} · {self.run.path}"
            )
        text = h.progress_text()
        b = h.last_batch
        if text and h.status == "running":
            eta = format_eta(b.get("eta_s"))
            rate = format_rate(b.get("rows_per_s"))
            wait = b.get("input_wait")
            extra = [f"ETA {eta}" if eta else "", f"{rate} rows/s" if rate else ""]
            if isinstance(wait, (int, float)):
                extra.append(f"input wait {wait:.0%}")
            text = " · ".join([text, *[e for e in extra if e]])
        self.progress_label.setText(text)


def _devices(form: TrainingForm) -> int:
    """How many devices the form's Devices field names (gpu:0,1: 2; cpu:N: N; else 1)."""
    text = form.devices.currentText().strip()
    if text.startswith("gpu:"):
        return len(text[4:].split(","))
    if text.startswith("cpu:") and text[4:].isdigit():
        return max(1, int(text[4:]))
    return 1
