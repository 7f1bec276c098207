"""`guiapp generate`: make a dataset with a built-in or user generator (docs/GENERATION.md)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

EPILOG = """examples:
  guiapp generate cells.h5 --n 50000000 --workers 2 --seed 1
  guiapp generate reads.h5 --generator kmer1d --n 1000000 --classes 4
  guiapp generate g.h5 --generator genomes --params '{"manifest": "genomes.tsv", "k": 12}'
  guiapp generate mine.h5 --generator my_gen.py --shape 32x32 --n 10000 --params '{"a": 1}'
  guiapp generate cells.h5 --n 50000000 --plan          (print disk, shards, time; write nothing)
  guiapp generate cells.h5 --n 50000000 --resume        (finish a stopped or crashed job)"""


def register(sub: Any) -> None:
    s = sub.add_parser(
        "generate",
        help="generate a dataset (patterns2d, kmer1d or your FILE.py), in parallel, resumable",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("out", help="the dataset's index file OUT.h5 (shards go to OUT.shards/)")
    s.add_argument(
        "--generator", default="patterns2d", help="patterns2d, kmer1d, genomes or FILE.py"
    )
    s.add_argument(
        "--n", type=int, default=None, help="rows to write (after augmentation; genomes: reads)"
    )
    s.add_argument("--classes", type=int, default=None, help="number of classes (default 5)")
    s.add_argument("--shape", default=None, help="sample shape, e.g. 25x25 or 126")
    s.add_argument("--dtype", default=None, help="float32 | float16 | uint16 | ...")
    s.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    s.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    s.add_argument("--augment", default=None, help="augmentation spec: SPEC.json or inline JSON")
    s.add_argument("--params", default=None, help="generator parameters as a JSON object")
    s.add_argument("--shard-rows", type=int, default=None, help="rows per shard")
    s.add_argument(
        "--on-nonfinite",
        default="error",
        choices=["error", "skip"],
        help="rows holding NaN/Inf: refuse them (default) or drop them, counted in the provenance",
    )
    s.add_argument("--events", default=None, help="'-' to print JSON-line events on stdout")
    s.add_argument("--plan", action="store_true", help="print the plan and write nothing")
    s.add_argument("--resume", action="store_true", help="finish an unfinished dataset")
    s.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    s.set_defaults(func=cmd_generate)


def _config(args: argparse.Namespace) -> Any:
    from ..core.errors import TOO_DEEP, UserError, json_problem
    from ..core.generate import load_spec, resolve_config
    from ..core.store import parse_shape

    params = None
    if args.params:
        try:
            params = json.loads(args.params)
        except (json.JSONDecodeError, RecursionError) as exc:
            problem = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else TOO_DEEP
            raise UserError(
                f"--params: {problem}; give an object like '{{\"difficulty\": 0.5}}'"
            ) from None
        if not isinstance(params, dict):
            raise UserError("--params: give a JSON object like '{\"difficulty\": 0.5}'")
    shape = None
    if args.shape:
        try:
            shape = parse_shape(args.shape)
        except ValueError as exc:
            raise UserError(f"--shape: {exc}") from None
    return resolve_config(
        args.generator,
        n=args.n,
        seed=args.seed,
        classes=args.classes,
        shape=shape,
        dtype=args.dtype,
        params=params,
        augment=load_spec(args.augment),
        shard_rows=args.shard_rows,
        on_nonfinite=args.on_nonfinite,
    )


class _HumanProgress:
    """A progress line on stderr every few seconds (when events are not on stdout)."""

    def __init__(self, every_s: float = 2.0) -> None:
        self.every_s = every_s
        self.last = 0.0

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e["event"]
        now = time.monotonic()
        if kind == "progress" and e["done"] and now - self.last >= self.every_s:
            self.last = now
            eta = "?" if e.get("eta_s") is None else f"{e['eta_s']:.0f} s"
            sys.stderr.write(
                f"generate: {e['rows_done']:,} rows, {e['rows_per_s']:,.0f} rows/s, "
                f"{e['bytes_written'] / 2**20:,.0f} MiB written, ETA {eta}\n"
            )
        elif kind == "log":
            sys.stderr.write(f"generate: {e['message']}\n")
        elif kind in ("finished", "stopped"):
            sys.stderr.write(
                f"generate: {kind}: {e['rows']:,} of {e['total']:,} rows, "
                f"{e['shards_sealed']}/{e['shards']} shard(s) sealed in {e['elapsed_s']:.1f} s\n"
            )


def cmd_generate(args: argparse.Namespace) -> int:
    from ..core.errors import DatasetError, UserError, check_writable_output
    from ..core.events import CancelToken, EventSink
    from ..core.generate import events_log_path, generate, plan_generation
    from ..core.generate.job import plan_does_not_fit

    cfg = _config(args)
    out = Path(args.out)
    check_writable_output(out, folder=False, option="output path")
    to_stdout = args.events == "-"
    if args.plan:
        plan = plan_generation(cfg, out, args.workers, resume=args.resume)
        if to_stdout:
            EventSink(sys.stdout).emit("plan", **plan.to_json())
        else:
            sys.stdout.write(plan.text() + "\n")
        if plan.bytes_needed > plan.free_bytes:
            raise plan_does_not_fit(plan, out.absolute())
        return 0
    token = CancelToken()
    token.install_signal_handlers()
    token.watch_stdin()
    existed = out.exists()
    folder = out.absolute().parent
    made = [p for p in (folder, *folder.parents) if not p.exists()]  # deepest first
    folder.mkdir(parents=True, exist_ok=True)
    sink = EventSink(sys.stdout if to_stdout else None, events_log_path(out.absolute()))
    if not to_stdout:
        sink.listeners.append(_HumanProgress())
    try:
        generate(
            cfg,
            out,
            workers=args.workers,
            sink=sink,
            cancel=token,
            resume=args.resume,
            overwrite=args.overwrite,
        )
    except UserError as exc:
        for p in made:  # a refused job leaves no empty folders of its own behind
            with contextlib.suppress(OSError):
                p.rmdir()
        if (
            isinstance(exc, DatasetError)
            and existed
            and Path(exc.path).absolute() == out.absolute()
        ):
            # the output was there before: refused, or not resumable, it is --overwrite's
            raise exc.concerning("--overwrite", args.overwrite) from None
        raise
    return 0
