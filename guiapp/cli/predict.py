"""``guiapp predict``: a trained model over a dataset or a file, as its own process."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..core.errors import UserError
from ..core.logs import divert_native_stderr
from ..core.requests import PredictRequest, add_arguments, from_args
from . import command_parser, job_controls

HELP = "predict every row of a dataset or file with a trained model (HDF5 or CSV out)"
DESCRIPTION = (
    "Run a trained model over a dataset split or any file the importers read, "
    "in dataset order, writing row, label, pred, prob, topk_class, topk_prob (and probs) "
    "and the rows' group and kept fields (_id, ...) to PRED.h5 (chunked HDF5) or PRED.csv."
)
EPILOG = """examples:
  guiapp predict --model runs/cells --data cells.h5 --out cells-pred.h5 --split val
  guiapp predict --model runs/kmers/best.keras --data new.h5 --out pred.h5 --top-k 3 --probs
  guiapp predict --model runs/kmers --data new.jsonl --out pred.csv      (no import step)
  guiapp predict --model runs/docs --data docs.h5 --out pred.csv --aggregate-by group \
      --min-confidence 0.6        (also pred.groups.csv: one line per group)
  guiapp predict --model runs/genomes --data new.fasta.gz --out pred.csv --rc-average
      (tokenised with the run's tokenizer; pred.groups.csv: one call per genome)
  guiapp predict --request pred.request.json      (the request a prediction keeps)
Running the same command again continues a stopped or killed prediction."""


def register(sub: Any) -> None:
    s = command_parser(sub, "predict", HELP, EPILOG, DESCRIPTION)
    add_arguments(s, PredictRequest)  # every option: the request type declares it
    s.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    return run_request(from_args(PredictRequest, args))


def _names(value: str | list[str] | None) -> list[str] | None:
    """``a, b`` (command line) or a list (request file)."""
    if isinstance(value, list):
        return [str(v).strip() for v in value]
    return [k.strip() for k in value.split(",")] if value is not None else None


def predict_config(req: PredictRequest) -> Any:
    """The job's :class:`PredictConfig` of a request (its options' texts parsed)."""
    from ..core.predict.job import PredictConfig

    cfg = PredictConfig(
        model=req.model,
        data=req.data,
        out=req.out,
        split=req.split,
        top_k=req.top_k,
        probs=req.probs,
        batch=req.batch,
        devices=req.devices,
        which=req.which,
        overwrite=req.overwrite,
        commit_rows=req.commit_rows,
        input={
            "format": req.format,
            "label_field": req.label_field,
            "data_field": req.data_field,
            "x_key": req.x_key,
            "y_key": req.y_key,
            "length": req.length,
            "on_error": req.on_error,
        },
        class_names=(
            (req.class_names if isinstance(req.class_names, list) else req.class_names.split(","))
            if req.class_names
            else None
        ),
        aggregate_by=req.aggregate_by,
        min_confidence=req.min_confidence,
        ignore_class_names=req.ignore_class_names,
        rc_average=req.rc_average,
    )
    if isinstance(req.genome_params, dict):
        cfg.genome_params = dict(req.genome_params)
    elif req.genome_params:
        from ..core.errors import load_json

        cfg.genome_params = load_json(req.genome_params, "--genome-params")
        if not isinstance(cfg.genome_params, dict):
            raise UserError('--genome-params: give a JSON object like \'{"mode": "tiling"}\'')
    if isinstance(req.class_map, dict):
        cfg.class_map = dict(req.class_map)
    elif req.class_map:
        from ..core.predict.job import parse_class_map

        cfg.class_map = parse_class_map(req.class_map)
    if req.group_field:
        cfg.input["group_field"] = req.group_field
    if req.keep_fields is not None:
        cfg.input["keep_fields"] = _names(req.keep_fields)
    from pathlib import Path

    from ..core.predict.genome_input import is_genome_input

    if not cfg.aggregate_by and is_genome_input(Path(cfg.data), cfg.input.get("format")):
        cfg.aggregate_by = "group"  # genomes in, organisms out: the per-genome table
    return cfg


def run_request(req: PredictRequest) -> int:
    """Run a ``guiapp predict`` request; the output keeps it (``PRED.request.json``)."""
    cfg = predict_config(req)
    cfg.check()
    check_before_tensorflow(cfg)
    sink, cancel = job_controls(req.events, HumanProgress())
    sink.listeners.append(request_keeper(req, cfg))
    divert_native_stderr()
    from ..core.predict.job import run_predict
    from ..core.train.devices import make_devices

    devices = make_devices(cfg.devices)
    try:
        result = run_predict(cfg, devices, sink, cancel)
    except Exception as exc:
        from ..core.errors import disk_error

        disk = disk_error(cfg.out, exc, resume="run the same command again to continue")
        sink.emit("failed", job="predict", reason=str(disk or exc))
        if disk is not None:
            raise disk from None
        raise
    return 0 if result.get("status") in ("finished", "stopped") else 1


def request_keeper(req: PredictRequest, cfg: Any) -> Any:
    """A listener that, once the job has started (its checks passed, its table created or
    resumed), writes the request beside the output: ``PRED.request.json``, atomically, its
    paths absolute and its texts parsed (``guiapp predict --request PRED.request.json``
    continues or repeats it)."""
    import contextlib
    from pathlib import Path

    from ..core.requests import absolute, output_request_path, save_request

    saved = absolute(req).replace(
        genome_params=cfg.genome_params or None,
        class_map=cfg.class_map or None,
        class_names=cfg.class_names,
        keep_fields=cfg.input.get("keep_fields"),
    )
    written: list[Path] = []

    def on_event(e: dict[str, Any]) -> None:
        if e["event"] == "started" and not written:
            with contextlib.suppress(OSError):  # a full disk: the job itself says so
                written.append(save_request(output_request_path(Path(cfg.out).absolute()), saved))

    return on_event


def check_before_tensorflow(cfg: Any) -> None:
    """A missing model or data, or a split a bare model cannot have: one line, at once
    (TensorFlow's import takes seconds)."""
    from pathlib import Path

    from ..core.errors import FileError
    from ..core.model.keras_file import check_keras_file
    from ..core.predict.source import resolve_model

    source = resolve_model(cfg.model, cfg.which)
    check_keras_file(source.path)  # damaged, or holding code: refused before TensorFlow
    from ..core.errors import check_writable_output

    check_writable_output(cfg.out, folder=False)  # a read-only disk: before TensorFlow too
    if not Path(cfg.data).exists():
        raise FileError(
            cfg.data,
            "does not exist",
            "Give a dataset NAME.h5 or a file to predict",
            option="--data",
        )
    if cfg.split != "all" and source.run_dir is None:
        raise UserError(
            f"--split {cfg.split}: a bare model file has no splits; give its run folder, or --split all",
            option="--split",
            value=cfg.split,
        )
    from ..core.predict.job import check_aggregate_field, check_file_fields, is_dataset
    from ..core.store import Dataset

    if not is_dataset(Path(cfg.data)):
        check_file_fields(cfg)
        from ..core.predict.genome_input import genome_params, is_genome_input, run_tokenizer

        if is_genome_input(Path(cfg.data), cfg.input.get("format")):
            genome_params(run_tokenizer(source), cfg.genome_params, False)
        return
    from ..core.predict.job import check_class_names, check_split_rows
    from ..core.predict.source import plan_rows, split_plan

    with Dataset(cfg.data) as ds:
        if cfg.aggregate_by:
            check_aggregate_field(cfg, ds)
        check_class_names(cfg, source, ds)
        check_split_rows(plan_rows(split_plan(ds, source, cfg.split, cfg.batch)), cfg, ds)


class HumanProgress:
    """A progress line on stderr every few seconds, and the outcome."""

    def __init__(self, every_s: float = 2.0) -> None:
        self.every_s = every_s
        self.last = time.monotonic()

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e["event"]
        if kind == "progress" and e.get("phase") == "predict":
            now = time.monotonic()
            if now - self.last < self.every_s:
                return
            self.last = now
            eta = e.get("eta_s")
            sys.stderr.write(
                f"predict {e['done']:,}/{e['total']:,} rows, {e['rows_per_s']:,.0f} rows/s"
                + (f", {eta:.0f} s left\n" if eta is not None else "\n")
            )
        elif kind == "finished":
            acc = f", accuracy {e['accuracy']:.4f}" if "accuracy" in e else ""
            rate = f" ({e['rows_per_s']:,.0f} rows/s)" if e.get("rows_per_s") else ""
            sys.stderr.write(f"predicted {e['rows']:,} rows into {e['out']}{acc}{rate}\n")
            g = e.get("groups")
            if g:
                acc = f", accuracy {g['accuracy']:.4f}" if "accuracy" in g else ""
                sys.stderr.write(
                    f"{g['groups']:,} groups by {g['field']} into {g['out']}"
                    f" ({g['unclassified']:,} unclassified{acc})\n"
                )
        elif kind == "stopped":
            sys.stderr.write(
                f"stopped at {e['done']:,}/{e['total']:,} rows; run the same command to continue\n"
            )
