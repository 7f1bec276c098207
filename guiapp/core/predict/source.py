"""What a prediction reads: the model (a run folder or a ``.keras`` file) and its identity,
the dataset's identity, and the dataset rows of a split in dataset order.

No TensorFlow here: a run folder's ``config.json`` names the classes, the split and the
block size the run used, so ``--split val`` of a run is exactly the rows it validated on.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FileError, UserError
from ..pipeline.group_split import split_mask
from ..pipeline.read_plan import SPLITS, ReadPlan, SplitSpec
from ..store import Dataset
from ..train.config import TrainConfig, recorded_defaults


@dataclass
class ModelSource:
    """A model file to load, and what the run that made it knew (when there was one)."""

    path: Path
    run_dir: Path | None = None
    run_config: dict[str, Any] = field(default_factory=dict)
    class_names: list[str] = field(default_factory=list)
    #: The run's dataset as config.json records it (path, sample_shape, dtype, class_names).
    dataset: dict[str, Any] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        return file_hash(self.path)

    def split_spec(self) -> SplitSpec:
        """The run's splits (val/test/folds/seed); a bare model file has none."""
        spec: SplitSpec = self.train_config().splits()
        return spec

    def train_config(self) -> TrainConfig:
        known: dict[str, Any] = {"data": "", "model": {}, "out": ""}
        known.update(
            {
                k: v
                for k, v in recorded_defaults(self.run_config).items()
                if k in TrainConfig.__dataclass_fields__ and k not in known
            }
        )
        return TrainConfig(**known)


def resolve_model(value: str | os.PathLike[str], which: str = "best") -> ModelSource:
    """``RUN_DIR`` (its ``best.keras`` or ``last.keras``) or ``MODEL.keras``. Raises UserError."""
    path = Path(value)
    if path.is_dir():
        order = ("best.keras", "last.keras") if which == "best" else ("last.keras", "best.keras")
        model = next((path / n for n in order if (path / n).exists()), None)
        if model is None:
            raise FileError(
                path,
                "holds no best.keras or last.keras",
                "Give a finished run folder or a .keras file",
            )
        config: dict[str, Any] = {}
        dataset: dict[str, Any] = {}
        try:
            resolved = json.loads((path / "config.json").read_text())
            config = dict(resolved.get("config", {}))
            dataset = dict(resolved.get("dataset", {}))
        except (OSError, ValueError):
            pass
        names = [str(n) for n in dataset.get("class_names", [])]
        return ModelSource(model, path, config, names, dataset)
    if not path.exists():
        raise FileError(path, "does not exist", "Give a run folder or a .keras model file")
    if path.suffix != ".keras":
        raise FileError(
            path, "is not a .keras model file", "Give a run folder or a file saved by Keras 3"
        )
    return ModelSource(path)


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def dataset_hash(ds: Dataset) -> str:
    """The dataset's identity: its uuid, committed rows and every shard's content hash."""
    ident = {
        "uuid": ds.uuid,
        "rows": len(ds),
        "shards": [[s.committed, s.content_hash] for s in ds.shards],
    }
    return "sha256:" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


def split_plan(ds: Dataset, source: ModelSource, split: str, batch: int) -> ReadPlan:
    """The in-order read plan of ``split`` (the run's splits and blocks; all rows otherwise)."""
    if split not in SPLITS:
        raise UserError(f"--split {split}: use one of {', '.join(SPLITS)}")
    if split != "all" and source.run_dir is None:
        raise UserError(
            f"--split {split}: a bare model file has no splits; give its run folder, or --split all",
            option="--split",
            value=split,
        )
    cfg = source.train_config()
    splits = source.split_spec() if source.run_dir else SplitSpec()
    mask = split_mask(ds, splits, split, split_by=cfg.split_by) if source.run_dir else None
    return ReadPlan(
        rows=len(ds),
        batch_size=batch,
        block_rows=cfg.block_rows_for(len(ds)) if source.run_dir else 1024,
        window_blocks=8,
        chunk_rows=1024,
        seed=cfg.seed,
        split=split,
        splits=splits,
        shuffle=False,
        row_mask=mask,
    )


class RowRanges:
    """The dataset rows an in-order plan reads, as ranges (``starts``, ``lengths``): memory
    per block (or per stretch of a grouped split's rows), not per row. ``np.asarray`` gives
    the rows themselves; :meth:`chunks` gives them a bounded piece at a time."""

    def __init__(self, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.starts = np.asarray(starts, np.int64)
        self.lengths = np.asarray(lengths, np.int64)
        self.ends = np.cumsum(self.lengths)  # position after each range
        self.total = int(self.ends[-1]) if len(self.ends) else 0

    def __len__(self) -> int:
        return self.total

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.take(0, self.total).astype(dtype or np.int64, copy=False)

    def take(self, a: int, b: int) -> np.ndarray:
        """The rows at positions ``a..b`` of the order."""
        a, b = max(0, a), min(b, self.total)
        if b <= a:
            return np.zeros(0, np.int64)
        i = int(np.searchsorted(self.ends, a, side="right"))
        j = int(np.searchsorted(self.ends, b, side="left")) + 1
        starts, lengths = self.starts[i:j], self.lengths[i:j]
        before = self.ends[i:j] - lengths  # positions of the ranges' first rows
        out = np.repeat(starts - before, lengths) + np.arange(before[0], self.ends[j - 1])
        return out[a - int(before[0]) : b - int(before[0])]

    def chunks(self, size: int = 1 << 20) -> Iterator[np.ndarray]:
        for a in range(0, self.total, size):
            yield self.take(a, a + size)


def plan_rows(plan: ReadPlan) -> RowRanges:
    """The dataset rows an in-order plan reads, in the order it reads them, as ranges."""
    if plan.shuffle or plan.workers != 1:
        raise ValueError("plan_rows is for the in-order plans of prediction")
    if plan.row_mask is None:
        blocks = plan.selected_blocks()
        return RowRanges(blocks * plan.block_rows, plan.block_lengths(blocks))
    mask = plan.row_mask.view(np.int8)
    edges = np.flatnonzero(np.diff(mask, prepend=np.int8(0), append=np.int8(0)))
    return RowRanges(edges[0::2], edges[1::2] - edges[0::2])
