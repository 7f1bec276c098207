"""``guiapp explain``: attribution maps of chosen rows (integrated gradients, occlusion,
Grad-CAM), one cached ``.npz`` per (model, row, class)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.requests import ExplainRequest, from_args
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
    command_parser(
        sub, "explain", HELP, EPILOG, DESCRIPTION, request=ExplainRequest, func=cmd_explain
    )


def cmd_explain(args: argparse.Namespace) -> int:
    from ..core.explain.job import ExplainConfig, parse_methods, parse_rows, run_explain
    from ..core.logs import divert_native_stderr

    req = from_args(ExplainRequest, args)
    cfg = ExplainConfig(
        model=req.model,
        data=req.data,
        rows=parse_rows(req.rows),
        out=req.out,
        target=req.target,
        methods=parse_methods(req.methods),
        which=req.which,
    )
    sink, cancel = job_controls(req.events, stdin_stop=False)
    divert_native_stderr()
    result = run_explain(cfg, sink, cancel)
    if req.events != "-" and result["status"] == "finished":
        for path in result["files"]:
            sys.stdout.write(path + "\n")
        sys.stderr.write(f"{result['computed']} computed, {result['cached']} from the cache\n")
    return 0
