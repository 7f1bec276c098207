"""Checks before a run starts, and the resolved config it records."""

from __future__ import annotations

from typing import Any

from .. import store
from ..errors import UserError
from ..provenance import versions
from .config import TrainConfig
from .devices import Devices


def check_model_against_data(spec: dict[str, Any], ds: store.Dataset) -> None:
    """The model must fit the dataset: input shape, dtype, class count. Raise one clear error."""
    from ..model import validate

    problems = validate(
        spec, input_shape=ds.sample_shape, num_classes=ds.num_classes, input_dtype=ds.dtype.name
    )
    if problems:
        text = "; ".join(str(p) for p in problems)
        raise UserError(f"the model does not fit {ds.path}: {text}")
    if len(ds) == 0:
        raise UserError(f"{ds.path}: the dataset has no committed rows")


def resolved_config(
    cfg: TrainConfig, ds: store.Dataset, dev: Devices, steps: int, global_batch: int
) -> dict[str, Any]:
    return {
        "identity": cfg.identity(),
        "config": cfg.to_json(),
        "dataset": {
            "path": str(ds.path),
            "uuid": ds.uuid,
            "rows": len(ds),
            "sample_shape": list(ds.sample_shape),
            "dtype": ds.dtype.name,
            "class_names": ds.class_names,
            "shard_hashes": [s.content_hash for s in ds.shards],
        },
        "devices": dev.description,
        "replicas": dev.replicas,
        "global_batch": global_batch,
        "steps_per_epoch": steps,
        "versions": versions(tensorflow=True),
    }
