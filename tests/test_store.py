"""The dataset store: real HDF5 files written and read back."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from conftest import CLASSES, MakeDataset, reference_rows

from guiapp.core.errors import DatasetError
from guiapp.core.store import Dataset, DatasetWriter, content_hash, default_capacity, parse_shape


@pytest.mark.parametrize(
    ("layout", "compression", "capacity"),
    [
        ("sharded", None, 2048),
        ("sharded", "gzip", 1024),
        ("single", None, 8192),
        ("single", "lzf", 8192),
    ],
)
def test_round_trip(
    make_dataset: MakeDataset, layout: str, compression: str | None, capacity: int
) -> None:
    path = make_dataset(rows=5000, layout=layout, compression=compression, capacity=capacity)
    x_ref, y_ref = reference_rows(0, 5000)
    with Dataset(path) as ds:
        assert len(ds) == 5000
        assert ds.sample_shape == (25, 25)
        assert ds.dtype == np.float32
        assert ds.class_names == CLASSES
        assert ds.complete
        assert ds.class_counts.tolist() == np.bincount(y_ref, minlength=5).tolist()
        x, y = ds.read_range(0, 5000)
        np.testing.assert_array_equal(x, x_ref)
        np.testing.assert_array_equal(y, y_ref)
        xi, yi = ds.read(4097)
        np.testing.assert_array_equal(xi, x_ref[4097])
        assert yi == y_ref[4097]
        blocks = list(ds.iter_blocks(1000))
        assert [b[0] for b in blocks] == [0, 1000, 2000, 3000, 4000]
        np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), x_ref)
        # Each sealed shard's hash (kept up while writing) is that of its rows.
        ends = np.cumsum([s.committed for s in ds.shards])
        sealed = [(k, s) for k, s in enumerate(ds.shards) if s.content_hash]
        assert sealed
        for k, s in sealed:
            a, b = int(ends[k] - s.committed), int(ends[k])
            assert s.content_hash == content_hash(x_ref[a:b], y_ref[a:b].astype("<i4"))
        stats = ds.value_stats()
        assert stats["mean"] == pytest.approx(float(x_ref.astype(np.float64).mean()), rel=1e-6)
        assert stats["std"] == pytest.approx(float(x_ref.astype(np.float64).std()), rel=1e-5)
        with pytest.raises(IndexError):
            ds.read(5000)


def test_sharded_layout_and_virtual_datasets(make_dataset: MakeDataset) -> None:
    path = make_dataset(rows=5000, capacity=2048)
    shards = sorted(path.with_name("data.shards").iterdir())
    assert [s.name for s in shards] == ["00000.h5", "00001.h5", "00002.h5"]
    x_ref, y_ref = reference_rows(0, 5000)
    # Any HDF5 tool sees one array through the index's virtual datasets.
    with h5py.File(path, "r") as f:
        assert f["x"].is_virtual and f["x"].shape == (5000, 25, 25)
        np.testing.assert_array_equal(f["x"][4000:4100], x_ref[4000:4100])
        np.testing.assert_array_equal(f["y"][:], y_ref)
    # Every shard is an ordinary HDF5 file, contiguous and uncompressed, sealed with a hash.
    with Dataset(path) as ds:
        assert [s.committed for s in ds.shards] == [2048, 2048, 904]
        assert [s.sealed for s in ds.shards] == [True, True, False]
        for s in ds.shards:
            with h5py.File(s.path, "r") as f:
                assert f["x"].chunks is None and f["x"].compression is None
                assert int(f.attrs["committed"]) == s.committed
                n = s.committed
                assert content_hash(f["x"][:n], f["y"][:n]) == s.content_hash


def test_only_committed_rows_are_visible(tmp_path) -> None:
    path = tmp_path / "live.h5"
    w = DatasetWriter(
        path,
        sample_shape=(4,),
        dtype="float32",
        class_names=["a", "b"],
        shard_capacity=1024,
        commit_rows=10**9,
    )
    w.append(np.ones((100, 4)), np.zeros(100, dtype=int))
    assert len(Dataset(path)) == 0  # written, not committed
    w.commit()
    assert len(Dataset(path)) == 100
    w.append(np.full((50, 4), 2.0), np.ones(50, dtype=int))
    with Dataset(path) as ds:
        assert len(ds) == 100 and not ds.complete
        assert ds.class_counts.tolist() == [100, 0]
    w.close()
    with Dataset(path) as ds:
        assert len(ds) == 150 and ds.complete
        assert ds.read(120)[1] == 1


def test_writer_rejects_bad_batches(tmp_path) -> None:
    w = DatasetWriter(
        tmp_path / "d.h5", sample_shape=(25, 25), dtype="float32", class_names=CLASSES
    )
    with pytest.raises(DatasetError, match=r"shape \(3, 24, 25\)"):
        w.append(np.zeros((3, 24, 25)), np.zeros(3, dtype=int))
    with pytest.raises(DatasetError, match="label 5 of row 2 is out of range 0..4"):
        w.append(np.zeros((3, 25, 25)), np.array([0, 1, 5]))
    with pytest.raises(DatasetError, match="cannot be stored as float32"):
        w.append(np.zeros((3, 25, 25), dtype=complex), np.zeros(3, dtype=int))
    w.close()
    with pytest.raises(DatasetError, match="already exists"):
        DatasetWriter(
            tmp_path / "d.h5", sample_shape=(25, 25), dtype="float32", class_names=CLASSES
        )


def test_overwrite_replaces_dataset(make_dataset: MakeDataset, tmp_path) -> None:
    path = make_dataset(rows=3000)
    with DatasetWriter(
        path, sample_shape=(2,), dtype="uint16", class_names=["a"], overwrite=True
    ) as w:
        w.append(np.ones((5, 2), dtype=np.uint16), np.zeros(5, dtype=int))
    with Dataset(path) as ds:
        assert len(ds) == 5 and ds.dtype == np.uint16
        assert len(ds.shards) == 1


def test_uint16_kmer_rows(tmp_path) -> None:
    path = tmp_path / "kmers.h5"
    rng = np.random.default_rng(1)
    x = rng.integers(0, 65521, size=(3000, 126), dtype=np.uint16)
    y = rng.integers(0, 5, size=3000)
    with DatasetWriter(
        path, sample_shape=(126,), dtype=np.uint16, class_names=CLASSES, shard_capacity=1024
    ) as w:
        w.append(x, y)
    with Dataset(path) as ds:
        got_x, got_y = ds.read_range(500, 2600)
        np.testing.assert_array_equal(got_x, x[500:2600])
        np.testing.assert_array_equal(got_y, y[500:2600])
        assert ds.value_stats()["max"] == float(x.max())


def test_helpers() -> None:
    assert parse_shape("25x25") == (25, 25)
    assert parse_shape("126") == (126,)
    with pytest.raises(ValueError):
        parse_shape("0x3")
    cap = default_capacity((25, 25), np.dtype("float32"))
    assert cap & (cap - 1) == 0 and 2**16 <= cap <= 2**22


def test_write_threads_write_the_same_dataset(tmp_path) -> None:
    """Appends split among write threads (parts of >= 1 MiB at their own offsets) give the
    dataset one thread gives: rows, shard hashes and statistics, across shard boundaries."""
    x, y = reference_rows(0, 12_000)
    metas = {}
    for threads in (1, 3):
        path = tmp_path / f"t{threads}.h5"
        w = DatasetWriter(
            path, sample_shape=(25, 25), dtype=np.float32, class_names=CLASSES,
            shard_capacity=4096, write_threads=threads,
        )  # fmt: skip
        with w:
            for a, b in ((0, 3), (3, 5000), (5000, 5001), (5001, 11_000), (11_000, 12_000)):
                w.append(x[a:b], y[a:b])  # (5,997 rows = 14 MiB: three parts)
        with Dataset(path) as ds:
            xs, ys = ds.read_range(0, len(ds))
            np.testing.assert_array_equal(xs, x)
            np.testing.assert_array_equal(ys, y)
            metas[threads] = [(s.content_hash, s.committed, s.stats.to_json()) for s in ds.shards]
    assert metas[1] == metas[3]
    assert [m[1] for m in metas[3]] == [4096, 4096, 3808]
