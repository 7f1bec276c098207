"""``guiapp labels``: likely label issues from out-of-fold predictions (confident learning)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.errors import OptionError, UserError, check_writable_output
from . import command_parser

HELP = "rank rows by how likely their label is wrong (confident learning)"
DESCRIPTION = (
    "Rank the rows of a k-fold experiment's out-of-fold predictions (or of a "
    "predictions table of rows the model did not train on) by how likely their label is "
    "wrong, and write them to a CSV with the suggested label and each row's kept fields."
)
EPILOG = """examples:
  guiapp labels --experiment runs/cv5 --out cv5-labels.csv
  guiapp labels --experiment runs/cv5 --out all.csv --all --rank-by normalized_margin
  guiapp labels --predictions other-pred.h5 --out labels.csv --class blob
The predictions must come from models that did not train on the rows: a k-fold
experiment's folds, or guiapp predict of a run's --split val/test or of other data."""


def register(sub: Any) -> None:
    s = command_parser(sub, "labels", HELP, EPILOG, DESCRIPTION)
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--experiment", metavar="EXP", help="a k-fold experiment (or run) folder")
    src.add_argument("--predictions", metavar="PRED.h5", nargs="+", help="predictions tables")
    s.add_argument("--out", required=True, help="the ranked CSV to write")
    s.add_argument(
        "--rank-by", default="self_confidence", help="self_confidence or normalized_margin"
    )
    s.add_argument("--all", action="store_true", help="every row, the likely issues first")
    s.add_argument("--class", dest="class_name", metavar="NAME", help="only rows labelled NAME")
    s.add_argument("--events", default=None, help="'-' to print JSON-line events on stdout")
    s.set_defaults(func=cmd_labels)


def cmd_labels(args: argparse.Namespace) -> int:
    from ..core.events import EventSink
    from ..core.explain import label_issues as li

    out = Path(args.out)
    check_writable_output(out, folder=False)
    if args.experiment:
        sources = li.experiment_sources(args.experiment)
    else:
        for p in args.predictions:
            if not Path(p).exists():
                raise UserError(f"--predictions {p}: no such file; give a predictions .h5 file")
        sources = [li.Source(Path(p).stem, Path(p)) for p in args.predictions]
    sink = EventSink(sys.stdout if args.events == "-" else None)
    sink.emit("started", job="labels", sources=[str(s.path) for s in sources])

    def progress(done: int, total: int) -> None:
        sink.emit("progress", phase="labels", done=done, total=total)

    issues = li.find_label_issues(sources, args.rank_by, progress=progress)
    class_index = None
    if args.class_name is not None:
        if args.class_name not in issues.class_names:
            raise OptionError(
                "class",
                args.class_name,
                "no such class",
                "use one of " + ", ".join(issues.class_names),
            )
        class_index = issues.class_names.index(args.class_name)
    lines = li.write_csv(issues, out, everything=args.all, class_index=class_index)
    summary = issues.summary()
    sink.emit("finished", job="labels", out=str(out), lines=lines, **summary)
    if args.events != "-":
        sys.stdout.write(
            f"{summary['issues']:,} likely label issues in {summary['rows']:,} rows "
            f"({len(sources)} source(s)); {lines:,} lines in {out}\n"
        )
        for c in summary["classes"]:
            sys.stdout.write(f"  {c['name']}: {c['issues']:,} of {c['rows']:,} rows\n")
    return 0
