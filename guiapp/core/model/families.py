"""Layer families (issue 29.5): what a kind of layer is, in one object each.

A :class:`LayerFamily` holds everything that differs between kinds of layers: its
parameters (a convolution's for its number of spatial axes), its per-sample output shape,
its weight counts (as ``keras.Model.count_params()`` adds them up), how it treats integer
input, and the Keras layer it builds. The registry (``registry.py``) registers each layer
type by name with its family; ``resolve``, ``shapes`` and ``build`` ask the family instead
of switching on the type's name. Adding a layer type is one family (or one more type of an
existing family) here and one registration line there.

Pure Python: ``build`` receives the ``keras`` module from ``build.py``, which imports it.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from . import param_tables as lp
from .param_types import Param
from .shapes import Shape, reshape_shape, window

if TYPE_CHECKING:
    from .registry import LayerType

Params = dict[str, Any]
#: ``seed(part)``: the seed of one part of the layer being built (``layer_seed``)
Seeds = Callable[[str], int]


def layer_seed(spec_seed: int, index: tuple[int, ...], part: str = "") -> int:
    """A seed for one layer (and one part of it), stable across runs and processes."""
    key = f"{spec_seed}:{'.'.join(map(str, index))}:{part}".encode()
    return zlib.crc32(key) & 0x7FFFFFFF


def seeded_initializer(k: Any, name: str, seed: int) -> Any:
    """Keras's initializer of that name with the layer's seed; those that draw nothing
    (zeros, ones, constant, identity) take none. Aliases keep Keras's defaults
    (``"normal"``: RandomNormal, stddev 0.05)."""
    init = k.initializers.get(name)
    if "seed" not in init.get_config():
        return init
    return init.__class__.from_config({**init.get_config(), "seed": seed})


def _no_weights(t: LayerType, p: Params, shape: Shape) -> tuple[int, int]:
    return 0, 0


def _same_shape(t: LayerType, p: Params, shape: Shape) -> Shape:
    return shape


def _by_its_layers(*_: Any) -> Any:  # pragma: no cover - resolve and build walk a block
    raise AssertionError("a block's shape, weights and layers are its own layers'")


@dataclass(frozen=True)
class LayerFamily:
    """One kind of layer. ``integers``: how it treats integer (token id) input: ``refuse``
    it, ``pass`` it on unchanged (Flatten, Reshape keep the dtype), or ``need`` it
    (Embedding). A ``block`` (Residual) has layers of its own: its shape and weights are
    theirs plus a projection, built by ``build.py`` around them."""

    name: str
    #: the parameters of a type of this family, by its number of spatial axes
    params: Callable[[int | None], tuple[Param, ...]]
    #: the per-sample output shape on an input of the type's rank
    output_shape: Callable[[LayerType, Params, Shape], Shape] = _same_shape
    #: (trainable, non-trainable) weights on an input shape
    param_count: Callable[[LayerType, Params, Shape], tuple[int, int]] = _no_weights
    #: ``build(keras, type, params, seeds, **name_and_dtype)``: the Keras layer
    build: Callable[..., Any] = _by_its_layers
    integers: Literal["refuse", "pass", "need"] = "refuse"
    block: bool = False

    @property
    def keeps_dtype(self) -> bool:
        """Its output has its input's dtype (else the model's compute dtype)."""
        return self.integers == "pass"


def _fixed(params: tuple[Param, ...]) -> Callable[[int | None], tuple[Param, ...]]:
    return lambda _dims: params


def _dims(dims: int | None) -> int:
    assert dims is not None, "a convolution or pooling type names its spatial axes"
    return dims


# --- convolutions -------------------------------------------------------------------------


def _conv_shape(t: LayerType, p: Params, shape: Shape) -> Shape:
    spatial = window(shape, p, "kernel_size", p["strides"], p["dilation_rate"])
    return (*spatial, p["filters"])


def _conv_count(t: LayerType, p: Params, shape: Shape) -> tuple[int, int]:
    ch = shape[-1] if shape else 0
    bias = p["filters"] if p["use_bias"] else 0
    return math.prod(p["kernel_size"]) * ch * p["filters"] + bias, 0


def _conv_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    return getattr(k.layers, t.name)(
        p["filters"], p["kernel_size"], strides=p["strides"], padding=p["padding"],
        dilation_rate=p["dilation_rate"], activation=p["activation"], use_bias=p["use_bias"],
        kernel_initializer=seeded_initializer(k, p["kernel_initializer"], seed("")),
        **kw,
    )  # fmt: skip


def _separable_count(t: LayerType, p: Params, shape: Shape) -> tuple[int, int]:
    ch = shape[-1] if shape else 0
    mid = ch * p["depth_multiplier"]
    depthwise = math.prod(p["kernel_size"]) * mid
    return depthwise + mid * p["filters"] + (p["filters"] if p["use_bias"] else 0), 0


def _separable_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    return getattr(k.layers, t.name)(
        p["filters"], p["kernel_size"], strides=p["strides"], padding=p["padding"],
        dilation_rate=p["dilation_rate"], depth_multiplier=p["depth_multiplier"],
        activation=p["activation"], use_bias=p["use_bias"],
        depthwise_initializer=seeded_initializer(k, p["kernel_initializer"], seed("depthwise")),
        pointwise_initializer=seeded_initializer(k, p["kernel_initializer"], seed("pointwise")),
        **kw,
    )  # fmt: skip


CONV = LayerFamily(
    "conv", lambda d: lp.conv_params(_dims(d), False), _conv_shape, _conv_count, _conv_build
)
SEPARABLE = LayerFamily(
    "separable",
    lambda d: lp.conv_params(_dims(d), True),
    _conv_shape,
    _separable_count,
    _separable_build,
)

# --- pooling ------------------------------------------------------------------------------


def _pool_shape(t: LayerType, p: Params, shape: Shape) -> Shape:
    size = p["pool_size"]
    strides = p["strides"] if p["strides"] is not None else size
    return (*window(shape, p, "pool_size", strides, (1,) * len(size)), shape[-1])


def _pool_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    cls = getattr(k.layers, t.name)
    return cls(pool_size=p["pool_size"], strides=p["strides"], padding=p["padding"], **kw)


def _global_pool_shape(t: LayerType, p: Params, shape: Shape) -> Shape:
    return (*(1,) * (len(shape) - 1), shape[-1]) if p["keepdims"] else (shape[-1],)


def _global_pool_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    return getattr(k.layers, t.name)(keepdims=p["keepdims"], **kw)


POOL = LayerFamily("pool", lambda d: lp.pool_params(_dims(d)), _pool_shape, build=_pool_build)
GLOBAL_POOL = LayerFamily(
    "global_pool", _fixed(lp.KEEPDIMS), _global_pool_shape, build=_global_pool_build
)

# --- dense, dropout, activation, normalisation --------------------------------------------


def _dense_count(t: LayerType, p: Params, shape: Shape) -> tuple[int, int]:
    ch = shape[-1] if shape else 0
    return ch * p["units"] + (p["units"] if p["use_bias"] else 0), 0


def _dense_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    return k.layers.Dense(
        p["units"], activation=p["activation"], use_bias=p["use_bias"],
        kernel_initializer=seeded_initializer(k, p["kernel_initializer"], seed("")),
        **kw,
    )  # fmt: skip


def _norm_count(non_trainable: int) -> Callable[[LayerType, Params, Shape], tuple[int, int]]:
    """center + scale weights per channel; BatchNormalization's moving mean and variance."""

    def count(t: LayerType, p: Params, shape: Shape) -> tuple[int, int]:
        ch = shape[-1] if shape else 0
        return (int(p["center"]) + int(p["scale"])) * ch, non_trainable * ch

    return count


def _batch_norm_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    return k.layers.BatchNormalization(
        momentum=p["momentum"], epsilon=p["epsilon"], center=p["center"], scale=p["scale"], **kw
    )


def _layer_norm_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    return k.layers.LayerNormalization(
        epsilon=p["epsilon"], center=p["center"], scale=p["scale"], **kw
    )


DENSE = LayerFamily(
    "dense",
    _fixed(lp.DENSE),
    lambda t, p, shape: (*shape[:-1], p["units"]),
    _dense_count,
    _dense_build,
)
DROPOUT = LayerFamily(
    "dropout",
    _fixed(lp.DROPOUT),
    build=lambda k, t, p, seed, **kw: k.layers.Dropout(p["rate"], seed=seed(""), **kw),
)
ACTIVATION = LayerFamily(
    "activation",
    _fixed(lp.ACTIVATION),
    build=lambda k, t, p, seed, **kw: k.layers.Activation(p["activation"], **kw),
)
BATCH_NORM = LayerFamily(
    "batch_norm", _fixed(lp.BATCH_NORM), param_count=_norm_count(2), build=_batch_norm_build
)
LAYER_NORM = LayerFamily(
    "layer_norm", _fixed(lp.NORM), param_count=_norm_count(0), build=_layer_norm_build
)

# --- token ids and reshaping --------------------------------------------------------------


def _embedding_build(k: Any, t: LayerType, p: Params, seed: Seeds, **kw: Any) -> Any:
    init = k.initializers.RandomUniform(-0.05, 0.05, seed=seed(""))
    return k.layers.Embedding(p["input_dim"], p["output_dim"], embeddings_initializer=init, **kw)


EMBEDDING = LayerFamily(
    "embedding",
    _fixed(lp.EMBEDDING),
    lambda t, p, shape: (*shape, p["output_dim"]),
    lambda t, p, shape: (p["input_dim"] * p["output_dim"], 0),
    _embedding_build,
    integers="need",
)
FLATTEN = LayerFamily(
    "flatten",
    _fixed(()),
    lambda t, p, shape: (math.prod(shape),),
    build=lambda k, t, p, seed, **kw: k.layers.Flatten(**kw),
    integers="pass",
)
RESHAPE = LayerFamily(
    "reshape",
    _fixed(lp.RESHAPE),
    lambda t, p, shape: reshape_shape(p["target_shape"], shape),
    build=lambda k, t, p, seed, **kw: k.layers.Reshape(p["target_shape"], **kw),
    integers="pass",
)
RESIDUAL = LayerFamily("residual", _fixed(lp.RESIDUAL), _by_its_layers, block=True)

FAMILIES: dict[str, LayerFamily] = {
    f.name: f
    for f in (
        CONV, SEPARABLE, POOL, GLOBAL_POOL, DENSE, DROPOUT, ACTIVATION, BATCH_NORM, LAYER_NORM,
        EMBEDDING, FLATTEN, RESHAPE, RESIDUAL,
    )
}  # fmt: skip
