"""Follow a run that this GUI did not start (or no longer owns) through its ``events.jsonl``.

A training run appends every event to ``RUN_DIR/events.jsonl``, so a GUI that restarted
shows a finished run from that file and reattaches to a running one by tailing it: a timer
reads the bytes added since the last look (a few KiB, never the whole file again) and
emits the complete lines as events. A detached run is also started from here: it is
``guiapp train ... --resume`` with no pipes, so it outlives the GUI.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from guiapp.core.atomic import pid_alive
from guiapp.ui.jobs.cli_job import CliJob, cli_prefix

POLL_MS = 250


_children: dict[int, Any] = {}  # detached runs started by this process (reaped by poll)


def process_alive(pid: int | None) -> bool:
    """Whether process ``pid`` still runs (False when unknown)."""
    if not pid or pid <= 0:
        return False
    if pid in _children:  # our own child: poll() reaps it, so it is no zombie
        return _children[pid].poll() is None
    return pid_alive(pid)


def start_detached(args: list[str], working_dir: str) -> int | None:
    """Start ``guiapp ARGS`` in its own session, no pipes to us; its pid, or None.

    (``QProcess.startDetached`` gives no pid in PySide6 unless the channels are inherited.)
    """
    import subprocess

    flags = 0
    if sys.platform == "win32":  # pragma: no cover
        flags = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    try:
        with open(Path(working_dir) / "detached.log", "ab") as log:
            child = subprocess.Popen(
                [*cli_prefix(), *args],
                cwd=working_dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=sys.platform != "win32",
                creationflags=flags,
            )
    except OSError:
        return None
    _children[child.pid] = child
    return child.pid


def stop_detached(pid: int | None) -> bool:
    """Ask a detached run to stop (SIGTERM: it checkpoints and exits with ``stopped``)."""
    if not process_alive(pid):
        return False
    import signal

    assert pid is not None
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
        return True
    return False


class EventsTail(QObject):
    """Emit ``event`` for each line appended to an ``events.jsonl``.

    The reader decides from the events when the run ended (a resumed run's file holds the
    earlier ``stopped`` too); ``ended`` comes once, when the run's process (``pid``) is
    gone, after its last lines were read.
    """

    event = Signal(dict)  # type: ignore[assignment]  # shadows QObject.event: see CliJob.event
    ended = Signal(str)

    def __init__(self, path: str | Path, pid: int | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.path = Path(path)
        self.pid = pid
        self.offset = 0
        self._partial = b""
        self.done = False
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.poll)

    def start(self, from_offset: int = 0) -> None:
        self.offset = from_offset
        self.poll()
        if not self.done:
            self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def poll(self) -> None:
        try:
            size = self.path.stat().st_size
        except OSError:
            size = 0
        if size > self.offset:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(size - self.offset)
            self.offset += len(data)
            *lines, self._partial = (self._partial + data).split(b"\n")
            for raw in lines:
                self._line(raw)
        if not self.done and self.pid is not None and not process_alive(self.pid):
            self._end("exited")

    def _line(self, raw: bytes) -> None:
        try:
            event: Any = json.loads(raw.decode("utf-8", "replace"))
        except json.JSONDecodeError:
            return
        if not isinstance(event, dict) or "event" not in event:
            return
        self.event.emit(event)

    def _end(self, status: str) -> None:
        if self.done:
            return
        self.done = True
        self.timer.stop()
        self.ended.emit(status)


class FollowedJob(CliJob):
    """A training run this GUI did not start (left running in the background), as a job:
    the Jobs panel lists it with its progress, fed with the events its file's tail reads.

    Cancel asks the run to stop (SIGTERM: it checkpoints); it is never started from here,
    and it is not saved in the panel's history (a reopen follows the run again).
    """

    followed = True

    def __init__(
        self,
        name: str,
        args: list[str],
        pid: int | None,
        started: dict[str, Any],
        working_dir: str | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(name, "train", args, working_dir=working_dir, parent=parent)
        self.follow_pid = pid
        self.started_event = dict(started)
        where = f"process {pid}" if pid else "its events file"
        self.log.append(f"following the run in the background ({where})")
        self._set_status("running")

    def pid(self) -> int | None:
        return self.follow_pid if self.is_running() else None

    def start(self) -> None:
        raise RuntimeError(f"{self.name!r} runs in the background; it is not started here")

    def stop(self) -> None:
        self.stop_requested = True
        stop_detached(self.follow_pid)

    def feed(self, event: dict[str, Any]) -> None:
        """One event read from the run's file (log line, progress) while it runs."""
        if self.is_running():
            self._event(event)

    def end(self, status: str, message: str) -> None:
        """The run ended (its last event, or its process is gone), or is no longer followed."""
        self._finish(status, message)
