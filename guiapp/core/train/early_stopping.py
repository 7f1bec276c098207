"""Early stopping: stop when the validation accuracy has not improved for PATIENCE epochs.

The decision is a pure function of the run's history rows, which every checkpoint holds,
so a resumed run stops exactly where the uninterrupted one stops. The run then ends with
the weights of its best epoch (``best.keras``): its final evaluation, ``last.keras`` and
report are those of the best model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

METRIC = "val_accuracy"


def best_epoch(history: list[dict[str, Any]]) -> int | None:
    """The index of the first row with the highest validation accuracy (None without one)."""
    best, at = -math.inf, None
    for i, row in enumerate(history):
        value = row.get(METRIC)
        if isinstance(value, (int, float)) and not math.isnan(value) and value > best:
            best, at = float(value), i
    return at


def should_stop(history: list[dict[str, Any]], patience: int) -> bool:
    """True once ``patience`` epochs in a row brought no better validation accuracy."""
    if patience <= 0 or not history:
        return False
    at = best_epoch(history)
    since = len(history) if at is None else len(history) - 1 - at
    return since >= patience


def restore_best(model: Any, best_model: Path) -> None:
    """Load the best epoch's weights (``best.keras``) into ``model``."""
    from ..model.keras_file import load_keras

    best = load_keras(best_model)  # damaged: one line (exit 2), never an internal error
    model.set_weights(best.get_weights())
