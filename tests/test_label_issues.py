"""Likely label issues (issue 32): planted label noise found by ``guiapp labels`` from a
5-fold experiment's out-of-fold predictions, through the commands a user runs (import with
a kept ``_id``, train --folds 5, labels); predictions that include training rows refused;
the confident-learning rule itself on small hand-made probabilities."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import dense_spec, guiapp, imported, trained

from guiapp.core.explain.label_issues import assign, class_ranks, thresholds_of

CLASSES = 4
MODEL = dense_spec(16, CLASSES, units=32, name="points")


def noisy_points(path: Path, rows: int, flip: float, seed: int = 5) -> dict[str, tuple[int, int]]:
    """A JSON-lines file of ``rows`` points in 4 separable classes, ``flip`` of them with a
    wrong label; returns per ``_id`` (true class, written label)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 2.0, (CLASSES, 16))
    y = rng.integers(0, CLASSES, rows)
    x = centers[y] + rng.normal(0, 1.0, (rows, 16))
    written = y.copy()
    flipped = rng.choice(rows, int(round(flip * rows)), replace=False)
    written[flipped] = (y[flipped] + rng.integers(1, CLASSES, len(flipped))) % CLASSES
    truth = {}
    with open(path, "w") as fh:
        for i in range(rows):
            doc = {
                "_id": f"p{i:06d}",
                "label": f"c{written[i]}",
                "data": np.round(x[i], 4).tolist(),
            }
            fh.write(json.dumps(doc) + "\n")
            truth[f"p{i:06d}"] = (int(y[i]), int(written[i]))
    return truth


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_planted_label_noise_is_found_and_training_rows_refused(tmp_path: Path) -> None:
    truth = noisy_points(tmp_path / "points.jsonl", 2000, 0.05)
    data = imported(tmp_path / "points.jsonl", tmp_path / "points.h5", "--format", "jsonl",
                    "--keep-fields", "_id", "--dtype", "float32")  # fmt: skip
    cv = trained(tmp_path / "cv", data, MODEL, "--folds", 5, "--epochs", 3, "--batch", 64)

    out = tmp_path / "labels.csv"
    r = guiapp("labels", "--experiment", cv, "--out", out, "--all")
    assert r.returncode == 0, r.stderr[-2000:]
    lines = read_csv(out)
    assert len(lines) == len(truth)  # every row once, pooled over the five folds
    flipped = {i for i, (t, w) in truth.items() if t != w}
    n = len(flipped)
    top = lines[:n]
    caught = [line for line in top if line["_id"] in flipped]
    recall = len(caught) / n
    assert recall >= 0.8, f"top {n} hold {len(caught)} of {n} flipped rows"
    for line in lines:  # the written (noisy) label, joined back by the kept _id
        assert line["label_name"] == f"c{truth[line['_id']][1]}"
    right = sum(line["suggested_name"] == f"c{truth[line['_id']][0]}" for line in caught)
    assert right >= 0.8 * len(caught)  # the suggested label is the true one
    issues = [line for line in lines if line["issue"] == "1"]
    assert lines[: len(issues)] == issues  # the likely issues come first
    sc = [float(line["self_confidence"]) for line in issues]
    assert sc == sorted(sc)
    for c in range(CLASSES):  # per class: ranks 1, 2, ... in the overall order
        ranks = [int(line["class_rank"]) for line in lines if line["label"] == str(c)]
        assert ranks == list(range(1, len(ranks) + 1))

    # only the issues by default, one class with --class
    r = guiapp("labels", "--experiment", cv, "--out", tmp_path / "c1.csv", "--class", "c1")
    assert r.returncode == 0, r.stderr
    c1 = read_csv(tmp_path / "c1.csv")
    assert c1 and all(line["label_name"] == "c1" and line["issue"] == "1" for line in c1)
    assert [line["_id"] for line in c1] == [
        line["_id"] for line in issues if line["label_name"] == "c1"
    ]

    # a run's predictions of its own training rows: refused in one line, nothing written
    pred = tmp_path / "train-pred.h5"
    r = guiapp(
        "predict", "--model", cv / "fold-0", "--data", data, "--split", "train", "--out", pred
    )
    assert r.returncode == 0, r.stderr[-2000:]
    bad = tmp_path / "bad.csv"
    r = guiapp("labels", "--predictions", pred, "--out", bad)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "trained on" in r.stderr, r.stderr
    assert not bad.exists()
    r = guiapp("labels", "--experiment", cv, "--out", bad, "--class", "nope")
    assert r.returncode == 2 and "--class nope" in r.stderr and "Traceback" not in r.stderr


def test_confident_learning_rule_by_hand() -> None:
    # labels 0,0,0,1,1,1; row 2 is labelled 0 but confidently class 1
    p = np.array([[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.25, 0.75], [0.1, 0.9], [0.5, 0.5]])
    y = np.array([0, 0, 0, 1, 1, 1])
    sums = np.bincount(y, weights=p[np.arange(6), y], minlength=2)
    th = thresholds_of(sums, np.bincount(y, minlength=2).astype(float))
    assert th == pytest.approx([(0.9 + 0.8 + 0.2) / 3, (0.75 + 0.9 + 0.5) / 3])
    j = assign(p, th)
    assert j.tolist() == [0, 0, 1, 1, 1, -1]  # row 5 reaches neither threshold
    # a class nobody is labelled has an infinite threshold: nothing goes to it
    th3 = thresholds_of(np.array([1.0, 0.0]), np.array([2.0, 0.0]))
    assert th3[1] == np.inf
    order = np.array([2, 5, 0, 1, 3, 4])
    assert class_ranks(y, order, 2).tolist() == [2, 3, 1, 2, 3, 1]


@pytest.mark.slow
def test_planted_label_noise_in_10000_images() -> None:
    """The benchmark's image case (docs/BENCHMARKS.md): 10,000 patterns2d rows, 5% flipped,
    cnn2d-small over 5 folds; the top N of the ranking holds >= 80% of the flipped rows."""
    from guiapp.bench.label_noise import measure

    got = measure("patterns2d", 10_000, 0.05, folds=5, epochs=3, seed=5)
    assert got["top_n_precision_recall"] >= 0.8, got  # type: ignore[operator]
    assert got["flagged_recall"] >= 0.8, got  # type: ignore[operator]
