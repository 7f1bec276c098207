"""Issue 33.4: prediction plans its rows as ranges (memory per block, not per row), and the
ranges are exactly the rows the in-order plan reads, with or without a grouped row mask."""

from __future__ import annotations

import numpy as np
import pytest

from guiapp.core.pipeline.read_plan import ReadPlan, SplitSpec
from guiapp.core.predict.source import plan_rows


@pytest.mark.parametrize("rows,block", [(100_000, 1024), (12_345, 32), (5, 1024)])
@pytest.mark.parametrize("split", ["all", "train", "val"])
def test_ranges_are_the_plans_rows(rows: int, block: int, split: str) -> None:
    rng = np.random.default_rng(rows)
    plans = [
        ReadPlan(rows=rows, batch_size=64, block_rows=block, split=split,
                 splits=SplitSpec(val=0.2), shuffle=False),
        ReadPlan(rows=rows, batch_size=64, block_rows=block, shuffle=False,
                 row_mask=rng.random(rows) < 0.3),
    ]  # fmt: skip
    for plan in plans:
        ranges, rows_read = plan_rows(plan), plan.selected_rows()
        assert len(ranges) == len(rows_read)
        np.testing.assert_array_equal(np.asarray(ranges), rows_read)
        for _ in range(30):
            a, b = sorted(rng.integers(0, len(rows_read) + 1, 2))
            np.testing.assert_array_equal(ranges.take(a, b), rows_read[a:b])
        pieces = list(ranges.chunks(1000))
        assert all(len(p) <= 1000 for p in pieces)
        joined = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        np.testing.assert_array_equal(joined, rows_read)


def test_ranges_take_memory_per_block_not_per_row() -> None:
    plan = ReadPlan(rows=50_000_000, batch_size=512, split="val", splits=SplitSpec(val=0.1),
                    shuffle=False)  # fmt: skip
    ranges = plan_rows(plan)
    assert len(ranges) == plan.block_lengths(plan.selected_blocks()).sum()
    held = ranges.starts.nbytes + ranges.lengths.nbytes + ranges.ends.nbytes
    assert held <= 24 * plan.num_blocks // 9  # 24 bytes a selected block, ~10% of blocks
    with pytest.raises(ValueError):
        plan_rows(ReadPlan(rows=100, batch_size=8))  # a shuffled plan has no fixed order
