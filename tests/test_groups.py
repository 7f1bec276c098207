"""Row lineage: groups in the store, grouped splits by default, the leakage check.

The principal test trains a model that can memorise on pure noise with random labels,
written as 8 augmented copies per source sample: split by rows, validation "accuracy" is
the memorised copies' (far above chance); split by groups (the default) it is chance.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import guiapp

from guiapp.core.pipeline.group_split import assign_groups
from guiapp.core.pipeline.read_plan import ReadPlan, SplitSpec
from guiapp.core.store import Dataset, DatasetWriter
from guiapp.core.store.columns import group_summary, read_column

NOISE = """
import numpy as np

def generate(rng, n, params):
    x = rng.normal(size=(n, *params["shape"])).astype("float32")
    y = rng.integers(0, params["classes"], n)
    return x, y
"""

WITH_GROUPS = """
import numpy as np

def generate(rng, n, params):
    g = rng.integers(0, 50, n)
    return rng.normal(size=(n, 4)) + g[:, None], g % params["classes"], g
"""

DENSE = {
    "name": "memoriser",
    "input": {"shape": [8, 8], "dtype": "float32"},
    "layers": [
        {"type": "Flatten"},
        {"type": "Dense", "units": 256, "activation": "relu"},
        {"type": "Dense", "units": 5, "activation": "softmax"},
    ],
    "loss": "sparse_categorical_crossentropy",
    "optimizer": {"type": "adam", "learning_rate": 0.003},
    "metrics": ["accuracy"],
}


def best_val_accuracy(run: Path) -> float:
    rows = (run / "history.csv").read_text().splitlines()
    head = rows[0].split(",")
    col = head.index("val_accuracy")
    return max(float(r.split(",")[col]) for r in rows[1:])


@pytest.fixture(scope="module")
def noise8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("noise")
    (d / "noise.py").write_text(NOISE)
    out = d / "noise.h5"
    aug = json.dumps({"copies": 8, "ops": [{"op": "noise", "std": 0.3}]})
    r = guiapp(
        "generate", out, "--generator", d / "noise.py", "--n", 16_000, "--shape", "8x8",
        "--classes", 5, "--seed", 1, "--augment", aug,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out


def test_augmented_copies_share_their_source_group(noise8: Path) -> None:
    with Dataset(noise8) as ds:
        assert ds.has_groups and ds.format_version == 3
        g = read_column(ds, "group")
        x, y = ds.read_range(0, len(ds))
    ids, sizes = np.unique(g, return_counts=True)
    assert len(ids) == 2000 and set(sizes.tolist()) == {8}
    for gid in ids[:20]:  # copies of one sample: one label, values near each other
        rows = np.flatnonzero(g == gid)
        assert len(set(y[rows].tolist())) == 1
        assert np.abs(x[rows] - x[rows].mean(axis=0)).max() < 2.0
    info = json.loads(guiapp("info", noise8, "--json").stdout)
    assert info["columns"] == {"group": "int64"}
    assert group_summary(Dataset(noise8))["rows_per_group"] == {"min": 8, "median": 8.0, "max": 8}


def test_noise_with_augmented_copies_scores_chance_unless_split_by_rows(
    tmp_path: Path, noise8: Path
) -> None:
    """Pure noise, random labels, 8 copies each: by groups (the default) the best
    validation accuracy stays near chance (0.2); by rows the model's memory of the copies
    shows as 'accuracy' (the defect this default prevents)."""
    spec = tmp_path / "dense.json"
    spec.write_text(json.dumps(DENSE))
    scores = {}
    for by in ("groups", "rows"):
        out = tmp_path / by
        args = ["--data", noise8, "--model", spec, "--out", out, "--epochs", 12, "--batch", 64]
        r = guiapp("train", *args, "--val", 0.2, *(["--split-by", "rows"] if by == "rows" else []))
        assert r.returncode == 0, r.stderr
        scores[by] = best_val_accuracy(out)
        split = json.loads((out / "config.json").read_text())["split"]
        assert split["by"] == by
    assert scores["groups"] <= 0.30, scores
    assert scores["rows"] > 0.6, scores  # the model memorises: the leak is real
    split = json.loads((tmp_path / "groups" / "config.json").read_text())["split"]
    assert split["total_groups"] == 2000
    assert split["groups"]["val"] + split["groups"]["train"] == 2000
    assert split["rows"]["val"] == 8 * split["groups"]["val"]
    # The leakage check: none by groups; by rows, groups cross (read from the run's config).
    clean = json.loads(
        guiapp("check", noise8, "--leakage", "--run", tmp_path / "groups", "--json").stdout
    )
    leaky = json.loads(
        guiapp("check", noise8, "--leakage", "--run", tmp_path / "rows", "--json").stdout
    )
    assert clean["groups"]["crossing"] == 0 and not clean["leaks"]
    assert leaky["groups"]["crossing"] > 1000 and leaky["leaks"]
    text = guiapp("check", noise8, "--leakage", "--run", tmp_path / "rows").stdout
    assert "cross splits" in text and "LEAKS" in text


def test_group_split_keeps_groups_whole_stratified_and_balanced() -> None:
    rng = np.random.default_rng(0)
    n = 30_011
    groups = rng.integers(0, 3000, n) * 7 + 11  # sparse ids
    sizes = np.bincount(np.unique(groups, return_inverse=True)[1])
    labels = (groups // 7 % 5).astype(np.int32)
    for folds in (0, 5):
        fold_rows = []
        for fold in range(max(1, folds)):
            a = assign_groups(groups, labels, SplitSpec(val=0.2, test=0.1, folds=folds, fold=fold))
            masks = {s: a.mask(s) for s in ("train", "val", "test")}
            total = masks["train"].astype(int) + masks["val"] + masks["test"]
            assert (total == 1).all()  # every row in exactly one split
            for s, t in (("train", "val"), ("train", "test"), ("val", "test")):
                assert not set(groups[masks[s]]) & set(groups[masks[t]])
            per_class = np.bincount(labels[masks["val"]], minlength=5) / masks["val"].sum()
            assert np.abs(per_class - 0.2).max() < 0.02  # stratified
            fold_rows.append(int(masks["val"].sum()))
            assert abs(masks["test"].sum() - 0.1 * n) <= 2 * sizes.max()
        if folds:
            assert max(fold_rows) - min(fold_rows) <= 2 * sizes.max()
        else:
            assert abs(fold_rows[0] - 0.2 * n) <= 2 * sizes.max()
    # A data fraction keeps whole training groups and says how many.
    a = assign_groups(groups, labels, SplitSpec(val=0.2))
    half = a.mask("train", 0.5)
    assert not set(groups[half]) & set(groups[a.mask("train") & ~half])
    s = a.summary(0.5)
    assert abs(s["rows"]["train"] - 0.5 * a.mask("train").sum()) <= 2 * sizes.max()
    assert s["groups"]["train"] == len(set(groups[half].tolist()))


@pytest.mark.parametrize("workers", [1, 3])
def test_masked_plan_reads_every_selected_row_once_per_epoch(workers: int) -> None:
    rng = np.random.default_rng(1)
    n = 9_001
    groups = rng.integers(0, 700, n)
    labels = (groups % 3).astype(np.int32)
    a = assign_groups(groups, labels, SplitSpec(val=0.25, seed=5))
    for split in ("train", "val"):
        mask = a.mask(split, 0.7 if split == "train" else 1.0)
        orders = []
        for epoch in (0, 1):
            got: list[int] = []
            for w in range(workers):
                plan = ReadPlan(
                    rows=n, batch_size=50, block_rows=256, window_blocks=4, chunk_rows=8,
                    seed=2, split=split, row_mask=mask, worker=w, workers=workers,
                )  # fmt: skip
                ep = plan.epoch(epoch)
                for b0 in range(0, ep.num_batches, 4):
                    src, dest, length = ep.segment_runs(b0, min(b0 + 4, ep.num_batches))
                    seg = np.empty(int(length.sum()), np.int64)
                    for s, d, m in zip(src, dest, length, strict=True):
                        seg[d : d + m] = np.arange(s, s + m)
                    got.extend(seg.tolist())
            assert sorted(got) == np.flatnonzero(mask).tolist()
            orders.append(got)
        assert orders[0] != orders[1]  # the order differs per epoch


def test_user_generator_groups_and_bad_groups(tmp_path: Path) -> None:
    gen = tmp_path / "g.py"
    gen.write_text(WITH_GROUPS)
    out = tmp_path / "g.h5"
    r = guiapp("generate", out, "--generator", gen, "--shape", 4, "--classes", 5, "--n", 3000,
               "--shard-rows", 1000, "--workers", 2)  # fmt: skip
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        g = read_column(ds, "group")
        x, y = ds.read_range(0, len(ds))
    assert set(g.tolist()) <= set(range(50)) and (y == g % 5).all()
    assert np.allclose(x.mean(axis=1), g, atol=2.5)
    for body, expected in (
        ("g[:-1]", "returned groups of shape"),
        ("g.astype(float)", "dtype float64"),
        ("g - 100", "group ids are integers in 0..2^63-1"),
    ):
        bad = tmp_path / "bad.py"
        bad.write_text(
            WITH_GROUPS.replace('% params["classes"], g', f'% params["classes"], {body}')
        )
        target = tmp_path / "bad.h5"
        r = guiapp("generate", target, "--generator", bad, "--shape", 4, "--n", 3000)
        assert r.returncode == 2, r.stderr
        assert expected in r.stderr and str(bad) in r.stderr and "Traceback" not in r.stderr
        assert not target.exists()


def test_datasets_without_groups_open_and_say_so(tmp_path: Path) -> None:
    """A dataset written without lineage (as every format_version 2 dataset was) opens,
    has no groups, and its split goes by blocks, as before."""
    import h5py

    path = tmp_path / "old.h5"
    with DatasetWriter(path, sample_shape=(3,), dtype="float32", class_names=["a", "b"]) as w:
        w.append(np.zeros((500, 3)), np.arange(500) % 2)
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = np.int64(2)
    with Dataset(path) as ds:
        assert not ds.has_groups and ds.columns == {} and ds.format_version == 2
        assert group_summary(ds) == {"groups": None, "kept_fields": []}
    r = guiapp("check", path, "--leakage")
    assert r.returncode == 0 and "groups: none (each row is its own group)" in r.stdout


def test_leakage_check_finds_identical_rows_across_splits(tmp_path: Path) -> None:
    path = tmp_path / "dups.h5"
    x = np.random.default_rng(0).normal(size=(4000, 5)).astype("float32")
    x[3000:] = x[:1000]  # 1000 exact copies, far from their originals
    y = np.arange(4000) % 2
    y[3000:] = y[:1000]
    with DatasetWriter(path, sample_shape=(5,), dtype="float32", class_names=["a", "b"]) as w:
        w.append(x, y)
    rep = json.loads(guiapp("check", path, "--leakage", "--json").stdout)
    d = rep["duplicates"]
    assert rep["leaks"] and 0 < d["groups"] < 1000 and d["rows"] == 2 * d["groups"]
    ex = d["examples"][0]
    assert len(ex["splits"]) == 2 and (x[ex["rows"][0]] == x[ex["rows"][1]]).all()


@pytest.mark.parametrize("use_pread", [True, False])
def test_grouped_split_reads_exactly_its_rows_from_disk(noise8: Path, use_pread: bool) -> None:
    """The reader's batches of a grouped split hold exactly the split's rows, bytes and
    labels (the compiled read fills the gaps between runs with scratch reads)."""
    from guiapp.core.pipeline import BatchPipeline
    from guiapp.core.pipeline.group_split import split_mask

    with Dataset(noise8) as ds:
        x_all, y_all = ds.read_range(0, len(ds))
        splits = SplitSpec(val=0.2, seed=4)
        for split in ("train", "val"):
            mask = split_mask(ds, splits, split)
            assert mask is not None
            pipe = BatchPipeline(
                ds, batch_size=100, split=split, splits=splits, row_mask=mask,
                use_pread=use_pread, chunk_rows=8,
            )  # fmt: skip
            xs, ys = zip(*[(x.copy(), y.copy()) for x, y in pipe.numpy_batches(0)], strict=True)
            got_x, got_y = np.concatenate(xs), np.concatenate(ys)
            want = np.flatnonzero(mask)
            assert len(got_x) == len(want)
            key = lambda a: np.lexsort(a.reshape(len(a), -1).T)  # noqa: E731
            assert np.array_equal(got_x[key(got_x)], x_all[want][key(x_all[want])])
            assert (
                np.bincount(got_y, minlength=5).tolist()
                == np.bincount(y_all[want], minlength=5).tolist()
            )


def test_compiled_copy_plan_equals_numpy() -> None:
    """``jitruns.masked_runs`` gives the numpy path's runs, window by window."""
    rng = np.random.default_rng(3)
    n = 20_000
    groups = rng.integers(0, 900, n)
    mask = assign_groups(groups, (groups % 4).astype(np.int32), SplitSpec(val=0.3)).mask("val")
    for shuffle in (True, False):
        plan = ReadPlan(rows=n, batch_size=64, block_rows=512, window_blocks=5, chunk_rows=16,
                        seed=9, split="val", row_mask=mask, shuffle=shuffle)  # fmt: skip
        ep = plan.epoch(1)
        for w in range(ep.num_windows):
            a = ep._masked_window_runs(w, compiled=True)
            b = ep._masked_window_runs(w, compiled=False)
            for u, v in zip(a, b, strict=True):
                assert np.array_equal(u, v)


def test_check_validates_the_columns(noise8: Path, tmp_path: Path) -> None:
    import shutil

    import h5py

    copy = tmp_path / "noise.h5"
    shutil.copy(noise8, copy)
    shutil.copytree(noise8.with_name("noise.shards"), tmp_path / "noise.shards")
    r = guiapp("check", copy, "--json")
    rep = json.loads(r.stdout)
    assert r.returncode == 0 and any("columns group" in c for c in rep["checked"])
    shard = next((tmp_path / "noise.shards").glob("*.h5"))
    with h5py.File(shard, "r+") as f:
        del f["meta/group"]
    r = guiapp("check", copy)
    assert r.returncode == 2 and "column 'group' is missing" in r.stderr and str(shard) in r.stderr


def test_packed_copies_fill_units_from_any_offset() -> None:
    from guiapp.core.generate.packing import packed_copies, packed_order

    kept = packed_copies(1000, 100, 3, 1024)  # 24 rows to the unit's end, then 76
    assert kept.tolist() == [3] * 8 + [3] * 25 + [1] and kept.sum() == 100
    order = packed_order(np.random.default_rng(0), 1000, 100, 1024)
    assert sorted(order[:24].tolist()) == list(range(24))  # rows stay in their unit
    assert sorted(order[24:].tolist()) == list(range(24, 100))


def test_packed_copies_split_by_whole_blocks(tmp_path: Path) -> None:
    """Copies that do not divide a unit (3 of 1,024) are packed whole into units, and a
    grouped split of enough units assigns whole units: every block it reads is whole, no
    group crosses splits, and the reader reads exactly the split's rows."""
    from guiapp.core.pipeline import BatchPipeline
    from guiapp.core.pipeline.group_split import dataset_assignment, describe_split, split_mask

    out = tmp_path / "k.h5"
    aug = json.dumps({"copies": 3, "ops": [{"op": "mutate", "rate": 0.01}]})
    r = guiapp(
        "generate", out, "--generator", "kmer1d", "--n", 70_000, "--seed", 2,
        "--shard-rows", 30_000, "--augment", aug,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        assert ds.group_blocks == 1024
        g = read_column(ds, "group")
        x_all, y_all = ds.read_range(0, len(ds))
        ids, inv, sizes = np.unique(g, return_inverse=True, return_counts=True)
        unit = np.arange(len(g)) // 1024
        lo = np.full(len(ids), 10**9)
        hi = np.zeros(len(ids), np.int64)
        np.minimum.at(lo, inv, unit)
        np.maximum.at(hi, inv, unit)
        assert (lo == hi).all()  # no group crosses a unit (nor a shard of 30,000 rows)
        assert set(sizes.tolist()) <= {1, 2, 3} and np.mean(sizes == 3) > 0.99
        assert all(len(set(y_all[inv == i].tolist())) == 1 for i in range(0, len(ids), 997))
        for splits in (SplitSpec(val=0.1, seed=3), SplitSpec(folds=5, fold=2, seed=3)):
            a = dataset_assignment(ds, splits)
            assert a is not None and a.by_atoms and len(a.atom_sizes) == 69
            codes = a.row_codes()
            per_group = np.zeros((len(ids), 3), bool)
            per_group[inv, codes] = True
            assert per_group.sum(axis=1).max() == 1  # every group in one split
            assert (
                abs(np.count_nonzero(codes == 1) - 0.1 * len(g) * (2 if splits.folds else 1))
                <= 1024
            )
            assert describe_split(ds, splits)["atoms"] == 69
            for block_rows in (512, 1024):
                mask = split_mask(ds, splits, "train")
                assert mask is not None
                plan = ReadPlan(rows=len(g), batch_size=64, block_rows=block_rows,
                                split="train", splits=splits, row_mask=mask)  # fmt: skip
                assert plan.whole_blocks
            pipe = BatchPipeline(ds, batch_size=500, split="val", splits=splits,
                                 row_mask=split_mask(ds, splits, "val"))  # fmt: skip
            got = np.concatenate([xb.copy() for xb, _ in pipe.numpy_batches(0)])
            want = x_all[codes == 1]
            key = lambda a: np.lexsort(a.T)  # noqa: E731
            assert np.array_equal(got[key(got)], want[key(want)])
