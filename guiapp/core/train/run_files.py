"""Read what a run folder holds, for the Runs page (plain functions, run on worker threads).

No Qt, no TensorFlow: ``events.jsonl`` through :class:`RunHistory`, ``config.json`` and
``report.json`` as JSON, and the validation rows of a class through the core's
:func:`~guiapp.core.train.validation_rows.validation_rows` (the runner's own split choice
and block plan), so the Browser can show exactly the samples the run validated on; a confusion cell's rows come from the run's
``predictions.h5`` (``guiapp.core.predict``). An experiment of several trials shows its best trial's report (``experiment.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from guiapp.core.train.history import END_EVENTS, RunHistory, feed_events_file
from guiapp.core.train.run_lock import run_active
from guiapp.core.train.runfolder import read_json_object


def read_run(path: str) -> dict[str, Any]:
    """Everything the Runs page shows about the run in ``path``."""
    folder = Path(path)
    events = folder / "events.jsonl"
    if not events.exists():  # k-fold runs of earlier versions: one folder per fold
        folds = sorted(folder.glob("fold-*/events.jsonl"))
        if folds:
            events = folds[-1]
    history = RunHistory()
    segments = Segments()

    def feed(event: dict[str, Any]) -> None:
        history.feed(event)
        segments.feed(event)

    history.offset = feed_events_file(events, feed)
    trial = _best_trial(folder) or events.parent
    report = read_json_object(trial / "report.json") or dict(history.evaluation)
    config = read_json_object(trial / "config.json")
    status = history.status if history.events else "no events"
    if status == "running" and not run_active(folder):
        # the lock is the liveness truth: the writer takes it before it touches the folder
        # and the kernel drops it when the process dies (kill -9 leaves no last event)
        status = "failed"
    return {
        "path": path,
        "folder": str(events.parent),
        "history": history,
        "report": report,
        "config": config.get("config", {}),
        "dataset": config.get("dataset", {}),
        "split": config.get("split", {}),
        "status": status,
        "duration_s": segments.total_s(),
        "best": best_checkpoint(history),
    }


class Segments:
    """The wall time a run trained, over all its segments (a start, then each resume):
    the union of [started, end] of each segment, so the gaps between a stop and its
    resume do not count and parallel trials count once."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self._open: tuple[float, float] | None = None

    def feed(self, event: dict[str, Any]) -> None:
        t = event.get("time")
        if not isinstance(t, (int, float)):
            return
        kind = event.get("event")
        if kind == "started":
            self._close()
            self._open = (float(t), float(t))
        elif self._open is not None:
            self._open = (self._open[0], max(self._open[1], float(t)))
            if kind in END_EVENTS:
                self._close()

    def _close(self) -> None:
        if self._open is not None:
            self.spans.append(self._open)
            self._open = None

    def total_s(self) -> float | None:
        spans = sorted([*self.spans, *([self._open] if self._open else [])])
        if not spans:
            return None
        total, (a, b) = 0.0, spans[0]
        for lo, hi in spans[1:]:
            if lo > b:
                total, a, b = total + (b - a), lo, hi
            else:
                b = max(b, hi)
        return total + (b - a)


def best_checkpoint(history: RunHistory) -> dict[str, Any] | None:
    """The epoch ``best.keras`` holds (the first with the highest validation accuracy,
    1-based) with its scores, and the last epoch's, for saying which one is exported."""
    acc = history.epoch["val_accuracy"].view()
    if not len(acc) or np.isnan(acc).all():
        return None
    at, last = int(np.nanargmax(acc)), len(acc) - 1
    epochs = history.epoch_index.view()

    def row(i: int) -> dict[str, Any]:
        return {
            "epoch": int(epochs[i]),
            "val_accuracy": float(acc[i]),
            "val_loss": float(history.epoch["val_loss"].view()[i]),
        }

    return {"best": row(at), "last": row(last)}


def checkpoint_text(best: dict[str, Any] | None) -> str:
    """``best.keras: epoch 2 (val accuracy 0.9120, loss 0.2411); the last epoch, 3: ...``."""
    if not best:
        return "best.keras (no validation scores recorded)"
    b, last = best["best"], best["last"]
    text = (
        f"best.keras, the best epoch {b['epoch']} (val accuracy {b['val_accuracy']:.4f}, "
        f"loss {b['val_loss']:.4f})"
    )
    if last["epoch"] != b["epoch"]:
        text += (
            f"; the last epoch {last['epoch']} scored val accuracy "
            f"{last['val_accuracy']:.4f}, loss {last['val_loss']:.4f}"
        )
    return text


def model_folder(info: dict[str, Any] | None) -> tuple[Path | None, str]:
    """The run folder whose ``best.keras`` Predict and Export use for the shown run, and
    what to say: an experiment's best trial's (named), or why there is none yet."""
    if info is None:
        return None, "Select a run first"
    folder = Path(info["path"])
    if (folder / "best.keras").exists():
        return folder, ""
    trial = _best_trial(folder)
    if trial is not None and (trial / "best.keras").exists():
        return trial, f"the best trial's model ({trial.name})"
    if (folder / "experiment.json").exists() or (folder / "spec.json").exists():
        why = "no trial of this experiment has a model yet"
    else:
        why = "this run has no model yet"
    status = info.get("status")
    if info.get("best") and status not in ("running", "failed", "stopped"):
        return (
            None,
            f"{folder} has no best.keras; its history names {checkpoint_text(info['best'])}",
        )
    if status == "running":
        return None, f"{why}: it is saved at the end of the first epoch"
    if status in ("failed", "stopped"):
        return None, f"{why}: it ended before its first epoch did; Resume it on the Training page"
    return None, why


def _best_trial(folder: Path) -> Path | None:
    """The run folder of an experiment's best trial (None for a single run)."""
    summary = read_json_object(folder / "experiment.json")
    best = (summary.get("summary") or {}).get("best_trial")
    for t in summary.get("trials") or []:
        if t.get("id") == best and t.get("run") not in (None, "."):
            return folder / str(t["run"])
    return None


def validation_rows(config: dict[str, Any], rows: int, ds: Any = None) -> np.ndarray:
    """The dataset rows of the run's validation split, in order (``ds``: the open dataset,
    whose groups decide the split where its rows have them)."""
    from guiapp.core.train import validation_rows as core

    return core.validation_rows(core.config_of(config), rows, ds)


def predictions_file(info: dict[str, Any]) -> Path:
    """The run's per-row predictions of its evaluated split (``predictions.h5``)."""
    return Path(info.get("folder") or info["path"]) / "predictions.h5"


def cell_rows(predictions: Path, true_class: int, predicted: int) -> np.ndarray:
    """Rows of confusion cell (true, predicted) from the run's predictions, most confident first."""
    from guiapp.core.predict import cell_rows as rows_of_cell

    return rows_of_cell(predictions, true_class, predicted)


def class_rows(data: str, config: dict[str, Any], true_class: int) -> np.ndarray:
    """Validation rows of the run whose label is ``true_class``."""
    from guiapp.core.store import Dataset

    with Dataset(data) as ds:
        rows = validation_rows(config, len(ds), ds)
        if not len(rows):
            return rows
        labels = ds.read_labels(int(rows[0]), int(rows[-1]) + 1)
    picked: np.ndarray = rows[labels[rows - rows[0]] == true_class]
    return picked
