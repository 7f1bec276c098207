"""``validate``: every problem of a spec, alone or against a dataset, before any training.

Pure Python (the GUI process calls it on each edit): no TensorFlow, no Keras.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .errors import ModelSpecError, SpecError, layer_path
from .resolve import Node, ResolvedSpec, is_integer_dtype, resolve
from .shapes import Shape, show_shape

# Token ids an integer dtype is expected to hold when the data's largest id is not known.
# uint16 k-mer ids are hashed modulo 65521, the largest prime below 2**16 (see
# guiapp.core.generate.kmer1d), so uint16 data needs input_dim >= 65521.
DEFAULT_TOKEN_LIMIT = {"uint8": 256, "int8": 128, "uint16": 65521, "int16": 32768}
_INT_MAX = {
    "uint8": 2**8 - 1,
    "int8": 2**7 - 1,
    "uint16": 2**16 - 1,
    "int16": 2**15 - 1,
    "uint32": 2**32 - 1,
    "int32": 2**31 - 1,
    "int64": 2**63 - 1,
    "uint64": 2**64 - 1,
}
_INT_MIN = {"int8": -(2**7), "int16": -(2**15), "int32": -(2**31), "int64": -(2**63)}
_PASS_THROUGH = ("Dropout", "Flatten", "Reshape")
#: Keras builds and saves a model by recursion, a few frames per layer: far beyond this it
#: runs out of Python's stack. A model this deep is a mistake (the largest templates have 20).
MAX_LAYERS = 500


def input_fits(spec_shape: Sequence[int], data_shape: Sequence[int]) -> bool:
    """Whether samples of ``data_shape`` can feed an input of ``spec_shape``: the same
    shape, or the same with a trailing channel axis of 1 added or dropped."""
    a, b = tuple(spec_shape), tuple(data_shape)
    return a == b or a == (*b, 1) or (*a, 1) == b


def _err(where: str, problem: str, path: str, **kw: Any) -> SpecError:
    return SpecError(where, problem, path, **kw)


def _node_err(node: Node, problem: str, param: str | None, severity: str = "error") -> SpecError:
    path = layer_path(node.index) + (f".{param}" if param else "")
    return SpecError(
        node.label,
        problem,
        path,
        node.index,
        node.type,
        param,
        "warning" if severity == "warning" else "error",
    )


def _dataset_errors(
    r: ResolvedSpec,
    data_shape: Shape | None,
    data_dtype: str | None,
    input_max: int | None,
) -> list[SpecError]:
    out: list[SpecError] = []
    if (
        data_shape is not None
        and r.input_shape is not None
        and not input_fits(r.input_shape, data_shape)
    ):
        fits = [list(data_shape)]
        if data_shape[-1] == 1:
            fits.append(list(data_shape[:-1]))
        elif len(data_shape) <= 2:
            fits.append([*data_shape, 1])
        out.append(
            _err(
                "input",
                f"shape {list(r.input_shape)} does not fit the dataset's samples of shape "
                f"{show_shape(data_shape)}; a {show_shape(data_shape)} dataset fits input "
                f"{' or '.join(str(f) for f in fits)}",
                "input.shape",
                param="shape",
            )
        )
    if data_dtype is not None and is_integer_dtype(r.input_dtype):
        if not is_integer_dtype(data_dtype):
            out.append(
                _err(
                    "input",
                    f"dtype {r.input_dtype!r} is integer but the dataset holds {data_dtype} "
                    "values; token ids must be stored as integers (or use dtype 'float32' "
                    "without an Embedding)",
                    "input.dtype",
                    param="dtype",
                )
            )
        elif _INT_MAX.get(data_dtype, 0) > _INT_MAX[r.input_dtype] or _INT_MIN.get(
            data_dtype, 0
        ) < _INT_MIN.get(r.input_dtype, 0):
            out.append(
                _err(
                    "input",
                    f"dtype {r.input_dtype!r} cannot hold every {data_dtype} value of the "
                    f"dataset; use {data_dtype!r}"
                    + (" or 'int32'" if _INT_MAX[data_dtype] < 2**31 else ""),
                    "input.dtype",
                    param="dtype",
                )
            )
    ids_dtype = (
        data_dtype if data_dtype is not None and is_integer_dtype(data_dtype) else r.input_dtype
    )
    for node in r.walk():
        if node.type != "Embedding" or not is_integer_dtype(node.in_dtype):
            continue
        dim = node.params["input_dim"]
        if input_max is not None and dim <= input_max:
            out.append(
                _node_err(
                    node,
                    f"input_dim {dim} is too small for the data's token ids up to {input_max}; "
                    f"it must be at least {input_max + 1}",
                    "input_dim",
                )
            )
        elif input_max is None and dim < DEFAULT_TOKEN_LIMIT.get(ids_dtype, 0):
            need = DEFAULT_TOKEN_LIMIT[ids_dtype]
            out.append(
                _node_err(
                    node,
                    f"input_dim {dim} covers token ids 0..{dim - 1}, but {ids_dtype} data "
                    f"usually holds ids up to {need - 1} (uint16 k-mers need input_dim >= "
                    f"65521); larger ids fail in training. Fine only if every id is below {dim}",
                    "input_dim",
                    "warning",
                )
            )
    return out


def _final_node(r: ResolvedSpec) -> Node | None:
    for node in reversed(r.nodes):
        if node.type not in _PASS_THROUGH:
            return node
    return None


def _output_errors(r: ResolvedSpec, num_classes: int | None) -> list[SpecError]:
    if r.output_shape is None or not r.nodes:
        return []
    last, out = r.nodes[-1], r.output_shape
    if len(out) != 1:
        return [
            _node_err(
                last,
                f"the model's output has shape {show_shape(out)} per sample; a classifier "
                "needs one vector per sample: add Flatten or GlobalAveragePooling before the "
                "last Dense",
                None,
            )
        ]
    units = out[0]
    final = _final_node(r)
    unit_param = "units" if final is not None and final.type == "Dense" else None
    loss, from_logits = r.training["loss"], r.training["from_logits"]
    errs: list[SpecError] = []
    target = final or last
    if loss == "binary_crossentropy":
        if units != 1:
            errs.append(
                _node_err(
                    target,
                    f"units {units}: loss 'binary_crossentropy' needs 1 output unit (sigmoid)",
                    unit_param,
                )
            )
        if num_classes is not None and num_classes != 2:
            errs.append(
                _err(
                    "loss",
                    f"'binary_crossentropy' needs 2 classes but the dataset has "
                    f"{num_classes}; use 'sparse_categorical_crossentropy'",
                    "loss",
                )
            )
        want_act = "sigmoid"
    else:
        if num_classes is not None and units != num_classes:
            what = f"units {units}" if unit_param else f"the model's {units} outputs"
            errs.append(
                _node_err(
                    target,
                    f"{what} {'does' if unit_param else 'do'} not match the dataset's {num_classes} classes; the last layer "
                    f"needs {num_classes} units (one per class)",
                    unit_param,
                )
            )
        elif units < 2:
            errs.append(
                _node_err(
                    target,
                    f"units {units}: 'sparse_categorical_crossentropy' needs one "
                    "unit per class (>= 2); for 2 classes with 1 unit use "
                    "'binary_crossentropy'",
                    unit_param,
                )
            )
        want_act = "softmax"
    act = final.params.get("activation", "linear") if final is not None else "linear"
    if not errs and final is not None:
        if from_logits and act == want_act:
            errs.append(
                _node_err(
                    final,
                    f"activation {act!r} with from_logits true applies {act} twice; use 'linear'",
                    "activation",
                    "warning",
                )
            )
        elif not from_logits and act != want_act:
            errs.append(
                _node_err(
                    final,
                    f"activation {act!r} does not give probabilities for {loss!r}; use "
                    f"{want_act!r}, or set from_logits true",
                    "activation",
                    "warning",
                )
            )
    return errs


def _layer_count(nodes: list[Node]) -> int:
    return sum(1 + _layer_count(n.children) for n in nodes)


def memory_bytes() -> int | None:
    """This machine's physical memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _size_errors(r: ResolvedSpec) -> list[SpecError]:
    """A model too deep for Keras to build, or whose parameters cannot fit in memory:
    estimated from the resolved shapes before anything is built."""
    from ..units import human_bytes
    from .summary import summarize_resolved

    layers = _layer_count(r.nodes)
    if layers > MAX_LAYERS:
        return [_err("layers", f"{layers:,} layers, more than the {MAX_LAYERS} a model may have "
                     "(use fewer layers)", "layers")]  # fmt: skip
    if r.errors or r.input_shape is None:
        return []
    s = summarize_resolved(r)
    need = 2 * s.weight_bytes + s.optimizer_bytes  # weights, their gradients, optimizer slots
    have = memory_bytes()
    if have is None or need <= have:
        return []
    return [
        _err(
            "model",
            f"{s.total_params:,} parameters need about {human_bytes(need)} for weights, "
            f"gradients and optimizer state, more than this machine's {human_bytes(have)} of "
            "memory (use fewer units, filters or layers)",
            "layers",
        )
    ]


def _problems(
    r: ResolvedSpec,
    input_shape: Sequence[int] | None,
    num_classes: int | None,
    input_dtype: str | None,
    input_max: int | None,
) -> list[SpecError]:
    data_shape = tuple(int(d) for d in input_shape) if input_shape is not None else None
    found = [
        *r.errors,
        *_dataset_errors(r, data_shape, input_dtype, input_max),
        *_output_errors(r, num_classes),
    ]
    errors = any(e.severity == "error" for e in found)
    return found if errors else found + _size_errors(r)


def validate(
    spec: Any,
    *,
    input_shape: Sequence[int] | None = None,
    num_classes: int | None = None,
    input_dtype: str | None = None,
    input_max: int | None = None,
    warnings: bool = False,
) -> list[SpecError]:
    """Every error of ``spec``, optionally checked against a dataset.

    ``input_shape``, ``num_classes`` and ``input_dtype`` describe the dataset's samples;
    ``input_max`` is its largest token id when known (Embedding ``input_dim`` must exceed
    it). An empty list means the spec builds and trains on that data. With ``warnings``
    the list also holds, after the errors, problems that do not stop training
    (``severity == "warning"``: an output activation that gives no probabilities, an
    Embedding that may be too small for the dtype's ids).
    """
    found = _problems(resolve(spec), input_shape, num_classes, input_dtype, input_max)
    errors = [e for e in found if e.severity == "error"]
    return errors + [e for e in found if e.severity == "warning"] if warnings else errors


def check_spec(spec: Any, *, source: str = "model spec") -> ResolvedSpec:
    """Like :func:`validate` without a dataset, but raise :class:`ModelSpecError` (a
    UserError, exit code 2) listing every error; warnings do not raise. Returns the
    resolved spec (checking it against a dataset is :func:`validate`'s, before a run)."""
    r = resolve(spec)
    errors = [e for e in _problems(r, None, None, None, None) if e.severity == "error"]
    if errors:
        raise ModelSpecError(errors, source)
    return r
