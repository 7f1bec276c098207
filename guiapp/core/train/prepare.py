"""``prepare_run``: everything a training run does before its first step.

It owns the set-up: opening the data and checking the model against it, checking the run
folder against ``--resume`` and restoring the checkpoint's variables and position
(``RunState``), seeding, building the model and optimizer under the strategy, the train and
validation pipelines and the number of steps per epoch that every worker runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import errors
from ..errors import UserError
from ..pipeline import AugmentSpec, BatchPipeline
from ..pipeline.batches import default_reader_threads
from ..pipeline.cache import CacheChoice
from ..pipeline.cache import choose as choose_cache
from ..pipeline.cache import load as load_cache
from ..pipeline.group_split import split_mask
from ..store import Dataset
from .checkpoint import assign_all, load_checkpoint
from .config import TrainConfig
from .devices import Devices
from .preflight import check_model_against_data
from .runfolder import RunFolder, one_based_history


@dataclasses.dataclass
class RunState:
    """Where the run stands: the position a checkpoint saves and ``--resume`` restores."""

    epoch: int = 0
    step: int = 0  # the next step within ``epoch``
    global_step: int = 0
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    best: float | None = None
    # The running sums of ``epoch`` up to ``step`` (``EpochMeters.position``), so a resumed
    # epoch's history row equals the uninterrupted one; None at an epoch's start.
    epoch_sums: dict[str, float] | None = None

    @classmethod
    def from_position(cls, position: dict[str, Any]) -> RunState:
        return cls(
            epoch=int(position["epoch"]),
            step=int(position["step"]),
            global_step=int(position.get("global_step", 0)),
            history=one_based_history(list(position.get("history", []))),
            best=position.get("best"),
            epoch_sums=position.get("epoch_sums"),
        )

    def position(self) -> dict[str, Any]:
        # The fields in order; the sums only inside an epoch (a checkpoint at its end has none).
        return {**vars(self), "epoch_sums": self.epoch_sums if self.step else None}


@dataclasses.dataclass
class PreparedRun:
    """The built parts of a run: data, model, optimizer, pipelines and their sizes."""

    ds: Dataset
    strategy: Any
    model: Any
    optimizer: Any
    loss_obj: Any
    train: BatchPipeline
    val: BatchPipeline | None
    cache: CacheChoice
    val_split: str | None
    steps: int
    x_shape: tuple[int, ...]
    local: int
    global_batch: int


def prepare_run(
    cfg: TrainConfig, dev: Devices, run: RunFolder, *, resume: bool
) -> tuple[PreparedRun, RunState]:
    """Build the run (restored from its checkpoint with ``resume``). Raises UserError."""
    import keras
    import tensorflow as tf

    ds = Dataset(cfg.data)
    check_model_against_data(cfg.model, ds)
    state, values = _restore(cfg, run, resume=resume, chief=dev.is_chief)

    tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(cfg.seed)
    from ..model import build_model, compile_parts

    strategy = dev.strategy
    with strategy.scope():
        model = build_model(cfg.model)
        loss_obj, optimizer, _metrics = compile_parts(cfg.model)
        optimizer.build(model.trainable_variables)
    if values is not None:
        with strategy.scope():
            assign_all(model.variables, values[0], "model", run.checkpoint)
            assign_all(optimizer.variables, values[1], "optimizer", run.checkpoint)

    x_shape = tuple(int(s) for s in model.input_shape[1:])
    in_dtype = str(model.inputs[0].dtype)
    in_dtype = in_dtype.removeprefix("<dtype: '").removesuffix("'>")
    local = dev.local_replicas
    per_replica = cfg.batch
    global_batch = per_replica * dev.replicas
    splits = cfg.splits()
    val_split = cfg.validation_split()
    train_mask = split_mask(ds, splits, "train", fraction=cfg.fraction, split_by=cfg.split_by)
    val_mask = split_mask(ds, splits, val_split, split_by=cfg.split_by) if val_split else None
    cache = choose_cache(ds, cfg.cache, cfg.cache_share)
    common: dict[str, Any] = dict(
        block_rows=cfg.block_rows_for(len(ds)),
        window_blocks=cfg.window_blocks,
        chunk_rows=cfg.chunk_rows,
        seed=cfg.seed,
        splits=splits,
        dtype=in_dtype,
        cache=load_cache(ds, default_reader_threads()) if cache.mode == "memory" else None,
    )
    train = BatchPipeline(
        ds,
        batch_size=per_replica,
        split="train",
        worker=dev.worker,
        workers=dev.workers,
        drop_remainder=True,
        fraction=cfg.fraction,
        row_mask=train_mask,
        augment=AugmentSpec.from_json(cfg.augment),
        class_weights=cfg.class_weights,
        **common,
    )
    # Every worker runs the same number of steps: the fewest any worker's blocks allow
    # (plain arithmetic on the read plan; no other worker's pipeline is opened).
    steps = (
        min(
            dataclasses.replace(train.plan, worker=w).epoch(0).num_batches
            for w in range(dev.workers)
        )
        // local
    )
    if cfg.max_steps:
        steps = min(steps, cfg.max_steps)
    if steps < 1:
        raise UserError(
            f"{ds.path}: the training split holds too few rows for one step of {global_batch} (batch {per_replica} x {dev.replicas} replicas); lower --batch or --val"
        )
    # Validation reads its split in dataset order (its sums do not depend on the order):
    # the run's predictions table is written in that order, from the shipped epoch's
    # validation outputs (``evaluate.Replay``) instead of a second forward pass.
    val = (
        BatchPipeline(
            ds,
            batch_size=max(per_replica, 256),
            split=val_split,
            row_mask=val_mask,
            shuffle=False,
            **common,
        )
        if val_split
        else None
    )
    prepared = PreparedRun(
        ds=ds,
        strategy=strategy,
        model=model,
        optimizer=optimizer,
        loss_obj=loss_obj,
        train=train,
        val=val,
        cache=cache,
        val_split=val_split,
        steps=steps,
        x_shape=x_shape,
        local=local,
        global_batch=global_batch,
    )
    return prepared, state


def _restore(
    cfg: TrainConfig, run: RunFolder, *, resume: bool, chief: bool
) -> tuple[RunState, tuple[list[np.ndarray], list[np.ndarray]] | None]:
    """The position to start at and, with ``resume``, the checkpoint's variable values."""
    if resume:
        if not run.config.exists():
            raise errors.nothing_to_resume(run.path)
        old = run.read_json("config.json")
        if old.get("identity") != cfg.identity():
            raise errors.run_settings_differ(run.path, cfg.differences(old.get("config", {})))
        if not run.checkpoint.exists():
            return RunState(), None  # stopped before its first checkpoint: start at step 0
        model_vals, opt_vals, position = load_checkpoint(run.checkpoint)
        return RunState.from_position(position), (model_vals, opt_vals)
    if chief and run.config.exists():
        raise errors.run_exists(run.path)
    return RunState(), None
