"""A run folder: everything one training run writes, each file replaced atomically.

```
RUN_DIR/
  config.json        resolved config: dataset path and shard hashes, model spec, seeds, versions
  events.jsonl       every event the run emitted (appended)
  history.csv        one row per epoch (epoch 1-based; a column per metric of the run)
  checkpoints/last.h5  weights + optimizer + position (epoch, step) of the newest checkpoint
  best.keras, last.keras
  confusion.csv, report.json, report.md   evaluation with class names
  predictions.h5     the evaluated split's per-row predictions (core/predict/table.py)
  tensorboard/       TensorBoard event files: batch and epoch scalars, HParams
  train.log          tracebacks of failures
```

An experiment (``core/train/experiment.py``) is a folder of such run folders, one per trial
(``fold-1/``, ``fraction-0.1/``, ``grid-002-fold-0/``), plus ``spec.json`` (what it runs),
``events.jsonl`` (every trial's events, tagged with ``trial``), ``experiment.json`` and
``experiment.md`` (the summary). A single run is an experiment of one trial: its run folder
is the experiment folder, holding ``spec.json`` and the summary beside the run's files.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from .metrics import ACCURACY, history_fields, names_in

#: The columns of a run that computes accuracy only (others add a column per metric).
HISTORY_FIELDS = history_fields((ACCURACY,))


class RunFolder:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    config = property(lambda self: self.path / "config.json")
    events = property(lambda self: self.path / "events.jsonl")
    history = property(lambda self: self.path / "history.csv")
    checkpoint = property(lambda self: self.path / "checkpoints" / "last.h5")
    best_model = property(lambda self: self.path / "best.keras")
    last_model = property(lambda self: self.path / "last.keras")
    log = property(lambda self: self.path / "train.log")
    predictions = property(lambda self: self.path / "predictions.h5")

    def create(self) -> None:
        (self.path / "checkpoints").mkdir(parents=True, exist_ok=True)

    def write_json(self, name: str, obj: Any) -> None:
        atomic_write_text(
            self.path / name, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"
        )

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def write_history(self, rows: list[dict[str, Any]]) -> None:
        """``history.csv``: the rows' ``epoch`` (1-based), loss, each metric of the run
        (:mod:`.metrics`) on training and validation, time, rates, input wait, start-up."""
        fields = history_fields(names_in(rows[0]) if rows else (ACCURACY,))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})
        atomic_write_text(self.history, buf.getvalue())

    def read_history(self) -> list[dict[str, Any]]:
        """The rows of ``history.csv`` (strings), epochs 1-based: a file written before
        epochs counted from 1 (its first row ``epoch`` 0) is read shifted by one."""
        if not self.history.exists():
            return []
        with open(self.history, newline="") as fh:
            return one_based_history([dict(r) for r in csv.DictReader(fh)])


def one_based_history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History rows with 1-based epochs. Rows always start at the run's first epoch, so a
    first row of epoch 0 marks the old 0-based convention (history.csv and checkpoints
    written before 1-based epochs); its rows come back with every epoch one higher."""
    if not rows or str(rows[0].get("epoch", "")).strip() not in ("0", "0.0"):
        return rows
    out = []
    for r in rows:
        e = r.get("epoch")
        try:
            shifted: Any = int(float(e)) + 1  # type: ignore[arg-type]
        except (TypeError, ValueError):
            shifted = e
        out.append({**r, "epoch": str(shifted) if isinstance(e, str) else shifted})
    return out


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A JSON object file of a run folder, or ``{}`` when it is missing, unreadable or not an
    object (a run still being written, or one from an older version)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
