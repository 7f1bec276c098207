"""An import's lineage, the job's side: ``--group-field`` (each row's group) and
``--keep-fields`` (fields kept per row), from pass 1 into the dataset's columns.

The values come with the good rows as ``RowCols`` (text: ``lineage_piece.py`` in the
workers; arrays: the sources' ``Chunk.cols``), each row's group as its id
(``store.columns.group_id`` of the name: a hash, so the same in any worker count and after
a resume) beside the groups' names. Here each new group joins the table of names, which
is appended to ``groups.bin`` in the staging folder (``<u4 length><UTF-8 name>`` in order
of first appearance; a checkpoint records its size, a resume cuts it back and reads it).
A kept field travels through the shuffle's buckets as text; pass 2 stores it as int64
when every value was an integer, else as ``S<n>`` with ``n`` the longest value pass 1 saw.
Two names with the same 63-bit id would be one group (about n^2 / 2^64 likely for n
groups); more than ``MAX_GROUPS`` groups stop the import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OptionError, Problem, UserError
from ..store.columns import GROUP, MAX_GROUPS, check_column_name, group_id
from .lineage_piece import MAX_VALUE_BYTES, group_ids
from .rowcols import RowCols, pack_s
from .shuffle import Scatter

#: npy-dir's lineage fields: a row's file (its path in the folder) or that file's folder.
DIR_FIELDS = ("file", "folder")
NAMES_FILE = "groups.bin"
_LEN = np.dtype("<u4")


@dataclass
class Fields:
    """What ``--group-field`` and ``--keep-fields`` asked for."""

    group: str | None = None
    keep: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The source fields, the group's first."""
        return ([self.group] if self.group else []) + self.keep


def check_fields(fmt: str, group_field: str | None, keep_fields: list[str] | None) -> Fields:
    """The fields asked for, checked against the format; ``OptionError`` otherwise."""
    group = (group_field or "").strip() or None
    keep = [k.strip() for k in (keep_fields or [])]
    shown = ",".join(keep_fields or [])
    if (group or keep) and fmt == "npy":
        raise OptionError(
            "group-field" if group else "keep-fields", group or shown,
            "--format npy takes no lineage fields",
            "save the samples, the labels and the groups as arrays of one .npz "
            "(numpy.savez) and import that with --format npz",
        )  # fmt: skip
    if any(not k for k in keep):
        raise OptionError("keep-fields", shown, "an empty field name", "give names like _id,name")
    if len(set(keep)) != len(keep):
        raise OptionError("keep-fields", shown, "a field is named twice", "name each field once")
    for k in keep:
        if k == group:
            raise OptionError(
                "keep-fields", shown, f"{k!r} is the --group-field: each row keeps its group",
                "leave it out of --keep-fields (the group's names are in the dataset's index)",
            )  # fmt: skip
        if k == GROUP:
            raise OptionError(
                "keep-fields", shown, f"{GROUP!r} is the name of the group column",
                f"pass --group-field {GROUP} to use that field as the rows' group",
            )  # fmt: skip
        problem = check_column_name(k)
        if problem:
            raise OptionError("keep-fields", shown, problem, "rename the field in the source")
    if fmt == "npy-dir":
        for name, opt in [(group, "group-field")] + [(k, "keep-fields") for k in keep]:
            if name is not None and name not in DIR_FIELDS:
                raise OptionError(
                    opt, group if opt == "group-field" else shown,
                    f"a folder of .npy files has the lineage fields {' and '.join(DIR_FIELDS)}",
                    "use 'file' (each file is a group) or 'folder' (each folder is one)",
                )  # fmt: skip
    return Fields(group, keep)


def array_values(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An array's values as (UTF-8 ``S`` text, whether each is an int64 integer)."""
    if a.dtype.kind in "iu":
        ints = np.ones(len(a), bool)
        if a.dtype == np.uint64:
            ints = a <= np.iinfo(np.int64).max
        return a.astype("S20"), ints
    if a.dtype.kind == "U":
        return np.char.encode(a, "utf-8"), np.zeros(len(a), bool)
    return np.asarray(a, np.bytes_), np.zeros(len(a), bool)


def csv_field_cols(src: Any, fields: list[str], group: bool) -> dict[str, list[int]]:
    """Per CSV/TSV file (its index as text): the columns of ``fields`` (header names, or
    0-based numbers; field 0 is the group when ``group``)."""
    from .sources import display_name

    out: dict[str, list[int]] = {}
    for i, path in enumerate(src.files):
        first = src.first_row(path)
        if first is None:
            continue
        row, no = first
        where = f"{display_name(path, src.root)}:{no}"
        layout = src.layout_of(row, no, display_name(path, src.root))
        header = [h.strip() for h in row] if layout.header_line else None
        cols = []
        for j, name in enumerate(fields):
            opt = "--group-field" if j == 0 and group else "--keep-fields"
            if header is not None and name in header:
                cols.append(header.index(name))
            elif name.isdigit():
                cols.append(int(name))
            elif header is None:
                problem, fix = f"{opt} {name!r} needs a header row", "Give a 0-based column number"
                raise UserError(
                    f"{where}: {problem}. {fix}", option=opt, value=name, problem=problem, fix=fix
                )
            else:
                problem = f"has no column {name!r} (header: {', '.join(header)[:200]})"
                fix = f"Pass {opt} with a column name of the header or a 0-based column number"
                raise UserError(
                    f"{where}: {problem}. {fix}", option=opt, value=name, problem=problem, fix=fix
                )
        out[str(i)] = cols
    return out


class JobLineage:
    """The lineage state of one import job (pass 1, its checkpoints, pass 2)."""

    def __init__(self, fields: Fields, stage: Path, src: Path) -> None:
        self.fields = fields
        self.src = src
        self.path = stage / NAMES_FILE
        self.names: dict[int, bytes] = {}  # group id -> name, in order of first appearance
        self._new: list[bytes] = []  # names not in the file yet
        self._file_bytes = 0
        self.widths = [0] * len(fields.keep)
        self.ints = [True] * len(fields.keep)

    @property
    def active(self) -> bool:
        return bool(self.fields.names)

    @property
    def group(self) -> bool:
        return self.fields.group is not None

    # -- pass 1 --------------------------------------------------------------------------
    def bucket_columns(self) -> dict[str, str]:
        cols = {GROUP: "i8"} if self.group else {}
        return cols | {k: "S" for k in self.fields.keep}

    def add(self, scatter: Scatter, x: np.ndarray, y: np.ndarray, cols: RowCols) -> None:
        """Rows and their lineage ``cols`` into the shuffle's buckets; their groups' names
        into the table."""
        out: dict[str, Any] = {}
        if self.group:
            assert cols.ids is not None
            out[GROUP] = cols.ids
            self._names(cols)
        for j, name in enumerate(self.fields.keep):
            self.ints[j] = self.ints[j] and bool(cols.ints[j].all())
            if len(cols.lens[j]):
                self.widths[j] = max(self.widths[j], int(cols.lens[j].max()))
            out[name] = (cols.lens[j], cols.data[j])
        scatter.add(x, y, out)

    def _names(self, cols: RowCols) -> None:
        """New groups into the table (each distinct id of the rows looked at once)."""
        ids = cols.ids
        assert ids is not None
        heads = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))  # (runs first)
        known = self.names
        new = [g for g in dict.fromkeys(ids[heads].tolist()) if g not in known]
        if not new:
            return
        if len(known) + len(new) > MAX_GROUPS:
            raise UserError(
                f"{self.src}: more than {MAX_GROUPS:,} distinct values of --group-field "
                f"{self.fields.group!r}; a group is a lineage many rows share (an "
                "organism, a patient), not a row's own id. Pick another --group-field",
                option="--group-field",
                value=self.fields.group,
                fix="Pick another --group-field",
            )
        for gid, name in zip(new, cols.name_of(new), strict=True):
            known[gid] = name
            self._new.append(name)

    def array_cols(
        self, raw: list[np.ndarray], rows: np.ndarray, keys: np.ndarray, locate: Any
    ) -> tuple[np.ndarray, RowCols, list[tuple[int, str, str]]]:
        """An array chunk's columns at its good ``rows``: (which of them to keep, their
        lineage columns, row errors ``(key, where, problem)``)."""
        cols = RowCols(None)
        keep = np.ones(len(rows), bool)
        errors: list[tuple[int, str, str]] = []
        for f, (name, a) in enumerate(zip(self.fields.names, raw, strict=True)):
            v, ints = array_values(np.asarray(a)[rows])
            lens, data = pack_s(v)
            is_group = f == 0 and self.group
            empty = (lens == 0) if is_group else np.zeros(len(rows), bool)
            for i in np.flatnonzero(empty | (lens > MAX_VALUE_BYTES)).tolist():
                r = int(rows[i])
                p = (
                    Problem(
                        f"group {name!r} is empty, not a group name (see --group-field)",
                        option="--group-field",
                        value=name,
                    )
                    if lens[i] == 0
                    else f"field {name!r} holds {int(lens[i]):,} bytes, more than {MAX_VALUE_BYTES}"
                )
                if keep[i]:
                    errors.append((int(keys[r]), locate(r), p))
                keep[i] = False
            if is_group:
                cols.ids, cols.names = group_ids(lens, data)
            else:
                cols.lens.append(lens)
                cols.data.append(data)
                cols.ints.append(ints)
        return keep, cols, errors

    def flush(self) -> None:
        """Append the new group names to the names file."""
        if not self._new:
            return
        parts = []
        for name in self._new:
            parts += [np.array([len(name)], _LEN).tobytes(), name]
        data = b"".join(parts)
        with open(self.path, "ab") as fh:
            fh.write(data)
        self._file_bytes += len(data)
        self._new = []

    def state(self) -> dict[str, Any]:
        """For a checkpoint (the names file is written up to here first)."""
        self.flush()
        return {"names_bytes": self._file_bytes, "widths": self.widths, "ints": self.ints}

    def restore(self, d: dict[str, Any] | None, *, cut: bool) -> None:
        """Back to a checkpoint's state; ``cut``: the names file cut back to it (pass 1)."""
        if d is None:
            return
        self.widths, self.ints = list(d["widths"]), list(d["ints"])
        size = int(d["names_bytes"])
        self.names, self._new, self._file_bytes = {}, [], size
        if not self.group or size == 0:
            if self.path.exists() and cut:
                self.path.unlink()
            return
        have = self.path.stat().st_size if self.path.exists() else 0
        if have < size:
            raise UserError(
                f"{self.path}: the stopped import's group names hold {have:,} bytes, its "
                f"checkpoint counts {size:,}. Run the import without --resume to start over",
                option="--resume",
                value=True,
            )
        with open(self.path, "r+b" if cut else "rb") as fh:
            if cut:
                fh.truncate(size)
            data = fh.read(size)
        at = 0
        while at < size:
            n = int(np.frombuffer(data, _LEN, 1, at)[0])
            name = data[at + 4 : at + 4 + n]
            self.names[int(group_id([name])[0])] = name
            at += 4 + n

    # -- pass 2 --------------------------------------------------------------------------
    def read_widths(self, scatter: Scatter) -> None:
        """Pass 2 reads the kept strings as wide as the dataset stores them."""
        scatter.widths = {k: max(1, w) for k, w in zip(self.fields.keep, self.widths, strict=True)}

    def writer_columns(self) -> dict[str, str]:
        cols = {GROUP: "int64"} if self.group else {}
        for j, name in enumerate(self.fields.keep):
            cols[name] = "int64" if self.ints[j] else f"S{max(1, self.widths[j])}"
        return cols

    def to_writer(self, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A bucket's columns as the dataset stores them (integer fields parsed)."""
        out = dict(cols)
        for j, name in enumerate(self.fields.keep):
            if self.ints[j]:
                out[name] = cols[name].astype(np.int64)
        return out

    def table(self) -> tuple[np.ndarray, list[str]]:
        """The group ids and their names (for ``DatasetWriter.set_group_names``)."""
        ids = np.fromiter(self.names, np.int64, len(self.names))
        return ids, [n.decode("utf-8", "replace") for n in self.names.values()]

    def summary(self) -> dict[str, Any]:
        return {
            "group_field": self.fields.group,
            "groups": len(self.names) if self.group else None,
            "kept_fields": {
                k: v for k, v in self.writer_columns().items() if k in self.fields.keep
            },
        }
