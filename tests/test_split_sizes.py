"""Issue 30.6: split, fold and fraction sizes are what was asked, to within one block, and
said before Start and in the run; runs from before keep the splits they trained with."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import guiapp

from guiapp.core.pipeline.group_split import row_split_sizes
from guiapp.core.pipeline.read_plan import ReadPlan, SplitSpec
from guiapp.core.store import DatasetWriter
from guiapp.core.train.config import TrainConfig, recorded_defaults
from guiapp.core.train.validation_rows import config_of


def rows_of(rows: int, split: str, spec: SplitSpec, block: int, fraction: float = 1.0) -> int:
    plan = ReadPlan(rows=rows, batch_size=1, block_rows=block, split=split, splits=spec,
                    fraction=fraction)  # fmt: skip
    return len(plan.selected_rows())


@pytest.mark.parametrize("rows,block", [(200_000, 512), (100_000, 1024), (12_345, 32)])
def test_sizes_are_as_asked_to_within_one_block(rows: int, block: int) -> None:
    for val, test in ((0.1, 0.0), (0.2, 0.1), (0.05, 0.05)):
        spec = SplitSpec(val=val, test=test, seed=3)
        assert abs(rows_of(rows, "val", spec, block) - val * rows) <= block
        assert abs(rows_of(rows, "test", spec, block) - test * rows) <= block
        train = rows_of(rows, "train", spec, block)
        for fraction in (0.01, 0.1, 0.5):
            got = rows_of(rows, "train", spec, block, fraction)
            assert abs(got - fraction * train) <= block, (fraction, got, train)
    for folds in (3, 5):
        sizes = [rows_of(rows, "val", SplitSpec(folds=folds, fold=f, seed=1), block)
                 for f in range(folds)]  # fmt: skip
        assert sum(sizes) == rows and all(abs(n - rows / folds) <= block for n in sizes), sizes
        train = [rows_of(rows, "train", SplitSpec(folds=folds, fold=f, seed=1), block)
                 for f in range(folds)]  # fmt: skip
        assert [t + v for t, v in zip(train, sizes, strict=True)] == [rows] * folds


def test_the_old_hash_split_was_off_by_blocks_and_old_runs_keep_it() -> None:
    """The issue's case: validation 0.10 of 200,000 rows (blocks of 1024) gave 18,432 and
    folds of 100,000 rows 18,176..21,504. A config recorded before keeps that split."""
    old = SplitSpec(val=0.1, exact=False)
    new = SplitSpec(val=0.1)
    assert abs(rows_of(200_000, "val", old, 1024) - 20_000) > 1024  # the defect
    assert abs(rows_of(200_000, "val", new, 1024) - 20_000) <= 1024
    recorded = TrainConfig(data="d.h5", model={}, out="r").to_json()
    recorded.pop("split_sizes")  # a config.json written before the field
    cfg = config_of(recorded)
    assert cfg.split_sizes == "hash" and cfg.splits().exact is False
    assert TrainConfig.from_json(recorded_defaults(recorded)).identity() == cfg.identity()
    assert TrainConfig(data="d.h5", model={}, out="r").splits().exact is True


MODEL = """{"name": "dense", "input": {"shape": [4], "dtype": "float32"},
 "layers": [{"type": "Dense", "units": 2, "activation": "softmax"}],
 "loss": "sparse_categorical_crossentropy", "optimizer": {"type": "adam"},
 "metrics": ["accuracy"]}"""


def test_a_run_states_its_sizes_and_an_old_run_resumes_with_its_split(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = tmp_path / "d.h5"
    with DatasetWriter(data, sample_shape=(4,), dtype="float32", class_names=["a", "b"]) as w:
        w.append(rng.normal(size=(20_000, 4)), np.arange(20_000) % 2)
    (tmp_path / "m.json").write_text(MODEL)
    run = tmp_path / "run"
    args = ["train", "--data", data, "--model", tmp_path / "m.json", "--out", run,
            "--epochs", 1, "--max-steps", 2, "--val", 0.15]  # fmt: skip
    r = guiapp(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    recorded = json.loads((run / "config.json").read_text())
    split = recorded["split"]
    assert split["rows"] == row_split_sizes(20_000, SplitSpec(val=0.15), 64)
    assert abs(split["rows"]["val"] - 3_000) <= 64 and sum(split["rows"].values()) == 20_000
    r = guiapp("predict", "--model", run, "--data", data, "--split", "val", "--out",
               tmp_path / "p.csv")  # fmt: skip
    assert (
        r.returncode == 0 and f"predicted {split['rows']['val']:,} rows" in r.stdout + r.stderr
    ), r.stderr
    # The same run as an earlier guiapp wrote it (no split_sizes): predict and resume take
    # its hash split, and the same command resumes it.
    recorded["config"].pop("split_sizes")
    old = config_of(recorded["config"])
    recorded["identity"] = old.identity()
    (run / "config.json").write_text(json.dumps(recorded))
    spec = json.loads((run / "spec.json").read_text())
    spec["base"].pop("split_sizes")
    (run / "spec.json").write_text(json.dumps(spec))
    hash_val = row_split_sizes(20_000, SplitSpec(val=0.15, exact=False), 64)["val"]
    assert hash_val != split["rows"]["val"]
    r = guiapp("predict", "--model", run, "--data", data, "--split", "val", "--out",
               tmp_path / "q.csv")  # fmt: skip
    assert r.returncode == 0 and f"predicted {hash_val:,} rows" in r.stdout + r.stderr, r.stderr
    r = guiapp(*args[:-4], "--epochs", 2, "--max-steps", 2, "--val", 0.15, "--resume")
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_split_asked_for_is_never_empty_and_training_keeps_a_block() -> None:
    """Rounding to whole blocks: 0.01 of 32 blocks is one block, not none (an empty
    validation split would end the run); and training always keeps one."""
    for n in (2, 3, 5, 32):
        for val, test in ((0.01, 0.0), (0.01, 0.01), (0.5, 0.49)):
            codes = np.bincount(SplitSpec(val=val, test=test).assign(np.arange(n)), minlength=3)
            assert codes[0] >= 1, (n, val, test, codes)
            assert codes[1] >= 1 or n < (3 if test else 2), (n, val, test, codes)
            assert codes[2] >= (1 if test and n >= 3 else 0), (n, val, test, codes)
