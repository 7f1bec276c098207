"""``summarize``: each layer's output shape, weight count and activation memory, plus totals.

Weight counts equal Keras's ``count_params()`` for the built model (BatchNormalization's
moving statistics are non-trainable weights and are counted, as Keras does). Activation
memory is the bytes of each layer's outputs for one batch in the layer's dtype: an
estimate of what the forward pass keeps for the backward pass. Pure Python.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ..units import human_bytes
from .resolve import Node, ResolvedSpec
from .validate import check_spec

DTYPE_BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "uint8": 1,
    "int8": 1,
    "uint16": 2,
    "int16": 2,
    "uint32": 4,
    "int32": 4,
    "int64": 8,
}


@dataclass(frozen=True)
class SummaryRow:
    """One line of the summary; ``index`` is ``""`` for the input, ``"2.1"`` inside a block."""

    index: str
    name: str
    type: str
    output_shape: tuple[int, ...]
    dtype: str
    params: int
    trainable: int
    non_trainable: int
    activation_bytes: int


@dataclass(frozen=True)
class ModelSummary:
    """Rows in model order and the totals. ``weight_bytes`` holds the float32 variables,
    ``optimizer_bytes`` the optimizer's slots (Adam: two per trainable weight)."""

    name: str
    batch_size: int
    rows: list[SummaryRow] = field(default_factory=list)
    total_params: int = 0
    trainable_params: int = 0
    non_trainable_params: int = 0
    activation_bytes: int = 0
    weight_bytes: int = 0
    optimizer_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for row in out["rows"]:
            row["output_shape"] = list(row["output_shape"])
        return out

    def format_table(self) -> str:
        """A fixed-width text table, like ``model.summary()``."""
        head = f"{'#':>5}  {'layer':<28} {'output shape':<18} {'params':>12} {'activations':>12}"
        lines = [f"model {self.name!r}, batch {self.batch_size}", head, "-" * len(head)]
        for r in self.rows:
            lines.append(
                f"{r.index:>5}  {r.name:<28} {str(r.output_shape):<18} {r.params:>12,} "
                f"{human_bytes(r.activation_bytes):>12}"
            )
        lines += [
            "-" * len(head),
            f"params: {self.total_params:,} ({self.trainable_params:,} trainable, "
            f"{self.non_trainable_params:,} non-trainable), weights {human_bytes(self.weight_bytes)}",
            f"activations per batch: {human_bytes(self.activation_bytes)}; optimizer state: "
            f"{human_bytes(self.optimizer_bytes)}",
        ]
        return "\n".join(lines)


def _optimizer_slots(optimizer: dict[str, Any]) -> int:
    kind = optimizer["type"]
    if kind in ("adam", "adamw"):
        return 2
    if kind == "sgd":
        return 1 if optimizer["momentum"] > 0 else 0
    if kind == "rmsprop":
        return 2 if optimizer["momentum"] > 0 else 1
    return 0  # pragma: no cover


def _rows(nodes: list[Node], batch: int) -> list[SummaryRow]:
    rows: list[SummaryRow] = []
    for n in nodes:
        assert n.out_shape is not None
        tensors = 1
        if n.type == "Residual":
            # the add's output, the projection's output and the activation's output
            tensors += int(n.projection is not None) + int(n.params["activation"] != "linear")
        elif n.params.get("activation", "linear") != "linear" and n.type != "Activation":
            tensors += 1  # the pre-activation output is kept for the gradient too
        size = batch * math.prod(n.out_shape) * DTYPE_BYTES[n.out_dtype] * tensors
        rows.append(
            SummaryRow(
                ".".join(str(i) for i in n.index),
                n.name,
                n.type,
                n.out_shape,
                n.out_dtype,
                n.trainable + n.non_trainable,
                n.trainable,
                n.non_trainable,
                size,
            )
        )
        rows += _rows(n.children, batch)
    return rows


def summarize_resolved(r: ResolvedSpec, batch_size: int = 32) -> ModelSummary:
    """The summary of an already checked spec (no errors)."""
    if batch_size < 1:
        raise ValueError(f"batch_size {batch_size} must be >= 1")
    assert r.input_shape is not None
    input_row = SummaryRow(
        "",
        "input",
        "Input",
        r.input_shape,
        r.input_dtype,
        0,
        0,
        0,
        batch_size * math.prod(r.input_shape) * DTYPE_BYTES[r.input_dtype],
    )
    rows = [input_row, *_rows(r.nodes, batch_size)]
    trainable = sum(row.trainable for row in rows)
    frozen = sum(row.non_trainable for row in rows)
    return ModelSummary(
        name=r.name,
        batch_size=batch_size,
        rows=rows,
        total_params=trainable + frozen,
        trainable_params=trainable,
        non_trainable_params=frozen,
        activation_bytes=sum(row.activation_bytes for row in rows),
        weight_bytes=4 * (trainable + frozen),
        optimizer_bytes=4 * trainable * _optimizer_slots(r.training["optimizer"]),
    )


def summarize(spec: Any, batch_size: int = 32) -> ModelSummary:
    """Check ``spec`` (raising ``ModelSpecError`` on any error) and summarise it.

    ``summary.rows`` lists the input, then every layer depth first (a residual block's
    row, holding its projection's weights, comes before its own layers).
    """
    return summarize_resolved(check_spec(spec), batch_size)
