"""Shared fixtures: small real datasets written through the real writer."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from guiapp.core.store import DatasetWriter  # noqa: E402

CLASSES = ["ring", "blob", "stripe", "edge", "noise"]


def reference_rows(
    a: int, b: int, shape: tuple[int, ...] = (25, 25)
) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic rows [a, b): row i is a function of i alone."""
    idx = np.arange(a, b)
    base = np.sin(idx.astype(np.float64) * 0.37)[:, None] + np.arange(int(np.prod(shape))) * 1e-3
    x = base.reshape((b - a, *shape)).astype(np.float32)
    y = (idx * 7 + idx // 3) % len(CLASSES)
    return x, y.astype(np.int32)


MakeDataset = Callable[..., Path]


@pytest.fixture
def make_dataset(tmp_path: Path) -> MakeDataset:
    def make(
        name: str = "data.h5",
        rows: int = 5000,
        *,
        capacity: int = 2048,
        layout: str = "sharded",
        compression: str | None = None,
        batch: int = 700,
        shape: tuple[int, ...] = (25, 25),
    ) -> Path:
        path = tmp_path / name
        with DatasetWriter(
            path,
            sample_shape=shape,
            dtype="float32",
            class_names=CLASSES,
            shard_capacity=capacity,
            layout=layout,
            compression=compression,
            commit_rows=1000,
            provenance={"generator": "reference_rows", "seed": 0},
        ) as w:
            for a in range(0, rows, batch):
                w.append(*reference_rows(a, min(rows, a + batch), shape))
        return path

    return make
