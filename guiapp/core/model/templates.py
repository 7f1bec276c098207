"""Ready-made specs: ``cnn2d-small`` (25x25 images) and ``kmer-conv1d`` (the genomics model).

``get_template`` returns a fresh copy, adapted to a dataset's class count and sample shape
when they are given. Pure Python.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..errors import UserError
from .param_types import did_you_mean

# What both templates train with (get_template deep-copies, so sharing it here is safe).
_TRAINING: dict[str, Any] = {
    "loss": "sparse_categorical_crossentropy",
    "optimizer": {"type": "adam", "learning_rate": 0.001, "schedule": None},
    "metrics": ["accuracy"],
    "mixed_precision": False,
    "seed": 0,
}

_TEMPLATES: dict[str, dict[str, Any]] = {
    "cnn2d-small": {
        "name": "cnn2d-small",
        "description": "small 2D CNN for 25x25 single-channel images, 5 classes",
        "input": {"shape": [25, 25, 1], "dtype": "float32"},
        "layers": [
            {"type": "Conv2D", "filters": 16, "kernel_size": 3, "activation": "relu", "padding": "same"},
            {"type": "MaxPooling2D", "pool_size": 2},
            {"type": "Conv2D", "filters": 32, "kernel_size": 3, "activation": "relu", "padding": "same"},
            {"type": "MaxPooling2D", "pool_size": 2},
            {"type": "Flatten"},
            {"type": "Dense", "units": 64, "activation": "relu"},
            {"type": "Dropout", "rate": 0.2},
            {"type": "Dense", "units": 5, "activation": "softmax"},
        ],
        **_TRAINING,
    },
    "kmer-conv1d": {
        "name": "kmer-conv1d",
        "description": (
            "126 hashed k-mer ids (uint16) -> Embedding(65521, 100) -> Conv1D(25, 5) -> "
            "MaxPooling1D(2) -> Conv1D(30, 3) -> MaxPooling1D(2) -> Flatten -> Dense(1000) "
            "-> Dense(5, softmax)"
        ),
        "input": {"shape": [126], "dtype": "uint16"},
        "layers": [
            {"type": "Embedding", "input_dim": 65521, "output_dim": 100},
            {"type": "Conv1D", "filters": 25, "kernel_size": 5, "activation": "relu"},
            {"type": "MaxPooling1D", "pool_size": 2},
            {"type": "Conv1D", "filters": 30, "kernel_size": 3, "activation": "relu"},
            {"type": "MaxPooling1D", "pool_size": 2},
            {"type": "Flatten"},
            {"type": "Dense", "units": 1000, "activation": "relu"},
            {"type": "Dense", "units": 5, "activation": "softmax"},
        ],
        **_TRAINING,
    },
}  # fmt: skip


def template_names() -> list[str]:
    return list(_TEMPLATES)


def get_template(
    name: str,
    num_classes: int | None = None,
    input_shape: Sequence[int] | None = None,
    input_dtype: str | None = None,
) -> dict[str, Any]:
    """A fresh copy of template ``name``, adapted to a dataset when asked.

    ``num_classes`` sets the units of the last Dense layer; ``input_shape`` the input
    shape (a sample shape one axis short of the template's gets a channel axis of 1:
    (25, 25) becomes [25, 25, 1] for ``cnn2d-small``); ``input_dtype`` the input dtype.
    """
    if name not in _TEMPLATES:
        raise UserError(
            f"unknown model template {name!r}{did_you_mean(name, _TEMPLATES)}; "
            f"templates: {', '.join(_TEMPLATES)}"
        )
    spec = copy.deepcopy(_TEMPLATES[name])
    if num_classes is not None:
        if num_classes < 2:
            raise UserError(f"template {name}: num_classes {num_classes} must be >= 2")
        dense = [layer for layer in spec["layers"] if layer["type"] == "Dense"]
        dense[-1]["units"] = int(num_classes)
    if input_shape is not None:
        shape = [int(d) for d in input_shape]
        if len(shape) == len(spec["input"]["shape"]) - 1:
            shape.append(1)
        spec["input"]["shape"] = shape
    if input_dtype is not None:
        spec["input"]["dtype"] = input_dtype
    return spec


def fit_template(name: str, sample_shape: Sequence[int], num_classes: int) -> dict[str, Any]:
    """Template ``name`` fitted to a dataset: its sample shape (with a channel axis where the
    template has one more axis) and its class count. The one place a template meets a dataset."""
    return get_template(name, num_classes=num_classes, input_shape=list(sample_shape))
