"""The metrics a run reports: one list of names that every part of a run reads.

A model spec's ``metrics`` (``accuracy``, ``top3_accuracy``, ``top5_accuracy``; checked in
``core/model/training_options.py``, offered as check boxes on the Model page) are what a
run computes: the training step counts each one's hits on the device with the loss and the
accuracy (:mod:`.steps`, no synchronisation per step), the meters turn the counts into
fractions (:mod:`.meters`), validation and the final evaluation count them on the
validation split (:mod:`.evaluate`), and the ``batch`` and ``epoch`` events, ``history.csv``,
TensorBoard, the event text and the plots of the Training and Runs pages show them, each
reading its names from here. ``accuracy`` is always computed (the best model is chosen by
validation accuracy), first, whether the spec lists it or not.

A metric here is a top-k accuracy: the fraction of rows whose label is among the k
highest outputs (k = 1: ``accuracy``), as ``keras.metrics.SparseTopKCategoricalAccuracy``
computes it (ties at the k-th place count as hits, as ``tf.math.in_top_k`` has them).
Pure Python: the GUI imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..model.training_options import METRICS as SPEC_METRICS

#: Every metric a spec may name, in the order columns and plots show them.
ALL_METRICS: tuple[str, ...] = tuple(SPEC_METRICS)
#: Always computed: the best model is chosen by it.
ACCURACY = "accuracy"


def top_k(name: str) -> int:
    """The k of a metric: 1 for ``accuracy``, 3 for ``top3_accuracy``."""
    if name == ACCURACY:
        return 1
    if name.startswith("top") and name.endswith("_accuracy") and name[3:-9].isdigit():
        return int(name[3:-9])
    raise ValueError(f"not a metric: {name!r}")


def label(name: str) -> str:
    """``accuracy``, ``top-3 accuracy``: how messages and axes name a metric."""
    k = top_k(name)
    return "accuracy" if k == 1 else f"top-{k} accuracy"


def short(name: str) -> str:
    """``acc``, ``top3``: the event text's short form."""
    k = top_k(name)
    return "acc" if k == 1 else f"top{k}"


def run_metrics(spec_metrics: Iterable[Any] | None) -> tuple[str, ...]:
    """The metrics a run with a spec's ``metrics`` list computes: ``accuracy`` first, then
    the spec's others in the order of :data:`ALL_METRICS` (unknown names left out; the
    spec was checked before)."""
    wanted = {str(m) for m in spec_metrics or ()}
    return (ACCURACY, *(m for m in ALL_METRICS if m != ACCURACY and m in wanted))


def extra_metrics(names: Sequence[str]) -> tuple[str, ...]:
    """The metrics besides ``accuracy`` (their counts get slots of their own on the device)."""
    return tuple(n for n in names if n != ACCURACY)


def metrics_of_spec(spec: Any) -> tuple[str, ...]:
    """:func:`run_metrics` of a model spec (a dict), read without validating it again."""
    return run_metrics(spec.get("metrics", [ACCURACY]) if isinstance(spec, dict) else None)


def val(name: str) -> str:
    return f"val_{name}"


def batch_fields(names: Sequence[str] = ALL_METRICS) -> tuple[str, ...]:
    """The numbers of a ``batch`` event (and the Training page's batch curves)."""
    return ("loss", *names, "rows_per_s", "input_wait")


def epoch_fields(names: Sequence[str] = ALL_METRICS) -> tuple[str, ...]:
    """The numbers of an ``epoch`` event that are plotted per epoch."""
    return ("loss", *names, "val_loss", *map(val, names), "rows_per_s", "duration_s")


def history_fields(names: Sequence[str]) -> list[str]:
    """The columns of ``history.csv`` for a run computing ``names``."""
    return [
        "epoch",
        "loss",
        *names,
        "val_loss",
        *map(val, names),
        "duration_s",
        "rows_per_s",
        "input_wait",
        "startup_s",
    ]


def names_in(row: dict[str, Any]) -> tuple[str, ...]:
    """The metrics a history row or an event carries, in :data:`ALL_METRICS` order."""
    return tuple(n for n in ALL_METRICS if n in row)


def run_plot_choices(names: Sequence[str] = ALL_METRICS) -> tuple[tuple[str, str], ...]:
    """(label, history column) of the per-epoch curves the Runs page offers."""
    out = [("validation " + label(n), val(n)) for n in names[:1]]
    out.append(("validation loss", "val_loss"))
    out.append(("training loss", "loss"))
    out += [("training " + label(n), n) for n in names[:1]]
    out += [("validation " + label(n), val(n)) for n in names[1:]]
    out += [("training " + label(n), n) for n in names[1:]]
    return tuple(out)
