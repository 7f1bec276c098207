"""``guiapp embed``: each row's penultimate-layer activations and a 2-D map (PCA)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

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
    s = command_parser(sub, "embed", HELP, EPILOG, DESCRIPTION)
    s.add_argument("--model", required=True, help="a run folder or a MODEL.keras file")
    s.add_argument("--which", default="best", choices=("best", "last"), help="a run's model")
    s.add_argument("--data", required=True, help="the dataset NAME.h5")
    s.add_argument("--out", required=True, help="EMB.h5 to write")
    s.add_argument("--split", default="all", choices=("all", "train", "val", "test"))
    s.add_argument("--max-rows", type=int, default=1_000_000, help="sample above this many rows")
    s.add_argument("--seed", type=int, default=0, help="the sample's seed")
    s.add_argument("--batch", type=int, default=512)
    s.add_argument("--events", default=None, help="'-' to print JSON-line events on stdout")
    s.set_defaults(func=cmd_embed)


def cmd_embed(args: argparse.Namespace) -> int:
    from ..core.errors import check_writable_output
    from ..core.explain.embed import EmbedConfig, run_embed
    from ..core.logs import divert_native_stderr

    cfg = EmbedConfig(
        model=args.model,
        data=args.data,
        out=args.out,
        split=args.split,
        max_rows=args.max_rows,
        seed=args.seed,
        which=args.which,
        batch=args.batch,
    )
    cfg.check()
    check_writable_output(cfg.out, folder=False)
    sink, cancel = job_controls(args.events, stdin_stop=False)
    divert_native_stderr()
    result = run_embed(cfg, sink, cancel)
    if args.events != "-" and result["status"] == "finished":
        ratio = ", ".join(f"{r:.3f}" for r in result["explained_variance_ratio"])
        sys.stderr.write(
            f"{result['rows']:,} rows ({result['dim']} activations each) into {result['out']}; "
            f"PCA explains {ratio} of the variance\n"
        )
    return 0
