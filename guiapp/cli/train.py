"""``guiapp train``: a training run as its own process (the GUI starts it with QProcess)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..core.errors import UserError, disk_error
from ..core.logs import divert_native_stderr


def register(sub: Any) -> None:
    s = sub.add_parser(
        "train", help="train a model on a dataset (events as JSON lines with --events -)"
    )
    s.add_argument(
        "--project", default=None, help="take the options from a training config of this .gproj"
    )
    s.add_argument("--config", default=None, help="with --project: the name of the training config")
    s.add_argument("--data", default=None, help="dataset NAME.h5")
    s.add_argument(
        "--model",
        default=None,
        help="model spec JSON file, or a template: cnn2d-small, kmer-conv1d",
    )
    s.add_argument("--out", default=None, help="run folder to create (or to resume)")
    s.add_argument("--epochs", type=int, default=1)
    s.add_argument(
        "--batch", type=int, default=256, help="batch size per device (global = batch x devices)"
    )
    s.add_argument("--val", type=float, default=0.1, help="validation fraction (by block)")
    s.add_argument("--test", type=float, default=0.0, help="test fraction held out (by block)")
    s.add_argument("--folds", type=int, default=0, help="k-fold cross-validation: train every fold")
    s.add_argument("--fold", type=int, default=None, help="with --folds: train only this fold")
    s.add_argument("--fractions", default=None, help="data-scaling curve, e.g. 0.01,0.1,1.0")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--devices", default="auto", help="auto, cpu, cpu:N (logical CPUs), gpu or gpu:0,1"
    )
    s.add_argument("--cluster", default=None, help="cluster spec JSON for multi-machine training")
    s.add_argument("--worker-index", type=int, default=0, help="this worker's index in --cluster")
    s.add_argument("--log-every", type=int, default=20, help="emit a batch event every N steps")
    s.add_argument(
        "--checkpoint-every",
        type=int,
        default=200,
        help="checkpoint every N steps (and every epoch)",
    )
    s.add_argument(
        "--augment", default=None, help='on-the-fly augmentation JSON, e.g. {"flip_h": true}'
    )
    s.add_argument("--class-weights", default=None, choices=["balanced"])
    s.add_argument("--max-steps", type=int, default=0, help="cap the steps per epoch (quick runs)")
    s.add_argument(
        "--resume", action="store_true", help="continue the run in --out from its last checkpoint"
    )
    s.add_argument(
        "--restart",
        action="store_true",
        help="start the run in --out again from the beginning (replaces that run folder)",
    )
    s.add_argument("--events", default=None, help="'-' to print JSON-line events on stdout")
    s.set_defaults(func=cmd_train)
    _PARSER.append(s)


_PARSER: list[argparse.ArgumentParser] = []
#: Options a project's training config may set: {"name", "dataset", "model", "out", ...}.
PROJECT_KEYS = (
    "epochs",
    "batch",
    "val",
    "test",
    "folds",
    "fold",
    "seed",
    "devices",
    "augment",
    "class_weights",
    "max_steps",
)


def apply_project(args: argparse.Namespace) -> None:
    """Fill options not given on the command line from ``project.training[name]``.

    A training config: ``{"name": "cells-cnn", "dataset": <dataset name or path>,
    "model": <model name in the project, template name or spec file>, "out": "runs/x",
    "epochs": 5, "batch": 256, ...}``; paths are relative to the project file.
    """
    from ..core.model import save_spec
    from ..core.project import Project

    project = Project.load(args.project)
    entries = {t.get("name"): t for t in project.training}
    if args.config not in entries:
        names = ", ".join(str(n) for n in entries) or "none"
        raise UserError(
            f"{args.project}: no training config named {args.config!r} (there are: {names})"
        )
    entry = entries[args.config]
    datasets = {d.name: d.path for d in project.datasets}
    if args.data is None and entry.get("dataset"):
        ds = entry["dataset"]
        args.data = str(datasets.get(ds) or project.resolve(ds))
    if args.model is None and entry.get("model"):
        models = {m.get("name"): m.get("spec") for m in project.models}
        spec = models.get(entry["model"])
        if spec is not None:
            out = Path(args.out or project.resolve(entry.get("out", f"runs/{args.config}")))
            out.parent.mkdir(parents=True, exist_ok=True)
            path = out.parent / f".{out.name}.model.json"
            save_spec(spec, path)
            args.model = str(path)
        else:
            args.model = (
                str(entry["model"])
                if not str(entry["model"]).endswith(".json")
                else str(project.resolve(entry["model"]))
            )
    if args.out is None:
        args.out = str(project.resolve(entry.get("out", f"runs/{args.config}")))
    parser = _PARSER[0]
    for key in PROJECT_KEYS:
        if key in entry and getattr(args, key) == parser.get_default(key):
            value = entry[key]
            setattr(
                args,
                key,
                json.dumps(value) if key == "augment" and isinstance(value, dict) else value,
            )


def load_model_arg(value: str, data: str) -> dict[str, Any]:
    from ..core.model import fit_template, load_spec, template_names
    from ..core.store import Dataset

    if value.endswith(".json") or os.path.exists(value):
        return dict(load_spec(value))
    if value not in template_names():
        raise UserError(
            f"--model {value}: not a spec file or a template (templates: {', '.join(template_names())})"
        )
    with Dataset(data) as ds:
        return dict(fit_template(value, ds.sample_shape, ds.num_classes))


def cmd_train(args: argparse.Namespace) -> int:
    from ..core.events import CancelToken, EventSink
    from ..core.train import TrainConfig
    from ..core.train.config import parse_augment, parse_fractions

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.project:
        if not args.config:
            raise UserError("--project needs --config NAME: the training config to run")
        apply_project(args)
    missing = [f"--{k}" for k in ("data", "model", "out") if getattr(args, k) is None]
    if missing:
        raise UserError(
            f"guiapp train: {', '.join(missing)} required (or --project P.gproj --config NAME)"
        )
    augment = parse_augment(args.augment)
    fractions = parse_fractions(args.fractions)
    spec = load_model_arg(args.model, args.data)
    cfg = TrainConfig(
        data=args.data,
        model=spec,
        out=args.out,
        epochs=args.epochs,
        batch=args.batch,
        val=args.val,
        test=args.test,
        folds=args.folds,
        fold=args.fold or 0,
        seed=args.seed,
        devices=args.devices,
        cluster=args.cluster,
        worker_index=args.worker_index,
        log_every=args.log_every,
        checkpoint_every=args.checkpoint_every,
        augment=augment,
        class_weights=args.class_weights,
        max_steps=args.max_steps,
    )
    problems = cfg.check()
    if problems:
        raise UserError("; ".join(problems))
    check_before_tensorflow(cfg, resume=args.resume, restart=args.restart)
    sink = EventSink(sys.stdout if args.events == "-" else None)
    if args.events != "-":
        sink.listeners.append(_print_human)
    cancel = CancelToken()
    cancel.install_signal_handlers()
    cancel.watch_stdin()
    divert_native_stderr()
    from ..core.train.devices import make_devices
    from ..core.train.experiment import run_training
    from ..core.train.runner import failure_text

    devices = make_devices(cfg.devices, cfg.cluster, cfg.worker_index)
    try:
        result = run_training(
            cfg,
            devices,
            sink,
            cancel,
            resume=args.resume,
            all_folds=bool(args.folds) and args.fold is None,
            fractions=fractions,
        )
    except UserError as exc:
        sink.emit("failed", reason=str(exc))
        raise
    except Exception as exc:
        disk = disk_error(getattr(exc, "filename", None) or cfg.out, exc, resume=RESUME_FIX)
        if disk is not None:
            sink.emit("failed", reason=str(disk))
            raise disk from None
        log = Path(cfg.out) / "train.log"
        if log.parent.is_dir():
            with open(log, "a") as fh:
                fh.write(failure_text(exc))
        sink.emit("failed", reason=f"{type(exc).__name__}: {exc}", log=str(log))
        raise
    return 0 if result.get("status") in ("finished", "stopped") else 1


RESUME_FIX = "rerun the same command with --resume"


def check_before_tensorflow(cfg: Any, *, resume: bool = False, restart: bool = False) -> None:
    """Everything that can be checked without TensorFlow, whose import takes seconds: the
    dataset opens and is ready (rows, sealed, not being written, finite), the model fits it
    (input shape, dtype, labels against the output layer), the augmentation fits its
    samples, and ``--out`` can hold the run (a run there exactly when resuming, and an
    intact checkpoint). With ``restart`` the old run folder is then removed."""
    from ..core.store import Dataset
    from ..core.train import preflight

    with Dataset(cfg.data) as ds:
        preflight.check_model_against_data(cfg.model, ds)
        preflight.check_augment_fits(cfg, ds)
    preflight.check_run_folder(cfg, resume=resume, restart=restart)
    if restart:
        preflight.clear_run_folder(cfg.out)


def _print_human(e: dict[str, Any]) -> None:
    kind = e["event"]
    if kind == "started":
        msg = f"training on {e['devices']}: {e['epochs']} epoch(s) of {e['steps_per_epoch']} steps, global batch {e['global_batch']}"
    elif kind == "batch":
        msg = f"  epoch {e['epoch']} step {e['step']}/{e['steps']}: loss {e['loss']:.4f} acc {e['accuracy']:.3f}, {e['rows_per_s']:,.0f} rows/s, input wait {e['input_wait']:.0%}"
    elif kind == "epoch":
        val = (
            f", val loss {e['val_loss']:.4f} val acc {e['val_accuracy']:.3f}"
            if "val_loss" in e
            else ""
        )
        msg = f"epoch {e['epoch']}: loss {e['loss']:.4f} acc {e['accuracy']:.3f}{val} ({e['duration_s']:.1f} s)"
    elif kind in ("stopped", "finished", "evaluation"):  # "failed": main() prints the error
        msg = f"{kind}: " + ", ".join(
            f"{k}={v}"
            for k, v in e.items()
            if k not in ("event", "time", "confusion", "classes", "class_names", "history")
        )
    else:
        return
    sys.stderr.write(msg + "\n")
