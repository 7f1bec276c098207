"""TensorBoard event files for a run: a listener on the run's events.

``RUN_DIR/tensorboard/`` receives, through ``tf.summary``, the batch curves at their global
step (``batch/loss``, ``batch/accuracy``, ``batch/top3_accuracy``, ``batch/rows_per_s``,
``batch/input_wait``), the epoch curves at the epoch number, 1-based (``epoch/loss``,
``epoch/val_accuracy``, ``epoch/val_top3_accuracy``, ``epoch/input_wait``, ...) and, through
the HParams plugin, the trial's parameters with the metrics the dashboard lists. The
metric names come from :mod:`.metrics` (the run's own, from its ``started`` event). So
``tensorboard --logdir EXPERIMENT_DIR`` shows every trial's curves and the HParams table.
The runner knows nothing of it: it emits events, this writes them.
"""

from __future__ import annotations

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

    def _open(self) -> Any:
        if self._writer is None:
            import tensorflow as tf

            self._writer = tf.summary.create_file_writer(str(self.dir))
        return self._writer

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
        import tensorflow as tf

        with self._open().as_default():
            for name in names:
                value = event.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    tf.summary.scalar(f"{prefix}/{name}", float(value), step=step)

    def _hparams(self, event: dict[str, Any]) -> None:
        from tensorboard.plugins.hparams import api as hp

        cfg = event.get("config") or {}
        params = {
            "batch": cfg.get("batch"),
            "epochs": cfg.get("epochs"),
            **self.params,
        }
        params = {k: hparam_value(v) for k, v in params.items() if v is not None}
        with self._open().as_default():
            hp.hparams_config(
                hparams=[hp.HParam(name) for name in params],
                metrics=[
                    hp.Metric(tag) for tag in hparam_metrics(run_metrics(event.get("metrics")))
                ],
            )
            hp.hparams(params, trial_id=self.trial)
        self._open().flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
