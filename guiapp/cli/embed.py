"""``guiapp embed``: each row's penultimate-layer activations and a 2-D map (PCA)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.requests import EmbedRequest, from_args
from . import command_parser, job_controls

HELP = "penultimate-layer activations of every row and a 2-D map of them (PCA)"
DESCRIPTION = (
    "Run a trained model over a dataset split and keep, per row, its "
    "penultimate-layer activations, its prediction and a 2-D projection (PCA) for the "
    "embedding map, in one HDF5 file."
)
EPILOG = """examples:
  guiapp embed --model runs/cells --data cells.h5 --out cells-emb.h5
  guiapp embed --model runs/cv5/fold-0 --data cells.h5 --out val-emb.h5 --split val
Above --max-rows (default 1,000,000) the rows are sampled, seeded (docs/EXPLAIN.md)."""


def register(sub: Any) -> None:
    command_parser(sub, "embed", HELP, EPILOG, DESCRIPTION, request=EmbedRequest, func=cmd_embed)


def cmd_embed(args: argparse.Namespace) -> int:
    from ..core.errors import check_writable_output
    from ..core.explain.embed import EmbedConfig, run_embed
    from ..core.logs import divert_native_stderr

    req = from_args(EmbedRequest, args)
    cfg = req.config(EmbedConfig)
    cfg.check()
    check_writable_output(cfg.out, folder=False)
    sink, cancel = job_controls(req.events, stdin_stop=False)
    divert_native_stderr()
    result = run_embed(cfg, sink, cancel)
    if req.events != "-" and result["status"] == "finished":
        ratio = ", ".join(f"{r:.3f}" for r in result["explained_variance_ratio"])
        sys.stderr.write(
            f"{result['rows']:,} rows ({result['dim']} activations each) into {result['out']}; "
            f"PCA explains {ratio} of the variance\n"
        )
    return 0
