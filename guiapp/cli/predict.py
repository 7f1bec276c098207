"""``guiapp predict``: a trained model over a dataset or a file, as its own process."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..core.errors import UserError
from ..core.logs import divert_native_stderr

EPILOG = """examples:
  guiapp predict --model runs/cells --data cells.h5 --out cells-pred.h5 --split val
  guiapp predict --model runs/kmers/best.keras --data new.h5 --out pred.h5 --top-k 3 --probs
  guiapp predict --model runs/kmers --data new.jsonl --out pred.csv      (no import step)
  guiapp predict --model runs/docs --data docs.h5 --out pred.csv --aggregate-by group \
      --min-confidence 0.6        (also pred.groups.csv: one line per group)
  guiapp predict --model runs/genomes --data new.fasta.gz --out pred.csv --rc-average
      (tokenised with the run's tokenizer; pred.groups.csv: one call per genome)
Running the same command again continues a stopped or killed prediction."""


def register(sub: Any) -> None:
    s = sub.add_parser(
        "predict",
        help="predict every row of a dataset or file with a trained model (HDF5 or CSV out)",
        description="Run a trained model over a dataset split or any file the importers read, "
        "in dataset order, writing row, label, pred, prob, topk_class, topk_prob (and probs) "
        "and the rows' group and kept fields (_id, ...) to PRED.h5 (chunked HDF5) or PRED.csv.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--model", required=True, help="a run folder or a MODEL.keras file")
    s.add_argument("--which", default="best", choices=("best", "last"), help="a run's model")
    s.add_argument(
        "--data",
        required=True,
        help="dataset NAME.h5, a JSONL/CSV/TSV/npy/npz file, or genomes: FASTA/FASTQ[.gz] "
        "or a manifest TSV (file, class, group)",
    )
    s.add_argument("--out", required=True, help="PRED.h5 (any size) or PRED.csv (small results)")
    s.add_argument("--split", default="all", choices=("all", "train", "val", "test"))
    s.add_argument("--top-k", type=int, default=5, help="classes kept per row (default 5)")
    s.add_argument("--probs", action="store_true", help="also keep the full probability vector")
    s.add_argument("--batch", type=int, default=512, help="batch size per device (default 512)")
    s.add_argument("--devices", default="auto", help="auto, cpu, cpu:N, gpu or gpu:0,1")
    s.add_argument("--overwrite", action="store_true", help="replace another job's --out")
    s.add_argument("--class-names", help="file input without a run folder: the model's classes")
    s.add_argument(
        "--ignore-class-names",
        action="store_true",
        help="compare labels with predictions by class index although the dataset's class "
        "names differ from the model's",
    )
    s.add_argument(
        "--class-map",
        metavar="DATA=MODEL,...",
        help="the dataset's class names the model calls otherwise, e.g. spot=blob,bar=edge: "
        "labels are compared in the model's classes",
    )
    s.add_argument(
        "--aggregate-by",
        metavar="FIELD",
        help="also write PRED.groups.csv: per group (FIELD: group or a kept field) its rows, "
        "class by mean probability, class by vote, agreement and true class",
    )
    s.add_argument(
        "--min-confidence",
        metavar="P",
        type=float,
        default=0.0,
        help="with --aggregate-by: groups whose class's mean probability is below P are "
        "unclassified (default 0: never)",
    )
    s.add_argument(
        "--rc-average",
        action="store_true",
        help="1-D k-mer rows: average each row's probabilities with its reverse's (with "
        "canonical k-mers, the read's reverse complement)",
    )
    s.add_argument(
        "--genome-params",
        metavar="JSON",
        help='genome input: how rows are cut, e.g. \'{"mode": "tiling", "stride": 63}\' '
        "(the tokenizer is always the run's)",
    )
    g = s.add_argument_group("file input (as for guiapp import)")
    g.add_argument("--format", help="jsonl, csv, tsv, npy or npz (default: from the name)")
    g.add_argument("--label-field", default="label")
    g.add_argument("--data-field", default="data")
    g.add_argument("--x-key", default="x")
    g.add_argument("--y-key", default="y")
    g.add_argument("--length", type=int, help="pad or cut 1-D rows (default: the model's length)")
    g.add_argument("--on-error", default="abort", choices=("abort", "skip"))
    g.add_argument(
        "--group-field",
        metavar="FIELD",
        help="each record's group (as guiapp import; the file is then imported whole, "
        "shuffled, and every prediction carries its group)",
    )
    g.add_argument(
        "--keep-fields",
        metavar="A,B",
        help="fields kept per record (as guiapp import), e.g. _id: in every prediction",
    )
    s.add_argument("--commit-rows", type=int, default=1 << 16, help=argparse.SUPPRESS)
    s.add_argument("--events", default=None, help="'-' to print JSON-line events on stdout")
    s.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    from ..core.events import CancelToken, EventSink
    from ..core.predict.job import PredictConfig

    cfg = PredictConfig(
        model=args.model,
        data=args.data,
        out=args.out,
        split=args.split,
        top_k=args.top_k,
        probs=args.probs,
        batch=args.batch,
        devices=args.devices,
        which=args.which,
        overwrite=args.overwrite,
        commit_rows=args.commit_rows,
        input={
            k: getattr(args, k)
            for k in ("format", "label_field", "data_field", "x_key", "y_key", "length", "on_error")
        },
        class_names=args.class_names.split(",") if args.class_names else None,
        aggregate_by=args.aggregate_by,
        min_confidence=args.min_confidence,
        ignore_class_names=args.ignore_class_names,
        rc_average=args.rc_average,
    )
    if args.genome_params:
        from ..core.errors import load_json

        cfg.genome_params = load_json(args.genome_params, "--genome-params")
        if not isinstance(cfg.genome_params, dict):
            raise UserError('--genome-params: give a JSON object like \'{"mode": "tiling"}\'')
    if args.class_map:
        from ..core.predict.job import parse_class_map

        cfg.class_map = parse_class_map(args.class_map)
    if args.group_field:
        cfg.input["group_field"] = args.group_field
    if args.keep_fields is not None:
        cfg.input["keep_fields"] = [k.strip() for k in args.keep_fields.split(",")]
    from pathlib import Path

    from ..core.predict.genome_input import is_genome_input

    if not cfg.aggregate_by and is_genome_input(Path(cfg.data), cfg.input.get("format")):
        cfg.aggregate_by = "group"  # genomes in, organisms out: the per-genome table
    cfg.check()
    check_before_tensorflow(cfg)
    sink = EventSink(sys.stdout if args.events == "-" else None)
    if args.events != "-":
        sink.listeners.append(HumanProgress())
    cancel = CancelToken()
    cancel.install_signal_handlers()
    cancel.watch_stdin()
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
