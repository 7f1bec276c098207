"""``TrainingJob``: one training loop for one device, many GPUs and many machines.

Our own step under ``strategy.run`` (GradientTape + the Keras optimizer, whose
``apply_gradients`` all-reduces gradients across replicas), because stock Keras 3
``model.fit`` fails under MultiWorkerMirroredStrategy (keras-team/keras#20585). The same
loop runs under OneDeviceStrategy, MirroredStrategy and MultiWorkerMirroredStrategy.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..events import CancelToken, EventSink
from ..pipeline import AugmentSpec, BatchPipeline, SplitSpec, WaitMeter
from ..store import Dataset
from .checkpoint import assign_all, load_checkpoint, save_checkpoint
from .config import TrainConfig
from .devices import Devices
from .evaluate import confusion_matrix, write_evaluation
from .preflight import check_model_against_data, resolved_config
from .runfolder import RunFolder
from .steps import make_steps


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

    # -- events --------------------------------------------------------------------------
    def emit(self, kind: str, **fields: Any) -> None:
        if self.cfg.folds:
            fields.setdefault("fold", self.cfg.fold)
        self.sink.emit(kind, **fields)

    # -- main ----------------------------------------------------------------------------------
    def run_job(self) -> dict[str, Any]:
        """Train; returns the final summary. Raises UserError for bad input."""
        import keras
        import tensorflow as tf

        cfg = self.cfg
        ds = Dataset(cfg.data)
        check_model_against_data(cfg.model, ds)
        position: dict[str, Any] = {
            "epoch": 0,
            "step": 0,
            "global_step": 0,
            "history": [],
            "best": None,
        }
        values = None
        if self.resume:
            if not self.run.config.exists():
                raise UserError(
                    f"{self.run.path}: there is no run to resume here (no config.json). Start it without --resume"
                )
            old = self.run.read_json("config.json")
            if old.get("identity") != cfg.identity():
                raise UserError(
                    f"{self.run.path}: this run was started with other data, model or settings; resume it with the same options, or start a new run with another --out"
                )
            model_vals, opt_vals, position = load_checkpoint(self.run.checkpoint)
            values = (model_vals, opt_vals)
        elif self.chief and self.run.config.exists():
            raise UserError(
                f"{self.run.path}: a run already exists there. Resume it with --resume or choose another --out"
            )

        tf.config.experimental.enable_op_determinism()
        keras.utils.set_random_seed(cfg.seed)
        from ..model import build_model, compile_parts

        strategy = self.dev.strategy
        with strategy.scope():
            model = build_model(cfg.model)
            loss_obj, optimizer, _metrics = compile_parts(cfg.model)
            optimizer.build(model.trainable_variables)
        if values is not None:
            with strategy.scope():
                assign_all(model.variables, values[0], "model", self.run.checkpoint)
                assign_all(optimizer.variables, values[1], "optimizer", self.run.checkpoint)

        x_shape = tuple(int(s) for s in model.input_shape[1:])
        in_dtype = str(model.inputs[0].dtype)
        in_dtype = in_dtype.removeprefix("<dtype: '").removesuffix("'>")
        local = self.dev.local_replicas
        per_replica = cfg.batch
        global_batch = per_replica * self.dev.replicas
        splits = SplitSpec(
            val=cfg.val, test=cfg.test, folds=cfg.folds, fold=cfg.fold, seed=cfg.seed
        )
        common: dict[str, Any] = dict(
            block_rows=cfg.block_rows_for(len(ds)),
            window_blocks=cfg.window_blocks,
            chunk_rows=cfg.chunk_rows,
            seed=cfg.seed,
            splits=splits,
            dtype=in_dtype,
        )
        train = BatchPipeline(
            ds,
            batch_size=per_replica,
            split="train",
            worker=self.dev.worker,
            workers=self.dev.workers,
            drop_remainder=True,
            fraction=cfg.fraction,
            augment=AugmentSpec.from_json(cfg.augment),
            class_weights=cfg.class_weights,
            **common,
        )
        # Every worker runs the same number of steps: the fewest any worker's blocks allow
        # (plain arithmetic on the read plan; no other worker's pipeline is opened).
        steps = (
            min(
                dataclasses.replace(train.plan, worker=w).epoch(0).num_batches
                for w in range(self.dev.workers)
            )
            // local
        )
        if cfg.max_steps:
            steps = min(steps, cfg.max_steps)
        if steps < 1:
            raise UserError(
                f"{ds.path}: the training split holds too few rows for one step of {global_batch} (batch {per_replica} x {self.dev.replicas} replicas); lower --batch or --val"
            )
        val_split = "val" if (cfg.val > 0 or cfg.folds) else ("test" if cfg.test > 0 else None)
        val = (
            BatchPipeline(ds, batch_size=max(per_replica, 256), split=val_split, **common)
            if val_split
            else None
        )
        weighted = train.weights is not None

        if self.chief:
            self.run.create()
            self.sink.log_path = self.run.events
            if not self.resume:
                self.run.write_json(
                    "config.json", resolved_config(cfg, ds, self.dev, steps, global_batch)
                )
        self.emit(
            "started",
            run_dir=str(self.run.path),
            config=cfg.to_json(),
            devices=self.dev.description,
            replicas=self.dev.replicas,
            global_batch=global_batch,
            steps_per_epoch=steps,
            epochs=cfg.epochs,
            class_names=ds.class_names,
            train_rows=steps * global_batch,
            val_rows=val.rows_per_epoch if val else 0,
            resumed_from=(
                {"epoch": position["epoch"], "step": position["step"]} if self.resume else None
            ),
        )

        train_step, predict, loss_fn = make_steps(
            model, optimizer, loss_obj, strategy, global_batch, weighted
        )

        history: list[dict[str, Any]] = list(position.get("history", []))
        best = position.get("best")
        global_step = int(position.get("global_step", 0))
        t_run = time.perf_counter()
        stopped = False
        epoch = int(position["epoch"])
        start_step = int(position["step"])
        while epoch < cfg.epochs and not stopped:
            t_epoch = time.perf_counter()
            dist = strategy.distribute_datasets_from_function(
                lambda ctx, e=epoch, s=start_step: train.tf_dataset(
                    range(e, e + 1), start_batch=s * local, x_shape=x_shape
                ).take((steps - s) * local)
            )
            it = iter(dist)
            meter = WaitMeter()
            epoch_loss = epoch_correct = 0.0
            epoch_rows = 0
            win_loss = win_correct = 0.0
            win_rows = 0
            win_t = time.perf_counter()
            win_wait = 0.0
            step = start_step
            # Input wait: time next() takes beyond the fastest fetch seen (the iterator's own
            # fixed cost when a batch is already waiting), i.e. time spent waiting for data.
            fastest = float("inf")
            while step < steps:
                t0 = time.perf_counter()
                batch = next(it)
                fetch = time.perf_counter() - t0
                fastest = min(fastest, fetch)
                waited = fetch - fastest
                meter.wait_s += waited
                win_wait += waited
                loss_sum, correct = train_step(batch)
                step += 1
                global_step += 1
                ls, cs = float(loss_sum), float(correct)
                epoch_loss += ls
                epoch_correct += cs
                epoch_rows += global_batch
                win_loss += ls
                win_correct += cs
                win_rows += global_batch
                if step % cfg.log_every == 0 or step == steps:
                    now = time.perf_counter()
                    self.emit(
                        "batch",
                        epoch=epoch,
                        step=step,
                        steps=steps,
                        global_step=global_step,
                        loss=win_loss / max(1, win_rows),
                        accuracy=win_correct / max(1, win_rows),
                        rows_per_s=win_rows / max(1e-9, now - win_t),
                        input_wait=win_wait / max(1e-9, now - win_t),
                        eta_s=(steps - step)
                        * (now - win_t)
                        / max(1, step % cfg.log_every or cfg.log_every)
                        + (cfg.epochs - epoch - 1)
                        * steps
                        * (now - t_epoch)
                        / max(1, step - start_step),
                    )
                    win_loss = win_correct = 0.0
                    win_rows = 0
                    win_wait = 0.0
                    win_t = now
                if self.cancel.cancelled:
                    stopped = True
                    break
                if step % cfg.checkpoint_every == 0 and step < steps:
                    self._checkpoint(model, optimizer, epoch, step, global_step, history, best)
            if stopped:
                self._checkpoint(model, optimizer, epoch, step, global_step, history, best)
                self.emit("stopped", epoch=epoch, step=step, checkpoint=str(self.run.checkpoint))
                break
            duration = time.perf_counter() - t_epoch
            row: dict[str, Any] = {
                "epoch": epoch,
                "loss": epoch_loss / max(1, epoch_rows),
                "accuracy": epoch_correct / max(1, epoch_rows),
                "duration_s": round(duration, 3),
                "rows_per_s": round(epoch_rows / max(duration, 1e-9), 1),
                "input_wait": round(meter.wait_s / max(duration, 1e-9), 4),
            }
            if val is not None:
                vl, va, _cm = self._evaluate(val, predict, loss_fn, x_shape, ds.num_classes)
                row.update(val_loss=vl, val_accuracy=va)
            history.append(row)
            improved = val is not None and (best is None or row["val_accuracy"] > best)
            if improved:
                best = row["val_accuracy"]
            if self.chief:
                self.run.write_history(history)
                if improved or val is None:
                    _save_model(model, self.run.best_model)
            self.emit("epoch", **row, epochs=cfg.epochs)
            epoch += 1
            start_step = 0
            self._checkpoint(model, optimizer, epoch, 0, global_step, history, best)
        weights_hash = _weights_hash(model)
        if stopped:
            return {"status": "stopped", "weights_hash": weights_hash}
        summary: dict[str, Any] = {
            "status": "finished",
            "history": history,
            "best_val_accuracy": best,
            "duration_s": round(time.perf_counter() - t_run, 3),
            "weights_hash": weights_hash,
        }
        if self.chief:
            _save_model(model, self.run.last_model)
        if val is not None:
            vl, va, cm = self._evaluate(val, predict, loss_fn, x_shape, ds.num_classes)
            if self.chief:
                report = write_evaluation(self.run, cm, ds.class_names, val_split or "val")
                self.emit(
                    "evaluation",
                    split=val_split,
                    accuracy=report["accuracy"],
                    macro_f1=report["macro_f1"],
                    confusion=report["confusion"],
                    class_names=ds.class_names,
                    classes=report["classes"],
                )
            summary["val_accuracy"] = va
            summary["val_loss"] = vl
        self.emit("finished", **{k: v for k, v in summary.items() if k != "history"})
        return summary

    # -- pieces --------------------------------------------------------------------------------
    def _checkpoint(
        self,
        model: Any,
        optimizer: Any,
        epoch: int,
        step: int,
        global_step: int,
        history: list[dict[str, Any]],
        best: float | None,
    ) -> None:
        """Save the position (epoch, next step) with every model and optimizer variable."""
        if not self.chief:
            return
        position = {
            "epoch": epoch,
            "step": step,
            "global_step": global_step,
            "history": history,
            "best": best,
        }
        save_checkpoint(self.run.checkpoint, model.variables, optimizer.variables, position)
        self.emit(
            "checkpoint",
            epoch=epoch,
            step=step,
            path=str(self.run.checkpoint),
        )

    def _evaluate(
        self, pipe: BatchPipeline, predict: Any, loss_fn: Any, x_shape: tuple[int, ...], k: int
    ) -> tuple[float, float, np.ndarray]:
        cm = np.zeros((k, k), np.int64)
        total_loss = 0.0
        for x, y in pipe.tf_dataset(range(1), x_shape=x_shape):
            probs = predict(x)
            total_loss += float(np.sum(loss_fn(y, probs)))
            p = probs.numpy()
            pred = (
                (p.reshape(-1) > 0.5).astype(np.int64)
                if p.shape[-1] == 1
                else np.argmax(p, axis=-1)
            )
            cm += confusion_matrix(y.numpy(), pred, k)
        rows = int(cm.sum())
        return total_loss / max(1, rows), float(np.trace(cm)) / max(1, rows), cm


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
