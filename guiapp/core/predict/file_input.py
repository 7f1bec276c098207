"""Predict any file the importers read: its rows become a dataset in file order, unshuffled.

The rows are parsed by the importers' own code (``ImportJob``: the same formats, fields,
padding and row errors as ``guiapp import``) but written straight to a dataset in the order
the file holds them, so prediction ``i`` is the file's ``i``-th usable row. The dataset is
kept beside the output (``.PRED.h5.input/input.h5``) with a note of the file's size and
time, so a resumed predict reuses it; it is built under a temporary name and renamed, so a
stopped conversion leaves nothing half-written.

With lineage options (``group_field``, ``keep_fields``: ``--group-field``, ``--keep-fields``)
the file is imported whole by ``ImportJob.run``, exactly as ``guiapp import`` with the same
options imports it: the rows carry their group and kept fields (so each prediction joins
back to its record by them), in the import's shuffled order rather than the file's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from ..errors import UserError
from ..events import CancelToken, EventSink
from ..importers import ImportConfig, ImportJob
from ..importers.formats import FORMATS
from ..importers.formats import guess_format as guess_from_name
from ..store import DatasetWriter, shard_dir

#: What an input dataset was built from (its input's name, size and time, the options).
INPUT_NOTE = "input.json"


def input_folder(out: Path) -> Path:
    return out.parent / f".{out.name}.input"


def reuse_input(folder: Path, target: Path, note: Any) -> bool:
    """Whether ``target`` in ``folder`` was built from exactly ``note`` (the input and its
    options, saved by :func:`save_note`: a resumed predict reuses it); if not, ``folder``
    is emptied for a new build."""
    note_path = folder / INPUT_NOTE
    if target.exists() and note_path.exists():
        try:
            if json.loads(note_path.read_text()) == note:
                return True
        except ValueError:
            pass
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return False


def save_note(folder: Path, note: Any) -> None:
    """The note of what ``folder``'s dataset was built from, once it is complete."""
    atomic_write_text(folder / INPUT_NOTE, json.dumps(note))


def guess_format(src: Path, fmt: str | None) -> str:
    """``--format``, checked, or the format of ``src``'s name (the importers' table)."""
    if fmt:
        if fmt not in FORMATS:
            raise UserError(
                f"--format {fmt}: use one of {', '.join(FORMATS)}", option="--format", value=fmt
            )
        return fmt
    guessed = guess_from_name(src)
    if guessed is None:
        problem = "cannot tell the format from the name"
        fix = f"pass --format ({', '.join(FORMATS)})"
        raise UserError(f"{src}: {problem}; {fix}", option="--format", problem=problem, fix=fix)
    return guessed


def file_as_dataset(
    src: Path,
    out: Path,
    *,
    class_names: list[str],
    options: dict[str, Any],
    sink: EventSink,
    cancel: CancelToken,
) -> Path:
    """The dataset of ``src``'s rows in file order (built once, then reused)."""
    folder = input_folder(out)
    target = folder / "input.h5"
    stat = src.stat()
    note = {
        "src": str(src.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "class_names": class_names,
        "options": options,
    }
    if reuse_input(folder, target, note):
        return target
    stage = folder / f"staging-{os.getpid()}"
    stage.mkdir()
    staged = stage / target.name  # the shard folder's name follows the index's name
    keep = options.get("keep_fields")
    cfg = ImportConfig(
        src=src,
        out=staged,
        format=str(options["format"]),
        label_field=str(options.get("label_field", "label")),
        data_field=str(options.get("data_field", "data")),
        x_key=str(options.get("x_key", "x")),
        y_key=str(options.get("y_key", "y")),
        labels=Path(options["labels"]) if options.get("labels") else None,
        length=options.get("length"),
        dtype=options.get("dtype"),
        class_names=class_names,
        on_error=str(options.get("on_error", "abort")),
        group_field=options.get("group_field") or None,
        keep_fields=list(keep) if keep else None,
        overwrite=True,
    )
    if cfg.group_field or cfg.keep_fields:
        try:
            _import_whole(cfg, sink, cancel)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return _publish(staged, target, stage, note)
    job = ImportJob(cfg, sink, cancel)
    writer: DatasetWriter | None = None
    rows = 0
    sink.emit("progress", job="predict", phase="read input", done=0, total=job.source.total_bytes)
    try:
        for chunk in job.source.chunks():
            cancel.raise_if_cancelled()
            # The importers' parse of one chunk: fields, labels, padding, row errors.
            x, y, _lines = job.read.parse_chunk(chunk)
            if not len(x):
                continue
            if writer is None:
                writer = DatasetWriter(
                    staged,
                    sample_shape=x.shape[1:],
                    dtype=job.dtype,
                    class_names=class_names,
                    provenance={"importer": cfg.format, "source": str(src), "order": "file"},
                    overwrite=True,
                )
            writer.append(x, y)
            rows += len(x)
            sink.emit(
                "progress",
                job="predict",
                phase="read input",
                done=chunk.bytes_done,
                total=job.source.total_bytes,
                rows=rows,
            )
        if writer is None:
            raise UserError(f"{src}: no usable rows to predict")
        writer.close()
    except BaseException:
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close(complete=False)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return _publish(staged, target, stage, note)


def _publish(staged: Path, target: Path, stage: Path, note: Any) -> Path:
    if shard_dir(staged).exists():
        os.replace(shard_dir(staged), shard_dir(target))
    os.replace(staged, target)
    shutil.rmtree(stage, ignore_errors=True)
    save_note(target.parent, note)
    return target


def _import_whole(cfg: ImportConfig, sink: EventSink, cancel: CancelToken) -> None:
    """``guiapp import``'s job into ``cfg.out``; its progress passed on as predict's
    ``read input`` phase (its own started/finished events stay inside)."""

    def forward(e: dict[str, Any]) -> None:
        if e["event"] == "progress":
            fields = {k: v for k, v in e.items() if k not in ("event", "time", "job", "phase")}
            sink.emit("progress", job="predict", phase="read input", **fields)

    inner = EventSink()
    inner.listeners.append(forward)
    ImportJob(cfg, inner, cancel).run()
