"""Job plumbing shared by every long job: JSON-line events, cancellation, progress rates.

A job is a plain function that takes an ``EventSink`` and a ``CancelToken``. The CLI wires
the sink to stdout (``--events -``) and to the job's ``events.jsonl``; the GUI starts the
CLI with QProcess and reads the same lines.

Event kinds: ``started`` (resolved config), ``progress`` (done, total, rows_per_s, eta_s,
...), ``log``, ``finished``, ``stopped``, ``failed``; training adds ``batch``, ``epoch``,
``checkpoint`` and ``evaluation``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .errors import Cancelled


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
        event = {"event": kind, "time": round(time.time(), 3), **fields}
        line = json.dumps(_finite(event), default=_jsonable, allow_nan=False) + "\n"
        with self._lock:
            if self.stream is not None:
                try:
                    self.stream.write(line)
                    self.stream.flush()
                except (BrokenPipeError, ValueError):
                    self.stream = None  # the reader went away; keep working, keep the log
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(line)
        for listener in self.listeners:
            listener(event)
        return event


def _jsonable(v: Any) -> Any:
    if hasattr(v, "tolist"):
        return _finite(v.tolist())
    if isinstance(v, Path):
        return str(v)
    return str(v)


def _finite(v: Any) -> Any:
    """``v`` with every NaN/Inf float (in dicts and lists too) as None: JSON has no NaN,
    and a diverging loss must still reach the log as an event."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
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
