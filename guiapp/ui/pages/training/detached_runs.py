"""Runs the Training page follows outside its own child process.

A run left going when the window closed is handed over to a detached ``guiapp train
--spec SPEC --resume``; a run started elsewhere (or left so) is followed through its
``events.jsonl`` (:class:`EventsTail`). :func:`resume_command` names the spec file that
continues a run: the experiment's ``spec.json``, written from the recorded ``config.json``
for a run from before experiments. Every setting (folds, test split, augmentation, class
weights, ...) is in that file, so a resume never loses one.

A run whose process died without a last event (``kill -9``, the OOM killer) failed, here
as everywhere: :meth:`DetachedRuns.process_gone` ends its history as failed (the header,
both Resume buttons and the error panels then agree; the run lock says no process holds
it), says what the crash lost since the last checkpoint (``attempts.py``) and marks the
attempt on the plots; a resume, from this page or the Jobs panel, clears the failure and
says again what it trains twice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLabel

from guiapp.core.project import RunEntry
from guiapp.core.requests import TrainSpecRequest, to_argv
from guiapp.core.train.experiment_spec import resume_spec_path
from guiapp.core.train.history import END_EVENTS, RunHistory
from guiapp.core.train.run_lock import run_holder
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.jobs.run_tail import EventsTail, FollowedJob, process_alive, start_detached
from guiapp.ui.pages.base import PagePart
from guiapp.ui.pages.training.attempts import AttemptMarks, Loss, lost_steps, read_attempts

RECENT_S = 120  # an unfinished events.jsonl touched this recently belongs to a live run


def resume_command(run_dir: Path) -> list[str]:
    """``guiapp train`` arguments (after the command) that resume ``run_dir``."""
    return to_argv(TrainSpecRequest(spec=str(resume_spec_path(run_dir)), resume=True))


class DetachedRuns(PagePart):
    """Mixed into :class:`~guiapp.ui.pages.training.training_page.TrainingPage`.

    Uses the page's ``job``, ``tail``, ``run``, ``history``, ``loader``, ``run_label``,
    ``project``, ``project_changed`` and its ``_set_history``, ``_ended`` and
    ``_update_buttons``.
    """

    job: CliJob | None
    tail: EventsTail | None
    followed: FollowedJob | None  # the followed run's row in the Jobs panel
    run: RunEntry | None
    history: RunHistory
    loader: BackgroundCalls
    run_label: QLabel
    _after_stop: list[Any]
    plots: Any
    _attempt_marks: AttemptMarks | None = None

    if TYPE_CHECKING:  # the page's own (declared for mypy only: no run-time stand-ins)

        def _set_history(self, history: RunHistory) -> None: ...
        def _ended(self, status: str, message: str = "") -> None: ...
        def _clear_outcome(self) -> None: ...
        def _update_buttons(self) -> None: ...
        def notify(self, text: str, failed: bool = False) -> None: ...

    _marks_of: RunHistory | None = None
    _loss: Loss | None = None

    # ------------------------------------------------------------------ attempts
    def attempt_marks(self) -> AttemptMarks:
        """The attempt marks of the history shown (cleared when another is shown)."""
        if self._marks_of is not self.history or self._attempt_marks is None:
            if self._attempt_marks is not None:
                self._attempt_marks.clear()
            p = self.plots
            plots = [p.loss_plot, p.acc_plot, p.rate_plot, p.wait_plot]
            self._attempt_marks = AttemptMarks(plots, [p.loss_plot, p.acc_plot])
            self._marks_of, self._loss = self.history, None
        return self._attempt_marks

    def process_gone(self, status: str, message: str) -> str:
        """The owned job ended with ``status``: when its run wrote no last event (its
        process was killed), the run ends so in its history too, with what the crash lost
        since the last checkpoint. Returns the message to show."""
        h = self.history
        if h.status != "running" or status == "finished":
            return message
        loss = lost_steps(h)
        reason = message or "the training process ended without a last event"
        if loss is not None:
            reason += f"; {loss.text()}"
            self.attempt_marks().died(float(h.step.last() or 0.0), loss)
            self._loss = loss
        h.feed({"event": status if status == "stopped" else "failed", "reason": reason})
        return reason

    def _job_status(self, status: str) -> None:
        """The owned job's status changed: a resume (here or in the Jobs panel) of a run
        that ended is running again; its failure is over everywhere."""
        if status == "running" and self.history.status in ("failed", "stopped"):
            self._clear_outcome()
            if self.run is not None:
                self.run.status = "running"
                pid = self.job.pid() if self.job is not None else None
                if pid:  # (Qt knows it once the process runs; Resume here sets it after)
                    self.run.pid = pid
                self.project_changed.emit()
            loss = self._loss if self._marks_of is self.history else None
            text = f"Resumed (attempt {self.attempt_marks().attempts})" + (
                f": {loss.text()}" if loss is not None else ""
            )
            self.history.log.append(text)
            self.notify(text)
        self._update_buttons()

    # ------------------------------------------------------------------ closing
    def leave_or_stop(self, leave_running: bool, then: Any) -> None:
        """Stop the owned run (checkpoint) and, to leave it running, continue it detached.

        ``then()`` is called once that is done (the window closes then).
        """
        if self.job is None or not self.job.is_running():
            then()
            return

        def handed_over() -> None:
            if leave_running and self.run is not None and self.history.status == "stopped":
                args = ["train", *resume_command(Path(self.run.path))]
                pid = start_detached(args, str(self.project.folder))
                self.run.status, self.run.pid = "running", pid
                self.project_changed.emit()
            then()

        self._after_stop.append(handed_over)
        self.job.stop()

    # ------------------------------------------------------------------ runs from files
    def show_run(self, run: RunEntry) -> None:
        """Show ``run`` from its events.jsonl; reattach when it is still running."""
        self.run = run
        self.run_label.setText(f"Run {run.label} · reading…")
        self.loader.submit(run.path, read_attempts, Path(run.path) / "events.jsonl")

    def _history_loaded(self, key: object, result: object) -> None:
        """The run's history read: shown, its earlier attempts marked on the plots."""
        if self.run is None or key != self.run.path or not isinstance(result, tuple):
            return
        history, ends = result
        self._set_history(history)
        for x, loss in ends:
            self.attempt_marks().died(x, loss)
        events = Path(self.run.path) / "events.jsonl"
        # The process writing the run is its lock's holder: a pid saved in the project may
        # belong to another process after a reboot, and must never get the run's SIGTERM.
        holder = run_holder(self.run.path)
        pid = holder if holder is not None else self.run.pid
        try:
            recent = time.time() - events.stat().st_mtime < RECENT_S
        except OSError:
            recent = False
        # (a run just started may not hold its lock yet: its own pid, alive and recent)
        alive = holder is not None or (process_alive(pid) and recent)
        live = alive or (history.status == "running" and not pid and recent)
        if live:
            self.tail = EventsTail(events, pid if alive else None, self)
            self.followed = FollowedJob(
                f"train {self.run.label} (in the background)",
                resume_command(Path(self.run.path)),
                pid if alive else None,
                history.started,
                str(self.project.folder),
            )
            self.tail.event.connect(self.followed.feed)  # before the page ends the run
            self.job_started.emit(self.followed)
            self.tail.event.connect(self._tail_event)
            self.tail.ended.connect(self._tail_exited)
            self.tail.start(history.offset)
            self.history.log.append("reattached to the running job")
        elif history.status == "running":
            self.process_gone("failed", "the run's process is gone without a last event")
        self._update_buttons()

    def _tail_event(self, event: dict[str, Any]) -> None:
        self.history.feed(event)
        if event.get("event") in END_EVENTS and self.history.status != "running":
            if self.tail is not None:
                self.tail.stop()
                self.tail.done = True
            self.end_followed(self.history.status)
            self._ended(self.history.status)

    def _tail_exited(self, _why: str) -> None:
        """The followed process is gone; it wrote no last event (else it ended already)."""
        if self.history.status == "running":
            self.process_gone("failed", "the process ended without a last event")
            self.end_followed("failed")
            self._ended("failed")

    def end_followed(self, status: str, unfollowed: bool = False) -> None:
        """End the followed run's Jobs panel row as the run ended (``status``), or, when
        ``unfollowed`` (another project shown), as stopped here while the run goes on."""
        job, self.followed = self.followed, None
        if job is None or not job.is_running():
            return
        reason = str(self.history.end.get("reason") or "")
        message = {"finished": "done", "failed": reason or "failed"}.get(status, status)
        if unfollowed:
            message = "no longer followed here; the run goes on in the background"
        job.end(status, message)
