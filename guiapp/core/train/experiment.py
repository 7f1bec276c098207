"""``run_experiment``: the trials of an :class:`ExperimentSpec`, each an ordinary run folder.

Trials run one after another in this process, or with ``parallel_trials`` one per listed
device at once, each in a child ``guiapp train --spec SPEC --trial ID`` (:mod:`.parallel_trials`).
Every event of a trial carries ``trial`` (its id), so one stream serves them all; an
experiment of several trials also writes that stream to ``OUT/events.jsonl`` and brackets
it with ``experiment`` (the trials and their parameters), ``trial`` (one starts or is
skipped as finished) and ``experiment_finished`` (the summary) events.

``resume`` skips finished trials, resumes the trial in progress from its checkpoint (the
runner's exact resume) and starts the others; the summary is rewritten after each trial.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..errors import UserError, problems_error
from ..events import CancelToken, EventSink
from . import collector
from .devices import Devices
from .experiment_spec import ExperimentSpec, Trial
from .experiment_summary import trial_status, write_summary
from .runfolder import RunFolder

__all__ = ["TrialSink", "run_experiment"]


class TrialSink(EventSink):
    """Tags every event with the trial id and passes it to the experiment's sink; the
    runner points :attr:`log_path` at the trial's own ``events.jsonl``."""

    def __init__(self, parent: EventSink, trial: str) -> None:
        super().__init__(None)
        self.parent = parent
        self.trial = trial
        self._own = EventSink(None)

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        fields.setdefault("trial", self.trial)
        event = self.parent.emit(kind, **fields)
        if self.log_path is not None and self.log_path != self.parent.log_path:
            self._own.log_path = self.log_path
            self._own.emit(kind, **{k: v for k, v in event.items() if k != "event"})
        for listener in self.listeners:
            listener(event)
        return event


def run_experiment(
    spec: ExperimentSpec,
    sink: EventSink,
    cancel: CancelToken,
    *,
    resume: bool = False,
    trial: str | None = None,
    devices: Devices | None = None,
) -> dict[str, Any]:
    """Run (or resume) the experiment; ``trial``: only that one (a parallel child)."""
    problems = spec.check()
    if problems:
        raise problems_error(problems)
    trials = spec.trials()
    single = len(trials) == 1
    chief = spec.base.worker_index == 0 if spec.base.cluster else True
    if trial is not None:
        trials = [t for t in trials if t.id == trial]
        if not trials:
            raise UserError(f"{spec.path}: no trial {trial!r} in this experiment")
    elif chief:  # the other workers of a cluster train the same trials, writing nothing
        _check_folder(spec, resume, single)
        spec.save()
        if not single:
            sink.log_path = spec.out / "events.jsonl"
    if not single and trial is None:
        sink.emit(
            "experiment",
            out=str(spec.out),
            varied=spec.varied(),
            trials=[{"id": t.id, "params": t.params, "run_dir": str(t.run_dir)} for t in trials],
            resumed=resume,
        )
    if spec.parallel_trials and trial is None and not single:
        from .parallel_trials import device_slots, run_parallel

        slots = device_slots(spec.base.devices)
        # One listed device (``cpu:1``, ``gpu:0``): a child process per trial, one at a time.
        if len(slots) > 1 or spec.base.devices.strip().startswith(("cpu:", "gpu:")):
            outcome = run_parallel(spec, trials, slots, sink, cancel, resume=resume)
            return _end(spec, sink, outcome, chief)
    # TensorFlow's import and the first run's set-up without the collector's walks
    with collector.paused():
        return _run_trials(spec, trials, sink, cancel, resume, trial, devices, single, chief)


def _run_trials(
    spec: ExperimentSpec,
    trials: list[Trial],
    sink: EventSink,
    cancel: CancelToken,
    resume: bool,
    trial: str | None,
    devices: Devices | None,
    single: bool,
    chief: bool,
) -> dict[str, Any]:
    """The trials one after another in this process."""
    result: dict[str, Any] = {"status": "finished"}
    for i, t in enumerate(trials):
        run = RunFolder(t.run_dir)
        status = trial_status(run)
        if not single and trial is None:
            if resume and status == "finished":
                sink.emit("trial", trial=t.id, status="finished", index=i, params=t.params)
                continue
            sink.emit("trial", status="started", **t.event_fields(i))
        if devices is None:
            from .devices import make_devices

            devices = make_devices(spec.base.devices, spec.base.cluster, spec.base.worker_index)
        result = run_trial(t, devices, sink, cancel, resume=resume and _resumable(run, single))
        if result.get("status") == "stopped":
            return _end(spec, sink, {"status": "stopped", "trial": t.id}, chief, single, trial)
        if chief and not single and trial is None:
            write_summary(spec)
    if single:
        if chief:
            write_summary(spec)
        return result
    return _end(spec, sink, {"status": "finished"}, chief, single, trial)


def run_trial(
    t: Trial, devices: Devices, sink: EventSink, cancel: CancelToken, *, resume: bool
) -> dict[str, Any]:
    """One trial: the runner with a tagging sink and, on the chief, the TensorBoard log."""
    from .runner import TrainingJob

    tsink = TrialSink(sink, t.id)
    board = None
    if t.config.tensorboard and devices.is_chief:
        from .tensorboard_log import TensorBoardLog, tensorboard_missing

        missing = tensorboard_missing()
        if missing:
            tsink.emit("log", message=missing)
        else:
            board = TensorBoardLog(t.run_dir, t.id, t.params)
            tsink.listeners.append(board)
    try:
        return TrainingJob(t.config, devices, tsink, cancel, resume=resume).run_job()
    finally:
        if board is not None:
            board.close()


def _resumable(run: RunFolder, single: bool) -> bool:
    """A trial resumes from its checkpoint; one killed before its first checkpoint restarts
    (a single run killed before its config.json was written starts again from step 0)."""
    if single:
        return bool(run.config.exists())
    if run.config.exists() and not run.checkpoint.exists():
        shutil.rmtree(run.path)
        return False
    return bool(run.config.exists())


def _check_folder(spec: ExperimentSpec, resume: bool, single: bool) -> None:
    out = spec.out
    if resume:
        if not (out / "spec.json").exists() and not (out / "config.json").exists():
            raise UserError(
                f"{out}: there is no run to resume here (no spec.json or config.json). "
                "Start it without --resume"
            )
        if (out / "spec.json").exists():
            stored = ExperimentSpec.load(out / "spec.json")
            if sorted(_identities(stored)) != sorted(_identities(spec)):
                raise UserError(
                    f"{out}: this experiment was started with other data, model or settings; "
                    f"resume it with the same options (or: guiapp train --spec {spec.path} --resume)"
                )
            align_trial_folders(spec)
        return
    started = (out / "events.jsonl").exists() or (out / "config.json").exists()
    if not started and (out / "spec.json").exists():  # written for this start (the GUI)?
        started = _comparable(ExperimentSpec.load(out / "spec.json")) != _comparable(spec)
    if started:
        raise UserError(
            f"{out}: an experiment already exists there. Resume it with --resume or choose another --out"
        )


def align_trial_folders(spec: ExperimentSpec) -> None:
    """Give each trial's run folder the trial's id. Sweeps started before trials were
    enumerated in a canonical order named them in the order of the options; a folder is
    matched to its trial by the identity its ``config.json`` records, and renamed in two
    steps (``NAME.moving``, then the trial's id), so a crash in between loses nothing."""
    trials = [t for t in spec.trials() if t.run_dir != spec.out]
    want = {t.config.identity(): t.run_dir for t in trials}
    have: dict[str, Path] = {}
    for folder in [t.run_dir for t in trials] + sorted(spec.out.glob(f"*{MOVING}")):
        ident = _recorded_identity(folder)
        if ident in want:
            have.setdefault(ident, folder)
    moves = [(src, want[i]) for i, src in have.items() if src != want[i]]
    if not moves:
        return
    staged = []
    for src, dst in moves:
        tmp = src if src.name.endswith(MOVING) else src.with_name(src.name + MOVING)
        if tmp != src:
            src.rename(tmp)
        staged.append((tmp, dst))
    for tmp, dst in staged:
        if dst.exists():  # a trial folder with no recorded identity (never started)
            shutil.rmtree(dst)
        tmp.rename(dst)


MOVING = ".moving"


def _recorded_identity(folder: Path) -> str | None:
    try:
        value = json.loads((folder / "config.json").read_text(encoding="utf-8"))["identity"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(value)


def _comparable(spec: ExperimentSpec) -> dict[str, Any]:
    data = spec.to_json()
    runtime = ("out", "devices", "cluster", "worker_index", "log_every")
    data["base"] = {k: v for k, v in data["base"].items() if k not in runtime}
    return data


def _identities(spec: ExperimentSpec) -> list[tuple[str, str]]:
    return [(t.id, t.config.identity()) for t in spec.trials()]


def _end(
    spec: ExperimentSpec,
    sink: EventSink,
    result: dict[str, Any],
    chief: bool,
    single: bool = False,
    trial: str | None = None,
) -> dict[str, Any]:
    if single or trial is not None:
        return result
    if chief:
        data = write_summary(spec)
        result["summary"] = data["summary"]
        if result["status"] == "finished":
            sink.emit("experiment_finished", summary=data["summary"], trials=data["trials"])
    return result
