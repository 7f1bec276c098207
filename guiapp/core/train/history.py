"""``RunHistory``: a training run's events folded into growable arrays (Qt-free, TF-free).

The Training page feeds it the live events of ``guiapp train`` and plots its arrays; the
Runs page builds one from a run folder's ``events.jsonl`` (on a worker thread). Arrays
grow by doubling, so 10^6 batch points cost no per-event copies.

The events of an experiment (k folds, fractions, a sweep) carry their ``trial``; each
trial's steps start again at 0, so a new trial continues the x axis where the previous one
ended (:attr:`RunHistory.trial_starts` marks where), and repeats are dropped per trial only.
:class:`~.experiment_history.ExperimentHistory` keeps one ``RunHistory`` per trial.

Its series are named by :mod:`.metrics` (every metric a run may compute; a run that does
not compute one leaves NaN, and ``metrics`` says which it computes). Epochs are 1-based:
events of runs written before that are read into the convention as they are fed
(:class:`~.describe.EpochConvention`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .describe import EpochConvention, describe_event
from .experiment_spec import SINGLE_TRIAL
from .metrics import ACCURACY, batch_fields, epoch_fields, run_metrics

END_EVENTS = ("finished", "stopped", "failed")
SMOOTHING = 0.9  # exponential moving average of the per-batch curves


class Series:
    """A float64 array that grows by appending; :meth:`view` is the filled part."""

    def __init__(self, capacity: int = 256) -> None:
        self._data = np.empty(capacity, np.float64)
        self.size = 0

    def append(self, value: float) -> None:
        if self.size == len(self._data):
            grown = np.empty(2 * len(self._data), np.float64)
            grown[: self.size] = self._data
            self._data = grown
        self._data[self.size] = value
        self.size += 1

    def view(self) -> np.ndarray:
        return self._data[: self.size]

    def last(self) -> float | None:
        return float(self._data[self.size - 1]) if self.size else None

    def __len__(self) -> int:
        return self.size


def _number(value: Any) -> float:
    """A float from an event field; NaN when missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)
        except (TypeError, ValueError):
            return math.nan
    return float(value)


BATCH_FIELDS = batch_fields()
EPOCH_FIELDS = epoch_fields()


class RunHistory:
    """Everything the pages show about one run, kept up to date by :meth:`feed`."""

    def __init__(self) -> None:
        self.step = Series()
        self.batch = {name: Series() for name in BATCH_FIELDS}
        self.smooth = {name: Series() for name in ("loss", "accuracy")}
        self.epoch_step = Series(16)
        self.epoch_index = Series(16)
        self.epoch = {name: Series(16) for name in EPOCH_FIELDS}
        self.started: dict[str, Any] = {}
        self.last_batch: dict[str, Any] = {}
        self.evaluation: dict[str, Any] = {}
        self.end: dict[str, Any] = {}
        self.status = "new"
        self.events = 0
        self.offset = 0
        self.log: list[str] = []
        self.trial: Any = None  # the trial the last events belong to
        self.trial_starts: list[tuple[Any, float]] = []  # (trial, first x) per trial seen
        self._x0 = 0.0  # x offset of the current trial
        self._trial_last_step = -math.inf
        self._trial_last_epoch = -math.inf
        self._epochs = EpochConvention()

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the run computes (its ``started`` event's; accuracy alone before)."""
        names = self.started.get("metrics")
        return run_metrics(names) if isinstance(names, list) else (ACCURACY,)

    # ------------------------------------------------------------------ feeding
    def feed(self, event: dict[str, Any]) -> None:
        event = self._epochs(event)
        kind = event.get("event")
        self.events += 1
        self._switch_trial(event)
        line = describe_event(event)
        if kind == "started":
            self.started = event
            self.status = "running"
            self.end = {}
        elif kind == "batch":
            self._batch(event)
        elif kind == "epoch":
            if not self._epoch(event):
                return
        elif kind == "evaluation":
            self.evaluation = event
        elif kind in END_EVENTS:
            self.end = event
            self.status = str(kind)
        if line is not None:
            self.log.append(line)

    def _switch_trial(self, event: dict[str, Any]) -> None:
        """A new trial's steps restart: continue the x axis after the last point."""
        if event.get("event") not in ("started", "batch", "epoch"):
            return
        trial = event.get("trial", event.get("fold"))
        if trial == self.trial and self.trial_starts:
            return
        self.trial = trial
        self._x0 = float(self.step.last() or 0.0) if len(self.step) else 0.0
        self._trial_last_step = -math.inf
        self._trial_last_epoch = -math.inf
        self.trial_starts.append((trial, self._x0))

    def _batch(self, event: dict[str, Any]) -> None:
        step = _number(event.get("global_step"))
        if step <= self._trial_last_step:
            return  # a resumed run repeats nothing, but a re-read file might
        self._trial_last_step = step
        self.last_batch = event
        self.step.append(self._x0 + step)
        for name in BATCH_FIELDS:
            self.batch[name].append(_number(event.get(name)))
        for name in ("loss", "accuracy"):
            value, prev = _number(event.get(name)), self.smooth[name].last()
            if prev is None or math.isnan(prev):
                self.smooth[name].append(value)
            else:
                self.smooth[name].append(SMOOTHING * prev + (1 - SMOOTHING) * value)

    def _epoch(self, event: dict[str, Any]) -> bool:
        epoch = _number(event.get("epoch"))
        if epoch <= self._trial_last_epoch:
            return False
        self._trial_last_epoch = epoch
        self.epoch_index.append(epoch)
        steps = _number(self.started.get("steps_per_epoch"))
        x = self.step.last() if len(self.step) else self._x0 + epoch * steps
        self.epoch_step.append(x if x is not None else math.nan)
        for name in EPOCH_FIELDS:
            self.epoch[name].append(_number(event.get(name)))
        return True

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_events_file(cls, path: str | Path) -> RunHistory:
        """Read a run's events; ``offset`` is where the complete lines end (for tailing)."""
        history = cls()
        history.offset = feed_events_file(path, history.feed)
        return history

    # ------------------------------------------------------------------ derived
    def best_val_accuracy(self) -> float | None:
        if self.end.get("best_val_accuracy") is not None:
            return _number(self.end["best_val_accuracy"])
        values = self.epoch["val_accuracy"].view()
        values = values[~np.isnan(values)]
        return float(values.max()) if len(values) else None

    def duration_s(self) -> float | None:
        if self.end.get("duration_s") is not None:
            return _number(self.end["duration_s"])
        values = self.epoch["duration_s"].view()
        return float(np.nansum(values)) if len(values) else None

    def rows_per_s(self) -> float | None:
        values = self.batch["rows_per_s"].view()
        values = values[~np.isnan(values)]
        return float(np.median(values[-50:])) if len(values) else None

    def progress_text(self) -> str:
        """``epoch 1/2 · step 20/42 · loss 0.41 · accuracy 0.84``."""
        b, s = self.last_batch, self.started
        if not b:
            return ""
        epochs = s.get("epochs") or "?"
        trial = b.get("trial")
        return ("" if trial in (None, SINGLE_TRIAL) else f"{trial} · ") + (
            f"epoch {int(_number(b.get('epoch')))}/{epochs} · step {b.get('step')}/"
            f"{b.get('steps')} · loss {_number(b.get('loss')):.4f} · accuracy "
            f"{_number(b.get('accuracy')):.4f}"
        )


def feed_events_file(path: str | Path, feed: Callable[[dict[str, Any]], None]) -> int:
    """Feed every complete line of an ``events.jsonl``; the byte offset where they end."""
    offset = 0
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # a line still being written (or torn by a kill)
                offset += len(line)
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(event, dict):
                    feed(event)
    except FileNotFoundError:
        pass
    return offset
