"""Validation of offline augmentation specs against the registry: defaults filled in, every
error names op and parameter."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserError
from .registry import OFFLINE, OP_DEFS, Param, ops_that_run

MAX_COPIES = 1000


def _fail(where: str, problem: str) -> UserError:
    return UserError(f"augment spec: {where}: {problem}")


def _value(where: str, key: str, v: Any, rule: Param) -> Any:
    kind, lo, hi = rule.kind, rule.low, rule.high
    if isinstance(kind, tuple):
        if v not in kind:
            raise _fail(
                where, f"parameter '{key}' must be one of {', '.join(map(repr, kind))}, got {v!r}"
            )
        return v
    ok_type = (int, float) if kind == "num" else (int,)
    if isinstance(v, bool) or not isinstance(v, ok_type):
        what = "a number" if kind == "num" else "an integer"
        raise _fail(where, f"parameter '{key}' must be {what}, got {v!r}")
    if not lo <= v <= hi:
        raise _fail(where, f"parameter '{key}' must be in [{lo:g}, {hi:g}], got {v!r}")
    return float(v) if kind == "num" else int(v)


def _fits(where: str, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    op = OP_DEFS[name]
    if op.samples == "2d" and len(shape) not in (2, 3):
        raise _fail(where, f"works on 2D samples (HxW), but samples have shape {shape}")
    if op.square and shape[0] != shape[1]:
        raise _fail(where, f"needs square samples, but they are {shape[0]}x{shape[1]}")
    if op.samples == "float" and dtype.kind != "f":
        raise _fail(where, f"works on float samples, but they are {dtype}")
    if op.samples == "1d" and len(shape) != 1:
        raise _fail(where, f"works on 1D samples (vectors), but samples have shape {shape}")
    if op.integer and dtype.kind not in "iu":
        raise _fail(where, f"works on integer token vectors, but samples are {dtype}")


def _check_op(i: int, op: Any, shape: tuple[int, ...], dtype: np.dtype) -> dict[str, Any]:
    if not isinstance(op, dict) or "op" not in op:
        raise _fail(f"ops[{i}]", 'must be an object like {"op": "flip", ...}')
    name = op["op"]
    known_ops = ops_that_run(OFFLINE)
    if name not in known_ops:
        raise _fail(f"ops[{i}]", f"unknown op {name!r}; known: {', '.join(known_ops)}")
    where = f"ops[{i}] ({name})"
    rules = OP_DEFS[name].params
    unknown = sorted(set(op) - set(rules) - {"op"})
    if unknown:
        known = ", ".join(sorted(rules)) or "none"
        raise _fail(where, f"unknown parameter '{unknown[0]}' (known: {known})")
    _fits(where, name, shape, dtype)
    out: dict[str, Any] = {"op": name}
    for key, rule in rules.items():
        out[key] = _value(where, key, op.get(key, rule.default), rule)
    if name == "scale" and out["low"] > out["high"]:
        raise _fail(
            where, f"parameter 'low' ({out['low']:g}) must not exceed 'high' ({out['high']:g})"
        )
    if name == "cutout" and out["size"] > min(shape[0], shape[1]):
        raise _fail(
            where,
            f"parameter 'size' {out['size']} is larger than the {shape[0]}x{shape[1]} samples",
        )
    if name == "mutate":
        if out["low"] >= out["vocab"]:
            raise _fail(
                where, f"parameter 'low' ({out['low']}) must be below 'vocab' ({out['vocab']})"
            )
        top = np.iinfo(dtype).max
        if out["vocab"] - 1 > top:
            raise _fail(where, f"parameter 'vocab' {out['vocab']} does not fit {dtype} (max {top})")
    if name == "crop_pad":
        if out["min_length"] > shape[0]:
            raise _fail(
                where, f"parameter 'min_length' {out['min_length']} exceeds the length {shape[0]}"
            )
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= out["pad_value"] <= info.max:
                raise _fail(where, f"parameter 'pad_value' {out['pad_value']} does not fit {dtype}")
    return out


def check_spec(spec: Any, shape: tuple[int, ...], dtype: np.dtype) -> dict[str, Any]:
    """The spec with every default filled in, or a ``UserError`` naming the op and parameter."""
    if not isinstance(spec, dict):
        raise _fail("top level", 'must be an object like {"copies": 1, "ops": [...]}')
    unknown = sorted(set(spec) - {"copies", "ops"})
    if unknown:
        raise _fail("top level", f"unknown key '{unknown[0]}' (known: copies, ops)")
    copies = spec.get("copies", 1)
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= MAX_COPIES:
        raise _fail("copies", f"must be an integer in 1..{MAX_COPIES}, got {copies!r}")
    ops = spec.get("ops", [])
    if not isinstance(ops, list):
        raise _fail("ops", "must be a list of op objects")
    return {"copies": copies, "ops": [_check_op(i, op, shape, dtype) for i, op in enumerate(ops)]}
