"""The layer types a model spec may use, each with its parameters: the one table of them.

Every check (``validate``), count (``summarize``), build (``build_model``) and editor
(``layer_params``) reads this table, so a parameter is declared once. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .param_types import Param, did_you_mean

ACTIVATIONS = (
    "linear",
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "selu",
    "gelu",
    "silu",
    "mish",
    "tanh",
    "sigmoid",
    "hard_sigmoid",
    "softplus",
    "softsign",
    "softmax",
    "log_softmax",
)
#: Every weight initializer Keras accepts by name (``keras.initializers.get``), aliases
#: included: the seed's own model says ``"normal"`` (Keras's RandomNormal, stddev 0.05).
#: Not ``identity`` (square 2-D kernels only) nor ``constant`` (needs a value).
INITIALIZERS = (
    "glorot_uniform",
    "glorot_normal",
    "he_uniform",
    "he_normal",
    "lecun_uniform",
    "lecun_normal",
    "normal",
    "random_normal",
    "uniform",
    "random_uniform",
    "truncated_normal",
    "variance_scaling",
    "orthogonal",
    "zeros",
    "zero",
    "ones",
    "one",
)


def _activation(default: str = "linear", required: bool = False) -> Param:
    return Param(
        "activation",
        "choice",
        default,
        "applied to the layer's output",
        required,
        choices=ACTIVATIONS,
    )


_USE_BIAS = Param("use_bias", "bool", True, "add a learned bias")
_INIT = Param(
    "kernel_initializer", "choice", "glorot_uniform", "initial weights", choices=INITIALIZERS
)
_SEPARABLE_INIT = Param(
    "kernel_initializer",
    "choice",
    "glorot_uniform",
    "initial depthwise and pointwise weights",
    choices=INITIALIZERS,
)


def _conv(dims: int, separable: bool) -> tuple[Param, ...]:
    paddings = ("valid", "same", "causal") if dims == 1 and not separable else ("valid", "same")
    out = [
        Param("filters", "int", None, "output channels", True, minimum=1),
        Param("kernel_size", "ints", None, "window size", True, minimum=1, length=dims),
        Param("strides", "ints", (1,) * dims, "step of the window", minimum=1, length=dims),
        Param("padding", "choice", "valid", "'same' keeps the size at stride 1", choices=paddings),
        Param(
            "dilation_rate", "ints", (1,) * dims, "spacing of kernel taps", minimum=1, length=dims
        ),
    ]
    if separable:
        out.append(Param("depth_multiplier", "int", 1, "depthwise outputs per channel", minimum=1))
    out += [_activation(), _USE_BIAS, _SEPARABLE_INIT if separable else _INIT]
    return tuple(out)


def _pool(dims: int) -> tuple[Param, ...]:
    return (
        Param("pool_size", "ints", (2,) * dims, "window size", minimum=1, length=dims),
        Param(
            "strides",
            "ints",
            None,
            "step of the window (null: pool_size)",
            minimum=1,
            length=dims,
            nullable=True,
        ),
        Param("padding", "choice", "valid", "'same' pads the edges", choices=("valid", "same")),
    )


_KEEPDIMS = (Param("keepdims", "bool", False, "keep the pooled axes with size 1"),)
_NORM = (
    Param("epsilon", "float", 1e-3, "added to the variance", minimum=0.0, exclusive_minimum=True),
    Param("center", "bool", True, "learn an offset (beta)"),
    Param("scale", "bool", True, "learn a scale (gamma)"),
)


@dataclass(frozen=True)
class LayerType:
    """A layer type: its ``family`` (how its shape and parameters are computed), the rank
    of one sample it accepts (``spatial`` dims + channels for convolutions and pooling;
    None: any rank >= 1), its parameters and a one-line description."""

    name: str
    family: str
    params: tuple[Param, ...]
    doc: str
    spatial: int | None = None

    @property
    def input_rank(self) -> int | None:
        return None if self.spatial is None else self.spatial + 1

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


_TYPES: list[LayerType] = []
for _d in (1, 2):
    _TYPES += [
        LayerType(f"Conv{_d}D", "conv", _conv(_d, False), f"{_d}D convolution", _d),
        LayerType(
            f"SeparableConv{_d}D",
            "separable",
            _conv(_d, True),
            f"{_d}D depthwise-separable convolution",
            _d,
        ),
        LayerType(f"MaxPooling{_d}D", "pool", _pool(_d), f"{_d}D max pooling", _d),
        LayerType(f"AveragePooling{_d}D", "pool", _pool(_d), f"{_d}D average pooling", _d),
        LayerType(
            f"GlobalMaxPooling{_d}D",
            "global_pool",
            _KEEPDIMS,
            "maximum over all positions per channel",
            _d,
        ),
        LayerType(
            f"GlobalAveragePooling{_d}D",
            "global_pool",
            _KEEPDIMS,
            "mean over all positions per channel",
            _d,
        ),
    ]
_TYPES += [
    LayerType(
        "Dense",
        "dense",
        (
            Param("units", "int", None, "output size", True, minimum=1),
            _activation(),
            _USE_BIAS,
            _INIT,
        ),
        "fully connected layer on the last axis",
    ),
    LayerType(
        "Dropout",
        "same",
        (
            Param(
                "rate",
                "float",
                0.5,
                "fraction of inputs zeroed in training",
                minimum=0.0,
                maximum=1.0,
                exclusive_maximum=True,
            ),
        ),
        "randomly zeroes inputs while training",
    ),
    LayerType(
        "BatchNormalization",
        "batch_norm",
        (
            Param(
                "momentum",
                "float",
                0.99,
                "of the moving statistics",
                minimum=0.0,
                maximum=1.0,
                exclusive_maximum=True,
            ),
            *_NORM,
        ),
        "normalises each channel over the batch",
    ),
    LayerType("LayerNormalization", "layer_norm", _NORM, "normalises each sample's last axis"),
    LayerType(
        "Embedding",
        "embedding",
        (
            Param(
                "input_dim", "int", None, "number of token ids (largest id + 1)", True, minimum=1
            ),
            Param("output_dim", "int", None, "vector size per token", True, minimum=1),
        ),
        "integer token ids -> learned vectors",
    ),
    LayerType("Flatten", "flatten", (), "one vector per sample"),
    LayerType(
        "Reshape",
        "reshape",
        (Param("target_shape", "shape", None, "new shape per sample; one -1 is inferred", True),),
        "same values, new shape",
    ),
    LayerType(
        "Activation", "same", (_activation(required=True),), "applies an activation function"
    ),
    LayerType(
        "Residual",
        "residual",
        (
            Param("layers", "layers", None, "the block's layers", True),
            _activation(),
        ),
        "adds the block's input to its output (1x1 projection when shapes differ)",
    ),
]
LAYER_TYPES: dict[str, LayerType] = {t.name: t for t in _TYPES}


def layer_types() -> list[dict[str, Any]]:
    """Every layer type as plain data: name, doc, input_rank (None: any)."""
    return [
        {"name": t.name, "doc": t.doc, "input_rank": t.input_rank} for t in LAYER_TYPES.values()
    ]


def layer_params(layer_type: str) -> list[dict[str, Any]]:
    """The parameters of ``layer_type`` as plain dicts (see ``Param.to_dict``).

    Raises KeyError with a suggestion for an unknown type.
    """
    t = LAYER_TYPES.get(layer_type)
    if t is None:
        raise KeyError(f"unknown layer type {layer_type!r}{did_you_mean(layer_type, LAYER_TYPES)}")
    return [p.to_dict() for p in t.params]


def default_layer(layer_type: str) -> dict[str, Any]:
    """A layer dict with every parameter at its default (required ones at a usable value)."""
    t = LAYER_TYPES[layer_type]
    out: dict[str, Any] = {"type": layer_type}
    starter = {"filters": 16, "kernel_size": 3, "units": 16, "input_dim": 256, "output_dim": 16}
    for p in t.params:
        value = starter.get(p.name, p.default)
        if p.name == "target_shape":
            value = [-1]
        elif p.name == "layers":
            value = [{"type": "Dense", "units": 16, "activation": "relu"}]
        elif p.name == "activation" and p.required:
            value = "relu"
        out[p.name] = list(value) if isinstance(value, tuple) else value
    return out
