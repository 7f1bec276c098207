"""`guiapp import SRC OUT.h5 --format ...`: bring existing arrays into the dataset store.

A thin shell over ``guiapp.core.importers.run_import`` (formats, padding, error policy and
the memory bound are described in docs/IMPORT.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..core.requests import ImportRequest, add_arguments, from_args
from . import command_parser, job_controls

HELP = "import .npy/.npz/CSV/TSV/JSON-lines data into a new dataset"
DESCRIPTION = (
    "Import existing samples into a new dataset, shuffled (two-pass external "
    "shuffle with bounded memory). Bad rows are reported by file and line. Nothing is "
    "left behind when the import fails or is stopped."
)
EPILOG = """examples:
  guiapp import genomes.jsonl kmers.h5 --format jsonl --length 126 --on-error skip
  guiapp import table.tsv kmers.h5 --format tsv --label-field class --data-field kmers
  guiapp import images/ cells.h5 --format npy-dir            (class = subfolder name)
  guiapp import x.npy cells.h5 --format npy --labels y.npy
  guiapp import data.npz cells.h5 --format npz --x-key images --y-key classes
  guiapp import reads.jsonl kmers.h5 --format jsonl --group-field accession --keep-fields _id,name
  guiapp import images/ cells.h5 --format npy-dir --group-field file   (one group per file)
  guiapp import --request OUT.shards/request.json --overwrite   (the request a dataset keeps)
see docs/IMPORT.md for every option."""


def register(sub: Any) -> None:
    """Add the `import` subcommand (its options: :class:`ImportRequest`)."""
    s = command_parser(sub, "import", HELP, EPILOG, DESCRIPTION)
    add_arguments(s, ImportRequest)  # every option: the request type declares it
    s.set_defaults(func=cmd_import)


class HumanProgress:
    """Progress lines on stderr every few seconds, and the skipped rows as they come."""

    def __init__(self, every_s: float = 2.0) -> None:
        self.every_s = every_s
        self.last = time.monotonic()  # the first line after every_s: quick imports stay quiet

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "log":
            sys.stderr.write(f"guiapp import: {event.get('message')}\n")
            return
        if kind != "progress":
            return
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        self.last = now
        if event.get("phase") == "read":
            total = max(1, int(event.get("bytes_total") or 1))
            share = int(event.get("bytes_done") or 0) / total
            line = (
                f"reading  {share:6.1%}  {event['rows']:,} rows, {event['skipped']:,} skipped, "
                f"{event['rows_per_s']:,.0f} rows/s"
            )
        else:
            share = event["done"] / max(1, event["total"])
            line = f"writing  {share:6.1%}  {event['done']:,} of {event['total']:,} rows"
        eta = event.get("eta_s")
        if eta is not None:
            line += f", {eta:.0f} s left"
        sys.stderr.write(f"guiapp import: {line}\n")


def print_summary(summary: dict[str, Any]) -> None:
    lines = [
        f"imported    {summary['rows']:,} rows into {summary['output']}",
        f"sample      {'x'.join(map(str, summary['sample_shape']))} {summary['dtype']}",
    ]
    lin = summary.get("lineage")
    if lin:
        if lin["groups"] is not None:
            lines.append(f"groups      {lin['groups']:,} (field {lin['group_field']!r})")
        if lin["kept_fields"]:
            kept = ", ".join(f"{k} ({v})" for k, v in lin["kept_fields"].items())
            lines.append(f"kept        {kept}")
    if summary["padded"] or summary["truncated"]:
        lines.append(
            f"length      {summary['padded']:,} padded, {summary['truncated']:,} truncated"
        )
    lines.append("classes")
    width = max(len(c["name"]) for c in summary["classes"])
    for c in summary["classes"]:
        lines.append(f"  {c['index']:>3}  {c['name']:<{width}}  {c['count']:>12,}")
    if summary["skipped"]:
        lines.append(f"skipped     {summary['skipped']:,} bad row(s):")
        lines += [f"  {r}" for r in summary["row_errors"]]
        if summary["skipped"] > len(summary["row_errors"]):
            lines.append(f"  ... and {summary['skipped'] - len(summary['row_errors']):,} more")
    rate = summary["rows_read"] / max(1e-9, summary["elapsed_s"])
    lines.append(f"time        {summary['elapsed_s']:.1f} s ({rate:,.0f} rows/s)")
    sys.stdout.write("\n".join(lines) + "\n")


def cmd_import(args: argparse.Namespace) -> int:
    return run_request(from_args(ImportRequest, args))


def run_request(req: ImportRequest) -> int:
    """Run a ``guiapp import`` request; a finished import keeps it with the dataset
    (:func:`kept_request_path`)."""
    from ..core.errors import Cancelled, UserError
    from ..core.importers import ImportConfig, ImportJob
    from ..core.malloc import keep_freed_memory, small_pages

    keep_freed_memory()  # this process is the import's own (the GUI runs it as a child)
    small_pages()
    if req.events not in (None, "-"):
        raise UserError(
            "--events takes '-' (JSON lines on stdout)", option="--events", value=req.events
        )
    sink, cancel = job_controls(req.events, HumanProgress())
    cfg = ImportConfig.from_request(req)
    try:
        job = ImportJob(cfg, sink, cancel)
    except UserError as exc:
        sink.emit("failed", job="import", message=str(exc))
        raise
    try:
        summary = job.run()
    except Cancelled:
        if req.events is None:
            sys.stderr.write(
                "guiapp import: stopped; no dataset was written. Run the same command with "
                "--resume to continue (without it, the next import starts over)\n"
            )
        return 0
    if not summary.get("already_complete"):
        keep_request(req, cfg.out)
    if req.events is None and summary.get("already_complete"):
        sys.stdout.write(
            f"guiapp import: {summary['output']} is already imported ({summary['rows']:,} rows)"
            "; nothing to resume\n"
        )
    elif req.events is None:
        print_summary(summary)
    return 0


def kept_request_path(out: str | Path) -> Path:
    """Where an imported dataset keeps the request that made it: ``request.json`` in its
    shard folder (``OUT.shards/request.json``), published, replaced and removed with the
    dataset; beside ``OUT.h5`` an import leaves nothing but the dataset."""
    from ..core.store import shard_dir

    return shard_dir(Path(out).absolute()) / "request.json"


def keep_request(req: ImportRequest, out: Path) -> Path | None:
    """Write the request of a finished import with its dataset, atomically, its paths
    absolute (``guiapp import --request OUT.shards/request.json --overwrite`` makes it
    again). None: no shard folder to keep it in, or it could not be written (a full disk:
    the dataset itself is whole)."""
    from ..core.errors import UserError
    from ..core.requests import absolute, save_request

    path = kept_request_path(out)
    if not path.parent.is_dir():
        return None
    try:
        return save_request(path, absolute(req))
    except (OSError, UserError):
        return None
