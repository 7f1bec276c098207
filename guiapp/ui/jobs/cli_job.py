"""``CliJob``: one headless ``guiapp <command>`` child process, its JSON-line events as signals.

The GUI never runs long work itself (docs/ARCHITECTURE.md, "The process model"): it starts the
CLI with :class:`QProcess`, reads one JSON event per stdout line, and asks it to stop with a
``stop`` line on stdin, killing it only after a grace period. Nothing here blocks the GUI
thread: no ``waitFor...`` calls, only signals and timers.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from guiapp.core.events import Failure
from guiapp.core.requests import job_argv, request_output, train_output, with_resume

# the one formatter of rows/s and durations (kept importable here for the pages that use it)
from guiapp.ui.widgets.formatting import format_duration as format_eta
from guiapp.ui.widgets.formatting import format_rate

__all__ = [
    "CliJob",
    "cli_prefix",
    "error_line",
    "format_eta",
    "format_rate",
    "log_line",
    "training_progress",
]

STOP_GRACE_MS = 10_000
STDERR_KEEP = 64 * 1024
LOG_KEEP = 5000  # lines of a job's log kept in memory


def cli_prefix() -> list[str]:
    """How to call our own CLI: the frozen binary itself, or ``python -m guiapp``."""
    return [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "guiapp"]


def log_line(command: str, event: dict[str, Any]) -> str | None:
    """The log's line for one event (None for the many progress and batch events)."""
    kind = event.get("event")
    if kind in ("progress", "batch"):
        return None
    if command == "train":
        from guiapp.core.train.describe import describe_event

        return describe_event(event)
    fields = ", ".join(
        f"{k} {v}"
        for k, v in event.items()
        if k not in ("event", "time", "config", "plan") and not isinstance(v, (dict, list))
    )
    return f"{kind}: {fields}" if fields else str(kind)


def training_progress(started: dict[str, Any], batch: dict[str, Any]) -> tuple[int, int] | None:
    """(steps done, steps in all) of a run from its ``started`` and latest ``batch`` events."""
    epochs, steps = started.get("epochs"), batch.get("steps") or started.get("steps_per_epoch")
    epoch, step = batch.get("epoch"), batch.get("step")
    if not all(
        isinstance(v, int) and not isinstance(v, bool) for v in (epochs, steps, epoch, step)
    ):
        return None
    assert isinstance(epochs, int) and isinstance(steps, int)
    assert isinstance(epoch, int) and isinstance(step, int)
    done = epoch - 1 if started.get("epochs_from") == 1 else epoch  # 1-based; 0-based before
    return done * steps + step, epochs * steps


def error_line(stderr: str) -> str:
    """The one line to show for a failed job: the CLI's last message, without its prefix."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1]
    for prefix in ("guiapp: error: ", "guiapp: "):
        if line.startswith(prefix):
            return line[len(prefix) :]
    return line


def died_text(signal_number: int) -> str:
    """What a crashed child's end says (Qt gives its signal as the exit code on Unix)."""
    try:
        name = f" ({signal.Signals(signal_number).name})" if signal_number else ""
    except ValueError:
        name = ""
    if not signal_number:
        return "the job process crashed"
    return f"the job's process ended by signal {signal_number}{name}, without a last event"


class CliJob(QObject):
    """Run ``guiapp COMMAND ARGS... [--events -]`` and turn its output into signals.

    ``status`` goes ``"new" -> "running" -> "finished" | "stopped" | "failed"``. Lines of
    stdout that are not events (``check --json`` prints one JSON object) are kept in
    :attr:`output`. A finished job can be started again (:meth:`resume`).
    """

    #: a run followed from its events file (``run_tail.FollowedJob``), not this GUI's child
    followed = False
    # The signal shadows QObject.event, the virtual event handler: PySide6 calls a C++
    # virtual's Python override only when it is a method, so QObject's own event() still
    # runs (deleteLater, timers); the stubs see a clash of types, not a clash at run time.
    event = Signal(dict)  # type: ignore[assignment]
    #: done, total, rows per second, ETA seconds (None when unknown)
    progress = Signal(object, object, object, object)
    #: ok (True only for "finished"), one-line message
    finished = Signal(bool, str)
    status_changed = Signal(str)

    def __init__(
        self,
        name: str,
        command: str,
        args: list[str],
        *,
        events: bool = True,
        resumable: bool = False,
        working_dir: str | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.name = name
        self.command = command
        self.args = list(args)
        self.events = events
        self.resumable = resumable
        self.working_dir = working_dir
        self.status = "new"
        self.message = ""
        #: a failed job's error: its message and, where its ``failed`` event carried them,
        #: the option it concerns, the value, the problem and the fix (docs/ERRORS.md)
        self.failure: Failure | None = None
        self.output = ""
        self.stderr = ""
        self.last_event: dict[str, Any] = {}
        self.started_event: dict[str, Any] = {}
        #: an attempt of this job got as far as its ``started`` event (a resume of it that
        #: fails early is not "refused": there is a run to continue)
        self.ever_started = False
        #: An experiment's trials and the one running (its progress is the experiment's).
        self.trials, self.trial_index = 0, 0
        self.log: list[str] = []
        self.stop_requested = False
        self._buffer = b""
        self._process: QProcess | None = None
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self._kill)

    # ------------------------------------------------------------------ control
    def argv(self) -> list[str]:
        return [*cli_prefix(), *job_argv(self.command, self.args, self.events)]

    def is_running(self) -> bool:
        return self.status == "running"

    def refused(self) -> bool:
        """It ran in this GUI and failed before its ``started`` event: refused by its
        checks, with nothing made that a resume could continue."""
        return (
            self._process is not None
            and self.status == "failed"
            and self.events
            and not self.started_event
            and not self.ever_started
        )

    def pid(self) -> int | None:
        """The child's process id while it runs (another page may stop it with SIGTERM)."""
        if self._process is None or not self.is_running():
            return None
        return int(self._process.processId()) or None

    def start(self) -> None:
        if self.is_running():
            raise RuntimeError(f"job {self.name!r} is already running")
        self.stop_requested = False
        self.message = self.output = self.stderr = ""
        self.failure = None
        self.last_event, self.started_event = {}, {}
        self.trials, self.trial_index = 0, 0
        self.log.append("$ " + " ".join(self.argv()))
        self._buffer = b""
        process = QProcess(self)
        # Jobs run at a lower CPU priority than the window, so the GUI stays responsive
        # on a machine whose cores they fill (see `guiapp bench gui`).
        env = QProcessEnvironment.systemEnvironment()
        env.insert("GUIAPP_NICE", "10")
        process.setProcessEnvironment(env)
        if self.working_dir:
            process.setWorkingDirectory(self.working_dir)
        process.readyReadStandardOutput.connect(self._read_stdout)
        process.readyReadStandardError.connect(self._read_stderr)
        process.finished.connect(self._on_finished)
        process.errorOccurred.connect(self._on_error)
        self._process = process
        self._set_status("running")
        program, *arguments = self.argv()
        process.start(program, arguments)

    def resume(self) -> None:
        """Run the same command again, with ``--resume`` (generation finishes unsealed shards)."""
        if self.resumable:
            self.args[:] = with_resume(self.args)
        self.start()

    def stop(self) -> None:
        """Ask the job to stop at its next block; kill it if it is still alive after the grace."""
        process = self._process
        if process is None or not self.is_running():
            return
        self.stop_requested = True
        if process.state() == QProcess.ProcessState.Running:
            process.write(b"stop\n")
        self._kill_timer.start(STOP_GRACE_MS)

    def _kill(self) -> None:
        if self._process is not None and self._process.state() != QProcess.ProcessState.NotRunning:
            self._process.kill()

    # ------------------------------------------------------------------ output
    def _read_stdout(self) -> None:
        if self._process is None:
            return
        self._buffer += bytes(self._process.readAllStandardOutput().data())
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            self._line(raw.decode("utf-8", errors="replace"))

    def _line(self, text: str) -> None:
        event: Any = None
        if text.startswith("{") and text.rstrip().endswith("}"):
            try:
                event = json.loads(text)
            except json.JSONDecodeError:
                event = None
        if not isinstance(event, dict) or "event" not in event:
            self.output += text + "\n"
            return
        self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        """One event: the log's line, the ``event`` signal and, from it, ``progress``."""
        self.last_event = event
        if event["event"] == "started":
            self.started_event = event
            self.ever_started = True
        elif event["event"] == "experiment":
            self.trials = len(event.get("trials") or [])
        elif event["event"] == "trial" and isinstance(event.get("index"), int):
            self.trial_index = int(event["index"])
        line = log_line(self.command, event)
        if line is not None:
            self.log.append(line)
            del self.log[:-LOG_KEEP]
        self.event.emit(event)
        if event["event"] == "batch" and self.command == "train":
            steps = training_progress(self.started_event, event)
            if steps is not None and self.trials > 1:  # trials take about as long each
                trial_done, per_trial = steps
                steps = self.trial_index * per_trial + trial_done, self.trials * per_trial
            if steps is not None:
                rate, batch = event.get("rows_per_s"), self.started_event.get("global_batch")
                eta = event.get("eta_s")  # of this epoch; the run's from the step rate:
                if isinstance(rate, (int, float)) and rate > 0 and isinstance(batch, int):
                    eta = (steps[1] - steps[0]) * batch / rate
                self.progress.emit(*steps, rate, eta)
        elif event["event"] == "progress":
            done, total = event.get("done"), event.get("total")
            if event.get("phase") == "read":  # import's first pass counts bytes
                done, total = event.get("bytes_done"), event.get("bytes_total")
            elif "rows_total" in event:  # generation: of the whole dataset, resumed rows too
                done, total = event.get("rows_done"), event.get("rows_total")
            self.progress.emit(done, total, event.get("rows_per_s"), event.get("eta_s"))

    def _read_stderr(self) -> None:
        if self._process is None:
            return
        text = bytes(self._process.readAllStandardError().data()).decode("utf-8", "replace")
        self.stderr = (self.stderr + text)[-STDERR_KEEP:]

    # ------------------------------------------------------------------ the end
    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._finish("failed", f"could not start {self.argv()[0]}: check the installation")

    def _on_finished(self, exit_code: int, exit_status: QProcess.ExitStatus) -> None:
        self._read_stdout()
        self._read_stderr()
        if self._buffer:
            self._line(self._buffer.decode("utf-8", errors="replace"))
            self._buffer = b""
        last = self.last_event.get("event")
        crashed = exit_status == QProcess.ExitStatus.CrashExit
        if last == "failed" or (exit_code not in (0, 130) and not crashed):
            message = (
                str(self.last_event.get("reason") or self.last_event.get("message") or "")
                if last == "failed"
                else ""
            )
            message = message or error_line(self.stderr) or f"exited with code {exit_code}"
            event = self.last_event if last == "failed" else {}
            self._finish("failed", message, Failure.of_event(event, message))
        elif last == "stopped" or exit_code == 130:
            self._finish("stopped", "stopped")
        elif crashed:
            if self.stop_requested:
                self._finish("stopped", "killed: it did not stop within the grace period")
            else:  # the signal, not stderr's last line (a library's warning, often)
                self._finish("failed", died_text(exit_code) or error_line(self.stderr))
        else:
            self._finish("finished", "done")

    def _finish(self, status: str, message: str, failure: Failure | None = None) -> None:
        if self.status != "running":
            return
        self._kill_timer.stop()
        self.message = message
        if status == "failed":
            self.failure = failure if failure is not None else Failure(message)
        if self.stderr.strip():
            self.log.extend(self.stderr.rstrip().splitlines()[-200:])
        self.log.append(f"{status}: {message}")
        self._set_status(status)
        self.finished.emit(status == "finished", message)

    def log_text(self) -> str:
        """The job's log: its command line, a line per event, its stderr and its end."""
        return "\n".join(self.log)

    def _set_status(self, status: str) -> None:
        self.status = status
        self.status_changed.emit(status)


def written_dataset(job: object) -> Path | None:
    """The dataset a ``generate`` or ``import`` job writes (absolute), else None."""
    command = getattr(job, "command", "")
    args = [str(a) for a in getattr(job, "args", [])]
    at = {"generate": 0, "import": 1}.get(command)  # (the GUI puts the paths first)
    requested = request_output(args) if at is not None else None  # --request FILE's out
    if requested is not None:
        path = Path(requested)
    elif at is None or len(args) <= at or any(a.startswith("-") for a in args[: at + 1]):
        return None
    else:
        path = Path(args[at])
    if not path.is_absolute():
        path = Path(getattr(job, "working_dir", None) or ".") / path
    return path.absolute()


def written_run(job: object) -> Path | None:
    """The run (or experiment) folder a ``train`` job writes: ``--out``, else the folder of
    its ``--spec``; None for other jobs."""
    if getattr(job, "command", "") != "train":
        return None
    return train_output(getattr(job, "args", []), getattr(job, "working_dir", None))
