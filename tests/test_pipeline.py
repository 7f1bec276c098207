"""The reader: exactness, order, resume, splits, workers; numpy and tf.data agree."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guiapp.core.pipeline import AugmentSpec, BatchPipeline, SplitSpec, WaitMeter
from guiapp.core.store import DatasetWriter


def write_ids(
    path: Path, rows: int, capacity: int, compression: str | None = None, classes: int = 3
) -> Path:
    """Row i holds (i, 2i, i % 7) and label i % classes, so every batch row is traceable."""
    i = np.arange(rows, dtype=np.int64)
    x = np.stack([i, 2 * i, i % 7], axis=1).astype(np.int32)
    with DatasetWriter(
        path,
        sample_shape=(3,),
        dtype="int32",
        class_names=[f"c{k}" for k in range(classes)],
        shard_capacity=capacity,
        compression=compression,
        overwrite=True,
    ) as w:
        for a in range(0, rows, 1000):
            w.append(x[a : a + 1000], (i[a : a + 1000] % classes))
    return path


def rows_of(batches: list[tuple[np.ndarray, ...]]) -> np.ndarray:
    for b in batches:
        x, y = b[0], b[1]
        assert (x[:, 1] == 2 * x[:, 0]).all() and (x[:, 2] == x[:, 0] % 7).all()
        assert (y == x[:, 0] % 3).all()
    return np.concatenate([b[0][:, 0] for b in batches]) if batches else np.zeros(0, np.int64)


def collect(p: BatchPipeline, epoch: int = 0, start: int = 0) -> list[tuple[np.ndarray, ...]]:
    return [tuple(np.array(a) for a in b) for b in p.numpy_batches(epoch, start)]


def expected_rows(p: BatchPipeline) -> np.ndarray:
    blocks = p.plan.selected_blocks()
    return np.concatenate(
        [
            np.arange(b * p.plan.block_rows, min((b + 1) * p.plan.block_rows, p.plan.rows))
            for b in blocks
        ]
        or [np.zeros(0, np.int64)]
    )


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.integers(1, 6000),
    capacity=st.sampled_from([1024, 1500, 2048, 4096]),
    block_rows=st.sampled_from([64, 100, 256, 1024]),
    batch_size=st.integers(1, 700),
    window_blocks=st.integers(1, 5),
    chunk_rows=st.sampled_from([1, 7, 32]),
    split=st.sampled_from(["all", "train", "val", "test"]),
    workers=st.integers(1, 3),
    seed=st.integers(0, 3),
)
def test_every_row_exactly_once(
    tmp_path: Path,
    rows,
    capacity,
    block_rows,
    batch_size,
    window_blocks,
    chunk_rows,
    split,
    workers,
    seed,
) -> None:
    path = write_ids(tmp_path / "ids.h5", rows, capacity)
    splits = SplitSpec(val=0.2, test=0.1, seed=seed)
    seen = []
    for worker in range(workers):
        p = BatchPipeline(
            path,
            batch_size=batch_size,
            block_rows=block_rows,
            window_blocks=window_blocks,
            chunk_rows=chunk_rows,
            split=split,
            splits=splits,
            worker=worker,
            workers=workers,
            seed=seed,
        )
        batches = collect(p)
        assert all(len(b[0]) == batch_size for b in batches[:-1])
        assert len(batches) == p.batches_per_epoch
        seen.append(rows_of(batches))
        want = expected_rows(p)
        p.close()
    got = np.sort(np.concatenate(seen))
    np.testing.assert_array_equal(got, want)


def test_splits_partition_the_rows(tmp_path: Path) -> None:
    path = write_ids(tmp_path / "ids.h5", 20_000, 4096)
    parts = {}
    for split in ("train", "val", "test"):
        p = BatchPipeline(
            path,
            batch_size=256,
            block_rows=128,
            split=split,
            splits=SplitSpec(val=0.2, test=0.1, seed=5),
        )
        parts[split] = rows_of(collect(p))
    allrows = np.sort(np.concatenate(list(parts.values())))
    np.testing.assert_array_equal(allrows, np.arange(20_000))
    fractions = {k: len(v) / 20_000 for k, v in parts.items()}
    assert 0.12 < fractions["val"] < 0.28 and 0.04 < fractions["test"] < 0.17


def test_folds_cover_every_row_once_as_validation(tmp_path: Path) -> None:
    path = write_ids(tmp_path / "ids.h5", 10_000, 4096)
    vals = []
    for fold in range(5):
        spec = SplitSpec(folds=5, fold=fold, seed=1)
        val = rows_of(
            collect(BatchPipeline(path, batch_size=500, block_rows=100, split="val", splits=spec))
        )
        train = rows_of(
            collect(BatchPipeline(path, batch_size=500, block_rows=100, split="train", splits=spec))
        )
        assert len(np.intersect1d(val, train)) == 0 and len(val) + len(train) == 10_000
        vals.append(val)
    np.testing.assert_array_equal(np.sort(np.concatenate(vals)), np.arange(10_000))


def test_order_differs_by_epoch_and_repeats_by_seed(tmp_path: Path) -> None:
    path = write_ids(tmp_path / "ids.h5", 8000, 4096)
    a = BatchPipeline(path, batch_size=100, block_rows=256, seed=3)
    b = BatchPipeline(path, batch_size=100, block_rows=256, seed=3)
    c = BatchPipeline(path, batch_size=100, block_rows=256, seed=4)
    e0, e1 = rows_of(collect(a, 0)), rows_of(collect(a, 1))
    assert not np.array_equal(e0, e1)
    np.testing.assert_array_equal(e0, rows_of(collect(b, 0)))
    assert not np.array_equal(e0, rows_of(collect(c, 0)))
    # Batches are well mixed: no batch holds only consecutive rows.
    first = collect(a, 0)[0][0][:, 0]
    assert np.ptp(first) > 1000


@pytest.mark.parametrize("start", [0, 1, 7, 33, 79])
def test_resume_at_any_batch_gives_the_same_batches(tmp_path: Path, start: int) -> None:
    path = write_ids(tmp_path / "ids.h5", 8000, 3000)
    p = BatchPipeline(path, batch_size=101, block_rows=256, window_blocks=3, seed=9)
    full = collect(p, 2)
    resumed = collect(p, 2, start)
    assert len(resumed) == len(full) - start
    for r, f in zip(resumed, full[start:], strict=True):
        np.testing.assert_array_equal(r[0], f[0])
        np.testing.assert_array_equal(r[1], f[1])


def test_compressed_shards_read_the_same(tmp_path: Path) -> None:
    plain = write_ids(tmp_path / "plain.h5", 5000, 2048)
    packed = write_ids(tmp_path / "packed.h5", 5000, 2048, compression="gzip")
    a = collect(BatchPipeline(plain, batch_size=128, block_rows=256, seed=2))
    p = BatchPipeline(packed, batch_size=128, block_rows=256, seed=2)
    assert not p.reader.use_pread
    b = collect(p)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u[0], v[0])


def test_pread_and_memmap_paths_agree(tmp_path: Path) -> None:
    path = write_ids(tmp_path / "ids.h5", 5000, 1500)
    a = collect(BatchPipeline(path, batch_size=128, block_rows=100, seed=2, use_pread=True))
    b = collect(BatchPipeline(path, batch_size=128, block_rows=100, seed=2, use_pread=False))
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u[0], v[0])


def test_a_memory_cache_gives_the_same_batches(tmp_path: Path) -> None:
    """--cache memory: rows copied from memory, in the order and splits of the files' reads
    (a grouped split's masked rows and a compressed dataset included), read once a process."""
    from guiapp.core.pipeline import cache
    from guiapp.core.store import Dataset

    for name, comp in (("plain.h5", None), ("packed.h5", "gzip")):
        path = write_ids(tmp_path / name, 5000, 1500, compression=comp)
        ds = Dataset(path)
        rows = cache.load(ds, threads=2)
        assert cache.load(Dataset(path), threads=1) is rows  # the next trial's: no second read
        np.testing.assert_array_equal(rows.x[:, 0], np.arange(5000))
        # whole blocks (runs of a chunk: slice copies) and a mask's runs of 1-2 rows (gathers)
        for mask, epoch in ((None, 0), (np.arange(5000) % 3 != 1, 0), (None, 3)):
            kw = dict(batch_size=100, block_rows=100, seed=1, split="val", row_mask=mask)
            kw["splits"] = SplitSpec(val=0.3, seed=1)
            a = collect(BatchPipeline(path, **kw), epoch)  # type: ignore[arg-type]
            p = BatchPipeline(path, cache=rows, **kw)  # type: ignore[arg-type]
            assert p.reader.cache is rows and not p.reader.compiled
            b = collect(p, epoch, 0)
            assert len(a) == len(b) > 0
            for u, v in zip(a, b, strict=True):
                np.testing.assert_array_equal(u[0], v[0])
                np.testing.assert_array_equal(u[1], v[1])
    cache.drop()


@pytest.mark.parametrize("compiled", [True, False])
def test_compiled_and_python_reads_agree_and_a_short_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """The numba ``preadv`` loop (``jitread``) and the Python one read the same bytes; a
    file cut short under the reader is an error naming the end of the file either way."""
    from guiapp.core import jit
    from guiapp.core.pipeline import reader as rd

    if compiled and not jit.available():
        pytest.skip("numba is not installed or is turned off")
    path = write_ids(tmp_path / "ids.h5", 5000, 1500)
    kw = dict(batch_size=128, block_rows=100, chunk_rows=7, seed=2, use_pread=True)
    want = collect(
        BatchPipeline(path, use_pread=False, **{k: v for k, v in kw.items() if k != "use_pread"})
    )
    if not compiled:
        monkeypatch.setattr(rd, "_jitread", lambda: None)
    p = BatchPipeline(path, **kw)
    assert (rd._jitread() is not None) == compiled
    for u, v in zip(collect(p), want, strict=True):
        np.testing.assert_array_equal(u[0], v[0])
        np.testing.assert_array_equal(u[1], v[1])
    last = p.ds.shards[-1]
    assert last.x_offset is not None
    os.truncate(last.path, last.x_offset + 10 * p.ds.row_nbytes)
    x, y = p.reader.buffers(400)
    src = np.array([len(p.ds) - 400], np.int64)
    with pytest.raises(OSError, match="unexpected end of file"):
        p.reader.read_runs(src, np.array([0], np.int64), np.array([400], np.int64), x, y)
    p.close()


def test_balanced_class_weights(tmp_path: Path) -> None:
    path = tmp_path / "skewed.h5"
    y = np.array([0] * 900 + [1] * 100)
    with DatasetWriter(
        path, sample_shape=(2,), dtype="float32", class_names=["common", "rare"]
    ) as w:
        w.append(np.zeros((1000, 2)), np.random.default_rng(0).permutation(y))
    p = BatchPipeline(path, batch_size=100, block_rows=64, class_weights="balanced")
    batches = collect(p)
    yy = np.concatenate([b[1] for b in batches])
    ww = np.concatenate([b[2] for b in batches])
    assert ww[yy == 1].mean() == pytest.approx(5.0) and ww[yy == 0].mean() == pytest.approx(
        1000 / 1800
    )


def test_numpy_augmentation_and_cast(tmp_path: Path) -> None:
    path = tmp_path / "img.h5"
    x = np.arange(16 * 200, dtype=np.float32).reshape(200, 4, 4)
    with DatasetWriter(path, sample_shape=(4, 4), dtype="float32", class_names=["a"]) as w:
        w.append(x, np.zeros(200, dtype=int))
    p = BatchPipeline(
        path,
        batch_size=50,
        block_rows=32,
        dtype="float16",
        augment=AugmentSpec(flip_h=True, rot90=True),
    )
    out = collect(p)
    assert out[0][0].dtype == np.float16
    # Each augmented sample is a rotation/flip of some stored sample: same multiset of values.
    stored = {tuple(sorted(s.ravel().tolist())) for s in x.astype(np.float16)}
    assert all(tuple(sorted(s.ravel().tolist())) in stored for b in out for s in b[0])


def test_wait_meter_counts_batches(tmp_path: Path) -> None:
    path = write_ids(tmp_path / "ids.h5", 3000, 4096)
    p = BatchPipeline(path, batch_size=100)
    meter = WaitMeter()
    n = sum(1 for _ in meter.wrap(p.numpy_batches(0)))
    assert n == meter.batches == 30
    assert 0.0 <= meter.fraction() <= 1.0 and meter.wait_s > 0


def test_tf_dataset_matches_numpy_and_resumes(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    path = write_ids(tmp_path / "ids.h5", 7000, 3000)
    p = BatchPipeline(path, batch_size=96, block_rows=128, window_blocks=4, seed=4, split="train")
    want = [collect(p, e) for e in (0, 1)]
    got = [(x.numpy(), y.numpy()) for x, y in p.tf_dataset(range(0, 2))]
    flat = want[0] + want[1]
    assert len(got) == len(flat)
    for (gx, gy), w in zip(got, flat, strict=True):
        np.testing.assert_array_equal(gx, w[0])
        np.testing.assert_array_equal(gy, w[1])
    resumed = [(x.numpy(), y.numpy()) for x, y in p.tf_dataset(range(1, 2), start_batch=5)]
    for (gx, _), w in zip(resumed, want[1][5:], strict=True):
        np.testing.assert_array_equal(gx, w[0])
    assert tf.data.Options  # imported for real


def test_training_epochs_read_as_one_stream_of_segments(tmp_path: Path) -> None:
    """Several epochs of whole batches (training's ``drop_remainder``) are read as one
    stream of the epochs' segments, not a dataset per epoch: each epoch's batches are still
    its own, in its order (none joins two epochs' rows), from a resumed position too."""
    pytest.importorskip("tensorflow")
    path = write_ids(tmp_path / "ids.h5", 7000, 3000)
    kw = dict(batch_size=96, block_rows=128, window_blocks=4, seed=4, split="train")
    p = BatchPipeline(path, drop_remainder=True, segment_bytes=1, **kw)  # type: ignore[arg-type]
    plan = p.epoch_plan(0)
    assert len(p.segments(0)) > 2 and plan.rows % 96  # a partial batch is dropped
    want = [collect(p, e) for e in range(3)]
    assert all(len(w) == plan.rows // 96 for w in want)
    for epochs, start in ((range(0, 3), 0), (range(1, 3), 5)):
        got = [(x.numpy(), y.numpy()) for x, y in p.tf_dataset(epochs, start_batch=start)]
        flat = [b for e in epochs for b in want[e][(start if e == epochs.start else 0) :]]
        assert len(got) == len(flat)
        for (gx, gy), (wx, wy) in zip(got, flat, strict=True):
            np.testing.assert_array_equal(gx, wx)
            np.testing.assert_array_equal(gy, wy)
    p.close()


def test_segments_read_before_the_first_call_give_the_same_batches(tmp_path: Path) -> None:
    """``start_reading`` (a run's first segments read while its steps trace, the pool's
    pages touched): the same batches as a pipeline that reads them when asked, from a
    resumed position too, and what is read is what is asked for."""
    pytest.importorskip("tensorflow")
    path = write_ids(tmp_path / "ids.h5", 7000, 3000)
    # segments of a window (5 batches), so the epoch has several
    kw = dict(batch_size=96, block_rows=128, window_blocks=4, seed=4, split="train")
    kw["segment_bytes"] = 1

    def batches(p: BatchPipeline, epochs: range, start: int) -> list[tuple[np.ndarray, ...]]:
        return [(x.numpy(), y.numpy()) for x, y in p.tf_dataset(epochs, start_batch=start)]

    for epochs, start in ((range(0, 2), 0), (range(1, 2), 5)):
        want = batches(BatchPipeline(path, **kw), epochs, start)  # type: ignore[arg-type]
        p = BatchPipeline(path, **kw)  # type: ignore[arg-type]
        p.start_reading(epochs.start, start)
        early = set(p._early)
        firsts = {(epochs.start, start + p.segment_batches * j) for j in range(p.threads)}
        assert {k[:2] for k in early} == firsts
        got = batches(p, epochs, start)
        assert not p._early  # every segment read early was asked for, and taken
        assert len(got) == len(want) > 0
        for (gx, gy), (wx, wy) in zip(got, want, strict=True):
            np.testing.assert_array_equal(gx, wx)
            np.testing.assert_array_equal(gy, wy)
        p.close()


def test_keras_fit_from_the_dataset(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    import keras

    path = tmp_path / "img.h5"
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    x = (rng.normal(size=(2000, 8, 8)) + y[:, None, None] * 1.5).astype(np.float32)
    with DatasetWriter(
        path, sample_shape=(8, 8), dtype="float32", class_names=["dark", "bright"]
    ) as w:
        w.append(x, y)
    p = BatchPipeline(
        path,
        batch_size=64,
        block_rows=128,
        split="train",
        splits=SplitSpec(val=0.2),
        augment=AugmentSpec(flip_h=True),
    )
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(2, activation="softmax"),
        ]
    )
    model.compile(
        keras.optimizers.Adam(0.02), "sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    hist = model.fit(
        p.tf_dataset(range(3), x_shape=(8, 8, 1)),
        epochs=3,
        steps_per_epoch=p.batches_per_epoch,
        shuffle=False,
        verbose=0,
    )
    assert len(hist.history["loss"]) == 3
    assert hist.history["accuracy"][-1] > 0.9


class OneWindowSegments(BatchPipeline):
    """The pipeline as it was before segments grew past one window (issue #13)."""

    @property
    def segment_batches(self) -> int:
        return max(1, self.plan.window_blocks * self.plan.block_rows // self.plan.batch_size)


def test_segment_size_changes_no_batch(tmp_path: Path) -> None:
    """Short rows: a segment spans many windows (>= 8 MiB); a segment of one batch holds
    part of a window (2 batches here); a segment too large for any read-ahead besides its
    own: yet every batch, in numpy, in tf.data and resumed mid-segment, holds the rows it
    held with one-window segments."""
    pytest.importorskip("tensorflow")
    from guiapp.core.pipeline.batches import READ_AHEAD_BYTES

    path = write_ids(tmp_path / "ids.h5", 9000, 4000)
    kw = {"batch_size": 100, "block_rows": 128, "window_blocks": 2, "seed": 3}
    new, old = BatchPipeline(path, **kw), OneWindowSegments(path, **kw)
    part = BatchPipeline(path, segment_bytes=1, **kw)
    whole = BatchPipeline(path, segment_bytes=READ_AHEAD_BYTES, **kw)
    assert new.segment_batches > 3 * old.segment_batches
    assert part.segment_batches == 1 < old.segment_batches == 2
    assert whole.segment_prefetch == 0 < part.segment_prefetch
    want = collect(old)
    assert len(want) == 90
    tf_batches = [[(x.numpy(), y.numpy()) for x, y in p.tf_dataset(1)] for p in (new, part, whole)]
    for got in (collect(new), collect(part), *tf_batches):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_array_equal(g[1], w[1])
    resumed = [x.numpy() for x, _ in new.tf_dataset(1, start_batch=7)]
    for g, w in zip(resumed, want[7:], strict=True):
        np.testing.assert_array_equal(g, w[0])
    assert len(resumed) == len(want) - 7
