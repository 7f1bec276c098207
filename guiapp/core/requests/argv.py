"""A request on the command line and on disk: the argparse options a request type gives
(:func:`add_arguments`), the request of parsed arguments (:func:`from_args`), the
argument lists a request stands for (:func:`to_argv`, :func:`request_argv`), and request
files (:func:`load_request`, :func:`save_request`, where a job keeps its request)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import FileError, UserError
from .base import (
    REQUEST_FLAG,
    R,
    Request,
    _kinds,
    default_of,
    flag_of,
    is_required,
    option,
    saved_fields,
)


# ----------------------------------------------------------------------------- argparse
def _arg_type(cls: type[Request], f: dataclasses.Field[Any]) -> type | None:
    kinds = _kinds(cls, f.name)
    for kind in (bool, int, float):
        if kind in kinds:
            return kind
    return None


def add_arguments(parser: argparse.ArgumentParser, cls: type[Request]) -> None:
    """Give ``parser`` the options of request type ``cls`` (and ``--request FILE``).

    A required option stays required unless ``--request`` is given: :func:`from_args`
    says which are missing, in argparse's own words.
    """
    groups: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        o = option(f)
        target: Any = parser
        if o.group is not None:
            if o.group not in groups:
                groups[o.group] = parser.add_argument_group(o.group)
            target = groups[o.group]
        kind = _arg_type(cls, f)
        kw: dict[str, Any] = {"help": argparse.SUPPRESS if o.hidden else (o.help or None)}
        if kind is bool:
            kw["action"] = "store_true"
        else:
            kw["default"] = default_of(f)
            if kind is not None:
                kw["type"] = kind
            if o.choices is not None:
                kw["choices"] = o.choices
            if o.metavar is not None:
                kw["metavar"] = o.metavar
        if o.positional:
            if is_required(f):
                kw["nargs"] = "?"
            target.add_argument(f.name, **kw)
        else:
            target.add_argument(flag_of(f), dest=f.name, **kw)
    switches = [flag_of(f) for f in dataclasses.fields(cls) if option(f).run]
    beside = (
        f"only the run switches ({', '.join(switches)}) may be given beside it"
        if switches
        else "no other option may be given beside it"
    )
    parser.add_argument(
        REQUEST_FLAG,
        metavar="FILE",
        default=None,
        help=f"run a saved request (JSON: {{'command': '{cls.COMMAND}', 'version': 1, "
        f"'options': {{...}}}}; a job's output keeps its own); {beside}",
    )


def from_args(cls: type[R], args: argparse.Namespace, prog: str | None = None) -> R:
    """The request of parsed arguments: the saved request of ``--request FILE`` (run
    switches from the command line), else the options given. An option given beside
    ``--request`` is refused in one line; a required one missing, in argparse's words."""
    prog = prog or f"guiapp {cls.COMMAND}"
    given = {f.name: getattr(args, f.name, default_of(f)) for f in dataclasses.fields(cls)}
    path = getattr(args, "request", None)
    if path:
        for f in saved_fields(cls):
            if given[f.name] != default_of(f) and not (is_required(f) and given[f.name] is None):
                fl = flag_of(f)
                raise UserError(
                    f"{fl}: given with {REQUEST_FLAG} {path}; the request file holds every "
                    f"option: change it there, or leave out {REQUEST_FLAG}",
                    option=fl if fl.startswith("-") else REQUEST_FLAG,
                    value=given[f.name],
                )
        switches = {f.name: given[f.name] for f in dataclasses.fields(cls) if option(f).run}
        return load_request(path, cls).replace(**switches)
    missing = [
        flag_of(f) for f in dataclasses.fields(cls) if is_required(f) and given[f.name] is None
    ]
    if missing:
        raise UserError(
            f"{prog}: the following arguments are required: {', '.join(missing)} "
            f"(see '{prog} --help')"
        )
    return cls(**given)


def to_argv(request: Request) -> list[str]:
    """The arguments of ``guiapp <command>`` that make ``request`` (positionals first,
    then every option that is not its default, or is declared ``always``; objects as
    JSON)."""
    argv: list[str] = []
    opts: list[str] = []
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        at_default = not is_required(f) and not option(f).always and value == default_of(f)
        if f.name == "events" or at_default:
            continue
        if option(f).positional:
            argv.append(str(value))
        elif isinstance(value, bool):
            opts += [flag_of(f)] if value else []
        elif value is not None:
            text = json.dumps(value) if isinstance(value, dict | list) else str(value)
            opts += [flag_of(f), text]
    return argv + opts


def request_argv(path: str | os.PathLike[str], request: Request) -> list[str]:
    """The arguments of the job that runs the request saved at ``path``: ``--request
    FILE`` and the run switches ``request`` sets (``--events`` is the job runner's)."""
    argv = [REQUEST_FLAG, os.fspath(path)]
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        if option(f).run and f.name != "events" and value:
            argv += [flag_of(f)] if value is True else [flag_of(f), str(value)]
    return argv


#: The run switches that say how to treat an existing output (a recorded job leaves them out).
OUTPUT_SWITCHES = ("--resume", "--overwrite")


def without_switches(args: Sequence[str]) -> list[str]:
    """A job's arguments as a project records them: without ``--resume`` and
    ``--overwrite`` (what it makes, not how it treated what was there)."""
    return [str(a) for a in args if a not in OUTPUT_SWITCHES]


def rerun_argv(args: Sequence[str]) -> list[str]:
    """The arguments that continue a stopped job: ``args`` without its ``--overwrite``
    (a resume replaces nothing) and with ``--resume``."""
    return [*without_switches(args), "--resume"]


#: How a GUI job asks for its events: JSON lines on stdout.
EVENTS_ARGV = ("--events", "-")
#: The run switch that continues a stopped job.
RESUME_FLAG = "--resume"


def job_argv(command: str, args: Sequence[str], events: bool = True) -> list[str]:
    """``COMMAND ARGS... [--events -]``: what a GUI job runs after ``guiapp`` (with
    ``events``, the child prints its events as JSON lines on stdout)."""
    return [command, *args, *(EVENTS_ARGV if events else ())]


def with_resume(args: Sequence[str]) -> list[str]:
    """``args`` with ``--resume`` at the end, unless they have it already (anything else,
    ``--overwrite`` too, as it was; :func:`rerun_argv` drops that)."""
    return [*args] if RESUME_FLAG in args else [*args, RESUME_FLAG]


def train_output(args: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The run (or experiment) folder a ``guiapp train`` argument list writes: its
    ``--out``, else the folder of its ``--spec`` (a relative path under ``cwd``, the
    job's working folder), else None."""
    args = [str(a) for a in args]
    for flag, folder in (("--out", False), ("--spec", True)):
        if flag in args[:-1]:
            path = Path(args[args.index(flag) + 1])
            if not path.is_absolute():
                path = Path(cwd or ".") / path
            return path.parent if folder else path
    return None


# ----------------------------------------------------------------------------- files
def load_request(path: str | os.PathLike[str], cls: type[R]) -> R:
    """The request saved at ``path`` (one line naming the file and the problem if not)."""
    where = os.fspath(path)
    try:
        text = Path(where).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileError(
            where, "does not exist", "Give a request file (JSON)", option=REQUEST_FLAG
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        problem = getattr(exc, "strerror", None) or "is not UTF-8 text"
        raise FileError(where, f"cannot be read ({problem})", option=REQUEST_FLAG) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{where}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})",
            option=REQUEST_FLAG,
            value=where,
        ) from None
    except RecursionError:
        raise UserError(f"{where}: nested too deeply", option=REQUEST_FLAG, value=where) from None
    return cls.from_json(data, where)


def save_request(path: str | os.PathLike[str], request: Request) -> Path:
    """Write ``request`` to ``path`` atomically (a reader sees the old file or the new)."""
    from ..atomic import atomic_write_text

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, json.dumps(request.to_json(), indent=2) + "\n", durable=False)
    return target


def output_request_path(out: str | os.PathLike[str]) -> Path:
    """Where a job keeps the request that made ``out``: ``OUT.request.json`` beside it
    (``cells.h5`` -> ``cells.request.json``, ``pred.csv`` -> ``pred.request.json``)."""
    out = Path(out)
    return out.with_name(out.stem + ".request.json")


def gui_request_path(out: str | os.PathLike[str]) -> Path:
    """Where the GUI saves the request of a job it starts: ``.OUT.request.json`` beside
    the output (hidden; the job's own ``OUT.request.json`` is written once it runs)."""
    out = Path(out)
    return out.with_name(f".{out.stem}.request.json")


def request_output(args: Sequence[str]) -> str | None:
    """The output of the request an argument list runs with ``--request FILE`` (its
    ``out`` option), else None (no ``--request``, or a file that cannot be read)."""
    args = [str(a) for a in args]
    if REQUEST_FLAG not in args[:-1]:
        return None
    try:
        data = json.loads(Path(args[args.index(REQUEST_FLAG) + 1]).read_text(encoding="utf-8"))
        out = data["options"]["out"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return out if isinstance(out, str) else None


def absolute(request: R, cwd: str | os.PathLike[str] | None = None) -> R:
    """``request`` with its path options (``opt(path=True)``) absolute: a saved request
    means the same files from any folder."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    changes = {}
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        if option(f).path and isinstance(value, str) and value:
            changes[f.name] = str(base / value) if not os.path.isabs(value) else value
    return request.replace(**changes)
