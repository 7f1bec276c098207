"""Shape inference and parameter counts of one layer, in pure Python, matching Keras 3.

Shapes are per sample (no batch axis), channels last. ``output_shape`` raises
:class:`ShapeProblem` naming the parameter and value when a layer cannot take its input
("kernel_size 5 is larger than its 3x3 input (padding 'valid')"). ``param_counts`` returns
(trainable, non-trainable) exactly as ``keras.Model.count_params()`` adds them up. Each
layer family (``families.py``) computes its own from the helpers here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .registry import LayerType

Shape = tuple[int, ...]


class ShapeProblem(Exception):
    """A layer that cannot take its input shape; ``param`` names the parameter at fault."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def show_shape(shape: Shape) -> str:
    """``"(25, 25, 1)"``; a one-axis shape as ``"(126,)"``."""
    return str(tuple(shape))


def _size_word(spatial: Shape) -> str:
    return "x".join(str(d) for d in spatial) if len(spatial) > 1 else f"{spatial[0]}-long"


def _show(values: tuple[int, ...]) -> str:
    return str(values[0]) if len(set(values)) == 1 else "x".join(str(v) for v in values)


def _rank_hint(t: LayerType, shape: Shape) -> str:
    want = {2: "(steps, channels)", 3: "(height, width, channels)"}[t.input_rank or 2]
    hint = f"needs a {t.input_rank}-D input {want} per sample but gets {show_shape(shape)}"
    if t.input_rank is not None and len(shape) == t.input_rank - 1:
        hint += f"; use input shape {list(shape) + [1]} or add a Reshape"
    elif t.input_rank is not None and len(shape) > t.input_rank:
        hint += "; add a Reshape, or use the other dimensionality of this layer"
    return hint


def window(
    shape: Shape,
    p: dict[str, Any],
    key: str,
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
) -> Shape:
    """Output spatial size of a convolution or pooling window over ``shape``: ``key`` names
    its size parameter (``kernel_size``, ``pool_size``), ``p["padding"]`` its padding."""
    spatial = shape[:-1]
    size = p[key]
    if max(strides) > 1 and max(dilation) > 1:
        raise ShapeProblem(
            f"strides {_show(strides)} cannot be combined with dilation_rate "
            f"{_show(dilation)}; Keras supports strides > 1 only with dilation_rate 1",
            "dilation_rate",
        )
    if p["padding"] in ("same", "causal"):
        return tuple(math.ceil(n / s) for n, s in zip(spatial, strides, strict=True))
    span = tuple(d * (k - 1) + 1 for k, d in zip(size, dilation, strict=True))
    if any(k > n for k, n in zip(span, spatial, strict=True)):
        what = f"{key} {_show(size)}"
        if max(dilation) > 1:
            what += f" with dilation_rate {_show(dilation)} spans {_show(span)} and"
        raise ShapeProblem(
            f"{what} is larger than its {_size_word(spatial)} input (padding 'valid'); "
            "use padding 'same', a smaller window, or less pooling before it",
            key,
        )
    return tuple((n - k) // s + 1 for n, k, s in zip(spatial, span, strides, strict=True))


def output_shape(t: LayerType, p: dict[str, Any], shape: Shape) -> Shape:
    """The per-sample output shape of a non-residual layer of type ``t`` on ``shape``."""
    if t.input_rank is not None and len(shape) != t.input_rank:
        raise ShapeProblem(_rank_hint(t, shape))
    return t.family.output_shape(t, p, shape)


def reshape_shape(target: Shape, shape: Shape) -> Shape:
    """Reshape's output: ``target`` with its -1 inferred from the ``shape`` it gets."""
    total = math.prod(shape)
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        if total % known:
            raise ShapeProblem(
                f"target_shape {list(target)} cannot hold the {total} values of "
                f"its input {show_shape(shape)} ({total} is not a multiple of {known})",
                "target_shape",
            )
        return tuple(total // known if d == -1 else d for d in target)
    if known != total:
        raise ShapeProblem(
            f"target_shape {list(target)} holds {known} values but its input "
            f"{show_shape(shape)} has {total}",
            "target_shape",
        )
    return tuple(target)


def param_counts(t: LayerType, p: dict[str, Any], shape: Shape) -> tuple[int, int]:
    """(trainable, non-trainable) weights of a non-residual layer on input ``shape``."""
    return t.family.param_count(t, p, shape)


@dataclass(frozen=True)
class Projection:
    """The shortcut of a residual block whose inner layers change the shape.

    ``kind`` is ``conv1d``/``conv2d`` (kernel 1, ``strides``, padding 'same') or ``dense``.
    """

    kind: str
    filters: int
    strides: tuple[int, ...]
    params: int


def residual_projection(in_shape: Shape, out_shape: Shape) -> Projection | None:
    """None when the block keeps the shape; else the projection that makes ``x + f(x)`` fit."""
    if in_shape == out_shape:
        return None
    if len(in_shape) != len(out_shape) or len(in_shape) > 3:
        raise ShapeProblem(
            f"its layers turn {show_shape(in_shape)} into {show_shape(out_shape)}; "
            "a residual block must keep the number of axes"
        )
    filters = out_shape[-1]
    params = in_shape[-1] * filters + filters
    if len(in_shape) == 1:
        return Projection("dense", filters, (), params)
    strides = []
    for n, m in zip(in_shape[:-1], out_shape[:-1], strict=True):
        s = max(1, math.ceil(n / m))
        if math.ceil(n / s) != m:
            raise ShapeProblem(
                f"its layers turn {show_shape(in_shape)} into {show_shape(out_shape)}; "
                "no strided 1x1 projection maps one onto the other (use padding 'same' "
                "inside the block, or move pooling out of it)"
            )
        strides.append(s)
    kind = "conv1d" if len(in_shape) == 2 else "conv2d"
    return Projection(kind, filters, tuple(strides), params)
