"""Trials in parallel: one child ``guiapp train --spec SPEC --trial ID`` per device slot.

``--devices gpu:0,1 --parallel-trials`` gives two slots; each child sees one GPU
(``CUDA_VISIBLE_DEVICES``) and trains on ``gpu:0``. ``cpu:N`` gives N slots of ``cpu`` (to
try it on a machine without GPUs). ``auto`` and ``gpu`` name no count without TensorFlow,
so they run the trials one after another. The children inherit this process's niceness
(the GUI's jobs run niced); their events, already tagged with their trial, are passed on
to the experiment's sink in the order they arrive. A stop request reaches every child as
SIGTERM (each checkpoints and stops); ``--resume`` then continues each where it stopped.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import IO, Any

from ..errors import UserError
from ..events import CancelToken, EventSink
from .experiment_spec import ExperimentSpec, Trial
from .experiment_summary import trial_status, write_summary
from .runfolder import RunFolder


def device_slots(devices: str) -> list[tuple[str, dict[str, str]]]:
    """(``--devices`` of the child, its extra environment) per slot."""
    text = devices.strip()
    if text.startswith("gpu:"):
        ids = [i for i in text[4:].split(",") if i.strip()]
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        names = visible.split(",") if visible else None
        slots = []
        for i in ids:
            physical = names[int(i)] if names and int(i) < len(names) else i.strip()
            slots.append(("gpu:0", {"CUDA_VISIBLE_DEVICES": physical}))
        return slots
    if text.startswith("cpu:") and text[4:].isdigit():
        return [("cpu", {"CUDA_VISIBLE_DEVICES": ""}) for _ in range(int(text[4:]))]
    return [(text, {})]


def _cli() -> list[str]:
    return [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "guiapp"]


def _pump(stream: IO[str], out: queue.Queue[tuple[int, str | None]], slot: int) -> None:
    for line in stream:
        out.put((slot, line))
    out.put((slot, None))


def run_parallel(
    spec: ExperimentSpec,
    trials: list[Trial],
    slots: list[tuple[str, dict[str, str]]],
    sink: EventSink,
    cancel: CancelToken,
    *,
    resume: bool,
) -> dict[str, Any]:
    pending = []
    for i, t in enumerate(trials):
        if resume and trial_status(RunFolder(t.run_dir)) == "finished":
            sink.emit("trial", trial=t.id, status="finished", index=i, params=t.params)
        else:
            pending.append((i, t))
    lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
    running: dict[int, tuple[subprocess.Popen[str], Trial]] = {}
    stopped, failures = False, []

    def start(slot: int, index: int, t: Trial) -> None:
        device, env = slots[slot]
        run = RunFolder(t.run_dir)
        argv = [*_cli(), "train", "--spec", str(spec.path), "--trial", t.id]
        argv += ["--devices", device, "--events", "-"]
        if run.config.exists() and run.checkpoint.exists():
            argv.append("--resume")
        sink.emit("trial", status="started", devices=device, **env, **t.event_fields(index))
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env, "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        assert child.stdout is not None
        threading.Thread(target=_pump, args=(child.stdout, lines, slot), daemon=True).start()
        running[slot] = (child, t)

    for slot in range(len(slots)):
        if pending:
            start(slot, *pending.pop(0))
    signalled = False
    while running:
        if cancel.cancelled and not signalled:
            signalled = True
            for child, _t in running.values():
                child.send_signal(signal.SIGTERM)
        try:
            slot, line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if line is not None:
            _forward(sink, line)
            continue
        child, t = running.pop(slot)
        err = child.stderr.read() if child.stderr else ""
        code = child.wait()
        if code != 0:
            last = (err.strip().splitlines() or [f"exited with code {code}"])[-1]
            failures.append((code, f"trial {t.id}: {last}"))
        elif trial_status(RunFolder(t.run_dir)) != "finished":
            stopped = True
        if pending and not cancel.cancelled and not failures:
            start(slot, *pending.pop(0))
        write_summary(spec)
    if failures:
        code, text = failures[0]
        if code == 2:
            raise UserError(text)
        raise RuntimeError(text)
    return {"status": "stopped" if stopped or pending else "finished"}


def _forward(sink: EventSink, line: str) -> None:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return
    if isinstance(event, dict) and "event" in event:
        kind = str(event.pop("event"))
        sink.emit(kind, **event)
