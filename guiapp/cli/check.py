"""``guiapp check DATASET [--full] [--leakage [--run RUN]]``: validate a dataset (a thin shell
over ``check_dataset``), or report what leaks across a run's splits (``leakage.py``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.errors import UserError
from . import print_json


def register(sub: Any) -> None:
    s = sub.add_parser("check", help="validate a dataset (labels; with --full every byte)")
    s.add_argument("path", help="the dataset's index file NAME.h5")
    s.add_argument(
        "--full",
        action="store_true",
        help="also scan all samples for NaN/Inf and verify shard hashes",
    )
    s.add_argument(
        "--leakage",
        action="store_true",
        help="report groups that cross train/validation/test and identical rows on both "
        "sides, for the split of --run (default: --val 0.1, seed 0, by groups)",
    )
    s.add_argument("--run", default=None, help="with --leakage: the run (or experiment) folder")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from ..core.store.check import check_dataset

    if args.run and not args.leakage:
        raise UserError("--run goes with --leakage: give both, or neither")
    if args.leakage:
        return cmd_leakage(args)
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


def run_config(path: str, data: str) -> Any:
    """The training config of a run folder (``config.json``) or experiment (``spec.json``)."""
    import json
    from pathlib import Path

    from ..core.train.config import TrainConfig
    from ..core.train.validation_rows import config_of

    if path is None:
        return TrainConfig(data=data, model={}, out="")
    folder = Path(path)
    for name, key in (("config.json", "config"), ("spec.json", "base")):
        f = folder / name
        if f.is_file():
            try:
                return config_of(dict(json.loads(f.read_text(encoding="utf-8"))[key]))
            except (ValueError, KeyError, TypeError) as exc:
                raise UserError(f"{f}: cannot be read as a run's settings ({exc})") from None
    raise UserError(
        f"--run {path}: no config.json or spec.json there; give a run or experiment folder"
    )


def cmd_leakage(args: argparse.Namespace) -> int:
    from ..core.pipeline.leakage import check_leakage, describe
    from ..core.store import Dataset

    cfg = run_config(args.run, args.path)
    with Dataset(args.path) as ds:
        report = check_leakage(ds, cfg)
    report["run"] = args.run
    if args.json:
        print_json(report)
        return 0
    for line in describe(report):
        sys.stdout.write(line + "\n")
    verdict = "LEAKS: related rows cross the split" if report["leaks"] else "no leakage found"
    sys.stdout.write(f"{args.path}: {verdict}\n")
    return 0
