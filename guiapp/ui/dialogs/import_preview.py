"""The first rows of an import source, parsed the way ``guiapp import`` will parse them.

Text formats go through the importer's own line readers (``JsonlSource``, ``CsvSource``)
and number parser, so the preview shows the label, the data and any problem exactly as
the job will see them. Array formats show their shapes (``.npy`` is memory-mapped).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TEXT_FORMATS = ("jsonl", "csv", "tsv")
SHOWN_VALUES = 12


@dataclass
class PreviewRow:
    where: str
    label: str
    data: str
    length: int | None
    problem: str = ""
    #: The row's group and kept fields (``--group-field``, ``--keep-fields``), as text.
    fields: str = ""


def guess_format(path: Path) -> str | None:
    """The import format a file or folder most likely has, from its name."""
    if path.is_dir():
        return "npy-dir"
    name = path.name.lower().removesuffix(".gz")
    for fmt, exts in (
        ("jsonl", (".jsonl", ".ndjson", ".json")),
        ("csv", (".csv",)),
        ("tsv", (".tsv", ".tab")),
        ("npy", (".npy",)),
        ("npz", (".npz",)),
    ):
        if name.endswith(exts):
            return fmt
    return None


def _values(value: object, dtype: np.dtype) -> np.ndarray | str:
    from guiapp.core.importers.parse import as_number_array, parse_text_rows

    if isinstance(value, str):
        return parse_text_rows([value], dtype)[0]
    if isinstance(value, list):
        return as_number_array(value)
    return f"data is a {type(value).__name__}"


def _show(a: np.ndarray) -> str:
    flat = a.reshape(-1)
    head = ", ".join(f"{v:g}" for v in flat[:SHOWN_VALUES].tolist())
    return f"[{head}{', …' if flat.size > SHOWN_VALUES else ''}]"


def preview_text(
    fmt: str,
    src: Path,
    *,
    label_field: str = "label",
    data_field: str = "data",
    delimiter: str | None = None,
    dtype: str = "uint16",
    limit: int = 20,
    group_field: str | None = None,
    keep_fields: list[str] | None = None,
) -> list[PreviewRow]:
    """Up to ``limit`` rows of the first file of a jsonl/csv/tsv source, with their group
    and kept fields by the import's own rules (a bad group value is the row's problem)."""
    from guiapp.core.importers.sources import display_name, open_source
    from guiapp.core.importers.text import TextSource, open_text_binary

    source = open_source(
        fmt, src, label_field=label_field, data_field=data_field, delimiter=delimiter
    )
    assert isinstance(source, TextSource)
    path = source.files[0]
    name = display_name(path, source.root)
    rows: list[PreviewRow] = []
    with open_text_binary(path) as (lines, _raw):
        for no, label, value, problem in itertools.islice(source.rows(lines, name), limit):
            where = f"{name}:{no}"
            if problem:
                rows.append(PreviewRow(where, "", "", None, problem))
                continue
            parsed = _values(value, np.dtype(dtype))
            if isinstance(parsed, str):
                rows.append(PreviewRow(where, str(label), str(value)[:80], None, parsed))
            else:
                rows.append(PreviewRow(where, str(label), _show(parsed), int(parsed.size)))
    if group_field or keep_fields:
        _add_fields(rows, source, path, group_field, keep_fields or [])
    return rows


def _add_fields(
    rows: list[PreviewRow], source: object, path: Path, group: str | None, keep: list[str]
) -> None:
    """Each previewed row's lineage fields, read from its line by the import's rules."""
    from guiapp.core.importers.jitfields import MISSING, NULL, OTHER
    from guiapp.core.importers.lineage import csv_field_cols
    from guiapp.core.importers.lineage_piece import exact_values
    from guiapp.core.importers.text import CsvSource, open_text_binary

    names = ([group] if group else []) + keep
    cols = None
    delimiter = ","
    if isinstance(source, CsvSource):
        cols = csv_field_cols(source, names, bool(group)).get("0")
        delimiter = source.delimiter
    wanted = {int(r.where.rsplit(":", 1)[1]): r for r in rows}
    last = max(wanted, default=0)
    with open_text_binary(path) as (lines, _raw):
        for no, line in enumerate(lines, start=1):
            if no > last:
                break
            row = wanted.get(no)
            if row is None:
                continue
            values = exact_values(line.rstrip(b"\r\n"), names, cols, delimiter)
            shown = []
            for i, (name, (kind, text)) in enumerate(zip(names, values, strict=True)):
                if i == 0 and group and (kind in (MISSING, NULL, OTHER) or not text):
                    what = {MISSING: "missing", NULL: "null"}.get(kind, f"{text[:30]!r}")
                    row.problem = row.problem or f"group field {name!r} is {what}"
                shown.append(f"{name}={text[:40]}")
            row.fields = ", ".join(shown)


def preview_arrays(fmt: str, src: Path, limit: int = 20) -> list[PreviewRow]:
    """Shapes of an npy/npz source and, for ``.npy``, its first rows (memory-mapped)."""
    if fmt == "npy":
        a = np.load(src, mmap_mode="r", allow_pickle=False)
        shape = "x".join(map(str, a.shape[1:])) or "scalar"
        return [
            PreviewRow(f"{src.name}[{i}]", "", _show(np.asarray(a[i])), int(np.prod(a.shape[1:])))
            for i in range(min(limit, len(a)))
        ] or [PreviewRow(src.name, "", f"0 rows of {shape} {a.dtype}", 0)]
    if fmt == "npz":
        with np.load(src, allow_pickle=False) as z:
            return [PreviewRow(f"{src.name}:{k}", "", "(array)", None) for k in z.files]
    files = sorted(p for p in src.rglob("*.npy"))[:limit]
    return [PreviewRow(p.relative_to(src).as_posix(), p.parent.name, "", None) for p in files]


def preview(fmt: str, src: Path, limit: int = 20, **fields: object) -> list[PreviewRow]:
    """The first ``limit`` rows of ``src`` as the import will parse them."""
    if fmt in TEXT_FORMATS:
        return preview_text(fmt, src, limit=limit, **fields)  # type: ignore[arg-type]
    return preview_arrays(fmt, src, limit=limit)
