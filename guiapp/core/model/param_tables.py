"""The parameters of the layer types, declared once (``Param``): the families' tables.

``families.py`` gives each layer family its parameters from here (a convolution's for its
number of spatial axes); the registry, the checks and the editors read them from there.
Pure Python.
"""

from __future__ import annotations

from .param_types import Param

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


def activation(default: str = "linear", required: bool = False) -> Param:
    return Param(
        "activation",
        "choice",
        default,
        "applied to the layer's output",
        required,
        choices=ACTIVATIONS,
    )


USE_BIAS = Param("use_bias", "bool", True, "add a learned bias")
INIT = Param(
    "kernel_initializer", "choice", "glorot_uniform", "initial weights", choices=INITIALIZERS
)
SEPARABLEINIT = Param(
    "kernel_initializer",
    "choice",
    "glorot_uniform",
    "initial depthwise and pointwise weights",
    choices=INITIALIZERS,
)


def conv_params(dims: int, separable: bool) -> tuple[Param, ...]:
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
    out += [activation(), USE_BIAS, SEPARABLEINIT if separable else INIT]
    return tuple(out)


def pool_params(dims: int) -> tuple[Param, ...]:
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


KEEPDIMS = (Param("keepdims", "bool", False, "keep the pooled axes with size 1"),)
NORM = (
    Param("epsilon", "float", 1e-3, "added to the variance", minimum=0.0, exclusive_minimum=True),
    Param("center", "bool", True, "learn an offset (beta)"),
    Param("scale", "bool", True, "learn a scale (gamma)"),
)


DENSE = (Param("units", "int", None, "output size", True, minimum=1), activation(), USE_BIAS, INIT)
DROPOUT = (
    Param(
        "rate",
        "float",
        0.5,
        "fraction of inputs zeroed in training",
        minimum=0.0,
        maximum=1.0,
        exclusive_maximum=True,
    ),
)
BATCH_NORM = (
    Param(
        "momentum",
        "float",
        0.99,
        "of the moving statistics",
        minimum=0.0,
        maximum=1.0,
        exclusive_maximum=True,
    ),
    *NORM,
)
EMBEDDING = (
    Param("input_dim", "int", None, "number of token ids (largest id + 1)", True, minimum=1),
    Param("output_dim", "int", None, "vector size per token", True, minimum=1),
)
RESHAPE = (Param("target_shape", "shape", None, "new shape per sample; one -1 is inferred", True),)
ACTIVATION = (activation(required=True),)
RESIDUAL = (Param("layers", "layers", None, "the block's layers", True), activation())
