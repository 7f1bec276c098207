"""The parameters a sweep may vary, and how a trial's values change the base config.

Training settings are ``TrainConfig`` fields (``batch``, ``epochs``, ``val``, ``seed``, ...).
Model settings change a copy of the model spec:

- ``learning_rate``, ``optimizer`` (its type: adam, adamw, sgd, rmsprop) and the optimizer's
  own parameters (``momentum``, ``weight_decay``, ``beta_1``, ...) go into ``optimizer``;
- ``dropout`` sets the rate of every Dropout layer;
- ``filters`` sets the first convolution's filters and scales the later ones by the same
  factor (the template's widths keep their ratios);
- ``layers.N.PARAM`` sets one parameter of layer N (0-based), e.g. ``layers.5.units``.

The values are checked where every spec is checked, before TensorFlow is imported.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..errors import UserError
from .config import TrainConfig

#: TrainConfig fields a trial may set (not the paths, devices or logging)
CONFIG_PARAMS = (
    "epochs",
    "batch",
    "val",
    "test",
    "fraction",
    "fold",
    "seed",
    "max_steps",
    "early_stopping",
    "class_weights",
    "augment",
)
OPTIMIZER_PARAMS = (
    "learning_rate",
    "momentum",
    "nesterov",
    "weight_decay",
    "beta_1",
    "beta_2",
    "epsilon",
    "rho",
    "clipnorm",
)
MODEL_PARAMS = ("optimizer", "dropout", "filters", *OPTIMIZER_PARAMS)


def known_names() -> list[str]:
    return [*CONFIG_PARAMS, *MODEL_PARAMS, "layers.N.PARAM"]


def check_param_names(names: list[str]) -> list[str]:
    problems = []
    for name in names:
        if name in CONFIG_PARAMS or name in MODEL_PARAMS:
            continue
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "layers" and parts[1].isdigit() and parts[2]:
            continue
        problems.append(
            f"parameter {name!r} cannot be varied; use one of {', '.join(known_names())}"
        )
    return problems


def apply_params(base: TrainConfig, params: dict[str, Any]) -> TrainConfig:
    """``base`` with a trial's parameters set (the model spec is copied, never shared)."""
    changes = {k: v for k, v in params.items() if k in CONFIG_PARAMS}
    model_changes = {k: v for k, v in params.items() if k not in CONFIG_PARAMS}
    cfg = dataclasses.replace(base, **changes)
    if model_changes:
        spec = copy.deepcopy(base.model)
        for name, value in model_changes.items():
            _set_model_param(spec, name, value)
        cfg = dataclasses.replace(cfg, model=spec)
    return cfg


def _set_model_param(spec: dict[str, Any], name: str, value: Any) -> None:
    found = spec.get("layers")
    layers: list[dict[str, Any]] = found if isinstance(found, list) else []
    if name == "optimizer" or name in OPTIMIZER_PARAMS:
        opt = spec.get("optimizer")
        opt = dict(opt) if isinstance(opt, dict) else {"type": "adam"}
        opt["type" if name == "optimizer" else name] = value
        spec["optimizer"] = opt
    elif name == "dropout":
        hit = [layer for layer in layers if layer.get("type") == "Dropout"]
        if not hit:
            raise UserError("parameter 'dropout': the model has no Dropout layer to set")
        for layer in hit:
            layer["rate"] = value
    elif name == "filters":
        convs = [layer for layer in layers if "filters" in layer]
        if not convs:
            raise UserError("parameter 'filters': the model has no layer with filters")
        first = convs[0]["filters"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UserError(f"parameter 'filters': {value!r} is not a positive whole number")
        for layer in convs:
            layer["filters"] = max(1, round(layer["filters"] * value / first))
    else:
        _, index, param = name.split(".")
        if int(index) >= len(layers):
            raise UserError(
                f"parameter {name!r}: the model has {len(layers)} layers (0..{len(layers) - 1})"
            )
        layers[int(index)][param] = value
