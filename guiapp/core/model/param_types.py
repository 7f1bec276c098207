"""Typed parameters of layers, optimizers and schedules: one declaration drives checks and editors.

A :class:`Param` says what a JSON value may be (kind, default, range or choices) and checks a
received value, returning the normalised value or a message that names the parameter and the
value ("rate 1.5 is out of range; it must be in [0, 1)"). ``Param.to_dict()`` is the plain
metadata a GUI builds a typed editor from. Pure Python: no TensorFlow, no Keras.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

ParamKind = Literal["int", "float", "bool", "choice", "ints", "shape", "layers"]

_KIND_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "choice": "one of the listed names",
    "ints": "an integer or a list of integers",
    "shape": "a list of integers",
    "layers": "a list of layers",
}


class Invalid(Exception):
    """A value that does not fit its :class:`Param`; ``str()`` is the user's message."""


def type_word(value: Any) -> str:
    """``"a string"``, ``"a list"``... for messages about wrong types."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to ``name`` (case-insensitive), or None when none is close."""
    cands = list(candidates)
    lowered = {c.lower(): c for c in cands}
    if name.lower() in lowered:
        return lowered[name.lower()]
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[hits[0]] if hits else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'Conv2D'?"`` or an empty string."""
    hit = closest(name, candidates)
    return f"; did you mean {hit!r}?" if hit is not None and hit != name else ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Param:
    """One parameter: its kind, default and allowed values.

    ``kind`` is one of ``int``, ``float``, ``bool``, ``choice`` (a name from ``choices``),
    ``ints`` (an integer or a list of ``length`` integers, normalised to a tuple),
    ``shape`` (a list of integers, one of them may be -1) and ``layers`` (nested layers).
    ``minimum``/``maximum`` bound numbers and every integer of ``ints``; ``exclusive_*``
    turn a bound strict. ``nullable`` allows ``null`` (then the default is often null).
    """

    name: str
    kind: ParamKind
    default: Any = None
    doc: str = ""
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    choices: tuple[str, ...] = ()
    length: int = 1
    nullable: bool = False

    def range_text(self) -> str:
        """``"[0, 1)"``, ``">= 1"`` or an empty string."""
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            left = "(" if self.exclusive_minimum else "["
            right = ")" if self.exclusive_maximum else "]"
            return f"{left}{_num(lo)}, {_num(hi)}{right}"
        if lo is not None:
            return f"{'>' if self.exclusive_minimum else '>='} {_num(lo)}"
        if hi is not None:
            return f"{'<' if self.exclusive_maximum else '<='} {_num(hi)}"
        return ""

    def range_phrase(self) -> str:
        """``"in [0, 1)"``, ``">= 1"`` or an empty string."""
        rng = self.range_text()
        return f"in {rng}" if rng.startswith(("[", "(")) else rng

    def expects(self) -> str:
        """What the value must be, in words: ``"an integer >= 1"``."""
        if self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "ints" and self.length > 1:
            text = f"an integer or a list of {self.length} integers"
        else:
            text = _KIND_WORDS[self.kind]
        if self.kind in ("int", "float", "ints") and self.range_text():
            text += f" {self.range_phrase()}"
        if self.nullable:
            text += " (or null)"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain metadata for editors: name, kind, default, doc, range and choices."""
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "default": list(self.default) if isinstance(self.default, tuple) else self.default,
            "required": self.required,
            "nullable": self.nullable,
            "doc": self.doc,
        }
        if self.minimum is not None:
            out["minimum"] = self.minimum
            out["exclusive_minimum"] = self.exclusive_minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
            out["exclusive_maximum"] = self.exclusive_maximum
        if self.choices:
            out["choices"] = list(self.choices)
        if self.kind == "ints":
            out["length"] = self.length
        return out

    def check(self, value: Any) -> Any:
        """Return ``value`` normalised (ints as tuples, floats as float) or raise Invalid."""
        if value is None:
            if self.nullable:
                return None
            raise Invalid(f"{self.name} must be {self.expects()}, not null")
        bad_type = Invalid(
            f"{self.name} {value!r} must be {self.expects()} (got {type_word(value)})"
        )
        if self.kind == "int":
            if not _is_int(value):
                raise bad_type
            self._in_range(value)
            return int(value)
        if self.kind == "float":
            if not (_is_int(value) or isinstance(value, float)) or not math.isfinite(value):
                raise bad_type
            self._in_range(value)
            return float(value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise bad_type
            return value
        if self.kind == "choice":
            if not isinstance(value, str):
                raise bad_type
            if value not in self.choices:
                raise Invalid(
                    f"{self.name} {value!r} is not one of "
                    f"{', '.join(repr(c) for c in self.choices)}{did_you_mean(value, self.choices)}"
                )
            return value
        if self.kind == "ints":
            items = [value] * self.length if _is_int(value) else value
            if not isinstance(items, list | tuple) or not all(_is_int(v) for v in items):
                raise bad_type
            if len(items) != self.length:
                raise Invalid(f"{self.name} {value!r} must have {self.length} integers")
            for v in items:
                self._in_range(v, shown=value)
            return tuple(int(v) for v in items)
        if self.kind == "shape":
            if not isinstance(value, list | tuple) or not value:
                raise bad_type
            if not all(_is_int(v) and (v >= 1 or v == -1) for v in value):
                raise Invalid(f"{self.name} {value!r} must hold integers >= 1 (one may be -1)")
            if sum(1 for v in value if v == -1) > 1:
                raise Invalid(f"{self.name} {value!r} may hold at most one -1")
            return tuple(int(v) for v in value)
        if self.kind == "layers":
            if not isinstance(value, list | tuple) or not value:
                raise Invalid(f"{self.name} must be a non-empty list of layers")
            return list(value)
        raise AssertionError(self.kind)  # pragma: no cover

    def _in_range(self, v: float, shown: Any = None) -> None:
        lo, hi = self.minimum, self.maximum
        below = lo is not None and (v <= lo if self.exclusive_minimum else v < lo)
        above = hi is not None and (v >= hi if self.exclusive_maximum else v > hi)
        if below or above:
            shown = v if shown is None else shown
            raise Invalid(
                f"{self.name} {shown!r} is out of range; it must be {self.range_phrase()}"
            )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def check_params(
    params: tuple[Param, ...], given: dict[str, Any], owner: str, skip: tuple[str, ...] = ("type",)
) -> tuple[dict[str, Any], list[tuple[str | None, str]]]:
    """Check ``given`` against ``params``; return (values with defaults, [(param, message)]).

    Unknown keys, missing required values, wrong types and out-of-range values are each
    reported once; the values dict then holds the default for any bad parameter.
    """
    known = {p.name: p for p in params}
    problems: list[tuple[str | None, str]] = []
    for key in given:
        if key in skip or key in known:
            continue
        takes = ", ".join(known) or "no parameters"
        problems.append(
            (
                key,
                f"unknown parameter {key!r}{did_you_mean(key, known)} ({owner} takes {takes})",
            )
        )
    values: dict[str, Any] = {}
    for p in params:
        if p.name not in given:
            if p.required:
                problems.append((p.name, f"{p.name} is required ({p.expects()})"))
            values[p.name] = p.default
            continue
        try:
            values[p.name] = p.check(given[p.name])
        except Invalid as exc:
            problems.append((p.name, str(exc)))
            values[p.name] = p.default
    return values, problems
