"""Read what a run folder holds, for the Runs page (plain functions, run on worker threads).

No Qt, no TensorFlow: ``events.jsonl`` through :class:`RunHistory`, ``config.json`` and
``report.json`` as JSON, and the validation rows of a class through the reader's own
block plan (``ReadPlan``/``SplitSpec``, pure numpy), so the Browser can show exactly the
samples the run validated on; a confusion cell's rows come from the run's
``predictions.h5`` (``guiapp.core.predict``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from guiapp.core.train.history import RunHistory


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_run(path: str) -> dict[str, Any]:
    """Everything the Runs page shows about the run in ``path``."""
    folder = Path(path)
    events = folder / "events.jsonl"
    if not events.exists():  # k-fold runs keep one folder per fold: show the last one
        folds = sorted(folder.glob("fold-*/events.jsonl"))
        if folds:
            events = folds[-1]
    history = RunHistory.from_events_file(events)
    report = _json(events.parent / "report.json") or dict(history.evaluation)
    config = _json(events.parent / "config.json")
    return {
        "path": path,
        "folder": str(events.parent),
        "history": history,
        "report": report,
        "config": config.get("config", {}),
        "dataset": config.get("dataset", {}),
        "status": history.status if history.events else "no events",
    }


def validation_rows(config: dict[str, Any], rows: int) -> np.ndarray:
    """The dataset rows of the run's validation split, in order."""
    from guiapp.core.pipeline.read_plan import ReadPlan, SplitSpec
    from guiapp.core.train.config import TrainConfig

    known = {"data": "", "model": {}, "out": ""}
    known.update({k: v for k, v in config.items() if k in TrainConfig.__dataclass_fields__})
    cfg = TrainConfig(**known)
    fold = cfg.fold if cfg.folds else 0
    splits = SplitSpec(val=cfg.val, test=cfg.test, folds=cfg.folds, fold=fold, seed=cfg.seed)
    plan = ReadPlan(
        rows=rows,
        batch_size=max(1, cfg.batch),
        block_rows=cfg.block_rows_for(rows),
        seed=cfg.seed,
        split="val",
        splits=splits,
        shuffle=False,
    )
    blocks = plan.selected_blocks()
    if not len(blocks):
        return np.zeros(0, np.int64)
    starts = blocks.astype(np.int64) * plan.block_rows
    lengths = plan.block_lengths(blocks)
    return np.concatenate(
        [np.arange(a, a + n, dtype=np.int64) for a, n in zip(starts, lengths, strict=True)]
    )


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
        rows = validation_rows(config, len(ds))
        if not len(rows):
            return rows
        labels = ds.read_labels(int(rows[0]), int(rows[-1]) + 1)
    return rows[labels[rows - rows[0]] == true_class]
