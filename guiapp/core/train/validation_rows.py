"""The dataset rows a run validated (and reported) on, from its config alone.

The runner validates on ``TrainConfig.validation_split()`` (val, else test) of the block
plan (whole groups where the rows have groups); this is the same plan, unshuffled (pure numpy, no TensorFlow), so the Runs page can
show exactly the samples behind a confusion-matrix cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..pipeline.group_split import split_mask
from ..pipeline.read_plan import ReadPlan
from .config import TrainConfig, recorded_defaults


def config_of(recorded: dict[str, Any]) -> TrainConfig:
    """A ``TrainConfig`` from a recorded config (``config.json``'s ``"config"``), keeping
    only the fields this version knows."""
    known: dict[str, Any] = {"data": "", "model": {}, "out": ""}
    known.update(
        {
            k: v
            for k, v in recorded_defaults(recorded).items()
            if k in TrainConfig.__dataclass_fields__
        }
    )
    return TrainConfig(**known)


def validation_rows(cfg: TrainConfig, rows: int, ds: Any = None) -> np.ndarray:
    """The dataset rows of the run's validation split, in order (empty without one).

    ``ds``: the open dataset, needed where its rows carry groups (the split then takes
    whole groups); without it the split goes by blocks."""
    split = cfg.validation_split()
    if split is None:
        return np.zeros(0, np.int64)
    splits = cfg.splits()
    mask = None
    if ds is not None:
        mask = split_mask(ds, splits, split, split_by=cfg.split_by)
    plan = ReadPlan(
        rows=rows,
        batch_size=max(1, cfg.batch),
        block_rows=cfg.block_rows_for(rows),
        seed=cfg.seed,
        split=split,
        splits=splits,
        shuffle=False,
        row_mask=mask,
    )
    return plan.selected_rows()
