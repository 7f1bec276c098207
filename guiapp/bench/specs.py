"""The model specs the benches train: ``classifier(name, shape, layers)`` is a spec as
``guiapp train --model`` reads it, trained as the templates train (sparse categorical
cross-entropy, Adam, accuracy; seed 0, no schedule, no mixed precision), every key written."""

from __future__ import annotations

from typing import Any


def classifier(
    name: str,
    shape: list[int],
    layers: list[dict[str, Any]],
    *,
    dtype: str = "float32",
    learning_rate: float = 0.001,
) -> dict[str, Any]:
    """LAYERS on inputs of SHAPE and DTYPE, Adam at LEARNING_RATE."""
    return {
        "name": name,
        "input": {"shape": shape, "dtype": dtype},
        "layers": layers,
        "loss": "sparse_categorical_crossentropy",
        "optimizer": {"type": "adam", "learning_rate": learning_rate, "schedule": None},
        "metrics": ["accuracy"],
        "mixed_precision": False,
        "seed": 0,
    }
