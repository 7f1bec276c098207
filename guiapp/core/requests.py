"""A job's request: the one typed declaration of a command's options (issue 29.1).

A request type is a frozen dataclass whose fields are the command's options, each declared
once with :func:`opt` (its flag, help text, default, choices, range, positional or not).
From that one declaration come:

- the CLI's argparse options (:func:`add_arguments`, one helper for every command) and the
  request the parsed arguments make (:func:`from_args`);
- the request's JSON (:meth:`Request.to_json`, :meth:`Request.from_json`,
  :func:`load_request`, :func:`save_request`), checked for types and ranges, with every
  refusal an :class:`~guiapp.core.errors.OptionError` naming the flag, in the words the
  CLI's own checks use;
- ``guiapp <command> --request FILE``: the job runs a saved request;
- the argument list a request stands for (:func:`to_argv`), and the one a GUI job runs
  (:func:`request_argv`: ``--request FILE`` and the run switches).

A field marked ``run=True`` is a *run switch* (``--events``, ``--plan``, ``--resume``,
``--overwrite``): how to treat what is already there, not what to make. Run switches are
never saved in a request file and may be given beside ``--request``; any other option
given beside ``--request`` is refused in one line (the file holds them all).

Stdlib only (no TensorFlow, no numpy, no Qt): the CLI imports this before anything else.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .errors import SEED_MAX, FileError, OptionError, UserError

#: The version of a request file's layout (``{"command", "version", "options"}``).
REQUEST_VERSION = 1
#: The option that runs a saved request.
REQUEST_FLAG = "--request"

R = TypeVar("R", bound="Request")


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
            raise UserError(
                f'{source}: not a request; give a JSON object like {{"command": '
                f'"{cls.COMMAND}", "version": {REQUEST_VERSION}, "options": {{...}}}}',
                option=REQUEST_FLAG,
                value=source,
            )
        command = data.get("command")
        if command != cls.COMMAND:
            raise UserError(
                f"{source}: a request of {command!r}, not of {cls.COMMAND!r}; "
                f"run it with guiapp {command}",
                option=REQUEST_FLAG,
                value=source,
            )
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version > REQUEST_VERSION:
            raise UserError(
                f"{source}: request version {version!r} is newer than this guiapp reads "
                f"({REQUEST_VERSION}); update guiapp",
                option=REQUEST_FLAG,
                value=source,
            )
        opts: dict[str, Any] = data["options"]
        known = {f.name: f for f in saved_fields(cls)}
        for key in opts:
            if key not in known:
                raise UserError(
                    f"{source}: unknown option {key!r} of {cls.COMMAND}; known: {', '.join(known)}",
                    option=REQUEST_FLAG,
                    value=source,
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
    then every option that is not its default; objects as JSON)."""
    argv: list[str] = []
    opts: list[str] = []
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        if f.name == "events" or (not is_required(f) and value == default_of(f)):
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
    from .atomic import atomic_write_text

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


# ----------------------------------------------------------------------------- the jobs
_FILE_INPUT = "file input (as for guiapp import)"


@dataclass(frozen=True, kw_only=True)
class GenerateRequest(Request):
    """``guiapp generate``: every option, once (docs/GENERATION.md says what each does)."""

    COMMAND: ClassVar[str] = "generate"

    out: str = opt(
        positional=True,
        path=True,
        help="the dataset's index file OUT.h5 (shards go to OUT.shards/)",
    )
    generator: str = opt("patterns2d", help="patterns2d, kmer1d, genomes or FILE.py")
    n: int | None = opt(
        None,
        help="rows to write (after augmentation; genomes: reads)",
        minimum=1,
        problem="give the number of rows to generate (at least 1)",
    )
    classes: int | None = opt(
        None,
        help="number of classes (default 5)",
        minimum=1,
        problem="a dataset needs at least 1 class",
        fix="give 1..65535",
    )
    #: ``25x25`` or ``126`` (as typed on the command line)
    shape: str | None = opt(None, help="sample shape, e.g. 25x25 or 126")
    dtype: str | None = opt(None, help="float32 | float16 | uint16 | ...")
    seed: int = opt(
        0,
        help="random seed (default 0)",
        minimum=0,
        maximum=SEED_MAX,
        problem=f"a seed is an integer in 0..{SEED_MAX}",
        fix="give e.g. 0",
    )
    workers: int = opt(1, help="worker processes (default 1)", minimum=1, problem="give at least 1")
    #: a spec file's path or the spec: inline JSON text, or (in a request file) the object
    augment: str | dict[str, Any] | None = opt(
        None, help="augmentation spec: SPEC.json or inline JSON"
    )
    #: JSON text (command line) or (in a request file) the object
    params: str | dict[str, Any] | None = opt(None, help="generator parameters as a JSON object")
    shard_rows: int | None = opt(
        None,
        help="rows per shard",
        minimum=1,
        problem="a shard holds at least 1 row",
        fix="give e.g. 4096, or leave it out",
    )
    on_nonfinite: str = opt(
        "error",
        choices=("error", "skip"),
        help="rows holding NaN/Inf: refuse them (default) or drop them, counted in the provenance",
        problem="unknown policy",
        fix="use error or skip",
    )
    events: str | None = opt(None, run=True, help="'-' to print JSON-line events on stdout")
    plan: bool = opt(False, run=True, help="print the plan and write nothing")
    resume: bool = opt(False, run=True, help="finish an unfinished dataset")
    overwrite: bool = opt(False, run=True, help="replace an existing dataset")


@dataclass(frozen=True, kw_only=True)
class PredictRequest(Request):
    """``guiapp predict``: every option, once."""

    COMMAND: ClassVar[str] = "predict"

    model: str = opt(path=True, help="a run folder or a MODEL.keras file")
    which: str = opt("best", choices=("best", "last"), help="a run's model")
    data: str = opt(
        path=True,
        help="dataset NAME.h5, a JSONL/CSV/TSV/npy/npz file, or genomes: FASTA/FASTQ[.gz] "
        "or a manifest TSV (file, class, group)",
    )
    out: str = opt(path=True, help="PRED.h5 (any size) or PRED.csv (small results)")
    split: str = opt("all", choices=("all", "train", "val", "test"))
    top_k: int = opt(
        5, help="classes kept per row (default 5)", minimum=1, problem="give at least 1"
    )
    probs: bool = opt(False, help="also keep the full probability vector")
    batch: int = opt(
        512,
        help="batch size per device (default 512)",
        minimum=1,
        problem="the batch size must be at least 1",
    )
    devices: str = opt("auto", help="auto, cpu, cpu:N, gpu or gpu:0,1")
    overwrite: bool = opt(False, run=True, help="replace another job's --out")
    #: ``a,b,c`` (command line) or (in a request file) the list
    class_names: str | list[str] | None = opt(
        None, help="file input without a run folder: the model's classes"
    )
    ignore_class_names: bool = opt(
        False,
        help="compare labels with predictions by class index although the dataset's class "
        "names differ from the model's",
    )
    #: ``spot=blob,bar=edge`` (command line) or (in a request file) the object
    class_map: str | dict[str, str] | None = opt(
        None,
        metavar="DATA=MODEL,...",
        help="the dataset's class names the model calls otherwise, e.g. spot=blob,bar=edge: "
        "labels are compared in the model's classes",
    )
    aggregate_by: str | None = opt(
        None,
        metavar="FIELD",
        help="also write PRED.groups.csv: per group (FIELD: group or a kept field) its rows, "
        "class by mean probability, class by vote, agreement and true class",
    )
    min_confidence: float = opt(
        0.0,
        metavar="P",
        help="with --aggregate-by: groups whose class's mean probability is below P are "
        "unclassified (default 0: never)",
        minimum=0.0,
        maximum=1.0,
        problem="is not a probability in [0, 1]",
        fix="give e.g. 0.6",
    )
    rc_average: bool = opt(
        False,
        help="1-D k-mer rows: average each row's probabilities with its reverse's (with "
        "canonical k-mers, the read's reverse complement)",
    )
    #: JSON text (command line) or (in a request file) the object
    genome_params: str | dict[str, Any] | None = opt(
        None,
        metavar="JSON",
        help='genome input: how rows are cut, e.g. \'{"mode": "tiling", "stride": 63}\' '
        "(the tokenizer is always the run's)",
    )
    format: str | None = opt(
        None, group=_FILE_INPUT, help="jsonl, csv, tsv, npy or npz (default: from the name)"
    )
    label_field: str = opt("label", group=_FILE_INPUT)
    data_field: str = opt("data", group=_FILE_INPUT)
    x_key: str = opt("x", group=_FILE_INPUT)
    y_key: str = opt("y", group=_FILE_INPUT)
    length: int | None = opt(
        None, group=_FILE_INPUT, help="pad or cut 1-D rows (default: the model's length)"
    )
    on_error: str = opt("abort", group=_FILE_INPUT, choices=("abort", "skip"))
    group_field: str | None = opt(
        None,
        group=_FILE_INPUT,
        metavar="FIELD",
        help="each record's group (as guiapp import; the file is then imported whole, "
        "shuffled, and every prediction carries its group)",
    )
    #: ``a,b`` (command line) or (in a request file) the list
    keep_fields: str | list[str] | None = opt(
        None,
        group=_FILE_INPUT,
        metavar="A,B",
        help="fields kept per record (as guiapp import), e.g. _id: in every prediction",
    )
    commit_rows: int = opt(1 << 16, hidden=True, minimum=1)
    events: str | None = opt(None, run=True, help="'-' to print JSON-line events on stdout")


@dataclass(frozen=True, kw_only=True)
class ExportRequest(Request):
    """``guiapp export``: every option, once."""

    COMMAND: ClassVar[str] = "export"

    run: str = opt(positional=True, path=True, help="a run folder (or a MODEL.keras file)")
    format: str = opt(choices=("keras", "savedmodel", "tflite"))
    out: str | None = opt(None, path=True, help="where to write (default RUN_DIR/export/model.*)")
    which: str = opt("best", choices=("best", "last"), help="a run's model")
    rows: int = opt(
        256, help="rows compared after the reload", minimum=1, problem="compare at least 1 row"
    )
