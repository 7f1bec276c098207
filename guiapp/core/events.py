"""Job plumbing shared by every long job: JSON-line events, cancellation, progress rates.

A job is a plain function that takes an ``EventSink`` and a ``CancelToken``. The CLI wires
the sink to stdout (``--events -``) and to the job's ``events.jsonl``; the GUI starts the
CLI with QProcess and reads the same lines.

Event kinds: ``started`` (resolved config), ``progress`` (done, total, rows_per_s, eta_s,
...), ``log``, ``finished``, ``stopped``, ``failed``; training adds ``batch``, ``epoch``,
``checkpoint`` and ``evaluation``.

A ``failed`` event for bad input carries the :class:`~.errors.UserError`'s fields
(``message``, ``option``, ``value``, ``problem``, ``fix``): a job that emits ``failed``
while it handles the error gets them added (:meth:`EventSink.emit`), and the CLI emits one
itself for an error that no job reported (:func:`report_failure`). :class:`Failure` reads
them back, for the GUI.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .errors import Cancelled, UserError

#: The fields of a ``failed`` event that say what failed (docs/ERRORS.md).
FAILURE_FIELDS = ("message", "option", "value", "problem", "fix")

#: The streams that have carried a ``failed`` event in this process (weakly: a stream
#: that is gone is no longer one): the CLI emits its own only where no job did
#: (:func:`report_failure`).
_failed_streams: weakref.WeakSet[IO[str]] = weakref.WeakSet()


class EventSink:
    """Writes each event as one JSON line to a stream and/or appends it to a log file."""

    def __init__(
        self, stream: IO[str] | None = None, log_path: str | os.PathLike[str] | None = None
    ) -> None:
        self.stream = stream
        self.log_path = Path(log_path) if log_path else None
        self._lock = threading.Lock()
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Write one event. A ``failed`` event emitted while a :class:`UserError` is being
        handled (in its ``except`` block) and saying its message gets the error's fields
        (message, option, value, problem, fix) where it does not give them itself."""
        if kind == "failed":
            fields = self._failure(fields)
        event = {"event": kind, "time": round(time.time(), 3), **fields}
        line = json.dumps(finite_json(event), default=_jsonable, allow_nan=False) + "\n"
        with self._lock:
            if self.stream is not None:
                try:
                    self.stream.write(line)
                    self.stream.flush()
                    if kind == "failed":
                        _failed_streams.add(self.stream)
                except (BrokenPipeError, ValueError):
                    self.stream = None  # the reader went away; keep working, keep the log
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(line)
        for listener in self.listeners:
            listener(event)
        return event

    def _failure(self, fields: dict[str, Any]) -> dict[str, Any]:
        exc = sys.exc_info()[1]
        if not isinstance(exc, UserError):
            return fields
        said = fields.get("message", fields.get("reason"))
        if said is not None and said != str(exc):
            return fields  # another error's event (a disk error raised for an OSError)
        return {**exc.fields(), **fields}


def report_failure(exc: UserError, stream: IO[str] | None = None) -> None:
    """The ``failed`` event for ``exc`` on ``stream`` (stdout), unless a job has already
    written one there: the CLI's last word for a command run with ``--events -`` that ends
    with exit code 2. Its ``message`` is the line the CLI prints on stderr."""
    stream = sys.stdout if stream is None else stream
    if stream in _failed_streams:
        return
    EventSink(stream).emit("failed", **exc.fields())


class Failure(UserError):
    """A failed job as the GUI reads it: the :class:`UserError` the job reported, its
    one-line ``message`` and, where the job's ``failed`` event carried them, the error's
    ``option``, ``value``, ``problem`` and ``fix`` (docs/ERRORS.md). Built from the event,
    never by reading the message; shown, never raised."""

    @classmethod
    def of_error(cls, exc: UserError) -> Failure:
        """The failure of an error raised in this process (a form's own checks)."""
        return cls(**exc.fields())

    @classmethod
    def of_event(cls, event: dict[str, Any], message: str = "") -> Failure:
        """The failure a ``failed`` event describes; ``message`` when it has none."""
        text = event.get("message") or event.get("reason") or message
        return cls(
            str(text or ""),
            option=_text(event.get("option")),
            value=event.get("value"),
            problem=_text(event.get("problem")),
            fix=_text(event.get("fix")),
        )

    def what(self) -> str:
        """The message without its fix: what went wrong, and where."""
        text = self.message.strip()
        if self.fix and text.endswith(self.fix):
            text = text[: -len(self.fix)].rstrip().rstrip(".;:,").rstrip()
        return text

    def __repr__(self) -> str:
        return f"Failure({self.message!r}, option={self.option!r})"


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _jsonable(v: Any) -> Any:
    if hasattr(v, "tolist"):
        return finite_json(v.tolist())
    if isinstance(v, Path):
        return str(v)
    return str(v)


def finite_json(v: Any) -> Any:
    """``v`` with every NaN/Inf float (in dicts and lists too) as None (JSON's null):
    standard JSON has no NaN or Infinity, other programs' parsers refuse them, and a
    diverging loss must still reach the log as an event."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: finite_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite_json(x) for x in v]
    return v


def read_events(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a job's events.jsonl, skipping a torn last line (a job killed mid-write) and
    any line that is not UTF-8 JSON (a damaged log loses that line, never the run)."""
    events = []
    try:
        with open(path, "rb") as fh:
            for line in fh:
                try:
                    events.append(json.loads(line))
                except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
                    continue
    except FileNotFoundError:
        pass
    return events


class CancelToken:
    """Set by ``stop`` on stdin, SIGINT or SIGTERM; long jobs poll it between blocks."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __call__(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason)

    def install_signal_handlers(self) -> None:
        """SIGINT and SIGTERM ask the job to stop at its next block instead of killing it."""
        if threading.current_thread() is not threading.main_thread():
            return

        def handler(signum: int, frame: Any) -> None:
            self.cancel(signal.Signals(signum).name)

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)

    def watch_stdin(self, stream: IO[str] | None = None) -> None:
        """A daemon thread that cancels on a ``stop`` line (the GUI's way to ask)."""
        stream = stream or sys.stdin
        if stream is None or stream.closed:
            return

        def run() -> None:
            try:
                for line in stream:
                    if line.strip().lower() == "stop":
                        self.cancel("stop")
                        return
            except (OSError, ValueError):
                return

        threading.Thread(target=run, name="stdin-stop", daemon=True).start()


class RateMeter:
    """Rows per second and ETA over a sliding window of recent updates."""

    def __init__(self, total: int, window_s: float = 10.0) -> None:
        self.total = total
        self.window_s = window_s
        self.start = time.monotonic()
        self._points: list[tuple[float, int]] = [(self.start, 0)]

    def update(self, done: int) -> dict[str, Any]:
        now = time.monotonic()
        self._points.append((now, done))
        while len(self._points) > 2 and now - self._points[0][0] > self.window_s:
            self._points.pop(0)
        t0, d0 = self._points[0]
        rate = (done - d0) / (now - t0) if now > t0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else None
        return {
            "done": done,
            "total": self.total,
            "rows_per_s": round(rate, 1),
            "eta_s": None if eta is None else round(eta, 1),
            "elapsed_s": round(now - self.start, 2),
        }
