"""What every ``guiapp bench NAME`` shares: its ``--json`` switch and the function that runs
it, and its output, the result as one JSON object (``--json``) or as text for a person.

A bench registers its options, then ``json_option(parser, run)``; its command ends with
``return print_result(res, args.json, format_text)``. An option that takes a list of counts
(``--batch 512,4096``) parses it with ``int_list``.
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


def int_list(option: str, what: str, example: str) -> Callable[[str], list[int]]:
    """An argparse ``type``: comma-separated whole numbers, each >= 1 (``2`` or ``1,2,4``);
    anything else is refused in one line, ``OPTION 'TEXT': give WHAT >= 1, e.g. EXAMPLE``."""

    def parse(text: str) -> list[int]:
        try:
            out = [int(t) for t in text.split(",") if t.strip()]
        except ValueError:
            out = []
        if not out or min(out) < 1:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: give {what} >= 1, e.g. {example}")
        return out

    return parse
