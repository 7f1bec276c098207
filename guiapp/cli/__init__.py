"""The headless commands (``guiapp <command>``); each one a thin shell over a core function.

Exit codes (docs/ARCHITECTURE.md): 0 done, 2 bad input or usage (one line on stderr, no traceback),
130 cancelled, 1 internal error (traceback to a log file, a short message on stderr).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .. import __version__
from ..core.errors import Cancelled, UserError
from ..core.events import finite_json
from ..core.logs import log_dir

if TYPE_CHECKING:
    from ..core.events import CancelToken, EventSink
    from ..core.requests import Request

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


class UsageError(UserError):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def write_crash_log(exc: BaseException) -> Path | None:
    try:
        folder = log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = folder / f"guiapp-{stamp}-{os.getpid()}.log"
        path.write_text(
            f"guiapp {__version__}\nargv: {sys.argv!r}\n\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        )
        return path
    except OSError:
        return None


def print_json(obj: Any) -> None:
    """One JSON document on stdout, standard JSON only (no NaN/Infinity tokens)."""
    text = json.dumps(finite_json(obj), indent=2, default=str, allow_nan=False)
    sys.stdout.write(text + "\n")


def command_parser(
    sub: Any,
    name: str,
    help: str,
    epilog: str,
    description: str | None = None,
    *,
    request: type[Request] | None = None,
    func: Callable[[argparse.Namespace], int] | None = None,
) -> argparse.ArgumentParser:
    """The parser of command ``name`` (``help``: its line in ``guiapp --help``), its
    ``description`` and ``epilog`` (the examples) printed as written, not wrapped again;
    given a ``request`` type, its options (``add_arguments``), and ``func``, what runs it."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if request is not None:
        from ..core.requests import add_arguments

        add_arguments(parser, request)
    if func is not None:
        parser.set_defaults(func=func)
    return parser


def job_controls(
    events: str | None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    *,
    stdin_stop: bool = True,
) -> tuple[EventSink, CancelToken]:
    """A job's events and its cancel token: the events as JSON lines on stdout with
    ``--events -``, else to ``progress`` (if any, the human lines); cancelled by SIGINT or
    SIGTERM and by a ``stop`` line on stdin (with ``stdin_stop=False``, only when the GUI
    runs it with ``--events -``)."""
    from ..core.events import CancelToken, EventSink

    sink = EventSink(sys.stdout if events == "-" else None)
    if progress is not None and events != "-":
        sink.listeners.append(progress)
    cancel = CancelToken()
    cancel.install_signal_handlers()
    if stdin_stop or events == "-":
        cancel.watch_stdin()
    return sink, cancel


#: Each command and the module under ``guiapp.cli`` that registers it. A command's own
#: parser is built alone: the others' modules (the benches import the pipeline and
#: numba-using code) cost a headless job ~0.1 s of start-up for nothing.
COMMAND_MODULES: dict[str, str] = {
    "info": "info",
    "check": "check",
    "generate": "generate",
    "import": "import_",
    "train": "train",
    "predict": "predict",
    "export": "export",
    "labels": "labels",
    "explain": "explain",
    "embed": "embed",
    "bench": "bench",
    "self-test": "self_test",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` (a name of :data:`COMMAND_MODULES`) just
    that command's parser."""
    import importlib

    p = _Parser(
        prog="guiapp",
        description="guiapp: make, browse and train on huge datasets of small arrays. "
        "Without a command it opens the desktop application.",
        epilog="desktop application: guiapp [PROJECT.gproj] [--theme light|dark] "
        "[--smoke PNG] [--screenshots DIR]; installation check: guiapp --self-test",
    )
    p.add_argument("--version", action="version", version=f"guiapp {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in [only] if only in COMMAND_MODULES else COMMAND_MODULES:
        importlib.import_module(f".{COMMAND_MODULES[name]}", __name__).register(sub)
    return p


def command_names() -> set[str]:
    """Every command's name (the table's)."""
    return set(COMMAND_MODULES)


def parsed_names(parser: argparse.ArgumentParser) -> set[str]:
    """The command names a built parser knows (``guiapp self-test`` checks them)."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return set(a.choices)
    return set()


def events_on_stdout(argv: Sequence[str]) -> bool:
    """``--events -`` is among the arguments (the events go to stdout, as JSON lines)."""
    return "--events=-" in argv or any(
        a == "--events" and b == "-" for a, b in zip(argv, argv[1:], strict=False)
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        if not getattr(args, "func", None):
            build_parser().print_help()
            return 2
        return int(args.func(args))
    except UserError as exc:
        if events_on_stdout(argv):  # the GUI reads the error's fields, not the line
            from ..core.events import report_failure

            report_failure(exc)
        sys.stderr.write(f"guiapp: error: {exc}\n")
        return 2
    except (Cancelled, KeyboardInterrupt):
        sys.stderr.write("guiapp: cancelled\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        log = write_crash_log(exc)
        where = f"; details in {log}" if log else ""
        sys.stderr.write(f"guiapp: internal error: {type(exc).__name__}: {exc}{where}\n")
        return 1
