"""``guiapp info DATASET``: a dataset's header, shards, classes and provenance (no rows read)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.units import human_bytes
from . import print_json


def register(sub: Any) -> None:
    s = sub.add_parser("info", help="describe a dataset without reading its rows")
    s.add_argument("path", help="the dataset's index file NAME.h5")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_info)


def lineage_line(summary: dict[str, Any]) -> str:
    """``groups: N (rows per group min/median/max), kept fields: ...`` (``group_summary``)."""
    groups = summary["groups"]
    if groups is None:
        text = "none (each row its own)"
    elif isinstance(groups, str):
        text = groups
    else:
        r = summary["rows_per_group"]
        text = f"{groups:,} (rows per group {r['min']:,}/{r['median']:g}/{r['max']:,})"
    kept = ", ".join(summary["kept_fields"]) or "none"
    return f"groups      {text}, kept fields: {kept}"


def cmd_info(args: argparse.Namespace) -> int:
    from ..core.errors import DatasetError
    from ..core.store import Dataset
    from ..core.store.columns import group_summary

    with Dataset(args.path) as ds:
        info = ds.info()
        if len(ds) == 0:
            raise DatasetError(
                ds.path, "has no committed rows", "Generate or import rows into it first"
            )
        if args.json:
            print_json(info)
            return 0
        lineage = group_summary(ds) if ds.columns else None
    shape = "x".join(map(str, info["sample_shape"]))
    v = info["values"]
    lines = [
        f"dataset     {info['path']}",
        f"rows        {info['rows']:,}"
        + ("" if info["complete"] else "  (unfinished: only committed rows are shown)"),
        f"sample      {shape} {info['dtype']}",
        f"layout      {info['layout']}, {info['shards']} shard(s) of {info['shard_capacity']:,} rows, "
        f"{info['sealed_shards']} sealed, compression {info['compression']}"
        + (
            f", groups packed in units of {info['group_blocks']:,} rows"
            if info["group_blocks"]
            else ""
        ),
        f"size        {human_bytes(info['data_bytes'])} of rows, {human_bytes(info['size_on_disk'])} on disk",
        (
            f"values      mean {v['mean']:.4g}, std {v['std']:.4g}, min {v['min']:.4g}, max {v['max']:.4g}"
            if v["mean"] is not None
            else "values      not recorded"
        )
        + (f", {int(v['nonfinite'])} NaN/Inf" if v["nonfinite"] else ""),
        "classes",
    ]
    width = max(len(c["name"]) for c in info["classes"])
    for c in info["classes"]:
        share = c["count"] / info["rows"] if info["rows"] else 0.0
        lines.append(f"  {c['index']:>3}  {c['name']:<{width}}  {c['count']:>12,}  {share:6.1%}")
    if lineage is not None:
        lines.append(lineage_line(lineage))
    lines.append(f"created     {info['created']}")
    prov = info["provenance"]
    if prov:
        lines.append("provenance  " + json.dumps(prov, sort_keys=True))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
