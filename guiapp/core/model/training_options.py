"""Loss, optimizer, learning-rate schedule and metrics of a spec: the tables and their checks.

Like the layer table, each optimizer and schedule declares its parameters once
(``optimizer_params``/``schedule_params`` expose them to editors). Pure Python.
"""

from __future__ import annotations

from typing import Any

from .errors import SpecError
from .param_types import Param, check_params, did_you_mean, type_word

LOSSES = {
    "sparse_categorical_crossentropy": "integer labels 0..K-1 against K outputs",
    "binary_crossentropy": "two classes against one sigmoid output",
}
METRICS = {
    "accuracy": "fraction of samples whose top class is right",
    "top3_accuracy": "fraction whose label is among the 3 highest outputs",
    "top5_accuracy": "fraction whose label is among the 5 highest outputs",
}

_LR = Param(
    "learning_rate",
    "float",
    1e-3,
    "initial step size",
    minimum=0.0,
    maximum=10.0,
    exclusive_minimum=True,
)
_CLIP = Param(
    "clipnorm",
    "float",
    None,
    "clip each gradient to this norm",
    minimum=0.0,
    exclusive_minimum=True,
    nullable=True,
)
_BETAS = (
    Param(
        "beta_1",
        "float",
        0.9,
        "first-moment decay",
        minimum=0.0,
        maximum=1.0,
        exclusive_maximum=True,
    ),
    Param(
        "beta_2",
        "float",
        0.999,
        "second-moment decay",
        minimum=0.0,
        maximum=1.0,
        exclusive_maximum=True,
    ),
    Param("epsilon", "float", 1e-7, "numerical stability", minimum=0.0, exclusive_minimum=True),
)
_MOMENTUM = Param(
    "momentum", "float", 0.0, "velocity decay", minimum=0.0, maximum=1.0, exclusive_maximum=True
)

OPTIMIZERS: dict[str, tuple[Param, ...]] = {
    "adam": (_LR, *_BETAS, _CLIP),
    "adamw": (
        _LR,
        Param("weight_decay", "float", 0.004, "decoupled weight decay", minimum=0.0),
        *_BETAS,
        _CLIP,
    ),
    "sgd": (_LR, _MOMENTUM, Param("nesterov", "bool", False, "Nesterov momentum"), _CLIP),
    "rmsprop": (
        _LR,
        Param(
            "rho", "float", 0.9, "average decay", minimum=0.0, maximum=1.0, exclusive_maximum=True
        ),
        _MOMENTUM,
        _CLIP,
    ),
}

_STEPS = Param("decay_steps", "int", None, "steps (batches) over which to decay", True, minimum=1)
SCHEDULES: dict[str, tuple[Param, ...]] = {
    "cosine": (
        _STEPS,
        Param(
            "alpha",
            "float",
            0.0,
            "final rate as a fraction of the initial",
            minimum=0.0,
            maximum=1.0,
        ),
        Param("warmup_steps", "int", 0, "linear warm-up steps before the decay", minimum=0),
    ),
    "exponential": (
        _STEPS,
        Param(
            "decay_rate",
            "float",
            0.9,
            "factor per decay_steps",
            minimum=0.0,
            maximum=1.0,
            exclusive_minimum=True,
        ),
        Param("staircase", "bool", False, "decay in whole steps"),
    ),
    "step": (
        Param("step_size", "int", None, "steps (batches) between drops", True, minimum=1),
        Param(
            "factor",
            "float",
            0.1,
            "rate multiplier at each drop",
            minimum=0.0,
            maximum=1.0,
            exclusive_minimum=True,
        ),
    ),
}


def optimizer_types() -> list[str]:
    return list(OPTIMIZERS)


def optimizer_params(name: str) -> list[dict[str, Any]]:
    """The parameters of optimizer ``name`` (besides ``type`` and ``schedule``) as dicts."""
    return [p.to_dict() for p in OPTIMIZERS[name]]


def schedule_types() -> list[str]:
    return list(SCHEDULES)


def schedule_params(name: str) -> list[dict[str, Any]]:
    return [p.to_dict() for p in SCHEDULES[name]]


def _typed(
    section: str,
    value: Any,
    table: dict[str, tuple[Param, ...]],
    errors: list[SpecError],
    skip: tuple[str, ...],
) -> dict[str, Any] | None:
    """Check a ``{"type": name, ...params}`` object against ``table``."""
    if not isinstance(value, dict):
        errors.append(SpecError(section, f"must be an object, not {type_word(value)}", section))
        return None
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in table:
        hint = did_you_mean(kind, table) if isinstance(kind, str) else ""
        errors.append(
            SpecError(
                section,
                f"type {kind!r} is not one of {', '.join(map(repr, table))}{hint}",
                f"{section}.type",
                param="type",
            )
        )
        return None
    values, problems = check_params(table[kind], value, f"{section} {kind!r}", ("type", *skip))
    for param, msg in problems:
        errors.append(SpecError(section, msg, f"{section}.{param}", param=param))
    return {"type": kind, **values}


def check_training(spec: dict[str, Any], errors: list[SpecError]) -> dict[str, Any]:
    """Check loss, optimizer (with schedule) and metrics; return them with defaults filled."""
    loss = spec.get("loss", "sparse_categorical_crossentropy")
    if not isinstance(loss, str) or loss not in LOSSES:
        hint = did_you_mean(loss, LOSSES) if isinstance(loss, str) else ""
        errors.append(
            SpecError(
                "loss", f"{loss!r} is not one of {', '.join(map(repr, LOSSES))}{hint}", "loss"
            )
        )
        loss = "sparse_categorical_crossentropy"
    from_logits = spec.get("from_logits", False)
    if not isinstance(from_logits, bool):
        errors.append(SpecError("from_logits", "must be true or false", "from_logits"))
        from_logits = False

    opt_in = spec.get("optimizer", {"type": "adam"})
    if isinstance(opt_in, str):
        opt_in = {"type": opt_in}
    optimizer = _typed("optimizer", opt_in, OPTIMIZERS, errors, ("schedule",))
    optimizer = optimizer or {"type": "adam", **{p.name: p.default for p in OPTIMIZERS["adam"]}}
    schedule_in = opt_in.get("schedule") if isinstance(opt_in, dict) else None
    optimizer["schedule"] = (
        None
        if schedule_in is None
        else _typed("optimizer.schedule", schedule_in, SCHEDULES, errors, ())
    )

    metrics_in = spec.get("metrics", ["accuracy"])
    metrics: list[str] = []
    if not isinstance(metrics_in, list):
        errors.append(SpecError("metrics", "must be a list of names like ['accuracy']", "metrics"))
    else:
        for i, m in enumerate(metrics_in):
            if isinstance(m, str) and m in METRICS:
                metrics.append(m)
                continue
            hint = did_you_mean(m, METRICS) if isinstance(m, str) else ""
            errors.append(
                SpecError(
                    "metrics",
                    f"{m!r} is not one of {', '.join(map(repr, METRICS))}{hint}",
                    f"metrics[{i}]",
                )
            )
    if loss == "binary_crossentropy":
        for m in metrics:
            if m != "accuracy":
                errors.append(
                    SpecError(
                        "metrics", f"{m!r} needs loss 'sparse_categorical_crossentropy'", "metrics"
                    )
                )
    return {"loss": loss, "from_logits": from_logits, "optimizer": optimizer, "metrics": metrics}
