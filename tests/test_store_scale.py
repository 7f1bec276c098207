"""The store's cost per shard stays flat: sealing, opening, info and check at two shard counts.

Costs are counted where they can be (bytes written to the index, files opened) and timed
only as a ratio of per-shard medians at two sizes with a generous bound: the old index,
rewritten whole at every seal, made the per-shard cost grow with the shard count.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from guiapp.core.errors import DatasetError
from guiapp.core.store import Dataset, DatasetWriter
from guiapp.core.store.check import check_dataset
from guiapp.core.store.dataset import OPEN_SHARDS
from guiapp.core.store.index import IndexFile

SMALL, LARGE = 64, 512  # shards


def _write(path: Path, shards: int, capacity: int = 4) -> dict[str, int]:
    """A dataset of ``shards`` sealed shards; what its writer wrote to the index."""
    before = (IndexFile.rewrites, IndexFile.rewritten_bytes, IndexFile.put_bytes)
    rng = np.random.default_rng(shards)
    rows = shards * capacity
    with DatasetWriter(
        path, sample_shape=(3,), dtype="uint16", class_names=["a", "b"], shard_capacity=capacity
    ) as w:
        for a in range(0, rows, 256):
            n = min(256, rows - a)
            w.append(rng.integers(0, 9, (n, 3), dtype=np.uint16), rng.integers(0, 2, n))
    return {
        "rewrites": IndexFile.rewrites - before[0],
        "bytes": IndexFile.rewritten_bytes - before[1] + IndexFile.put_bytes - before[2],
    }


@pytest.fixture(scope="module")
def two_sizes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, dict[str, int]]]:
    out = {}
    for n in (SMALL, LARGE):
        p = tmp_path_factory.mktemp(f"s{n}") / "d.h5"
        out[n] = (p, _write(p, n))
    return out


def test_sealing_writes_the_same_index_bytes_per_shard_at_any_count(two_sizes) -> None:
    (_, small), (_, large) = two_sizes[SMALL], two_sizes[LARGE]
    per_small, per_large = small["bytes"] / SMALL, large["bytes"] / LARGE
    # Rewriting the manifest at every seal made this ratio LARGE/SMALL = 8.
    assert per_large / per_small < 1.5, (small, large)
    # Whole rewrites only when the slots double (and at the start and the end).
    assert large["rewrites"] <= int(np.log2(LARGE)) + 3


def _per_shard_median(fn, path: Path, shards: int, reps: int = 5) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t)
    return statistics.median(times) / shards


def _open(p: Path) -> None:
    with Dataset(p) as ds:
        assert len(ds.shards) > 0


def _info(p: Path) -> None:
    with Dataset(p) as ds:
        ds.info()


def _check(p: Path) -> None:
    assert check_dataset(p).ok


@pytest.mark.parametrize("op", [_open, _info, _check], ids=["open", "info", "check"])
def test_open_info_and_check_cost_flat_per_shard(two_sizes, op) -> None:
    (ps, _), (pl, _) = two_sizes[SMALL], two_sizes[LARGE]
    op(ps), op(pl)  # warm the page cache
    small = _per_shard_median(op, ps, SMALL)
    large = _per_shard_median(op, pl, LARGE)
    # A fixed cost per call is spread over more shards at LARGE, so flat costs give a
    # ratio at or below 1; a cost quadratic in the shard count gives 8. Bound: 4.
    assert large / small < 4.0, (small, large)


def test_opening_vouches_for_every_shard_without_reading_rows(two_sizes, tmp_path: Path) -> None:
    """Opening reads a few header bytes of each sealed shard (its uuid, size and offsets:
    ``vouch_shard``), never its rows: rows overwritten in place still open (``check --full``
    finds them), a missing shard does not."""
    path, _ = two_sizes[SMALL]
    with Dataset(path) as ds:
        s = ds.shards[1]
        assert s.x_offset is not None
    with open(s.path, "r+b") as fh:
        fh.seek(s.x_offset)
        before = fh.read(4)
        fh.seek(s.x_offset)
        fh.write(b"\xff\xff\xff\xff")
    try:
        with Dataset(path) as ds:  # the manifest and the shards' headers
            assert len(ds) == SMALL * 4 and ds.class_counts.sum() == SMALL * 4
        assert not check_dataset(path, full=True).ok
    finally:
        with open(s.path, "r+b") as fh:
            fh.seek(s.x_offset)
            fh.write(before)
    moved = tmp_path / "elsewhere"
    folder = path.with_name("d.shards")
    os.rename(folder, moved)
    try:
        with pytest.raises(DatasetError, match="is missing"):
            Dataset(path)
    finally:
        os.rename(moved, folder)


def test_a_reader_keeps_a_bounded_number_of_shards_open(two_sizes) -> None:
    path, _ = two_sizes[LARGE]
    with Dataset(path) as ds:
        x, y = ds.read_range(0, len(ds))
        assert len(x) == LARGE * 4 and len(ds._arrays) <= OPEN_SHARDS
        assert check_dataset(path).ok


def test_a_version_1_index_is_still_read(tmp_path: Path) -> None:
    """The JSON manifest of format_version 1 opens with the same rows, counts and info."""
    path = tmp_path / "d.h5"
    _write(path, 5)
    with Dataset(path) as ds:
        want_x, want_y = ds.read_range(0, len(ds))
        want = ds.info()
        entries = [s.to_json(os.path.relpath(s.path, path.parent)) for s in ds.shards]
    with h5py.File(path, "r+") as f:  # what version 1 wrote: a JSON list, no table
        del f["manifest"], f["manifest_class_counts"]
        f.attrs["format_version"] = np.int64(1)
        f.attrs["shards"] = json.dumps(entries)
    with Dataset(path) as ds:
        assert ds.format_version == 1
        x, y = ds.read_range(0, len(ds))
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(y, want_y)
        got = ds.info()
    for key in ("rows", "classes", "shards", "sealed_shards", "values"):
        assert got[key] == want[key], key
    assert check_dataset(path).ok
