"""The dataset health report (issue 32, point 4): class balance per split and fold, group
sizes, identical rows across splits, label issues; each number's rows, checked by brute
force on an imported dataset with groups and planted duplicates."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
from conftest import guiapp

from guiapp.core.explain.health import dataset_health, health_config, rows_of, split_codes
from guiapp.core.store import Dataset
from guiapp.core.store.columns import read_groups


def test_health_numbers_and_their_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    docs = []
    for i in range(600):
        data = rng.integers(0, 1000, 8).tolist()
        docs.append({"label": f"c{i % 3}", "g": f"g{i % 30}", "data": data})
    for i in range(12):  # a copy of another group's row: identical bytes and label
        docs.append({**docs[i * 7], "g": f"g{(i * 7 + 11) % 30}"})
    with open(tmp_path / "d.jsonl", "w") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    data = tmp_path / "d.h5"
    r = guiapp("import", tmp_path / "d.jsonl", data, "--format", "jsonl", "--group-field", "g")
    assert r.returncode == 0, r.stderr[-2000:]
    cfg = dataclasses.replace(health_config(None, str(data)), val=0.2, test=0.2, folds=3)
    with Dataset(data) as ds:
        rep = dataset_health(ds, cfg)
        labels = ds.read_labels()
        cols = rep["columns"]
        assert cols["all"] == np.bincount(labels, minlength=3).tolist()
        assert sum(np.array(cols[s]) for s in ("train", "val", "test")).tolist() == cols["all"]
        folds = [f"fold-{f}" for f in range(3)]
        assert all(f in cols for f in folds)
        for split in ("all", "train", "val", "test", "fold-1"):
            for c in range(3):
                rows = rows_of(ds, cfg, ("class", split, c))
                assert len(rows) == cols[split][c] and (labels[rows] == c).all()
        groups = read_groups(ds)
        g = rep["groups"]
        assert g["groups"] == 30 and g["max"] >= g["median"] >= g["min"] > 0
        for top in g["largest"][:3]:
            rows = rows_of(ds, cfg, ("group", top["group"]))
            assert len(rows) == top["rows"] and (groups[rows] == top["group"]).all()
        # identical rows across splits, by brute force over the rows' bytes and labels
        codes = split_codes(ds, cfg)
        seen: dict[bytes, set[int]] = {}
        for row in range(len(ds)):
            x, y = ds.read(row)
            seen.setdefault(x.tobytes() + bytes([y]), set()).add(row)
        expected = sorted(
            r for rs in seen.values() if len({int(codes[r]) for r in rs}) > 1 for r in rs
        )
        assert len(expected) >= 2  # some planted copies landed in another split
        dup = rows_of(ds, cfg, ("duplicates",))
        assert dup.tolist() == expected and rep["duplicates"]["rows"] == len(expected)
        assert rep["issues"] is None
