"""Lineage in predictions: kept fields and groups in the table, per-group results
(`predict --aggregate-by`, a run's evaluation) and the pooled out-of-fold report of a k-fold
experiment. Real datasets, real `guiapp` processes, a small real TensorFlow model."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import guiapp, killed_predict, trained

from guiapp.bench.specs import classifier
from guiapp.core.predict import PredictionTable
from guiapp.core.store import Dataset, DatasetWriter
from guiapp.core.store import columns as cols

CLASSES = ["alpha", "beta", "gamma"]
GROUPS = 120
LAYERS = [{"type": "Flatten"}, {"type": "Dense", "units": 3, "activation": "softmax"}]
MODEL = classifier("tiny", [8, 8], LAYERS, learning_rate=0.01)


def write_documents(path: Path) -> Path:
    """~1,400 rows of 8x8 in 120 named groups (documents), shuffled over three shards; each
    row keeps its `_id` (``doc017-3``); a document's rows mostly share its class."""
    rng = np.random.default_rng(7)
    names = [f"doc{g:03d}" for g in range(GROUPS)]
    ids = cols.group_id(names)
    klass = rng.integers(0, len(CLASSES), GROUPS)
    sizes = rng.integers(4, 20, GROUPS)
    y = np.concatenate(
        [
            np.where(rng.random(n) < 0.8, k, rng.integers(0, 3, n))
            for k, n in zip(klass, sizes, strict=True)
        ]
    ).astype(np.int32)
    group = np.repeat(ids, sizes)
    _id = np.array([f"{names[g]}-{i}" for g in range(GROUPS) for i in range(sizes[g])])
    x = (rng.normal(size=(len(y), 8, 8)) + y[:, None, None] * 0.8).astype(np.float32)
    order = rng.permutation(len(y))
    with DatasetWriter(
        path,
        sample_shape=(8, 8),
        dtype="float32",
        class_names=CLASSES,
        shard_capacity=512,
        columns={"group": "int64", "_id": "S16"},
    ) as w:
        w.append(x[order], y[order], {"group": group[order], "_id": _id[order]})
        w.set_group_names(ids, names)
    return path


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The dataset, its model spec and a run trained on it (2 epochs, split by groups)."""
    folder = tmp_path_factory.mktemp("docs")
    data = write_documents(folder / "docs.h5")
    model = folder / "tiny.json"
    model.write_text(json.dumps(MODEL))
    run = trained(folder / "run", data, model, "--batch", "64", "--epochs", "2", "--val", "0.3")
    return data, model, run


def dataset_fields(data: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Every row's `_id`, group name and label."""
    with Dataset(data) as ds:
        ids = [v.decode() for v in cols.read_column(ds, "_id").tolist()]
        names = cols.name_groups(cols.read_groups(ds), cols.group_names(ds))
        return ids, names, ds.read_range(0, len(ds))[1]


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def recompute(rows: list[dict[str, str]], key: str) -> dict[str, dict[str, object]]:
    """Per-group results from a predictions CSV (with --probs) the slow, obvious way."""
    out: dict[str, dict[str, object]] = {}
    for key_value in dict.fromkeys(r[key] for r in rows):
        mine = [r for r in rows if r[key] == key_value]
        probs = np.array([[float(r[f"prob_{c}"]) for c in CLASSES] for r in mine])
        votes = np.bincount([int(r["pred"]) for r in mine], minlength=3)
        labels = np.bincount([int(r["label"]) for r in mine], minlength=3)
        mean = probs.mean(axis=0)
        out[key_value] = {
            "rows": len(mine),
            "mean_class": int(np.argmax(mean)),
            "mean_prob": float(mean.max()),
            "vote_class": int(np.argmax(votes)),
            "vote_share": float(votes.max() / len(mine)),
            "true_class": int(np.argmax(labels)),
        }
    return out


def events_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def all_arrays(path: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}

    def keep(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            out[name] = obj[()]

    with h5py.File(path, "r", locking=False) as f:
        f.visititems(keep)
    return out


# ---------------------------------------------------------------------- predict
def test_predictions_carry_the_kept_fields_and_the_group(tmp_path: Path, docs) -> None:
    data, _model, run = docs
    ids, names, y = dataset_fields(data)
    out = tmp_path / "pred.csv"
    r = guiapp("predict", "--model", run, "--data", data, "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = read_csv(out)
    assert len(rows) == len(ids)
    assert list(rows[0])[-3:] == ["group", "group_id", "_id"]
    for line in rows:
        i = int(line["row"])
        assert line["_id"] == ids[i] and line["group"] == names[i]
        assert int(line["label"]) == y[i] and line["_id"].startswith(line["group"] + "-")
    # HDF5 output: the same fields, the validation split's rows only
    out = tmp_path / "val.h5"
    r = guiapp("predict", "--model", run, "--data", data, "--out", out, "--split", "val")
    assert r.returncode == 0, r.stderr[-2000:]
    table = PredictionTable(out)
    assert table.fields == ["group", "group_id", "_id"]
    at = table.read("row")
    assert np.array_equal(at, PredictionTable(run / "predictions.h5").read("row"))
    assert [v.decode() for v in table.read_field("_id").tolist()] == [ids[i] for i in at]
    with Dataset(data) as ds:
        assert np.array_equal(table.read_field("group_id"), cols.read_rows(ds, "group", at))


def test_killed_predict_resumes_to_the_identical_file_fields_included(tmp_path: Path, docs) -> None:
    data, _model, run = docs
    args = ["--model", str(run), "--data", str(data), "--batch", "16", "--commit-rows", "16"]
    assert guiapp("predict", *args, "--out", tmp_path / "ref.h5").returncode == 0
    out = tmp_path / "killed.h5"
    killed_predict(args, out)
    committed = PredictionTable(out).committed
    assert 64 <= committed < PredictionTable(tmp_path / "ref.h5").rows
    r = guiapp("predict", *args, "--out", out, "--events", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    assert events_of(r.stdout)[0]["resumed_from"] == committed
    a, b = all_arrays(tmp_path / "ref.h5"), all_arrays(out)
    assert {"fields/group", "fields/group_id", "fields/_id"} <= set(a)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_file_with_lineage_options_predicts_like_its_dataset_joined_by_id(
    tmp_path: Path, docs
) -> None:
    data, _model, run = docs
    ids, names, y = dataset_fields(data)
    with Dataset(data) as ds:
        x = ds.read_range(0, len(ds))[0]
    src = tmp_path / "docs.jsonl"
    with open(src, "w") as fh:
        for i in range(len(y)):
            record = {"_id": ids[i], "doc": names[i], "label": CLASSES[y[i]]}
            fh.write(json.dumps({**record, "data": x[i].reshape(-1).tolist()}) + "\n")
    out = tmp_path / "file.csv"
    r = guiapp("predict", "--model", run, "--data", src, "--out", out, "--group-field", "doc",
               "--keep-fields", "_id", "--aggregate-by", "group")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert (
        guiapp("predict", "--model", run, "--data", data, "--out", tmp_path / "ds.csv").returncode
        == 0
    )
    by_id = {line["_id"]: line for line in read_csv(tmp_path / "ds.csv")}
    rows = read_csv(out)
    assert sorted(line["_id"] for line in rows) == sorted(ids)
    for line in rows:
        same = by_id[line["_id"]]
        assert line["group"] == same["group"] and line["label"] == same["label"]
        assert line["pred"] == same["pred"]
        assert float(line["prob"]) == pytest.approx(float(same["prob"]), abs=1e-5)
    assert len(read_csv(tmp_path / "file.groups.csv")) == GROUPS
    r = guiapp("predict", "--model", run, "--data", src, "--out", tmp_path / "bad.csv",
               "--group-field", "doc", "--aggregate-by", "_id")  # fmt: skip
    assert r.returncode == 2 and "--aggregate-by _id" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("key", ["group", "_id"])
def test_group_table_agrees_with_the_rows(tmp_path: Path, docs, key: str) -> None:
    data, _model, run = docs
    out = tmp_path / "pred.csv"
    r = guiapp("predict", "--model", run, "--data", data, "--out", out, "--probs",
               "--aggregate-by", key, "--events", "-")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    rows = read_csv(out)
    groups = read_csv(tmp_path / "pred.groups.csv")
    expected = recompute(rows, key)
    assert [g[key] for g in groups] == list(expected)  # in order of first appearance
    for g in groups:
        want = expected[g[key]]
        assert int(g["rows"]) == want["rows"]
        assert int(g["mean_class"]) == want["mean_class"]
        assert g["mean_class_name"] == CLASSES[int(g["mean_class"])]
        assert float(g["mean_prob"]) == pytest.approx(want["mean_prob"], abs=1e-5)
        assert int(g["vote_class"]) == want["vote_class"]
        assert float(g["vote_share"]) == pytest.approx(want["vote_share"], abs=1e-5)
        assert int(g["true_class"]) == want["true_class"] and g["unclassified"] == "0"
    summary = events_of(r.stdout)[-1]["groups"]
    assert summary["groups"] == len(groups) == (GROUPS if key == "group" else len(rows))
    assert summary["exact"] and summary["unclassified"] == 0
    hits = sum(g["mean_class"] == g["true_class"] for g in groups)
    assert summary["accuracy"] == pytest.approx(hits / len(groups), abs=1e-6)


def test_min_confidence_marks_unclassified(tmp_path: Path, docs) -> None:
    data, _model, run = docs
    base = ["predict", "--model", run, "--data", data, "--aggregate-by", "group"]
    assert guiapp(*base, "--out", tmp_path / "all.h5").returncode == 0
    mean = np.array([float(g["mean_prob"]) for g in read_csv(tmp_path / "all.groups.csv")])
    p = float(np.round(np.median(mean), 3))
    r = guiapp(*base, "--out", tmp_path / "cut.h5", "--min-confidence", p, "--events", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    groups = read_csv(tmp_path / "cut.groups.csv")
    off = np.array([g["unclassified"] == "1" for g in groups])
    assert np.array_equal(off, np.array([float(g["mean_prob"]) for g in groups]) < p)
    assert 0 < off.sum() < len(groups)
    assert events_of(r.stdout)[-1]["groups"]["unclassified"] == off.sum()


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--aggregate-by", "accession"], "--aggregate-by accession"),
        (["--aggregate-by", "group", "--min-confidence", "1.5"], "--min-confidence 1.5"),
        (["--aggregate-by", "group", "--min-confidence", "-0.1"], "--min-confidence -0.1"),
        (["--min-confidence", "0.5"], "--min-confidence 0.5"),
        (["--keep-fields", "_id"], "--keep-fields _id"),
    ],
)
def test_bad_aggregation_options_are_one_line(
    tmp_path: Path, docs, extra: list[str], option: str
) -> None:
    data, _model, run = docs
    out = tmp_path / "p.h5"
    r = guiapp("predict", "--model", run, "--data", data, "--out", out, *extra)
    assert r.returncode == 2, r.stderr
    assert option in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


# ---------------------------------------------------------------------- training
def test_run_report_has_groups_and_says_how_it_split(tmp_path: Path, docs) -> None:
    data, model, run = docs
    report = json.loads((run / "report.json").read_text())
    assert report["split_by"].startswith(f"by groups: {GROUPS} groups")
    assert f"Split: by groups: {GROUPS} groups" in (run / "report.md").read_text()
    table = PredictionTable(run / "predictions.h5")
    group, label, pred = table.read_field("group"), table.read("label"), table.read("pred")
    lines = read_csv(run / "groups.csv")
    assert sorted(g["group"] for g in lines) == sorted(v.decode() for v in set(group.tolist()))
    assert sum(int(g["rows"]) for g in lines) == table.committed == report["rows"]
    cm = np.zeros((3, 3), np.int64)
    for g in lines:
        cm[int(g["true_class"]), int(g["mean_class"])] += 1
    assert report["groups"]["confusion"] == cm.tolist() and report["groups"]["groups"] == len(lines)
    csv_cm = [r.split(",")[1:] for r in (run / "group_confusion.csv").read_text().splitlines()[1:]]
    assert np.array_equal(np.array(csv_cm, dtype=np.int64), cm)
    assert report["confusion"] == [
        [int(np.sum((label == i) & (pred == j))) for j in range(3)] for i in range(3)
    ]
    # the same data split by rows says so
    rows_run = tmp_path / "rows"
    r = guiapp("train", "--data", data, "--model", model, "--out", rows_run, "--batch", "64",
               "--val", "0.3", "--split-by", "rows")  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((rows_run / "report.json").read_text())["split_by"] == (
        "rows: groups may cross splits"
    )


def test_kfold_groups_in_one_fold_and_pooled_out_of_fold_report(tmp_path: Path, docs) -> None:
    data, model, _run = docs
    out = tmp_path / "cv"
    r = guiapp("train", "--data", data, "--model", model, "--out", out, "--batch", "64",
               "--epochs", "1", "--folds", "3")  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    _ids, names, _y = dataset_fields(data)
    folds = [out / f"fold-{k}" for k in range(3)]
    seen: dict[str, int] = {}
    rows = []
    for k, fold in enumerate(folds):
        table = PredictionTable(fold / "predictions.h5")
        rows.append(table.read("row"))
        for name in {v.decode() for v in table.read_field("group").tolist()}:
            assert name not in seen, f"group {name} in folds {seen.get(name)} and {k}"
            seen[name] = k
    assert set(seen) == set(names) and len(seen) == GROUPS  # every group in exactly one fold
    assert np.array_equal(np.sort(np.concatenate(rows)), np.arange(len(names)))
    oof = json.loads((out / "experiment.json").read_text())["summary"]["oof"]
    reports = [json.loads((f / "report.json").read_text()) for f in folds]
    assert oof["folds"] == 3 and oof["rows"]["rows"] == len(names)
    assert np.array_equal(
        np.array(oof["rows"]["confusion"]), sum(np.array(r["confusion"]) for r in reports)
    )
    assert np.array_equal(
        np.array(oof["groups"]["confusion"]),
        sum(np.array(r["groups"]["confusion"]) for r in reports),
    )
    assert oof["groups"]["groups"] == GROUPS
    assert len(read_csv(out / "oof_groups.csv")) == GROUPS
    md = (out / "experiment.md").read_text()
    assert "## Pooled out-of-fold evaluation (3 folds)" in md and "counting groups" in md
