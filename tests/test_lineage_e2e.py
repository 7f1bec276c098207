"""Issue 28's acceptance, end to end through the commands a user runs: a mongoexport
JSON-lines file of reads of 24 genomes (``accession``) imported with its lineage, five
folds by accession, the per-row predictions' kept ``accession`` and ``_id`` columns, the
per-group table and the pooled out-of-fold report; then ``predict`` on the file itself."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import dense_spec, guiapp, imported, trained

GENOMES = 24
MODEL = dense_spec(16, 4, units=32, name="reads")


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, list]]]:
    """The file and, per ``_id``, its accession and data (what each line holds)."""
    d = tmp_path_factory.mktemp("reads")
    rng = np.random.default_rng(3)
    docs = []
    for g in range(GENOMES):
        species = g % 4
        for _ in range(int(rng.integers(40, 120))):
            data = (rng.integers(1, 500, 16) + species * 400).tolist()
            docs.append({"accession": f"GCF_{g:06d}.1", "name": f"read{len(docs)}",
                         "label": f"species{species}", "data": data})  # fmt: skip
    rng.shuffle(docs)  # type: ignore[arg-type]
    by_id = {}
    with open(d / "reads.jsonl", "w") as fh:
        for i, doc in enumerate(docs):
            doc = {"_id": {"$oid": f"{i:024x}"}, **doc}
            by_id[f"{i:024x}"] = (doc["accession"], doc["data"])
            fh.write(json.dumps(doc) + "\n")
    return d / "reads.jsonl", by_id


def test_folds_by_accession_and_per_genome_results(reads, tmp_path: Path) -> None:
    src, by_id = reads
    data = imported(src, tmp_path / "reads.h5", "--format", "jsonl", "--group-field",
                    "accession", "--keep-fields", "_id,name")  # fmt: skip
    out = trained(tmp_path / "cv", data, MODEL, "--folds", 5, "--epochs", 2, "--batch", 64)
    fold_of: dict[str, int] = {}
    seen_ids: set[str] = set()
    fold_rows = []
    for k in range(5):
        with h5py.File(out / f"fold-{k}" / "predictions.h5", "r") as f:
            n = int(f.attrs["committed"])
            accession = [v.decode() for v in f["fields/group"][:n]]
            ids = [v.decode() for v in f["fields/_id"][:n]]
        fold_rows.append(n)
        for a, i in zip(accession, ids, strict=True):
            assert fold_of.setdefault(a, k) == k, f"{a} in folds {fold_of[a]} and {k}"
            assert by_id[i][0] == a  # the row's kept _id is its line's, with its accession
            assert i not in seen_ids
            seen_ids.add(i)
    assert seen_ids == set(by_id) and len(fold_of) == GENOMES  # every row once, pooled
    _, sizes = np.unique([v[0] for v in by_id.values()], return_counts=True)
    assert max(fold_rows) - min(fold_rows) <= sizes.max()  # (the issue: + one block)
    summary = json.loads((out / "experiment.json").read_text())
    oof = summary["summary"]["oof"]
    assert oof["rows"]["rows"] == len(by_id)
    assert oof["groups"]["groups"] == GENOMES
    with open(out / "oof_groups.csv") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == GENOMES and sum(int(t["rows"]) for t in table) == len(by_id)

    # predict on the file itself: every row's _id is its source line's (joined, not ordered)
    (tmp_path / "pred").mkdir()
    pred = tmp_path / "pred" / "pred.csv"
    r = guiapp("predict", "--model", out / "fold-0", "--data", src, "--out", pred,
               "--group-field", "accession", "--keep-fields", "_id",
               "--aggregate-by", "group")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    with open(pred) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(by_id)
    for row in rows:
        assert by_id[row["_id"]][0] == row["group"]
    with open(tmp_path / "pred" / "pred.groups.csv") as fh:
        groups = list(csv.DictReader(fh))
    assert len(groups) == GENOMES
