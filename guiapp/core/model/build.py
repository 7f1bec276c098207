"""Build a checked spec into a Keras 3 functional model; make its loss, optimizer and metrics.

Keras (TensorFlow backend) is imported inside the functions only: importing this module
costs nothing, so the GUI can import the package. Layers are named after their place in
the spec (``l03_conv2d``; ``l02_01_dense`` inside the block at layer 2; the block's add is
``l02_residual``). Every initializer and Dropout gets its own seed derived from the
spec's ``seed``, so one spec always builds the same initial weights, whatever the global
random state.
"""

from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING, Any

from .resolve import Node, ResolvedSpec
from .validate import check_spec

if TYPE_CHECKING:
    import keras


def _keras() -> Any:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    return keras


def layer_seed(spec_seed: int, index: tuple[int, ...], part: str = "") -> int:
    """A seed for one layer (and one part of it), stable across runs and processes."""
    key = f"{spec_seed}:{'.'.join(map(str, index))}:{part}".encode()
    return zlib.crc32(key) & 0x7FFFFFFF


def _init(k: Any, name: str, seed: int) -> Any:
    """Keras's initializer of that name with the layer's seed; those that draw nothing
    (zeros, ones, constant, identity) take none. Aliases keep Keras's defaults
    (``"normal"``: RandomNormal, stddev 0.05)."""
    init = k.initializers.get(name)
    if "seed" not in init.get_config():
        return init
    return init.__class__.from_config({**init.get_config(), "seed": seed})


def _layer(k: Any, node: Node, seed: int, dtype: str | None) -> Any:
    """The Keras layer for a non-residual node."""
    p, L = node.params, k.layers
    kw: dict[str, Any] = {"name": node.name}
    if dtype is not None:
        kw["dtype"] = dtype
    cls = getattr(L, node.type)
    if node.type.startswith("Conv"):
        return cls(
            p["filters"], p["kernel_size"], strides=p["strides"], padding=p["padding"],
            dilation_rate=p["dilation_rate"], activation=p["activation"], use_bias=p["use_bias"],
            kernel_initializer=_init(k, p["kernel_initializer"], layer_seed(seed, node.index)),
            **kw,
        )  # fmt: skip
    if node.type.startswith("SeparableConv"):
        return cls(
            p["filters"], p["kernel_size"], strides=p["strides"], padding=p["padding"],
            dilation_rate=p["dilation_rate"], depth_multiplier=p["depth_multiplier"],
            activation=p["activation"], use_bias=p["use_bias"],
            depthwise_initializer=_init(
                k, p["kernel_initializer"], layer_seed(seed, node.index, "depthwise")
            ),
            pointwise_initializer=_init(
                k, p["kernel_initializer"], layer_seed(seed, node.index, "pointwise")
            ),
            **kw,
        )  # fmt: skip
    if "Pooling" in node.type and not node.type.startswith("Global"):
        return cls(pool_size=p["pool_size"], strides=p["strides"], padding=p["padding"], **kw)
    if node.type.startswith("Global"):
        return cls(keepdims=p["keepdims"], **kw)
    if node.type == "Dense":
        return cls(
            p["units"], activation=p["activation"], use_bias=p["use_bias"],
            kernel_initializer=_init(k, p["kernel_initializer"], layer_seed(seed, node.index)),
            **kw,
        )  # fmt: skip
    if node.type == "Dropout":
        return cls(p["rate"], seed=layer_seed(seed, node.index), **kw)
    if node.type == "BatchNormalization":
        return cls(
            momentum=p["momentum"], epsilon=p["epsilon"], center=p["center"], scale=p["scale"], **kw
        )
    if node.type == "LayerNormalization":
        return cls(epsilon=p["epsilon"], center=p["center"], scale=p["scale"], **kw)
    if node.type == "Embedding":
        init = k.initializers.RandomUniform(-0.05, 0.05, seed=layer_seed(seed, node.index))
        return cls(p["input_dim"], p["output_dim"], embeddings_initializer=init, **kw)
    if node.type == "Flatten":
        return cls(**kw)
    if node.type == "Reshape":
        return cls(p["target_shape"], **kw)
    if node.type == "Activation":
        return cls(p["activation"], **kw)
    raise AssertionError(node.type)  # pragma: no cover


def _residual(k: Any, node: Node, x: Any, seed: int, dtype: str | None) -> Any:
    y = x
    for child in node.children:
        y = _apply(k, child, y, seed, None)
    shortcut = x
    proj = node.projection
    if proj is not None:
        init = _init(k, "glorot_uniform", layer_seed(seed, node.index, "projection"))
        name = f"{node.name}_projection"
        if proj.kind == "dense":
            shortcut = k.layers.Dense(proj.filters, kernel_initializer=init, name=name)(x)
        else:
            cls = k.layers.Conv1D if proj.kind == "conv1d" else k.layers.Conv2D
            shortcut = cls(
                proj.filters, 1, strides=proj.strides, padding="same", kernel_initializer=init,
                name=name,
            )(x)  # fmt: skip
    act = node.params["activation"]
    add_kw: dict[str, Any] = {"dtype": dtype} if dtype is not None and act == "linear" else {}
    out = k.layers.Add(name=node.name, **add_kw)([shortcut, y])
    if act != "linear":
        act_kw: dict[str, Any] = {"dtype": dtype} if dtype is not None else {}
        out = k.layers.Activation(act, name=f"{node.name}_activation", **act_kw)(out)
    return out


def _apply(k: Any, node: Node, x: Any, seed: int, dtype: str | None) -> Any:
    if node.type == "Residual":
        return _residual(k, node, x, seed, dtype)
    return _layer(k, node, seed, dtype)(x)


def build_resolved(r: ResolvedSpec) -> keras.Model:
    """Build a spec that ``check_spec`` accepted (see :func:`build_model`)."""
    k = _keras()
    assert r.input_shape is not None
    previous = k.mixed_precision.global_policy()
    k.mixed_precision.set_global_policy("mixed_float16" if r.mixed_precision else "float32")
    try:
        inputs = k.Input(shape=r.input_shape, dtype=r.input_dtype, name="input")
        x = inputs
        for i, node in enumerate(r.nodes):
            last = i == len(r.nodes) - 1
            x = _apply(k, node, x, r.seed, "float32" if last and r.mixed_precision else None)
        name = "".join(c if c.isalnum() or c in "_-." else "_" for c in r.name) or "model"
        return k.Model(inputs, x, name=name)
    finally:
        k.mixed_precision.set_global_policy(previous)


def build_model(spec: Any) -> keras.Model:
    """Check ``spec`` (``ModelSpecError`` on any problem) and build its functional model.

    With ``"mixed_precision": true`` the layers compute in float16 with float32 weights
    (policy ``mixed_float16``) and the last layer runs in float32, so outputs and the
    loss stay float32. The global policy is set while the layers are made and then put
    back, so building one spec never changes the next.
    """
    return build_resolved(check_spec(spec))
