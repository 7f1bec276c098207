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

EPILOG = """examples:
  guiapp import genomes.jsonl kmers.h5 --format jsonl --length 126 --on-error skip
  guiapp import table.tsv kmers.h5 --format tsv --label-field class --data-field kmers
  guiapp import images/ cells.h5 --format npy-dir            (class = subfolder name)
  guiapp import x.npy cells.h5 --format npy --labels y.npy
  guiapp import data.npz cells.h5 --format npz --x-key images --y-key classes
  guiapp import reads.jsonl kmers.h5 --format jsonl --group-field accession --keep-fields _id,name
  guiapp import images/ cells.h5 --format npy-dir --group-field file   (one group per file)
see docs/IMPORT.md for every option."""


def register(sub: Any) -> None:
    """Add the `import` subcommand."""
    from ..core.importers import FORMATS

    s = sub.add_parser(
        "import",
        help="import .npy/.npz/CSV/TSV/JSON-lines data into a new dataset",
        description="Import existing samples into a new dataset, shuffled (two-pass external "
        "shuffle with bounded memory). Bad rows are reported by file and line. Nothing is "
        "left behind when the import fails or is stopped.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("src", help="input file or folder")
    s.add_argument("out", help="the new dataset's index file, OUT.h5")
    s.add_argument("--format", required=True, choices=FORMATS, help="input format")
    g = s.add_argument_group("fields")
    g.add_argument(
        "--labels",
        type=Path,
        help="npy: a .npy of one label per sample; npy-dir: a CSV of file,label lines",
    )
    g.add_argument(
        "--label-field", default="label", help="JSON field, or CSV column name/0-based index"
    )
    g.add_argument(
        "--data-field", default="data", help="JSON field, or CSV column name/0-based index"
    )
    g.add_argument("--delimiter", help="CSV/TSV column separator (default ',' or tab)")
    g.add_argument("--x-key", default="x", help="npz: the samples' array (default x)")
    g.add_argument("--y-key", default="y", help="npz: the labels' array (default y)")
    g.add_argument(
        "--per-file",
        default="auto",
        choices=("auto", "sample", "stack"),
        help="npy-dir: each file is one sample or a stack of samples (default auto)",
    )
    g.add_argument(
        "--group-field",
        metavar="FIELD",
        help="each row's group (its lineage: rows of one group never straddle a train/"
        "validation split): a JSON field, a CSV column name/0-based index, an .npz array, "
        "or for npy-dir 'file' (each file a group) or 'folder' (each folder a group)",
    )
    g.add_argument(
        "--keep-fields",
        metavar="A,B,...",
        help="fields (npz: arrays; npy-dir: file, folder) kept per row as columns of the "
        "dataset, e.g. _id,name, so predictions join back to their source",
    )
    g = s.add_argument_group("samples")
    g.add_argument("--length", type=int, help="pad or truncate 1-D rows to this length")
    g.add_argument("--pad", default="post", choices=("post", "pre"), help="pad at the end (post)")
    g.add_argument(
        "--truncate",
        default="pre",
        choices=("post", "pre"),
        help="cut long rows at the start (pre, Keras pad_sequences' default) or end (post)",
    )
    g.add_argument("--pad-value", type=float, default=0, help="padding value (default 0)")
    g.add_argument(
        "--dtype", help="storage dtype (default uint16 for text, the arrays' own otherwise)"
    )
    g.add_argument("--class-names", help="comma-separated class names, in class-index order")
    g = s.add_argument_group("job")
    g.add_argument(
        "--on-error",
        default="abort",
        choices=("skip", "abort"),
        help="on a bad row: stop with its file:line (abort, default) or leave it out (skip)",
    )
    g.add_argument(
        "--on-nonfinite",
        default="abort",
        choices=("skip", "abort"),
        help="rows holding NaN/Inf: refuse the import naming where they are (abort, default) "
        "or leave them out, counted in the provenance (skip)",
    )
    g.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    g.add_argument(
        "--workers",
        default="auto",
        help="processes parsing text input (default auto: the machine's cores, at most 8); "
        "the dataset is the same for any number",
    )
    g.add_argument("--piece-mb", type=float, default=16, help=argparse.SUPPRESS)
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue an import that was stopped or killed, from its last checkpoint",
    )
    g.add_argument(
        "--memory-mb", type=float, default=256, help="memory budget of the shuffle (default 256)"
    )
    g.add_argument("--shard-rows", type=int, help="rows per shard (default: about 512 MiB)")
    g.add_argument(
        "--compression", default="none", choices=("none", "lzf", "gzip"), help="shard compression"
    )
    g.add_argument("--overwrite", action="store_true", help="replace an existing OUT.h5")
    g.add_argument(
        "--events", metavar="-", help="'-': JSON-line events on stdout instead of progress text"
    )
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
    from ..core.errors import Cancelled, UserError
    from ..core.events import CancelToken, EventSink
    from ..core.importers import ImportConfig, ImportJob
    from ..core.malloc import keep_freed_memory, small_pages

    keep_freed_memory()  # this process is the import's own (the GUI runs it as a child)
    small_pages()
    if args.events not in (None, "-"):
        raise UserError(
            "--events takes '-' (JSON lines on stdout)", option="--events", value=args.events
        )
    sink = EventSink(stream=sys.stdout if args.events == "-" else None)
    if args.events is None:
        sink.listeners.append(HumanProgress())
    cancel = CancelToken()
    cancel.install_signal_handlers()
    cancel.watch_stdin()
    names = [c.strip() for c in args.class_names.split(",")] if args.class_names else None
    from ..core.importers.parallel import default_workers

    if args.workers == "auto":
        workers = min(8, default_workers())
    elif str(args.workers).isdigit() and int(args.workers) >= 1:
        workers = int(args.workers)
    else:
        raise UserError(
            f"--workers {args.workers!r}: give a number of processes (1 or more) or auto",
            option="--workers",
            value=args.workers,
        )
    cfg = ImportConfig(
        src=Path(args.src),
        out=Path(args.out),
        format=args.format,
        labels=args.labels,
        label_field=args.label_field,
        data_field=args.data_field,
        delimiter=args.delimiter,
        x_key=args.x_key,
        y_key=args.y_key,
        per_file=args.per_file,
        length=args.length,
        pad=args.pad,
        truncate=args.truncate,
        pad_value=int(args.pad_value) if float(args.pad_value).is_integer() else args.pad_value,
        dtype=args.dtype,
        class_names=names,
        on_error=args.on_error,
        seed=args.seed,
        memory_mb=args.memory_mb,
        shard_rows=args.shard_rows,
        compression=None if args.compression == "none" else args.compression,
        overwrite=args.overwrite,
        on_nonfinite=args.on_nonfinite,
        group_field=args.group_field,
        keep_fields=args.keep_fields.split(",") if args.keep_fields else None,
        workers=workers,
        resume=args.resume,
        piece_mb=args.piece_mb,
    )
    try:
        job = ImportJob(cfg, sink, cancel)
    except UserError as exc:
        sink.emit("failed", job="import", message=str(exc))
        raise
    try:
        summary = job.run()
    except Cancelled:
        if args.events is None:
            sys.stderr.write(
                "guiapp import: stopped; no dataset was written. Run the same command with "
                "--resume to continue (without it, the next import starts over)\n"
            )
        return 0
    if args.events is None and summary.get("already_complete"):
        sys.stdout.write(
            f"guiapp import: {summary['output']} is already imported ({summary['rows']:,} rows)"
            "; nothing to resume\n"
        )
    elif args.events is None:
        print_summary(summary)
    return 0
