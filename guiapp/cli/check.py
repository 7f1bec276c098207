"""``guiapp check DATASET [--full]``: validate a dataset (a thin shell over ``check_dataset``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import print_json


def register(sub: Any) -> None:
    s = sub.add_parser("check", help="validate a dataset (labels; with --full every byte)")
    s.add_argument("path", help="the dataset's index file NAME.h5")
    s.add_argument(
        "--full",
        action="store_true",
        help="also scan all samples for NaN/Inf and verify shard hashes",
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from ..core.store.check import check_dataset

    rep = check_dataset(args.path, full=args.full)
    if args.json:
        print_json(rep.to_json())
    else:
        for result in rep.results:
            sys.stdout.write(f"{'ok' if result.ok else 'FAIL':<6}{result.name}\n")
    if rep.problems:
        for p in rep.problems:
            sys.stderr.write(f"guiapp check: {p}\n")
        return 2
    if not args.json:
        sys.stdout.write(f"{rep.path}: OK, {rep.rows:,} rows\n")
    return 0
