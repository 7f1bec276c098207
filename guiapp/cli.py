"""The headless commands (``guiapp <command>``); each one a thin shell over a core function.

Exit codes (DESIGN.md): 0 done, 2 bad input or usage (one line on stderr, no traceback),
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
from typing import Any

from . import __version__
from .core.errors import Cancelled, UserError
from .core.units import human_bytes

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


class UsageError(UserError):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def log_dir() -> Path:
    base = os.environ.get("GUIAPP_LOG_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "guiapp", "logs"
    )
    return Path(base)


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
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


# -- info ----------------------------------------------------------------------------
def cmd_info(args: argparse.Namespace) -> int:
    from .core.errors import DatasetError
    from .core.store import Dataset

    with Dataset(args.path) as ds:
        info = ds.info()
        if len(ds) == 0:
            raise DatasetError(
                ds.path, "has no committed rows", "Generate or import rows into it first"
            )
    if args.json:
        print_json(info)
        return 0
    shape = "x".join(map(str, info["sample_shape"]))
    v = info["values"]
    lines = [
        f"dataset     {info['path']}",
        f"rows        {info['rows']:,}"
        + ("" if info["complete"] else "  (unfinished: only committed rows are shown)"),
        f"sample      {shape} {info['dtype']}",
        f"layout      {info['layout']}, {info['shards']} shard(s) of {info['shard_capacity']:,} rows, "
        f"{info['sealed_shards']} sealed, compression {info['compression']}",
        f"size        {human_bytes(info['data_bytes'])} of rows, {human_bytes(info['size_on_disk'])} on disk",
        (
            f"values      mean {v['mean']:.4g}, std {v['std']:.4g}, min {v['min']:.4g}, max {v['max']:.4g}"
            if v["mean"] is not None
            else "values      not recorded"
        )
        + (f", {int(v['nonfinite'])} NaN/Inf" if v["nonfinite"] else ""),
        "classes",
    ]
    width = max(len(c["name"]) for c in info["classes"])
    for c in info["classes"]:
        share = c["count"] / info["rows"] if info["rows"] else 0.0
        lines.append(f"  {c['index']:>3}  {c['name']:<{width}}  {c['count']:>12,}  {share:6.1%}")
    lines.append(f"created     {info['created']}")
    prov = info["provenance"]
    if prov:
        lines.append("provenance  " + json.dumps(prov, sort_keys=True))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


# -- check ---------------------------------------------------------------------------
def cmd_check(args: argparse.Namespace) -> int:
    from .core.store.check import check_dataset

    rep = check_dataset(args.path, full=args.full)
    if args.json:
        print_json(rep.to_json())
    else:
        for line in rep.checked:
            sys.stdout.write(f"ok    {line}\n")
    if rep.problems:
        for p in rep.problems:
            sys.stderr.write(f"guiapp check: {p}\n")
        return 2
    if not args.json:
        sys.stdout.write(f"{rep.path}: OK, {rep.rows:,} rows\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="guiapp",
        description="guiapp: make, browse and train on huge datasets of small arrays. "
        "Without a command it opens the desktop application.",
        epilog="desktop application: guiapp [PROJECT.gproj] [--theme light|dark] "
        "[--smoke PNG] [--screenshots DIR]; installation check: guiapp --self-test",
    )
    p.add_argument("--version", action="version", version=f"guiapp {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("info", help="describe a dataset without reading its rows")
    s.add_argument("path", help="the dataset's index file NAME.h5")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("check", help="validate a dataset (labels; with --full every byte)")
    s.add_argument("path", help="the dataset's index file NAME.h5")
    s.add_argument(
        "--full",
        action="store_true",
        help="also scan all samples for NaN/Inf and verify shard hashes",
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_check)

    from . import cli_bench, cli_generate, cli_import, cli_train

    for register in (
        cli_generate.register,
        cli_import.register,
        cli_train.register,
        cli_bench.register,
        *EXTRA_COMMANDS,
    ):
        register(sub)
    return p


#: Modules add their subcommands here: ``register(subparsers)``.
EXTRA_COMMANDS: list[Callable[[Any], None]] = []


def command_names() -> set[str]:
    parser = build_parser()
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return set(a.choices)
    return set()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "func", None):
            build_parser().print_help()
            return 2
        return int(args.func(args))
    except UserError as exc:
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
