"""The request type's base (issue 29.1): :func:`opt` (one option's declaration),
:class:`Request` (its JSON, checked), and the checks of a value against its field."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..errors import OptionError, UserError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: The version of a request file's layout (``{"command", "version", "options"}``).
REQUEST_VERSION = 1
#: The option that runs a saved request.
REQUEST_FLAG = "--request"

R = TypeVar("R", bound="Request")
C = TypeVar("C", bound="DataclassInstance")


@dataclass(frozen=True)
class Opt:
    """What :func:`opt` declares about one field (kept in the field's metadata)."""

    flag: str | None = None
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    positional: bool = False
    metavar: str | None = None
    group: str | None = None
    hidden: bool = False
    run: bool = False
    path: bool = False
    #: the refusal of a value out of range: ``--FLAG VALUE: problem; fix`` (the words the
    #: command's own check uses where it has one)
    problem: str | None = None
    fix: str = ""
    #: :func:`~guiapp.core.requests.argv.to_argv` writes it even at its default (an
    #: argument list that has always named it, e.g. the Browser's ``--class pred``)
    always: bool = False


def opt(
    default: Any = dataclasses.MISSING,
    *,
    flag: str | None = None,
    help: str = "",  # noqa: A002 - argparse's word
    minimum: float | None = None,
    maximum: float | None = None,
    choices: Sequence[Any] | None = None,
    positional: bool = False,
    metavar: str | None = None,
    group: str | None = None,
    hidden: bool = False,
    run: bool = False,
    path: bool = False,
    problem: str | None = None,
    fix: str = "",
    always: bool = False,
) -> Any:
    """A request field: its default (none: required) and what the CLI and a form need."""
    meta = Opt(
        flag,
        help,
        minimum,
        maximum,
        tuple(choices) if choices is not None else None,
        positional,
        metavar,
        group,
        hidden,
        run,
        path,
        problem,
        fix,
        always,
    )
    return field(default=default, metadata={"opt": meta})


def option(f: dataclasses.Field[Any]) -> Opt:
    """The :class:`Opt` of a field (a field declared without :func:`opt` gets the defaults)."""
    meta = f.metadata.get("opt")
    return meta if isinstance(meta, Opt) else Opt()


def flag_of(f: dataclasses.Field[Any]) -> str:
    """The field's option on the command line: ``--top-k``, or a positional's name."""
    o = option(f)
    if o.positional:
        return f.name
    return o.flag or "--" + f.name.replace("_", "-")


def is_required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


@dataclass(frozen=True, kw_only=True)
class Request:
    """The base of every job's request type; :attr:`COMMAND` is its ``guiapp`` command."""

    COMMAND: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The request as a request file's JSON (run switches left out); checked first."""
        self.check()
        opts = {f.name: getattr(self, f.name) for f in saved_fields(type(self))}
        return {"command": self.COMMAND, "version": REQUEST_VERSION, "options": opts}

    @classmethod
    def from_json(cls: type[R], data: Any, source: str = "request") -> R:
        """The request a request file's JSON holds; its types and ranges checked, every
        refusal one line naming the flag (and ``source``)."""
        if not isinstance(data, dict) or not isinstance(data.get("options"), dict):
            raise _refused(
                source,
                f'not a request; give a JSON object like {{"command": "{cls.COMMAND}", '
                f'"version": {REQUEST_VERSION}, "options": {{...}}}}',
            )
        command = data.get("command")
        if command != cls.COMMAND:
            raise _refused(
                source,
                f"a request of {command!r}, not of {cls.COMMAND!r}; run it with guiapp {command}",
            )
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version > REQUEST_VERSION:
            raise _refused(
                source,
                f"request version {version!r} is newer than this guiapp reads "
                f"({REQUEST_VERSION}); update guiapp",
            )
        opts: dict[str, Any] = data["options"]
        known = {f.name: f for f in saved_fields(cls)}
        for key in opts:
            if key not in known:
                raise _refused(
                    source, f"unknown option {key!r} of {cls.COMMAND}; known: {', '.join(known)}"
                )
        values: dict[str, Any] = {}
        for name, f in known.items():
            if name in opts:
                values[name] = check_value(cls, f, opts[name], source)
            elif is_required(f):
                raise OptionError(
                    flag_of(f).lstrip("-"), "", f"missing in {source}", "give it in the request"
                )
        request = cls(**values)
        request.check()
        return request

    def check(self) -> None:
        """Every field of the right type and in its range (:class:`OptionError`)."""
        for f in dataclasses.fields(self):
            check_value(type(self), f, getattr(self, f.name), "request")

    def replace(self: R, **changes: Any) -> R:
        return dataclasses.replace(self, **changes)

    def config(self, cls: type[C]) -> C:
        """The job's config ``cls`` (a dataclass) of this request's fields of the same names:
        a job whose options need no parsing takes them as they are."""
        return cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})


def _refused(source: str, problem: str) -> UserError:
    """A request file that cannot be read as this request: ``source: problem``."""
    return UserError(f"{source}: {problem}", option=REQUEST_FLAG, value=source)


def saved_fields(cls: type[Request]) -> list[dataclasses.Field[Any]]:
    """The fields a request file holds: every option but the run switches."""
    return [f for f in dataclasses.fields(cls) if not option(f).run]


def flags(cls: type[Request]) -> dict[str, str]:
    """Each field's option on the command line: ``{"top_k": "--top-k", "out": "out"}``."""
    return {f.name: flag_of(f) for f in dataclasses.fields(cls)}


def field_of_flag(cls: type[Request], flag: str) -> str | None:
    """The field an option sets (None: not an option of ``cls``)."""
    return next((name for name, fl in flags(cls).items() if fl == flag), None)


def controls(cls: type[Request], widgets: dict[str, str]) -> dict[str, str]:
    """A form's ``CONTROLS`` (option -> the attribute of its control) from its widgets by
    field (``{"top_k": "top_k"}`` -> ``{"--top-k": "top_k"}``); a field the request type
    does not have is a ``KeyError`` (the form and the type cannot drift apart)."""
    known = flags(cls)
    for name in widgets:
        if name not in known:
            raise KeyError(f"{cls.__name__} has no field {name!r}")
    return {known[name]: widget for name, widget in widgets.items()}


# ----------------------------------------------------------------------------- types
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """A request type's evaluated annotations (evaluated once per type)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _kinds(cls: type[Request], name: str) -> tuple[type, ...]:
    """The plain types a field's annotation allows (``int | None`` -> ``(int, NoneType)``)."""
    hint = _hints(cls)[name]
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if typing.get_origin(hint) is typing.Union:
        args = typing.get_args(hint)
    out: list[type] = []
    for a in args:
        origin = typing.get_origin(a) or a
        out.append(origin if isinstance(origin, type) else object)
    return tuple(out)


_WORDS = {
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    str: "a string",
    dict: "a JSON object",
    list: "a list",
}


def check_value(cls: type[Request], f: dataclasses.Field[Any], value: Any, source: str) -> Any:
    """``value`` for field ``f`` (an int where a float is wanted becomes a float), or an
    :class:`OptionError` naming the flag: a wrong type, a choice not offered, out of range."""
    o = option(f)
    name = flag_of(f).lstrip("-")
    kinds = _kinds(cls, f.name)
    if value is None:
        if type(None) in kinds or (is_required(f) is False and default_of(f) is None):
            return None
        raise OptionError(name, value, f"missing in {source}", "give it in the request")
    ok = False
    for kind in kinds:
        if kind is object:
            ok = True
        elif kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            value, ok = float(value), True
        elif kind is int and isinstance(value, bool):
            continue
        elif kind is not type(None) and isinstance(value, kind):
            ok = True
        if ok:
            break
    if not ok:
        wanted = " or ".join(_WORDS.get(k, k.__name__) for k in kinds if k is not type(None))
        raise OptionError(name, value, f"is not {wanted}", f"give {wanted} in {source}")
    if o.choices is not None and value not in o.choices:
        fix = "use " + ", ".join(map(str, o.choices))
        raise OptionError(name, value, o.problem or "is not one of the choices", o.fix or fix)
    if isinstance(value, int | float) and not isinstance(value, bool):
        low = o.minimum is not None and value < o.minimum
        high = o.maximum is not None and value > o.maximum
        if low or high:
            lo = "" if o.minimum is None else f"at least {o.minimum:g}"
            hi = "" if o.maximum is None else f"at most {o.maximum:g}"
            problem = o.problem or "out of range"
            fix = o.fix if o.problem else "give " + " and ".join(p for p in (lo, hi) if p)
            raise OptionError(name, value, problem, fix)
    if isinstance(value, list):
        value = list(value)
    return value
