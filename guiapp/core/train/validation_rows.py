"""The dataset rows a run validated (and reported) on, from its config alone.

The runner validates on ``TrainConfig.validation_split()`` (val, else test) of the block
plan; this is the same plan, unshuffled (pure numpy, no TensorFlow), so the Runs page can
show exactly the samples behind a confusion-matrix cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..pipeline.read_plan import ReadPlan, SplitSpec
from .config import TrainConfig


def config_of(recorded: dict[str, Any]) -> TrainConfig:
    """A ``TrainConfig`` from a recorded config (``config.json``'s ``"config"``), keeping
    only the fields this version knows."""
    known: dict[str, Any] = {"data": "", "model": {}, "out": ""}
    known.update({k: v for k, v in recorded.items() if k in TrainConfig.__dataclass_fields__})
    return TrainConfig(**known)


def validation_rows(cfg: TrainConfig, rows: int) -> np.ndarray:
    """The dataset rows of the run's validation split, in order (empty without one)."""
    split = cfg.validation_split()
    if split is None:
        return np.zeros(0, np.int64)
    fold = cfg.fold if cfg.folds else 0
    splits = SplitSpec(val=cfg.val, test=cfg.test, folds=cfg.folds, fold=fold, seed=cfg.seed)
    plan = ReadPlan(
        rows=rows,
        batch_size=max(1, cfg.batch),
        block_rows=cfg.block_rows_for(rows),
        seed=cfg.seed,
        split=split,
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
