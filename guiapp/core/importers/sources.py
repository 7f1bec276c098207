"""Reading import sources in chunks of raw rows, with their file:line locations.

Text formats (``jsonl``, ``csv``, ``tsv``: ``text.py``) take one file or a folder of them
(``.gz`` too) and yield the label and the data field of each line as they are; array
formats (``npy``, ``npz``, ``npy-dir``: ``arrays.py``) stream ``.npy`` payloads in row
chunks, so memory stays bounded whatever the file size. Nothing here loads pickled objects.
"""

from __future__ import annotations

import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from .formats import FORMATS as FORMATS  # the one table of formats (``formats.py``)
from .formats import get_format

TEXT_ROWS_PER_CHUNK = 4096
ARRAY_CHUNK_BYTES = 4 * 2**20


@dataclass
class Chunk:
    """Raw rows from one stretch of input.

    ``data`` is a list (text rows as ``str``, JSON lists, or one array per sample) or one
    ``(n, ...)`` array. ``keys`` orders rows (line or row numbers), ``locate(i)`` names
    row ``i`` for messages (``"file.jsonl:17"``), ``bad`` holds rows the reader itself
    could not use as ``(key, location, problem)``.
    """

    labels: list[Any] | np.ndarray
    data: list[Any] | np.ndarray
    keys: np.ndarray
    locate: Callable[[int], str]
    bytes_done: int
    bad: list[tuple[int, str, str]] = field(default_factory=list)
    #: per lineage field (``--group-field`` first, ``--keep-fields``): a value per row
    cols: list[np.ndarray] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)


class Source(ABC):
    """Base class: ``files`` read, ``total_bytes`` for progress, ``chunks()`` to read them."""

    format = ""

    def __init__(self) -> None:
        self.files: list[Path] = []
        self.total_bytes = 0
        self.total_rows: int | None = None  # known up front for array formats

    @abstractmethod
    def chunks(self) -> Iterator[Chunk]:
        """The source's rows, parsed, in chunks."""


def display_name(path: Path, root: Path) -> str:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return path.name
    return rel.as_posix() if str(rel) != "." else path.name


def check_regular(path: Path) -> None:
    """An input is a file or a folder: a FIFO, socket or device cannot be read twice or
    resumed (and a FIFO without a writer would block the job in ``open``, deaf to a stop)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # a missing path: each source says so in its own words
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
        raise UserError(
            f"{path}: is {kind}; import reads files it can read twice and resume. Save the "
            "data to a file first and import that"
        )


def open_source(
    fmt: str,
    src: Path,
    *,
    labels: Path | None = None,
    label_field: str = "label",
    data_field: str = "data",
    delimiter: str | None = None,
    x_key: str = "x",
    y_key: str = "y",
    per_file: str = "auto",
    fields: list[str] | None = None,
    group: bool = False,
) -> Source:
    """The reader for ``fmt`` (its record in ``formats.py``); raises ``UserError`` for a
    missing or unusable input. ``fields``: the lineage arrays of an ``.npz`` (the group's
    first when ``group``), or ``file``/``folder`` for a folder of ``.npy``; text formats
    find theirs per piece."""
    check_regular(src)
    if labels is not None:
        check_regular(labels)
    record = get_format(fmt)
    if labels is not None and (record is None or "labels" not in record.options):
        raise UserError(
            f"--labels is for --format npy and npy-dir; {fmt} files hold their labels",
            option="--labels",
            value=labels,
        )
    if record is None:
        raise UserError(
            f"--format {fmt!r} is not one of {', '.join(FORMATS)}", option="--format", value=fmt
        )
    return record.open(
        src, labels=labels, label_field=label_field, data_field=data_field,
        delimiter=delimiter, x_key=x_key, y_key=y_key, per_file=per_file,
        fields=fields or [], group=group,
    )  # fmt: skip
