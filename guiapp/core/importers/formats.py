"""The import formats, one record each (issue 29.5): the one table of names and suffixes.

Import (``open_source``, a folder's file list, ``--format``'s choices in ``ImportRequest``),
predict's file input (``core/predict/file_input.py``) and the import preview all read it:
a suffix guesses the same format wherever a file is named. A format is ``text`` (a file or
a folder of files, read line by line, ``.gz`` too) or ``array`` (``.npy`` payloads). Its
``open`` returns the reader (a ``Source``, imported on first use: this module is stdlib
only, so that the request types and the parse workers can import it cheaply).

Adding a format is one :class:`ImportFormat` here and its reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .sources import Source

#: The compressions a text format reads (``rows.jsonl.gz``).
COMPRESSED = (".gz",)


@dataclass(frozen=True)
class ImportFormat:
    """One import format: what it is called, which names are it, how it is read."""

    name: str
    kind: Literal["text", "array"]
    #: the names a file of this format ends with (lowercase); each guesses this format
    suffixes: tuple[str, ...]
    #: the reader: ``open(src, **options)`` (``open_source``'s keywords) -> a ``Source``
    open: Callable[..., Source]
    #: the format-specific options it takes (``ImportRequest``'s field names)
    options: tuple[str, ...] = ()
    #: the compressions it reads (a text file's ``.gz``)
    compressed: tuple[str, ...] = ()
    #: more names read in a folder of this format, which guess no format (``.txt``)
    folder_also: tuple[str, ...] = ()
    #: its input is a folder (``npy-dir``)
    folder: bool = False

    @property
    def text(self) -> bool:
        return self.kind == "text"

    def folder_suffixes(self) -> tuple[str, ...]:
        """The names read from a folder of this format, in the order messages list them."""
        return self.suffixes + self.folder_also

    def reads_name(self, name: str) -> bool:
        """Whether a file named ``name`` in a folder of this format is read."""
        name = strip_compression(name.lower(), self.compressed)
        return name.endswith(self.folder_suffixes())


def strip_compression(name: str, compressed: tuple[str, ...] = COMPRESSED) -> str:
    for ext in compressed:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def is_compressed(path: Path | str) -> bool:
    """A gzip file by its name (read as one stream: no byte ranges, no seeking)."""
    return Path(path).name.lower().endswith(COMPRESSED)


def _jsonl(src: Path, *, label_field: str, data_field: str, **_: Any) -> Source:
    from .text import JsonlSource

    return JsonlSource(src, label_field, data_field)


def _csv(fmt: str) -> Callable[..., Source]:
    def open_csv(
        src: Path, *, label_field: str, data_field: str, delimiter: str | None, **_: Any
    ) -> Source:
        from .text import CsvSource

        return CsvSource(src, fmt, label_field, data_field, delimiter)

    return open_csv


def _npy(src: Path, *, labels: Path | None, **_: Any) -> Source:
    from .arrays import NpySource

    return NpySource(src, labels)


def _npz(src: Path, *, x_key: str, y_key: str, fields: list[str], group: bool, **_: Any) -> Source:
    from .arrays import NpzSource

    return NpzSource(src, x_key, y_key, fields, group)


def _npy_dir(
    src: Path, *, labels: Path | None, per_file: str, fields: list[str], **_: Any
) -> Source:
    from .arrays import NpyDirSource

    return NpyDirSource(src, labels, per_file, fields)


_TEXT_FIELDS = ("label_field", "data_field")
#: Every import format, in ``--format``'s order.
REGISTRY: tuple[ImportFormat, ...] = (
    ImportFormat("npy-dir", "array", (), _npy_dir, ("labels", "per_file"), folder=True),
    ImportFormat("npy", "array", (".npy",), _npy, ("labels",)),
    ImportFormat("npz", "array", (".npz",), _npz, ("x_key", "y_key")),
    ImportFormat(
        "csv", "text", (".csv",), _csv("csv"), (*_TEXT_FIELDS, "delimiter"), COMPRESSED, (".txt",)
    ),
    ImportFormat(
        "tsv",
        "text",
        (".tsv", ".tab"),
        _csv("tsv"),
        (*_TEXT_FIELDS, "delimiter"),
        COMPRESSED,
        (".txt",),
    ),  # fmt: skip
    ImportFormat(
        "jsonl",
        "text",
        (".jsonl", ".json", ".ndjson"),
        _jsonl,
        _TEXT_FIELDS,
        COMPRESSED,
        (".txt",),
    ),  # fmt: skip
)
BY_NAME = {f.name: f for f in REGISTRY}
#: The format names, ``--format``'s choices.
FORMATS = tuple(BY_NAME)
TEXT_FORMATS = tuple(f.name for f in REGISTRY if f.text)


def get_format(name: str) -> ImportFormat | None:
    return BY_NAME.get(name)


def guess_format(path: Path) -> str | None:
    """The import format a file or folder most likely has, from its name (None: no
    format's name): a folder is ``npy-dir``; ``a.jsonl.gz`` is ``jsonl``, ``a.npy.gz`` none
    (no array format reads gzip)."""
    if path.is_dir():
        return next(f.name for f in REGISTRY if f.folder)
    name = path.name.lower()
    for fmt in REGISTRY:
        bare = strip_compression(name, fmt.compressed)
        if fmt.suffixes and bare.endswith(fmt.suffixes):
            return fmt.name
    return None
