"""Walk a spec once: check every key and parameter, infer shapes and dtypes layer by layer.

``resolve(spec)`` never raises on bad input: it returns a :class:`ResolvedSpec` whose
``errors`` list every problem, and whose ``nodes`` hold each layer with its parameters
(defaults filled), input/output shape and dtype, and weight counts. ``validate``,
``summarize`` and ``build_model`` all read this one walk. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import SpecError, layer_label, layer_path
from .param_types import Param, check_params, did_you_mean, type_word
from .registry import LAYER_TYPES
from .shapes import (
    Projection,
    Shape,
    ShapeProblem,
    output_shape,
    param_counts,
    residual_projection,
)
from .training_options import check_training

INPUT_DTYPES = (
    "float32",
    "float16",
    "float64",
    "uint8",
    "int8",
    "uint16",
    "int16",
    "uint32",
    "int32",
    "int64",
)
SPEC_KEYS = (
    "name",
    "description",
    "version",
    "input",
    "layers",
    "loss",
    "from_logits",
    "optimizer",
    "metrics",
    "mixed_precision",
    "seed",
)
_SHAPE = Param("shape", "shape", None, "shape of one sample", True)
_DTYPE = Param("dtype", "choice", "float32", "dtype of the model's input", choices=INPUT_DTYPES)
_SEED = Param("seed", "int", 0, "initial weights and dropout", minimum=0, maximum=2**31 - 1)


def is_integer_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


@dataclass
class Node:
    """One layer of the spec after the walk. ``in_shape``/``out_shape`` are None after a
    layer whose shape could not be inferred. ``trainable``/``non_trainable`` count this
    layer's own weights (for a residual block: its projection only)."""

    index: tuple[int, ...]
    type: str
    params: dict[str, Any]
    in_shape: Shape | None = None
    out_shape: Shape | None = None
    in_dtype: str = "float32"
    out_dtype: str = "float32"
    trainable: int = 0
    non_trainable: int = 0
    children: list[Node] = field(default_factory=list)
    projection: Projection | None = None

    @property
    def label(self) -> str:
        return layer_label(self.index, self.type)

    @property
    def name(self) -> str:
        """The Keras layer name ``build_model`` gives this layer: ``l03_conv2d``, ``l02_01_dense``."""
        return "l" + "_".join(f"{i:02d}" for i in self.index) + "_" + self.type.lower()


@dataclass
class ResolvedSpec:
    name: str
    input_shape: Shape | None
    input_dtype: str
    nodes: list[Node]
    training: dict[str, Any]
    mixed_precision: bool
    seed: int
    errors: list[SpecError]
    output_shape: Shape | None
    output_dtype: str

    @property
    def compute_dtype(self) -> str:
        return "float16" if self.mixed_precision else "float32"

    def walk(self) -> list[Node]:
        """Every node, depth first (a residual block before its layers)."""
        out: list[Node] = []

        def visit(nodes: list[Node]) -> None:
            for n in nodes:
                out.append(n)
                visit(n.children)

        visit(self.nodes)
        return out


class _Walker:
    def __init__(self, compute_dtype: str, errors: list[SpecError]) -> None:
        self.compute = compute_dtype
        self.errors = errors

    def error(self, index: tuple[int, ...], kind: str, problem: str, param: str | None) -> None:
        path = layer_path(index) + (f".{param}" if param else "")
        self.errors.append(SpecError(layer_label(index, kind), problem, path, index, kind, param))

    def layers(
        self, items: Any, prefix: tuple[int, ...], shape: Shape | None, dtype: str
    ) -> tuple[list[Node], Shape | None, str]:
        nodes: list[Node] = []
        for i, item in enumerate(items):
            node = self.layer(item, (*prefix, i), shape, dtype)
            if node is None:
                # unknown from here on; keep integer dtypes only across layers that pass them
                kind = item.get("type") if isinstance(item, dict) else None
                t = LAYER_TYPES.get(kind) if isinstance(kind, str) else None
                shape = None
                if t is None or not t.family.keeps_dtype:
                    dtype = self.compute
                continue
            nodes.append(node)
            shape, dtype = node.out_shape, node.out_dtype
        return nodes, shape, dtype

    def layer(
        self, item: Any, index: tuple[int, ...], shape: Shape | None, dtype: str
    ) -> Node | None:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            got = type_word(item) if not isinstance(item, dict) else "an object without a type"
            self.error(
                index, "", f'must be an object like {{"type": "Dense", ...}}, not {got}', None
            )
            return None
        kind = item["type"]
        t = LAYER_TYPES.get(kind)
        if t is None:
            hint = did_you_mean(kind, LAYER_TYPES)
            if kind.lower() in ("input", "inputlayer"):
                hint = '; the input is set by the spec\'s "input" field, not a layer'
            self.error(index, kind, f"unknown layer type {kind!r}{hint}", "type")
            return None
        params, problems = check_params(t.params, item, kind)
        for param, msg in problems:
            self.error(index, kind, msg, param)
        node = Node(index, kind, {k: v for k, v in params.items() if k != "layers"})
        node.in_shape, node.in_dtype = shape, dtype
        if problems:
            if t.family.block and isinstance(params["layers"], list):
                self.layers(params["layers"], index, None, self.compute)
            return None
        if t.family.block:
            return self.residual(node, params["layers"])
        integer = is_integer_dtype(dtype)
        if integer and t.family.integers == "refuse":
            self.error(
                index,
                kind,
                f"gets integer ({dtype}) input, but only Embedding takes integer token ids; "
                "set the input dtype to float32 (integer data is converted on the way in) "
                "or start with an Embedding layer",
                None,
            )
            return None
        if t.family.integers == "need" and not integer:
            self.error(
                index,
                kind,
                f"needs integer token ids but its input is {dtype}; set the input dtype "
                "to the data's integer type (uint16 k-mers: 'uint16' or 'int32')",
                None,
            )
            return None
        node.out_dtype = dtype if t.family.keeps_dtype else self.compute
        if shape is None:
            return node
        try:
            node.out_shape = output_shape(t, params, shape)
        except ShapeProblem as exc:
            self.error(index, kind, str(exc), exc.param)
            return None
        node.trainable, node.non_trainable = param_counts(t, params, shape)
        return node

    def residual(self, node: Node, items: list[Any]) -> Node | None:
        shape, dtype = node.in_shape, node.in_dtype
        if is_integer_dtype(dtype):
            self.error(node.index, node.type, f"gets integer ({dtype}) input; add an Embedding "
                       "before the block", None)  # fmt: skip
            return None
        children, out, out_dtype = self.layers(items, node.index, shape, dtype)
        node.children = children
        node.out_dtype = self.compute
        if shape is None:
            return node
        if out is None or len(children) != len(items):
            return None
        try:
            node.projection = residual_projection(shape, out)
        except ShapeProblem as exc:
            self.error(node.index, node.type, str(exc), "layers")
            return None
        node.out_shape = out
        node.trainable = node.projection.params if node.projection else 0
        return node


def resolve(spec: Any) -> ResolvedSpec:
    """Check ``spec`` and infer every layer's shape; problems go to ``.errors``."""
    errors: list[SpecError] = []
    if not isinstance(spec, dict):
        errors.append(SpecError("spec", f"must be a JSON object, not {type_word(spec)}"))
        spec = {}
    for key in spec:
        if key not in SPEC_KEYS:
            errors.append(
                SpecError(
                    "spec",
                    f"unknown key {key!r}{did_you_mean(key, SPEC_KEYS)} "
                    f"(a spec has {', '.join(SPEC_KEYS)})",
                    key,
                )
            )
    name = spec.get("name", "model")
    if not isinstance(name, str):
        errors.append(SpecError("name", f"must be a string, not {type_word(name)}", "name"))
        name = "model"
    mixed = spec.get("mixed_precision", False)
    if not isinstance(mixed, bool):
        errors.append(SpecError("mixed_precision", "must be true or false", "mixed_precision"))
        mixed = False
    seed, seed_problems = check_params((_SEED,), {"seed": spec.get("seed", 0)}, "spec", ())
    for _, msg in seed_problems:
        errors.append(SpecError("spec", msg, "seed", param="seed"))

    shape: Shape | None = None
    dtype = "float32"
    inp = spec.get("input")
    if not isinstance(inp, dict):
        errors.append(
            SpecError("input", 'is required: {"shape": [25, 25, 1], "dtype": "float32"}', "input")
        )
    else:
        values, problems = check_params((_SHAPE, _DTYPE), inp, "input", ())
        for param, msg in problems:
            errors.append(SpecError("input", msg, f"input.{param}", param=param))
        if any(d == -1 for d in values["shape"] or ()):
            errors.append(SpecError("input", "shape may not hold -1", "input.shape", param="shape"))
        elif not any(p == "shape" for p, _ in problems):
            shape = values["shape"]
        dtype = values["dtype"]

    walker = _Walker("float16" if mixed else "float32", errors)
    layers = spec.get("layers")
    nodes: list[Node] = []
    out: Shape | None = None
    out_dtype = dtype
    if not isinstance(layers, list) or not layers:
        errors.append(SpecError("layers", "must be a non-empty list of layers", "layers"))
    else:
        nodes, out, out_dtype = walker.layers(layers, (), shape, dtype)
        if len(nodes) != len(layers):
            out = None
    training = check_training(spec, errors)
    if mixed:
        out_dtype = "float32"
        if nodes:
            nodes[-1].out_dtype = "float32"
    return ResolvedSpec(
        name, shape, dtype, nodes, training, mixed, seed["seed"], errors, out, out_dtype
    )
