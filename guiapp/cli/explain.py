"""``guiapp explain``: attribution maps of chosen rows (integrated gradients, occlusion,
Grad-CAM), one cached ``.npz`` per (model, row, class)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import command_parser, job_controls

HELP = "attribution maps of chosen rows (integrated gradients, occlusion, Grad-CAM)"
DESCRIPTION = (
    "Which inputs drove a trained model's score for a class: integrated "
    "gradients and occlusion for every model, Grad-CAM for models with a convolution; "
    "a heat map over 2-D samples, a curve over 1-D rows, one .npz file per row."
)
EPILOG = """examples:
  guiapp explain --model runs/cells --data cells.h5 --rows 0,17,100-120
  guiapp explain --model runs/kmers --data reads.h5 --rows 5 --class species2 --methods ig,occlusion
Files: RUN/explain/<model>-<dataset>/row<R>-pred.npz (numpy.load(..., allow_pickle=False));
a row already explained is read from there, not computed again (docs/EXPLAIN.md)."""


def register(sub: Any) -> None:
    s = command_parser(sub, "explain", HELP, EPILOG, DESCRIPTION)
    s.add_argument("--model", required=True, help="a run folder or a MODEL.keras file")
    s.add_argument("--which", default="best", choices=("best", "last"), help="a run's model")
    s.add_argument("--data", required=True, help="the dataset NAME.h5 the rows are in")
    s.add_argument("--rows", required=True, help="rows, e.g. 3,10-12 (at most 10,000)")
    s.add_argument(
        "--class", dest="target", default="pred", help="pred (default) or a class name or index"
    )
    s.add_argument(
        "--methods", help="ig,occlusion,gradcam,hirescam (default: every one the model has)"
    )
    s.add_argument("--out", help="the cache folder (default: RUN/explain)")
    s.add_argument("--events", default=None, help="'-' to print JSON-line events on stdout")
    s.set_defaults(func=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    from ..core.explain.job import ExplainConfig, parse_methods, parse_rows, run_explain
    from ..core.logs import divert_native_stderr

    cfg = ExplainConfig(
        model=args.model,
        data=args.data,
        rows=parse_rows(args.rows),
        out=args.out,
        target=args.target,
        methods=parse_methods(args.methods),
        which=args.which,
    )
    sink, cancel = job_controls(args.events, stdin_stop=False)
    divert_native_stderr()
    result = run_explain(cfg, sink, cancel)
    if args.events != "-" and result["status"] == "finished":
        for path in result["files"]:
            sys.stdout.write(path + "\n")
        sys.stderr.write(f"{result['computed']} computed, {result['cached']} from the cache\n")
    return 0
