"""The leakage check: groups that cross splits, and identical rows on both sides of a split.

``check_leakage(ds, cfg)`` takes a dataset and a training config (a run's, or the defaults)
and reports, for the train/validation/test split that config makes:

- **groups crossing splits**: groups with rows in more than one split (0 by construction
  when the split goes by groups; with ``--split-by rows`` this is what leaks);
- **exact duplicates**: rows whose bytes (sample and label) are identical in two splits,
  found by a 64-bit hash per row and confirmed byte by byte.

It reads every row once, in blocks, so memory is about 9 bytes a row (hash and split).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .group_split import dataset_assignment
from .read_plan import SplitSpec, splitmix64

SPLIT_NAMES = ("train", "val", "test")
EXAMPLES = 5
HASH_ROWS = 1 << 15


def row_split_codes(ds: Any, splits: SplitSpec, block_rows: int, split_by: str) -> np.ndarray:
    """Per row: 0 train, 1 val, 2 test, as a run with these settings splits them."""
    got = dataset_assignment(ds, splits) if split_by == "groups" else None
    if got is not None:
        return got.row_codes()
    n = len(ds)
    blocks = np.arange(-(-n // block_rows), dtype=np.int64)
    return np.repeat(splits.assign(blocks), block_rows)[:n]


def row_hashes(ds: Any) -> np.ndarray:
    """A 64-bit hash of every row's sample bytes and label (vectorised over rows)."""
    n = len(ds)
    out = np.empty(n, np.uint64)
    rb = ds.row_nbytes
    words = -(-rb // 8)
    for a in range(0, n, HASH_ROWS):
        x, y = ds.read_range(a, min(n, a + HASH_ROWS))
        raw = np.zeros((len(x), words * 8), np.uint8)
        raw[:, :rb] = np.ascontiguousarray(x).reshape(len(x), -1).view(np.uint8)
        w = raw.view(np.uint64)
        with np.errstate(over="ignore"):
            h = splitmix64(y.astype(np.uint64))
            for j in range(words):
                h = splitmix64(h ^ w[:, j])
        out[a : a + len(x)] = h
    return out


def check_leakage(ds: Any, cfg: Any) -> dict[str, Any]:
    """The report (JSON-ready) for dataset ``ds`` split as ``cfg`` (a ``TrainConfig``) says."""
    splits = cfg.splits()
    block_rows = cfg.block_rows_for(len(ds))
    codes = row_split_codes(ds, splits, block_rows, cfg.split_by)
    report: dict[str, Any] = {
        "path": str(ds.path),
        "rows": len(ds),
        "split_by": cfg.split_by if ds.has_groups else "rows (the dataset has no groups)",
        "split_rows": {
            name: int(np.count_nonzero(codes == i)) for i, name in enumerate(SPLIT_NAMES)
        },
    }
    report["groups"] = _crossing_groups(ds, codes)
    report["duplicates"] = _duplicates(ds, codes)
    report["leaks"] = bool(
        (report["groups"] or {}).get("crossing", 0) or report["duplicates"]["groups"]
    )
    return report


def _crossing_groups(ds: Any, codes: np.ndarray) -> dict[str, Any] | None:
    from ..store.columns import group_names, name_groups, read_groups

    groups = read_groups(ds)
    if groups is None:
        return None
    ids, inv = np.unique(groups, return_inverse=True)
    seen = np.zeros((len(ids), 3), bool)
    seen[inv, codes] = True
    crossing = np.flatnonzero(seen.sum(axis=1) > 1)
    names = name_groups(ids[crossing[:EXAMPLES]], group_names(ds))
    return {
        "groups": int(len(ids)),
        "crossing": int(len(crossing)),
        "crossing_rows": int(np.isin(inv, crossing).sum()) if len(crossing) else 0,
        "examples": [
            {"group": name, "splits": [SPLIT_NAMES[s] for s in np.flatnonzero(seen[g])]}
            for name, g in zip(names, crossing[:EXAMPLES].tolist(), strict=True)
        ],
    }


def _duplicates(ds: Any, codes: np.ndarray) -> dict[str, Any]:
    """Sets of identical rows (same bytes, same label) found in more than one split."""
    h = row_hashes(ds)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])
    if not len(same):
        return {"groups": 0, "rows": 0, "examples": []}
    # Runs of equal hashes: candidates, confirmed byte by byte.
    starts = np.unique(np.concatenate([same, same + 1]))
    runs = np.split(order[starts], np.flatnonzero(np.diff(starts) > 1) + 1)
    found, rows = 0, 0
    examples: list[dict[str, Any]] = []
    for run in runs:
        run = np.sort(run)
        if len(set(codes[run].tolist())) < 2:
            continue
        first_x, first_y = ds.read(int(run[0]))
        same_rows = [int(run[0])]
        for r in run[1:].tolist():
            x, y = ds.read(r)
            if y == first_y and np.array_equal(x.view(np.uint8), first_x.view(np.uint8)):
                same_rows.append(r)
        split_set = sorted({int(codes[r]) for r in same_rows})
        if len(split_set) < 2:
            continue
        found += 1
        rows += len(same_rows)
        if len(examples) < EXAMPLES:
            examples.append(
                {
                    "rows": same_rows[:8],
                    "splits": [SPLIT_NAMES[s] for s in split_set],
                }
            )
    return {"groups": found, "rows": rows, "examples": examples}


def describe(report: dict[str, Any]) -> list[str]:
    """The report as lines of text (the CLI and the Training page show the same)."""
    lines = [
        f"split by {report['split_by']}: "
        + ", ".join(f"{k} {v:,} rows" for k, v in report["split_rows"].items() if v)
    ]
    g = report["groups"]
    if g is None:
        lines.append("groups: none (each row is its own group)")
    else:
        text = f"groups: {g['groups']:,}, {g['crossing']:,} cross splits"
        if g["crossing"]:
            ex = "; ".join(f"{e['group']} in {'+'.join(e['splits'])}" for e in g["examples"])
            text += f" ({g['crossing_rows']:,} rows; e.g. {ex})"
        lines.append(text)
    d = report["duplicates"]
    text = f"exact duplicates across splits: {d['groups']:,} sets of identical rows"
    if d["groups"]:
        ex = "; ".join(
            f"rows {', '.join(map(str, e['rows'][:4]))} in {'+'.join(e['splits'])}"
            for e in d["examples"][:3]
        )
        text += f" ({d['rows']:,} rows; e.g. {ex})"
    lines.append(text)
    return lines


#: The Training page looks for identical rows across the split up to this many rows.
PREVIEW_DUPLICATE_ROWS = 2_000_000


def split_preview(path: str, cfg: Any) -> tuple[list[str], bool]:
    """What the Training page says before Start: how ``cfg`` splits the dataset at
    ``path``, and whether to warn (a dataset without groups holding identical rows on both
    sides of the split). ``(lines, warn)``."""
    from ..store import Dataset

    with Dataset(path) as ds:
        d = cfg.describe_split(ds)
        lineage = ds.provenance.get("lineage") or {}  # an import's: the group field's name
        field = str(lineage.get("group_field") or "group")
        lines: list[str] = []
        if d["by"] == "groups":
            g, r = d["groups"], d["rows"]
            held = "validation" if cfg.folds == 0 else "each fold"
            text = f"Split by {field}: {d['total_groups']:,} groups; {held} {g['val']:,} groups, {r['val']:,} rows"
            if g["test"]:
                text += f"; test {g['test']:,} groups, {r['test']:,} rows"
            lines.append(text)
            return lines, False
        lines.append(
            "Split by rows: groups may cross splits (scores may be inflated)"
            if ds.has_groups
            else "The dataset has no groups: each row is its own group"
        )
        r = d.get("rows") or {}
        if r:
            held = "validation" if cfg.folds == 0 else "each fold"
            text = f"Train {r['train']:,} rows; {held} {r['val']:,} rows"
            lines.append(text + (f"; test {r['test']:,} rows" if r["test"] else ""))
        if ds.has_groups or len(ds) > PREVIEW_DUPLICATE_ROWS:
            return lines, cfg.split_by == "rows" and ds.has_groups
        codes = row_split_codes(ds, cfg.splits(), cfg.block_rows_for(len(ds)), "rows")
        dups = _duplicates(ds, codes)
    if dups["groups"]:
        lines.append(
            f"Warning: {dups['groups']:,} sets of identical rows ({dups['rows']:,} rows) fall on "
            "both sides of this split; scores may be inflated (guiapp check --leakage)"
        )
    return lines, bool(dups["groups"])
