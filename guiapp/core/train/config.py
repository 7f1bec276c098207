"""``TrainConfig``: everything a training run needs, resolved and checked before it starts.

It is the one typed form of a run's settings: the CLI builds it from its options, the GUI
from its form, and both write it into an experiment's ``spec.json``
(:mod:`.experiment_spec`); a run folder's ``config.json`` records it under ``"config"``.
:meth:`TrainConfig.from_json` reads any of them back (resume never rebuilds argv).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import UserError


@dataclass
class TrainConfig:
    data: str
    model: dict[str, Any]
    out: str
    epochs: int = 1
    batch: int = 256  # per replica; global batch = batch x replicas
    val: float = 0.1
    test: float = 0.0
    folds: int = 0
    fold: int = 0
    fraction: float = 1.0
    seed: int = 0
    devices: str = "auto"
    cluster: str | None = None
    worker_index: int = 0
    log_every: int = 20
    checkpoint_every: int = 200
    block_rows: int = 0  # 0: automatic (1024, smaller for small datasets)
    window_blocks: int = 8
    chunk_rows: int = 64
    augment: dict[str, Any] = field(default_factory=dict)
    class_weights: str | None = None
    max_steps: int = 0  # stop after this many steps per epoch (0: all); for quick runs
    early_stopping: int = 0  # stop after this many epochs without a better val accuracy (0: off)
    tensorboard: bool = True  # also write TensorBoard event files into RUN_DIR/tensorboard

    @classmethod
    def from_json(cls, obj: Any, where: str = "config") -> TrainConfig:
        """The config a ``to_json`` dict describes; unknown or missing keys are a UserError."""
        if not isinstance(obj, dict):
            raise UserError(f"{where}: a training config must be a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(obj) - names)
        if unknown:
            raise UserError(
                f"{where}: unknown training setting(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(names))})"
            )
        missing = [k for k in ("data", "model", "out") if k not in obj]
        if missing:
            raise UserError(f"{where}: the training config lacks {', '.join(missing)}")
        return cls(**obj)

    def validation_split(self) -> str | None:
        """The split the run validates (and reports) on: val, else test, else none."""
        if self.val > 0 or self.folds:
            return "val"
        return "test" if self.test > 0 else None

    def block_rows_for(self, rows: int) -> int:
        """Blocks of 1024 rows, but at least ~256 blocks for small datasets (finer splits)."""
        if self.block_rows:
            return self.block_rows
        b = 1024
        while b > 32 and rows // b < 256:
            b //= 2
        return b

    def check(self) -> list[str]:
        problems = []
        if self.epochs < 1:
            problems.append(f"--epochs {self.epochs}: train at least 1 epoch")
        if self.batch < 1:
            problems.append(f"--batch {self.batch}: the batch size must be at least 1")
        if not (0 <= self.val < 1 and 0 <= self.test < 1 and self.val + self.test < 1):
            problems.append(
                f"--val {self.val} --test {self.test}: fractions must be >= 0 and sum below 1"
            )
        if self.folds == 1 or self.folds < 0:
            problems.append(f"--folds {self.folds}: use 0 (no folds) or at least 2")
        if self.folds and not 0 <= self.fold < self.folds:
            problems.append(f"fold {self.fold} is not in 0..{self.folds - 1}")
        if not 0 < self.fraction <= 1:
            problems.append(f"fraction {self.fraction} must be in (0, 1]")
        if self.log_every < 1 or self.checkpoint_every < 1:
            problems.append("--log-every and --checkpoint-every must be at least 1")
        if self.early_stopping < 0:
            problems.append(f"--early-stopping {self.early_stopping}: use 0 (off) or a patience")
        if self.early_stopping and self.validation_split() is None:
            problems.append(
                "--early-stopping needs a validation split: give --val, --test or --folds"
            )
        return problems

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def identity(self) -> str:
        """What must not change between a run and its resume (not out/devices/logging)."""
        keep = {
            k: v
            for k, v in self.to_json().items()
            if k
            not in (
                "out",
                "devices",
                "log_every",
                "checkpoint_every",
                "cluster",
                "worker_index",
                "epochs",
                "tensorboard",
            )
        }
        if not keep.get("early_stopping"):  # runs from before early stopping keep their hash
            keep.pop("early_stopping", None)
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]
