"""``guiapp train``: a training experiment as its own process (the GUI starts it with QProcess).

The options build one typed :class:`~guiapp.core.train.experiment_spec.ExperimentSpec`
(a ``TrainConfig`` and what varies), which is written to ``OUT/spec.json`` and run. That file
is what the GUI writes too (``guiapp train --spec FILE``) and what ``--resume`` reads: no
argv is ever rebuilt from a config.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from ..core.errors import UserError, disk_error, problems_error
from ..core.logs import divert_native_stderr

#: TrainConfig fields set by an option of the same name (dashes for underscores)
OPTION_FIELDS = (
    "epochs",
    "batch",
    "val",
    "test",
    "folds",
    "fold",
    "seed",
    "devices",
    "cluster",
    "worker_index",
    "log_every",
    "checkpoint_every",
    "augment",
    "class_weights",
    "max_steps",
    "early_stopping",
    "steps_per_call",
    "split_by",
    "cache",
    "cache_share",
)

#: Options that may be given with ``--spec`` or ``--resume`` (they change no result).
RUNTIME_FIELDS = (
    "devices", "log_every", "epochs", "steps_per_call", "cluster", "worker_index", "cache",
    "cache_share",
)  # fmt: skip


def register(sub: Any) -> None:
    s = sub.add_parser(
        "train",
        help="train a model: one run, k folds, a data-scaling curve or a parameter sweep "
        "(events as JSON lines with --events -)",
    )
    a = s.add_argument
    a("--spec", help="run the experiment spec.json the GUI (or a run) wrote")
    a("--project", help="take the options from a training config of this .gproj")
    a("--config", help="with --project: the name of the training config")
    a("--data", help="dataset NAME.h5")
    a("--model", help="model spec JSON file, or a template: cnn2d-small, kmer-conv1d")
    a("--out", help="run or experiment folder to create (or to resume)")
    a("--epochs", type=int, help="epochs per trial (default 1)")
    a("--batch", type=int, help="batch per device (global = batch x devices); 256")
    a(
        "--val",
        type=float,
        help="validation fraction (whole groups where rows have groups); default 0.1",
    )
    a("--test", type=float, help="test fraction held out (whole groups too)")
    a(
        "--split-by",
        choices=["groups", "rows"],
        help="groups (default): every group of rows stays in one split, fold and fraction; "
        "rows: groups may cross splits (scores may be inflated by related rows)",
    )
    a("--folds", type=int, help="k-fold cross-validation: a trial per fold")
    a("--fold", type=int, help="with --folds: train only this fold")
    a("--fractions", help="data-scaling curve: a trial per fraction, e.g. 0.01,0.1,1.0")
    a(
        "--grid",
        help="sweep: a trial per combination, e.g. 'learning_rate=0.001,0.003;batch=64,128'",
    )
    a("--random", type=int, help="sweep: N trials drawn from --space")
    a("--space", help='with --random: JSON file, e.g. {"dropout": {"uniform": [0, 0.5]}}')
    a("--sample-seed", type=int, help="seed of the --random sample (default 0)")
    a(
        "--early-stopping",
        type=int,
        metavar="PATIENCE",
        help="stop after PATIENCE epochs without a better validation accuracy; keep the best model",
    )
    a(
        "--parallel-trials",
        action="store_true",
        help="one trial per listed device at once (--devices gpu:0,1 or cpu:N)",
    )
    a("--seed", type=int)
    a("--devices", help="auto, cpu, cpu:N (logical CPUs), gpu or gpu:0,1")
    a("--cluster", help="cluster spec JSON for multi-machine training")
    a("--worker-index", type=int, help="this worker's index in --cluster")
    a("--log-every", type=int, help="emit a batch event every N steps (20)")
    a("--checkpoint-every", type=int, help="checkpoint every N steps (200) and every epoch")
    a(
        "--steps-per-call",
        type=int,
        help="training steps per compiled call (0, the default: as many as take about 50 ms "
        "on one device, one step a call on several; N: N steps)",
    )
    a(
        "--cache",
        choices=["auto", "memory", "off"],
        help="read the rows once into memory: auto (when they take at most --cache-share of "
        "the available memory and at most 256 MB), memory or off; the batches are the same "
        "(auto)",
    )
    a(
        "--cache-share",
        type=float,
        help="with --cache auto: the share of the available memory a cache may take (0.5)",
    )
    a("--augment", help='on-the-fly augmentation JSON, e.g. {"flip_h": true}')
    a("--class-weights", choices=["balanced"])
    a("--max-steps", type=int, help="cap the steps per epoch (quick runs)")
    a("--no-tensorboard", action="store_true", help="write no TensorBoard event files")
    a(
        "--resume",
        action="store_true",
        help="continue the experiment in --out: skip finished trials, resume the one in progress",
    )
    a(
        "--restart",
        action="store_true",
        help="start the run in --out again from the beginning (replaces that run folder)",
    )
    a("--trial", help=argparse.SUPPRESS)  # a parallel child: this trial only
    a("--events", help="'-' to print JSON-line events on stdout")
    s.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    spec = build_spec(args)
    problems = spec.check()
    if problems:
        raise problems_error(problems)
    with run_lock(spec, args):
        return _train(spec, args)


def run_lock(spec: Any, args: argparse.Namespace) -> Any:
    """The run folder's lock (``core/train/run_lock.py``): taken by the process that writes
    the folder; not by a parallel trial (its parent holds it) or a cluster's other workers."""
    import contextlib

    from ..core.train.run_lock import RunLock

    base = spec.base
    if args.trial is not None or (base.cluster and base.worker_index != 0):
        return contextlib.nullcontext()
    return RunLock(spec.out)


def _train(spec: Any, args: argparse.Namespace) -> int:
    from ..core.events import CancelToken, EventSink

    check_before_tensorflow(spec, resume=args.resume, restart=args.restart)
    sink = EventSink(sys.stdout if args.events == "-" else None)
    if args.events != "-":
        sink.listeners.append(_print_human)
    cancel = CancelToken()
    cancel.install_signal_handlers()
    cancel.watch_stdin()
    divert_native_stderr()
    from ..core.train.devices import cluster_error
    from ..core.train.experiment import run_experiment
    from ..core.train.runner import failure_text

    try:
        result = run_experiment(spec, sink, cancel, resume=args.resume, trial=args.trial)
    except UserError as exc:
        _emit_failed(sink, spec, reason=str(exc))
        raise
    except Exception as exc:
        disk = disk_error(getattr(exc, "filename", None) or spec.out, exc, resume=RESUME_FIX)
        if disk is not None:
            _emit_failed(sink, spec, reason=str(disk))
            raise disk from None
        log = spec.out / "train.log"
        if log.parent.is_dir():
            with open(log, "a") as fh:
                fh.write(failure_text(exc))
        lost = cluster_error(exc, spec.base.cluster, spec.base.worker_index, "--resume")
        if lost is not None:  # the details stay in the log
            _emit_failed(sink, spec, reason=str(lost), log=str(log))
            raise lost from None
        _emit_failed(sink, spec, reason=f"{type(exc).__name__}: {exc}", log=str(log))
        raise
    return 0 if result.get("status") in ("finished", "stopped") else 1


def build_spec(args: argparse.Namespace) -> Any:
    """The experiment the options describe: a spec file, a folder to resume, or options."""
    from ..core.train.config import TrainConfig, parse_augment
    from ..core.train.experiment_spec import (
        ExperimentSpec,
        load_space,
        parse_fractions,
        parse_grid,
    )

    given = {k: getattr(args, k) for k in OPTION_FIELDS if getattr(args, k) is not None}
    if args.spec or (args.resume and args.out and not (args.data or args.model or args.project)):
        spec = ExperimentSpec.load(args.spec) if args.spec else ExperimentSpec.of_folder(args.out)
        runtime = {k: v for k, v in given.items() if k in RUNTIME_FIELDS}
        spec.base = dataclasses.replace(spec.base, **runtime)
        if args.parallel_trials:
            spec.parallel_trials = True
        return spec
    settings: dict[str, Any] = {}
    if args.project:
        if not args.config:
            raise UserError("--project needs --config NAME: the training config to run")
        settings = project_settings(args.project, args.config)
    settings.update({k: v for k, v in (("data", args.data), ("out", args.out)) if v})
    if args.model:
        settings["model"] = args.model
    missing = [f"--{k}" for k in ("data", "model", "out") if k not in settings]
    if missing:
        raise UserError(
            f"guiapp train: {', '.join(missing)} required (or --project P.gproj --config NAME, "
            "or --spec FILE)"
        )
    settings.update(given)
    if isinstance(settings["model"], str):
        settings["model"] = load_model_arg(settings["model"], str(settings["data"]))
    if isinstance(settings.get("augment"), str):
        settings["augment"] = parse_augment(settings["augment"])
    folds = int(settings.get("folds") or 0)
    all_folds = folds > 0 and settings.get("fold") is None
    settings["fold"] = settings.get("fold") or 0
    settings["tensorboard"] = not args.no_tensorboard
    if args.resume:
        settings.update(recorded_settings(Path(str(settings["out"]))))
    base = TrainConfig.from_json({k: v for k, v in settings.items() if v is not None}, "options")
    return ExperimentSpec(
        base=base,
        folds=list(range(folds)) if all_folds else [],
        fractions=parse_fractions(args.fractions) if args.fractions else [],
        grid=parse_grid(args.grid) if args.grid else {},
        random=args.random or 0,
        space=load_space(args.space) if args.space else {},
        seed=args.sample_seed or 0,
        parallel_trials=args.parallel_trials,
    )


def recorded_settings(out: Path) -> dict[str, Any]:
    """What a run or experiment in ``out`` ran with that is not an option (its split sizes:
    runs from before exact sizes keep theirs), for the same command with ``--resume``."""
    import json

    from ..core.train.config import recorded_defaults

    for name, key in (("spec.json", "base"), ("config.json", "config")):
        try:
            recorded = json.loads((out / name).read_text(encoding="utf-8"))[key]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(recorded, dict):
            return {"split_sizes": recorded_defaults(recorded)["split_sizes"]}
    return {}


def project_settings(project_file: str, name: str) -> dict[str, Any]:
    """The settings of ``project.training[name]``, paths resolved against the project.

    A training config: ``{"name": "cells-cnn", "dataset": <dataset name or path>, "model":
    <model name in the project, template name or spec file>, "out": "runs/x", "epochs": 5,
    "batch": 256, ...}`` (any ``TrainConfig`` field).
    """
    from ..core.project import Project

    project = Project.load(project_file)
    entries = {t.name: t for t in project.training}
    if name not in entries:
        names = ", ".join(str(n) for n in entries) or "none"
        raise UserError(f"{project_file}: no training config named {name!r} (there are: {names})")
    entry = entries[name]
    settings = {k: v for k, v in entry.extra.items() if k in OPTION_FIELDS}
    datasets = {d.name: d.path for d in project.datasets}
    if entry.dataset:
        ds = entry.dataset
        settings["data"] = str(datasets.get(ds) or project.resolve(ds))
    if entry.model:
        models = {m.name: m.spec for m in project.models}
        model = entry.model
        spec = models.get(model)
        if spec is not None:
            settings["model"] = dict(spec)
        else:
            settings["model"] = (
                str(project.resolve(model)) if str(model).endswith(".json") else str(model)
            )
    out = entry.out or f"runs/{name}"
    settings["out"] = str(project.resolve(out))
    folder = Path(os.path.normpath(project.folder))
    if not Path(out).is_absolute() and not Path(settings["out"]).is_relative_to(folder):
        raise UserError(
            f"{project_file}: training config {name!r} writes its run to {out!r}, outside "
            f"the project's folder {folder}. Give a path inside it (like runs/{name}), or "
            "an absolute one if you mean to write elsewhere"
        )
    return settings


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


def _emit_failed(sink: Any, spec: Any, **fields: Any) -> None:
    """The ``failed`` event, on stdout and in the run's own ``events.jsonl`` (a single run's
    folder is ``--out``; an experiment's sink already writes its ``events.jsonl``)."""
    log = spec.out / "events.jsonl"
    if sink.log_path is None and log.exists():
        sink.log_path = log
    sink.emit("failed", **fields)


RESUME_FIX = "rerun the same command with --resume"


def check_before_tensorflow(spec: Any, *, resume: bool = False, restart: bool = False) -> None:
    """Everything that can be checked without TensorFlow, whose import takes seconds: the
    dataset opens and is ready (rows, sealed, not being written, finite), every trial's
    model fits it (input shape, dtype, labels against the output layer), the augmentation
    fits its samples, and ``--out`` can hold the run (a run there exactly when resuming,
    and an intact checkpoint). With ``restart`` the old run folder is then removed."""
    from ..core.store import Dataset
    from ..core.train import preflight

    trials = spec.trials()
    seen: set[str] = set()
    for t in trials:
        key = repr((t.config.data, t.config.model, t.config.augment))
        if key in seen:
            continue
        seen.add(key)
        with Dataset(t.config.data) as ds:
            try:
                preflight.check_model_against_data(t.config.model, ds)
                preflight.check_augment_fits(t.config, ds)
            except UserError as exc:
                raise exc.restated(
                    str(exc) if len(trials) == 1 else f"trial {t.id}: {exc}"
                ) from None
    if len(trials) == 1:
        preflight.check_run_folder(trials[0].config, resume=resume, restart=restart)
    elif resume and restart:
        raise UserError("--resume and --restart: give one of them (continue, or start again)")
    elif not resume and not restart:
        preflight.check_not_foreign(spec.out)
    if restart:
        preflight.clear_run_folder(spec.out)


def _print_human(e: dict[str, Any]) -> None:
    from ..core.train.describe import describe_event

    text = describe_event(e, verbose=True)
    if text is not None and e.get("event") != "failed":  # "failed": main() prints the error
        sys.stderr.write(text + "\n")
