"""The loss, optimizer (with its learning-rate schedule) and metrics of a spec, as Keras objects.

``compile_parts`` serves a custom training loop (GradientTape under ``strategy.run``) and
``model.compile`` alike. Keras is imported inside the functions.
Create them inside ``strategy.scope()`` when training under a distribution strategy.
"""

from __future__ import annotations

from typing import Any

from .build import _keras
from .resolve import ResolvedSpec
from .validate import check_spec


def learning_rate(k: Any, optimizer: dict[str, Any]) -> Any:
    """A float, or a ``keras.optimizers.schedules`` object counting optimizer steps."""
    lr = optimizer["learning_rate"]
    sched = optimizer["schedule"]
    if sched is None:
        return lr
    S = k.optimizers.schedules
    if sched["type"] == "cosine":
        if sched["warmup_steps"] > 0:
            return S.CosineDecay(
                0.0,
                sched["decay_steps"],
                alpha=sched["alpha"],
                warmup_target=lr,
                warmup_steps=sched["warmup_steps"],
            )
        return S.CosineDecay(lr, sched["decay_steps"], alpha=sched["alpha"])
    if sched["type"] == "exponential":
        return S.ExponentialDecay(
            lr, sched["decay_steps"], sched["decay_rate"], staircase=sched["staircase"]
        )
    if sched["type"] == "step":
        return S.ExponentialDecay(lr, sched["step_size"], sched["factor"], staircase=True)
    raise AssertionError(sched["type"])  # pragma: no cover


def _optimizer(k: Any, o: dict[str, Any], mixed: bool) -> Any:
    lr = learning_rate(k, o)
    common: dict[str, Any] = {"learning_rate": lr, "clipnorm": o["clipnorm"]}
    kind = o["type"]
    if kind in ("adam", "adamw"):
        betas = {"beta_1": o["beta_1"], "beta_2": o["beta_2"], "epsilon": o["epsilon"]}
        if kind == "adam":
            opt = k.optimizers.Adam(**common, **betas)
        else:
            opt = k.optimizers.AdamW(weight_decay=o["weight_decay"], **common, **betas)
    elif kind == "sgd":
        opt = k.optimizers.SGD(momentum=o["momentum"], nesterov=o["nesterov"], **common)
    elif kind == "rmsprop":
        opt = k.optimizers.RMSprop(rho=o["rho"], momentum=o["momentum"], **common)
    else:  # pragma: no cover
        raise AssertionError(kind)
    return k.optimizers.LossScaleOptimizer(opt) if mixed else opt


def _metrics(k: Any, names: list[str], binary: bool) -> list[Any]:
    out: list[Any] = []
    for name in names:
        if name == "accuracy":
            cls = k.metrics.BinaryAccuracy if binary else k.metrics.SparseCategoricalAccuracy
            out.append(cls(name="accuracy"))
        else:
            top = int(name[3])  # "top3_accuracy" -> 3
            out.append(k.metrics.SparseTopKCategoricalAccuracy(k=top, name=name))
    return out


def parts_of(r: ResolvedSpec) -> tuple[Any, Any, list[Any]]:
    """(loss, optimizer, metrics) of a checked spec."""
    k = _keras()
    t = r.training
    binary = t["loss"] == "binary_crossentropy"
    if binary:
        loss = k.losses.BinaryCrossentropy(from_logits=t["from_logits"])
    else:
        loss = k.losses.SparseCategoricalCrossentropy(from_logits=t["from_logits"])
    return loss, _optimizer(k, t["optimizer"], r.mixed_precision), _metrics(k, t["metrics"], binary)


def compile_parts(spec: Any) -> tuple[Any, Any, list[Any]]:
    """(loss, optimizer, metrics) as new Keras objects for a custom training loop.

    The optimizer's learning rate follows the spec's schedule, counted in optimizer steps
    (batches). With mixed precision it is a ``keras.optimizers.LossScaleOptimizer``: scale
    the loss with ``optimizer.scale_loss(loss)`` before taking gradients.
    Raises ``ModelSpecError`` when the spec has errors.
    """
    return parts_of(check_spec(spec))
