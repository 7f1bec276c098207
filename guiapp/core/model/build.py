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
from typing import TYPE_CHECKING, Any

from .families import layer_seed as layer_seed  # the seeds' one definition
from .families import seeded_initializer
from .registry import LAYER_TYPES
from .resolve import Node, ResolvedSpec
from .validate import check_spec

if TYPE_CHECKING:
    import keras


def _keras() -> Any:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    return keras


def _layer(k: Any, node: Node, seed: int, dtype: str | None) -> Any:
    """The Keras layer for a non-residual node: its family builds it."""
    kw: dict[str, Any] = {"name": node.name}
    if dtype is not None:
        kw["dtype"] = dtype
    t = LAYER_TYPES[node.type]
    return t.family.build(k, t, node.params, lambda part: layer_seed(seed, node.index, part), **kw)


def _residual(k: Any, node: Node, x: Any, seed: int, dtype: str | None) -> Any:
    y = x
    for child in node.children:
        y = _apply(k, child, y, seed, None)
    shortcut = x
    proj = node.projection
    if proj is not None:
        init = seeded_initializer(k, "glorot_uniform", layer_seed(seed, node.index, "projection"))
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
    if LAYER_TYPES[node.type].family.block:
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
