"""A dataset's health in one report: class balance per split and per fold, the groups'
sizes, identical rows across splits, and (from a ``guiapp labels`` CSV) the likely label
issues. Every number has a key, and :func:`rows_of` gives that key's dataset rows, so a
view can open exactly the rows behind any number.

The splits are the ones a run with the given training config makes (the run's own
config.json, or the defaults: 10% validation by groups); folds are those of
``cfg.folds`` (each fold's validation rows). Identical rows: a 64-bit hash of every row's
bytes and label (``core/pipeline/leakage.py`` ``row_hashes``), sets whose rows lie in more
than one split confirmed byte by byte. Reads every row once for the hashes; memory about
17 bytes a row. Numpy and h5py only (no TensorFlow, no Qt).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from ..pipeline.leakage import SPLIT_NAMES, row_hashes, row_split_codes

TOP_GROUPS = 10


def split_codes(ds: Any, cfg: Any, fold: int | None = None) -> np.ndarray:
    """Per row: 0 train, 1 val (the fold's rows with folds), 2 test."""
    splits = cfg.splits(fold)
    return row_split_codes(ds, splits, cfg.block_rows_for(len(ds)), cfg.split_by)


def duplicate_rows(ds: Any, codes: np.ndarray) -> np.ndarray:
    """Rows identical (bytes and label) to a row in another split, ascending."""
    h = row_hashes(ds)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])
    if not len(same):
        return np.zeros(0, np.int64)
    starts = np.unique(np.concatenate([same, same + 1]))
    out: list[int] = []
    for run in np.split(order[starts], np.flatnonzero(np.diff(starts) > 1) + 1):
        run = np.sort(run)
        if len(set(codes[run].tolist())) < 2:
            continue
        samples = [ds.read(int(r)) for r in run]
        remaining = list(range(len(run)))
        while remaining:  # sets of byte-identical rows within the run
            first = remaining[0]
            fx, fy = samples[first]
            members = [
                i
                for i in remaining
                if samples[i][1] == fy
                and np.array_equal(samples[i][0].view(np.uint8), fx.view(np.uint8))
            ]
            remaining = [i for i in remaining if i not in members]
            if len({int(codes[run[i]]) for i in members}) > 1:
                out += [int(run[i]) for i in members]
    return np.asarray(sorted(out), np.int64)


def dataset_health(ds: Any, cfg: Any, labels_csv: str | Path | None = None) -> dict[str, Any]:
    """The report (JSON-ready). Keys of clickable numbers: ``("class", split, c)`` with
    split one of ``all``/``train``/``val``/``test``/``fold-K`` and c a class or -1 (all),
    ``("group", id)``, ``("duplicates",)``, ``("issues",)``."""
    from ..store.columns import group_names, name_groups, read_groups

    labels = ds.read_labels().astype(np.int64)
    k = len(ds.class_names)
    codes = split_codes(ds, cfg)
    columns: dict[str, list[int]] = {"all": np.bincount(labels, minlength=k).tolist()}
    for i, name in enumerate(SPLIT_NAMES):
        columns[name] = np.bincount(labels[codes == i], minlength=k).tolist()
    for f in range(cfg.folds if cfg.folds >= 2 else 0):
        fold = split_codes(ds, cfg, f) == 1
        columns[f"fold-{f}"] = np.bincount(labels[fold], minlength=k).tolist()
    report: dict[str, Any] = {
        "path": str(ds.path),
        "rows": len(ds),
        "class_names": list(ds.class_names),
        "split_by": cfg.split_by if ds.has_groups else "rows (the dataset has no groups)",
        "columns": columns,
        "groups": None,
    }
    groups = read_groups(ds)
    if groups is not None:
        ids, sizes = np.unique(groups, return_counts=True)
        top = np.argsort(-sizes, kind="stable")[:TOP_GROUPS]
        names = name_groups(ids[top], group_names(ds))
        report["groups"] = {
            "groups": int(len(ids)),
            "min": int(sizes.min()),
            "median": float(np.median(sizes)),
            "max": int(sizes.max()),
            "largest": [
                {"group": int(ids[t]), "name": str(n), "rows": int(sizes[t])}
                for t, n in zip(top.tolist(), names, strict=True)
            ],
        }
    dup = duplicate_rows(ds, codes)
    report["duplicates"] = {"rows": int(len(dup))}
    report["issues"] = None
    if labels_csv is not None and Path(labels_csv).exists():
        from .label_issues import read_ranked

        got = read_ranked(labels_csv)
        report["issues"] = {"rows": int(got["issue"].sum()), "csv": str(labels_csv)}
    return report


def rows_of(
    ds: Any, cfg: Any, key: tuple[Any, ...], labels_csv: str | Path | None = None
) -> np.ndarray:
    """The dataset rows behind the number ``key`` of :func:`dataset_health`."""
    from ..store.columns import read_groups

    kind = key[0]
    if kind == "class":
        split, c = str(key[1]), int(key[2])
        labels = ds.read_labels().astype(np.int64)
        keep = np.ones(len(ds), bool) if c < 0 else labels == c
        if split.startswith("fold-"):
            keep &= split_codes(ds, cfg, int(split.removeprefix("fold-"))) == 1
        elif split != "all":
            keep &= split_codes(ds, cfg) == SPLIT_NAMES.index(split)
        return np.flatnonzero(keep).astype(np.int64)
    if kind == "group":
        groups = read_groups(ds)
        return np.zeros(0, np.int64) if groups is None else np.flatnonzero(groups == int(key[1]))
    if kind == "duplicates":
        return duplicate_rows(ds, split_codes(ds, cfg))
    if kind == "issues" and labels_csv is not None:
        from .label_issues import read_ranked

        got = read_ranked(labels_csv)
        ranked: np.ndarray = got["rows"][got["issue"]]
        return ranked
    raise ValueError(f"no rows for {key!r}")


def health_config(model: str | None, data: str) -> Any:
    """The training config whose splits the report uses: a run folder's, else the defaults."""
    from ..train.config import TrainConfig

    if model:
        from ..predict.source import resolve_model

        try:
            cfg = resolve_model(model).train_config()
            return dataclasses.replace(cfg, data=data)
        except Exception:  # noqa: BLE001 - a run folder that cannot be read: the defaults
            pass
    return TrainConfig(data=data, model={}, out="")
