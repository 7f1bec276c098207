"""``ExperimentHistory``: an experiment's event stream folded per trial (Qt-free, TF-free).

Fed with the events of ``guiapp train`` (live, or ``OUT/events.jsonl`` read back), it keeps
one :class:`~.history.RunHistory` per trial, the trials' parameters, and derives what the
Experiments view shows: a row per trial, the mean ± std over folds per epoch, and the
data-scaling curve. It groups trials with the summary's own :func:`group_over_folds`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .experiment_spec import SINGLE_TRIAL
from .experiment_summary import group_over_folds
from .history import END_EVENTS, RunHistory, feed_events_file

RUN_EVENTS = (
    "started",
    "batch",
    "epoch",
    "checkpoint",
    "evaluation",
    "early_stopping",
    *END_EVENTS,
)


class ExperimentHistory:
    def __init__(self) -> None:
        self.trials: dict[str, RunHistory] = {}
        self.params: dict[str, dict[str, Any]] = {}
        self.run_dirs: dict[str, str] = {}
        self.varied: list[str] = []
        self.out = ""
        self.summary: dict[str, Any] = {}
        self.status = "new"
        self.events = 0
        self.offset = 0

    # ------------------------------------------------------------------ feeding
    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        self.events += 1
        if kind == "experiment":
            self.out = str(event.get("out", ""))
            self.varied = list(event.get("varied") or [])
            for t in event.get("trials") or []:
                self._trial(str(t["id"]), t.get("params"), t.get("run_dir"))
            self.status = "running"
        elif kind == "trial":
            self._trial(str(event.get("trial")), event.get("params"), event.get("run_dir"))
        elif kind == "experiment_finished":
            self.summary = dict(event.get("summary") or {})
            self.status = "finished"
        elif kind in RUN_EVENTS:
            tid = str(event.get("trial") or SINGLE_TRIAL)
            self._trial(tid, None, event.get("run_dir"))
            self.trials[tid].feed(event)
            if kind == "started":
                self.status = "running"
            elif kind in ("stopped", "failed"):
                self.status = str(kind)
            elif kind == "finished" and not self.varied:
                self.status = "finished"  # a single run has no experiment_finished

    def _trial(self, tid: str, params: Any, run_dir: Any) -> None:
        self.trials.setdefault(tid, RunHistory())
        if isinstance(params, dict):
            self.params[tid] = dict(params)
        else:
            self.params.setdefault(tid, {})
        if run_dir:
            self.run_dirs[tid] = str(run_dir)

    @classmethod
    def from_events_file(cls, path: str | Path) -> ExperimentHistory:
        """Read the events; ``offset`` is where the complete lines end (for tailing)."""
        history = cls()
        history.offset = feed_events_file(path, history.feed)
        return history

    # ------------------------------------------------------------------ derived
    def trial_ids(self) -> list[str]:
        return list(self.trials)

    def row(self, tid: str) -> dict[str, Any]:
        """What the trials table shows for one trial (the summary's trial row shape)."""
        h = self.trials[tid]
        final = _final_val_accuracy(h)
        vl = h.epoch["val_loss"].view()
        return {
            "id": tid,
            "params": self.params.get(tid, {}),
            "status": h.status if h.events else "pending",
            "epochs": len(h.epoch_index),
            "train_rows": h.started.get("train_rows"),
            "best": {"val_accuracy": h.best_val_accuracy()},
            "final": {
                "val_accuracy": final,
                "val_loss": float(vl[-1]) if len(vl) and not math.isnan(vl[-1]) else None,
            },
            "run_dir": self.run_dirs.get(tid) or h.started.get("run_dir"),
        }

    def rows(self) -> list[dict[str, Any]]:
        return [self.row(t) for t in self.trials]

    def groups(self) -> list[dict[str, Any]]:
        return group_over_folds(self.rows())

    def fold_band(self, trial_ids: list[str] | None = None) -> tuple[np.ndarray, ...]:
        """Per epoch: (epoch numbers, mean, std) of the validation accuracy over the trials
        (the folds of one group), over the epochs every one of them has reached so far."""
        ids = trial_ids if trial_ids is not None else list(self.trials)
        curves = [self.trials[t].epoch["val_accuracy"].view() for t in ids if t in self.trials]
        curves = [c for c in curves if len(c)]
        if not curves:
            empty = np.zeros(0)
            return empty, empty, empty
        n = min(len(c) for c in curves)
        stack = np.stack([c[:n] for c in curves])
        return np.arange(1, n + 1, dtype=np.float64), stack.mean(axis=0), stack.std(axis=0)

    def curve(self) -> list[dict[str, Any]]:
        """The data-scaling points: one per fraction (mean ± std over folds), by rows."""
        points = [g for g in self.groups() if "fraction" in g["params"]]
        return sorted(points, key=lambda g: (g["train_rows"] or 0, g["params"]["fraction"]))


def _final_val_accuracy(h: RunHistory) -> float | None:
    if h.evaluation.get("accuracy") is not None:
        return float(h.evaluation["accuracy"])
    values = h.epoch["val_accuracy"].view()
    return float(values[-1]) if len(values) and not math.isnan(values[-1]) else None
