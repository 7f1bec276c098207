"""`guiapp generate`: make a dataset with a built-in or user generator (docs/GENERATION.md)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..core.requests import GenerateRequest, add_arguments, from_args
from . import command_parser

HELP = "generate a dataset (patterns2d, kmer1d or your FILE.py), in parallel, resumable"
EPILOG = """examples:
  guiapp generate cells.h5 --n 50000000 --workers 2 --seed 1
  guiapp generate reads.h5 --generator kmer1d --n 1000000 --classes 4
  guiapp generate g.h5 --generator genomes --params '{"manifest": "genomes.tsv", "k": 12}'
  guiapp generate mine.h5 --generator my_gen.py --shape 32x32 --n 10000 --params '{"a": 1}'
  guiapp generate cells.h5 --n 50000000 --plan          (print disk, shards, time; write nothing)
  guiapp generate cells.h5 --n 50000000 --resume        (finish a stopped or crashed job)
  guiapp generate --request cells.request.json --resume (the request a dataset keeps)"""


def register(sub: Any) -> None:
    s = command_parser(sub, "generate", HELP, EPILOG)
    add_arguments(s, GenerateRequest)  # every option: the request type declares it
    s.set_defaults(func=cmd_generate)


def _params(req: GenerateRequest) -> dict[str, Any] | None:
    """The generator's parameters: the request's object, or its JSON text parsed."""
    from ..core.errors import TOO_DEEP, UserError, json_problem

    params = req.params if isinstance(req.params, dict) else None
    if isinstance(req.params, str) and req.params:
        try:
            params = json.loads(req.params)
        except (json.JSONDecodeError, RecursionError) as exc:
            problem = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else TOO_DEEP
            raise UserError(
                f"--params: {problem}; give an object like '{{\"difficulty\": 0.5}}'"
            ) from None
        if not isinstance(params, dict):
            raise UserError("--params: give a JSON object like '{\"difficulty\": 0.5}'")
    return params


def _config(req: GenerateRequest) -> Any:
    from ..core.errors import UserError
    from ..core.generate import load_spec, resolve_config
    from ..core.store import parse_shape

    params = _params(req)
    shape = None
    if req.shape:
        try:
            shape = parse_shape(req.shape)
        except ValueError as exc:
            raise UserError(f"--shape: {exc}") from None
    return resolve_config(
        req.generator,
        n=req.n,
        seed=req.seed,
        classes=req.classes,
        shape=shape,
        dtype=req.dtype,
        params=params,
        augment=load_spec(req.augment),
        shard_rows=req.shard_rows,
        on_nonfinite=req.on_nonfinite,
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
    return run_request(from_args(GenerateRequest, args))


def run_request(req: GenerateRequest) -> int:
    """Run a ``guiapp generate`` request: its plan, or the job; the job's output keeps the
    request (``OUT.request.json``, :func:`keep_request`)."""
    from ..core.errors import DatasetError, UserError, check_writable_output
    from ..core.events import CancelToken, EventSink
    from ..core.generate import events_log_path, generate, plan_generation
    from ..core.generate.job import plan_does_not_fit

    cfg = _config(req)
    out = Path(req.out)
    check_writable_output(out, folder=False, option="output path")
    to_stdout = req.events == "-"
    if req.plan:
        plan = plan_generation(cfg, out, req.workers, resume=req.resume)
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
    kept = keep_request(sink, req, cfg, out)
    try:
        generate(
            cfg,
            out,
            workers=req.workers,
            sink=sink,
            cancel=token,
            resume=req.resume,
            overwrite=req.overwrite,
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
            raise exc.concerning("--overwrite", req.overwrite) from None
        raise
    finally:
        if kept and not out.exists():  # the job removed what it wrote: its request too
            with contextlib.suppress(OSError):
                kept[0].unlink()
    return 0


def keep_request(sink: Any, req: GenerateRequest, cfg: Any, out: Path) -> list[Path]:
    """Once the job has started (its checks passed), write the request that makes ``out``
    beside it, ``OUT.request.json``, atomically: paths absolute, the augmentation and the
    parameters as the job resolved them (``guiapp generate --request OUT.request.json
    --resume`` finishes it). Returns the list the path is put in once written."""
    from ..core.generate import load_spec
    from ..core.requests import absolute, output_request_path, save_request

    kept: list[Path] = []
    saved = absolute(req).replace(
        params=_params(req),
        augment=load_spec(req.augment),
        generator=str(Path(req.generator).absolute()) if cfg.file else req.generator,
    )

    def on_event(e: dict[str, Any]) -> None:
        if e["event"] == "started" and not kept:
            with contextlib.suppress(OSError):  # a full disk: the job itself says so
                kept.append(save_request(output_request_path(out.absolute()), saved))

    sink.listeners.append(on_event)
    return kept
