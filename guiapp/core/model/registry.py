"""The layer types a model spec may use, registered by name with their family: the one
table of them (``families.py`` says what each family's layers are and do).

Every check (``validate``), count (``summarize``), build (``build_model``) and editor
(``layer_params``) reads this table, so a parameter is declared once. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import families as fam
from .families import LayerFamily
from .param_tables import ACTIVATIONS as ACTIVATIONS  # the editors' and tests' names
from .param_tables import INITIALIZERS as INITIALIZERS
from .param_types import Param, did_you_mean


@dataclass(frozen=True)
class LayerType:
    """A layer type: its ``family`` (``families.py``: its shape, weights and Keras layer),
    the rank of one sample it accepts (``spatial`` dims + channels for convolutions and
    pooling; None: any rank >= 1), its parameters (the family's for ``spatial``) and a
    one-line description."""

    name: str
    family: LayerFamily
    params: tuple[Param, ...]
    doc: str
    spatial: int | None = None

    @property
    def input_rank(self) -> int | None:
        return None if self.spatial is None else self.spatial + 1

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def _type(name: str, family: LayerFamily, doc: str, spatial: int | None = None) -> LayerType:
    return LayerType(name, family, family.params(spatial), doc, spatial)


_TYPES: list[LayerType] = []
for _d in (1, 2):
    _TYPES += [
        _type(f"Conv{_d}D", fam.CONV, f"{_d}D convolution", _d),
        _type(f"SeparableConv{_d}D", fam.SEPARABLE, f"{_d}D depthwise-separable convolution", _d),
        _type(f"MaxPooling{_d}D", fam.POOL, f"{_d}D max pooling", _d),
        _type(f"AveragePooling{_d}D", fam.POOL, f"{_d}D average pooling", _d),
        _type(
            f"GlobalMaxPooling{_d}D", fam.GLOBAL_POOL, "maximum over all positions per channel", _d
        ),
        _type(
            f"GlobalAveragePooling{_d}D", fam.GLOBAL_POOL, "mean over all positions per channel", _d
        ),
    ]
_TYPES += [
    _type("Dense", fam.DENSE, "fully connected layer on the last axis"),
    _type("Dropout", fam.DROPOUT, "randomly zeroes inputs while training"),
    _type("BatchNormalization", fam.BATCH_NORM, "normalises each channel over the batch"),
    _type("LayerNormalization", fam.LAYER_NORM, "normalises each sample's last axis"),
    _type("Embedding", fam.EMBEDDING, "integer token ids -> learned vectors"),
    _type("Flatten", fam.FLATTEN, "one vector per sample"),
    _type("Reshape", fam.RESHAPE, "same values, new shape"),
    _type("Activation", fam.ACTIVATION, "applies an activation function"),
    _type(
        "Residual",
        fam.RESIDUAL,
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
