"""TensorBoard event files for a run: a listener on the run's events.

``RUN_DIR/tensorboard/`` receives the batch curves at their global step (``batch/loss``,
``batch/accuracy``, ``batch/top3_accuracy``, ``batch/rows_per_s``, ``batch/input_wait``),
the epoch curves at the epoch number, 1-based (``epoch/loss``, ``epoch/val_accuracy``,
``epoch/val_top3_accuracy``, ``epoch/input_wait``, ...) and, through the HParams plugin,
the trial's parameters with the metrics the dashboard lists. The metric names come from
:mod:`.metrics` (the run's own, from its ``started`` event). So ``tensorboard --logdir
EXPERIMENT_DIR`` shows every trial's curves and the HParams table. The runner knows nothing
of it: it emits events, this writes them.

The summaries are TensorBoard's own protocol buffers (``scalar_pb``, ``hparams_pb``: what
``tf.summary.scalar`` and the HParams API write, float32 tensors with the plugins'
metadata), written as records by TensorBoard's ``RecordWriter`` in the calling thread (no
Python thread of its own beside the training loop, whose clock reads need the GIL), not
through TensorFlow's eager summary ops: those cost the training loop ~1.8 ms per batch
event (one op dispatch per scalar), a tenth of a light model's epoch at batch 512, and
24 ms for the HParams at the run's start (``guiapp bench baselines``).
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .metrics import ACCURACY, batch_fields, epoch_fields, extra_metrics, run_metrics

BATCH_SCALARS = batch_fields()
EPOCH_SCALARS = (*epoch_fields(), "input_wait", "startup_s")
METRICS = ("epoch/val_accuracy", "epoch/val_loss", "epoch/accuracy", "epoch/loss")


def hparam_metrics(names: Sequence[str] = (ACCURACY,)) -> tuple[str, ...]:
    """The scalars the HParams table lists for a run computing ``names``."""
    extras = extra_metrics(names)
    return (*METRICS, *(f"epoch/val_{m}" for m in extras), *(f"epoch/{m}" for m in extras))


FOLDER = "tensorboard"
#: A number for each event file this process opens (two trials in one second get two)
_files = itertools.count()


def tensorboard_missing() -> str | None:
    """Why no TensorBoard files can be written (the package is absent), or None."""
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        return "no TensorBoard files: the tensorboard package is not installed"
    return None


def hparam_value(value: Any) -> bool | int | float | str:
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class TensorBoardLog:
    """Call with each event of one run; :meth:`close` at the end of the run."""

    def __init__(self, run_dir: str | Path, trial: str, params: dict[str, Any]) -> None:
        self.dir = Path(run_dir) / FOLDER
        self.trial = trial
        self.params = {k: hparam_value(v) for k, v in params.items()}
        self._writer: Any = None
        # TensorBoard's summary modules (~20 ms to import), here, as the trial is set up,
        # rather than in the run's started event
        import tensorboard.plugins.hparams.api  # noqa: F401
        import tensorboard.plugins.hparams.summary_v2  # noqa: F401
        import tensorboard.plugins.scalar.summary_v2  # noqa: F401
        import tensorboard.summary.writer.record_writer  # noqa: F401

    def _open(self) -> Any:
        if self._writer is None:
            from tensorboard.compat.proto.event_pb2 import Event
            from tensorboard.summary.writer.record_writer import RecordWriter

            self.dir.mkdir(parents=True, exist_ok=True)
            name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
            name += f".{os.getpid()}.{next(_files)}"
            self._writer = RecordWriter(open(self.dir / name, "wb"))  # noqa: SIM115
            version = Event(wall_time=time.time(), file_version="brain.Event:2")
            self._writer.write(version.SerializeToString())
        return self._writer

    def _write(self, summary: Any, step: int) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        event = Event(wall_time=time.time(), step=step, summary=summary)
        self._open().write(event.SerializeToString())

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "started" and not event.get("resumed_from"):
            self._hparams(event)
        elif kind == "batch":
            self._scalars("batch", BATCH_SCALARS, event, int(event.get("global_step", 0)))
        elif kind == "epoch":
            self._scalars("epoch", EPOCH_SCALARS, event, int(event.get("epoch", 0)))
            self._open().flush()
        elif kind in ("finished", "stopped", "failed"):
            self.close()

    def _scalars(
        self, prefix: str, names: tuple[str, ...], event: dict[str, Any], step: int
    ) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb

        summary = Summary()
        for name in names:
            value = event.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                summary.value.extend(scalar_pb(f"{prefix}/{name}", float(value)).value)
        if summary.value:
            self._write(summary, step)

    def _hparams(self, event: dict[str, Any]) -> None:
        from tensorboard.plugins.hparams import api as hp
        from tensorboard.plugins.hparams.summary_v2 import hparams_config_pb, hparams_pb

        cfg = event.get("config") or {}
        params = {
            "batch": cfg.get("batch"),
            "epochs": cfg.get("epochs"),
            **self.params,
        }
        params = {k: hparam_value(v) for k, v in params.items() if v is not None}
        metrics = [hp.Metric(tag) for tag in hparam_metrics(run_metrics(event.get("metrics")))]
        self._write(hparams_config_pb([hp.HParam(name) for name in params], metrics), 0)
        self._write(hparams_pb(params, trial_id=self.trial), 0)
        self._open().flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
