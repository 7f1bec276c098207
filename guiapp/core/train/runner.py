"""``TrainingJob``: one training loop for one device, many GPUs and many machines.

Our own step under ``strategy.run`` (GradientTape + the Keras optimizer, whose
``apply_gradients`` all-reduces gradients across replicas), because stock Keras 3
``model.fit`` fails under MultiWorkerMirroredStrategy (keras-team/keras#20585). The same
loop runs under TensorFlow's default strategy (one device), OneDeviceStrategy,
MirroredStrategy and MultiWorkerMirroredStrategy. Set-up and restore live in ``prepare``,
the compiled steps (``--steps-per-call`` per call, sums kept on the device) in ``steps``,
what an epoch reports in ``meters``; this module runs the epochs, checkpoints, evaluates
and saves. Python reads the device only every ``--log-every`` steps, before a checkpoint
and at an epoch's end, and each read checks the loss stayed finite.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from .. import errors
from ..errors import UserError
from ..events import CancelToken, EventSink
from ..pipeline import BatchPipeline
from . import collector
from .checkpoint import first_nonfinite, save_checkpoint
from .config import TrainConfig
from .devices import Devices
from .early_stopping import best_epoch, restore_best, should_stop
from .evaluate import KEEP_OUTPUTS_BYTES, evaluate_split, write_evaluation
from .meters import EpochMeters
from .metrics import metrics_of_spec
from .preflight import resolved_config
from .prepare import PreparedRun, RunState, prepare_run
from .runfolder import RunFolder
from .steps import AUTO_MIN_STEPS, CallSizer, Steps, call_size, make_steps


class TrainingJob:
    def __init__(
        self,
        cfg: TrainConfig,
        devices: Devices,
        sink: EventSink,
        cancel: CancelToken,
        *,
        resume: bool = False,
    ) -> None:
        self.cfg = cfg
        self.dev = devices
        self.sink = sink
        self.cancel = cancel
        self.resume = resume
        self.run = RunFolder(cfg.out)
        self.chief = devices.is_chief
        self._meters: EpochMeters | None = None
        #: The validation scores of the epochs this process evaluated, by history index:
        #: the shipped model's, when it is one of them, are not computed again at the end.
        self._val_scores: dict[int, dict[str, float]] = {}
        # (epoch index, its validation outputs): the best epoch's, where they fit
        self._val_outputs: tuple[int, list[tuple[Any, Any]] | None] | None = None
        self._it: Any = None  # the training iterator (``_iterator``) and where it stands
        self._it_at: tuple[int, int] = (-1, -1)
        # the training batches from a position, built before the run starts (``_batches``)
        self._dist: tuple[tuple[int, int], Any] | None = None
        # what goes on the training batches (the steps' input-wait stage)
        self._stage: Any = lambda d: d
        self._calls = CallSizer(cfg.steps_per_call, False)  # the steps of each call (``_run``)
        self._epoch_calls = [0, 0]  # this epoch's calls and their steps, in this process
        self.metrics = metrics_of_spec(cfg.model)  # what every step, row and event counts

    # -- events --------------------------------------------------------------------------
    def emit(self, kind: str, **fields: Any) -> None:
        if self.cfg.folds:
            fields.setdefault("fold", self.cfg.fold)
        self.sink.emit(kind, **fields)

    # -- main ----------------------------------------------------------------------------------
    def run_job(self) -> dict[str, Any]:
        """Train; returns the final summary. Raises UserError for bad input. Once the run
        is prepared, what exists is kept out of the garbage collector's walks
        (:func:`.collector.frozen`)."""
        prep, state = prepare_run(self.cfg, self.dev, self.run, resume=self.resume)
        with collector.frozen():
            return self._run(prep, state)

    def _run(self, prep: PreparedRun, state: RunState) -> dict[str, Any]:
        # The compiled steps (not yet traced) and the training batches are made before the
        # run says it has started, as Keras's ``fit`` makes its train function and dataset
        # before its first epoch begins; the first epoch then holds what every epoch does.
        steps = make_steps(
            prep.model,
            prep.optimizer,
            prep.loss_obj,
            prep.strategy,
            prep.global_batch,
            prep.train.weights is not None,
            segment_batches=prep.train.segment_batches,
            metrics=self.metrics,
            native_wait=True,
        )
        self._stage = steps.input_stage
        sized = steps.totals.native is not None and prep.steps >= AUTO_MIN_STEPS
        self._calls = CallSizer(self.cfg.steps_per_call, sized)
        at = (state.epoch, state.step)
        if state.epoch < self.cfg.epochs:  # (a finished run resumed has nothing to read)
            self._dist = (at, self._batches(prep, at))
        self._start(prep, state)
        t_run = time.perf_counter()
        patience = self.cfg.early_stopping
        while state.epoch < self.cfg.epochs and not should_stop(state.history, patience):
            meters = self._train_epoch(prep, steps, state)
            if meters is None:
                self._checkpoint(prep, state)
                self.emit(
                    "stopped",
                    epoch=state.epoch + 1,
                    step=state.step,
                    checkpoint=str(self.run.checkpoint),
                )
                return {"status": "stopped", "weights_hash": _weights_hash(prep.model)}
            self._end_epoch(prep, steps, state, meters)
        if patience:  # early stopping keeps the best model: the run ends with its weights
            restore_best(prep.model, self.run.best_model)
            self.emit(
                "early_stopping",
                stopped=state.epoch < self.cfg.epochs,
                epochs_run=state.epoch,
                best_epoch=_one_based(best_epoch(state.history)),
                patience=patience,
            )
        return self._finish(prep, steps, state, t_run)

    # -- set-up ----------------------------------------------------------------------------
    def _start(self, prep: PreparedRun, state: RunState) -> None:
        """Create the run folder and its config.json (chief only) and emit ``started``."""
        cfg, ds = self.cfg, prep.ds
        if self.chief:
            self.run.create()
            self.sink.log_path = self.run.events
            if not self.resume:
                self.run.write_json(
                    "config.json",
                    resolved_config(cfg, ds, self.dev, prep.steps, prep.global_batch),
                )
        self.emit(
            "started",
            run_dir=str(self.run.path),
            config=cfg.to_json(),
            devices=self.dev.description,
            replicas=self.dev.replicas,
            global_batch=prep.global_batch,
            steps_per_epoch=prep.steps,
            epochs=cfg.epochs,
            class_names=ds.class_names,
            metrics=list(self.metrics),
            epochs_from=1,
            train_rows=prep.steps * prep.global_batch,
            val_rows=prep.val.rows_per_epoch if prep.val else 0,
            cache=prep.cache.to_json(),
            split=cfg.describe_split(ds),
            resumed_from=({"epoch": state.epoch + 1, "step": state.step} if self.resume else None),
        )

    # -- the epoch loop --------------------------------------------------------------------
    def _train_epoch(self, prep: PreparedRun, steps: Steps, state: RunState) -> EpochMeters | None:
        """Run the epoch from ``state.step`` on; its meters, or None when cancelled.

        Each call runs ``--steps-per-call`` steps (0: as many as take about 50 ms,
        ``steps.CallSizer``), fewer where a log, checkpoint or the epoch's end comes
        sooner, so every one of them lands at its exact step."""
        cfg = self.cfg
        n = prep.steps
        t_epoch = time.perf_counter()
        it = self._iterator(prep, state)
        meters = EpochMeters(
            steps.totals,
            epoch=state.epoch,
            epochs=cfg.epochs,
            steps=n,
            global_batch=prep.global_batch,
            start_step=state.step,
            resumed=state.epoch_sums,
            t_epoch=t_epoch,
            metrics=self.metrics,
        )
        self._meters = meters
        calls, made = self._calls, self._epoch_calls
        made[:] = [0, 0]
        while state.step < n:
            k = call_size(state.step, n, calls.per_call, cfg.log_every, cfg.checkpoint_every)
            t_call = time.perf_counter()
            steps.train(it, k)
            if state.step > meters.start_step:
                calls.took(k, time.perf_counter() - t_call)
            made[0] += 1
            made[1] += k
            state.step += k
            state.global_step += k
            if state.step % cfg.log_every == 0 or state.step == n:
                self.emit(
                    "batch",
                    epoch=state.epoch + 1,
                    step=state.step,
                    steps=n,
                    global_step=state.global_step,
                    **meters.window(),
                )
            if self.cancel.cancelled:
                return None
            if state.step % cfg.checkpoint_every == 0 and state.step < n:
                self._checkpoint(prep, state)
        return meters

    def _iterator(self, prep: PreparedRun, state: RunState) -> Any:
        """The training batches from ``state``'s position on: one iterator over every
        epoch left, each epoch ``prep.steps`` steps long, kept from one epoch to the next
        (its read-ahead runs on through an epoch's end and validation); made anew when the
        run starts or resumes at another position."""
        at = (state.epoch, state.step)
        if self._it is not None and self._it_at == at:
            return self._it
        made, self._dist = self._dist, None
        dist = made[1] if made is not None and made[0] == at else self._batches(prep, at)
        # the first segments read while the first call traces the steps
        prep.train.start_reading(at[0], at[1] * prep.local, prep.steps * prep.local)
        self._it, self._it_at = iter(dist), at
        return self._it

    def _batches(self, prep: PreparedRun, at: tuple[int, int]) -> Any:
        """The distributed dataset of the training batches from position ``at`` (epoch,
        step) to the run's last epoch."""
        local, x_shape, train = prep.local, prep.x_shape, prep.train
        epoch, step = at
        return prep.strategy.distribute_datasets_from_function(
            lambda ctx: self._stage(
                train.tf_dataset(
                    range(epoch, self.cfg.epochs),
                    start_batch=step * local,
                    x_shape=x_shape,
                    end_batch=prep.steps * local,
                )
            )
        )

    def _checkpoint(self, prep: PreparedRun, state: RunState) -> None:
        """Save the position (epoch, next step, the epoch's sums so far) with every model and
        optimizer variable; a loss or weight that is not finite fails the run instead."""
        meters = self._meters
        state.epoch_sums = meters.position() if state.step and meters is not None else None
        # Every worker looks (not only the chief, which writes): a worker that went on to the
        # next step's all-reduce while the chief stopped would wait for it forever.
        bad = first_nonfinite(v.numpy() for v in prep.model.variables)
        if bad is not None:
            raise self._diverged(prep, state, bad)
        if not self.chief:
            return
        save_checkpoint(
            self.run.checkpoint, prep.model.variables, prep.optimizer.variables, state.position()
        )
        self.emit(
            "checkpoint",
            epoch=state.epoch + 1,
            step=state.step,
            path=str(self.run.checkpoint),
        )

    def _diverged(self, prep: PreparedRun, state: RunState, value: float) -> UserError:
        """The error for weights found NaN/Inf at this position (at an epoch's start: after
        the last step of the epoch before)."""
        if state.step:
            return errors.loss_not_finite(state.epoch, state.step, value, what="weights")
        return errors.loss_not_finite(state.epoch - 1, prep.steps, value, what="weights")

    # -- evaluation and saving -------------------------------------------------------------
    def _end_epoch(
        self, prep: PreparedRun, steps: Steps, state: RunState, meters: EpochMeters
    ) -> None:
        """Validate, record the history row, save the best model, checkpoint the next epoch."""
        row = meters.epoch_row()
        bad = first_nonfinite(v.numpy() for v in prep.model.weights)
        if bad is not None:
            state.step = prep.steps
            raise self._diverged(prep, state, bad)
        kept: list[tuple[Any, Any]] | None = [] if self.chief and _keeps_outputs(prep) else None
        if prep.val is not None:
            scores, _cm = _evaluate(prep, steps, prep.val, self.metrics, keep=kept)
            row.update({f"val_{k}": v for k, v in scores.items()})
            self._val_scores[len(state.history)] = scores
        state.history.append(row)
        improved = prep.val is not None and (state.best is None or row["val_accuracy"] > state.best)
        if improved:
            state.best = row["val_accuracy"]
            # the outputs of the weights best.keras will hold, for the predictions table
            self._val_outputs = (len(state.history) - 1, kept)
        if self.chief:
            self.run.write_history(state.history)
            if improved or prep.val is None:
                _save_model(prep.model, self.run.best_model)
        calls, made = self._epoch_calls
        # (the steps per compiled call this process ran: not a score, so not in the history)
        self.emit(
            "epoch", **row, epochs=self.cfg.epochs, steps_per_call=round(made / max(calls, 1), 2)
        )
        state.epoch += 1
        state.step = 0
        self._it_at = (state.epoch, 0)  # the iterator stands at the next epoch's first step
        self._checkpoint(prep, state)

    def _finish(
        self, prep: PreparedRun, steps: Steps, state: RunState, t_run: float
    ) -> dict[str, Any]:
        """Save the last model, evaluate it on the validation split, emit ``finished``."""
        weights_hash = _weights_hash(prep.model)
        summary: dict[str, Any] = {
            "status": "finished",
            "history": state.history,
            "best_val_accuracy": state.best,
            "duration_s": round(time.perf_counter() - t_run, 3),
            "weights_hash": weights_hash,
        }
        if self.chief:
            _save_model(prep.model, self.run.last_model)
        if prep.val is not None:
            shipped = self._shipped_model(prep, state)
            # The shipped weights are an epoch's that this process evaluated (the same
            # weights, split and computation): its scores; else evaluate them now.
            scores = self._val_scores.get(shipped["epoch"] - 1)
            kept = None
            if self._val_outputs is not None and self._val_outputs[0] == shipped["epoch"] - 1:
                kept = self._val_outputs[1]
            if scores is None:
                scores, _cm = _evaluate(prep, steps, prep.val, self.metrics)
            if self.chief:
                ds = prep.ds
                report = write_evaluation(
                    self.run,
                    None,  # counted from the predictions written first
                    ds.class_names,
                    prep.val_split or "val",
                    predictions=(prep, steps),
                    model=shipped,
                    scores=scores,
                    kept=kept,
                )
                self.emit(
                    "evaluation",
                    split=prep.val_split,
                    accuracy=report["accuracy"],
                    macro_f1=report["macro_f1"],
                    confusion=report["confusion"],
                    class_names=ds.class_names,
                    classes=report["classes"],
                    **{m: scores[m] for m in self.metrics if m != "accuracy"},
                )
            summary["val_accuracy"] = scores["accuracy"]
            summary["val_loss"] = scores["loss"]
        self.emit("finished", **{k: v for k, v in summary.items() if k != "history"})
        return summary

    def _shipped_model(self, prep: PreparedRun, state: RunState) -> dict[str, Any]:
        """Put the weights that Export ships and ``predict`` uses (``best.keras``: the epoch
        of the highest validation accuracy) into the model, so the evaluation describes
        them; what they are, for the report."""
        last = len(state.history)
        at = best_epoch(state.history)
        if at is None or not self.run.best_model.exists():
            return {"file": "last.keras", "epoch": last, "epochs": last, "chosen": "the last epoch"}
        if at != last - 1 and not self.cfg.early_stopping:  # (early stopping restored it)
            restore_best(prep.model, self.run.best_model)
        return {
            "file": "best.keras",
            "epoch": at + 1,
            "epochs": last,
            "chosen": "the highest validation accuracy",
        }


def _evaluate(
    prep: PreparedRun,
    steps: Steps,
    pipe: BatchPipeline,
    metrics: tuple[str, ...],
    keep: list[tuple[Any, Any]] | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """The split's loss and every metric of the run (``{"loss":, "accuracy":, ...}``) and
    its confusion matrix; ``keep`` gets the batches' outputs and labels."""
    k = prep.ds.num_classes
    return evaluate_split(pipe, steps.evaluate, prep.x_shape, k, metrics, keep=keep)


def _keeps_outputs(prep: PreparedRun) -> bool:
    """Whether a validation pass's outputs (float32 a class, int32 labels) fit in
    ``KEEP_OUTPUTS_BYTES``: the predictions table then reuses the best epoch's."""
    if prep.val is None:
        return False
    return prep.val.rows_per_epoch * (4 * prep.ds.num_classes + 4) <= KEEP_OUTPUTS_BYTES


def _one_based(index: int | None) -> int | None:
    """An epoch's number (1-based, as every file and event counts) from its history index."""
    return None if index is None else index + 1


def _save_model(model: Any, path: Path) -> None:
    from ..atomic import atomic_path

    with atomic_path(path) as tmp:
        model.save(tmp.with_suffix(".keras"))
        tmp.with_suffix(".keras").replace(tmp)


def _weights_hash(model: Any) -> str:
    import hashlib

    h = hashlib.sha256()
    for v in model.weights:
        h.update(np.ascontiguousarray(v.numpy()).tobytes())
    return h.hexdigest()[:16]


def failure_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
