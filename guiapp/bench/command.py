"""What every ``guiapp bench NAME`` shares: its ``--json`` switch and the function that runs
it, and its output, the result as one JSON object (``--json``) or as text for a person.

A bench registers its options, then ``json_option(parser, run)``; its command ends with
``return print_result(res, args.json, format_text)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def json_option(
    parser: argparse.ArgumentParser,
    run: Callable[[argparse.Namespace], int],
    help: str | None = None,  # noqa: A002 - argparse's word
) -> None:
    """The bench's ``--json`` switch (the last of its options) and the function it runs."""
    parser.add_argument("--json", action="store_true", help=help)
    parser.set_defaults(func=run)


def print_result(
    res: Any, as_json: bool, text: Callable[[Any], str], indent: int | None = 2
) -> int:
    """The result on stdout: one JSON object, or ``text(res)`` (a newline after either);
    the command's exit code, 0."""
    sys.stdout.write((json.dumps(res, indent=indent) if as_json else text(res)) + "\n")
    return 0
