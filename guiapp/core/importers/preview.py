"""The first rows of an import source, parsed by ``guiapp import``'s own parser and rules.

Text formats: the first lines of the first file go through the job's piece parser
(``PieceParser``, the exact path) and label map (``LabelMap``) with the dialog's options
(dtype, Length with pad and truncate, class names, group and kept fields), so the preview
shows the label, the fitted data and every problem in the job's own words: what the
import would refuse (``--on-error abort``) or leave out (``skip``), including a line whose
length differs from the first row's under Length "keep as is". Array formats show their
shapes (``.npy`` is memory-mapped).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .formats import TEXT_FORMATS as TEXT_FORMATS  # the dialog's names (``formats.py``)
from .formats import guess_format as guess_format

SHOWN_VALUES = 12
#: the Length column's word for a row the import pads or truncates (``PieceResult.fitted``)
FITTED = {-1: "padded", 1: "truncated", 2: "empty, padded"}


@dataclass
class PreviewRow:
    where: str
    label: str
    data: str
    length: int | None
    problem: str = ""
    #: The row's group and kept fields (``--group-field``, ``--keep-fields``), as text.
    fields: str = ""
    #: What the import does to its length ("padded", "truncated"), if anything.
    fitted: str = ""


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
    length: int | None = None,
    pad: str = "post",
    truncate: str = "pre",
    class_names: list[str] | None = None,
) -> list[PreviewRow]:
    """Up to ``limit`` rows of the first file of a jsonl/csv/tsv source as the import
    parses them; a problem that stops the whole import is a last row without a line."""
    from guiapp.core.importers.labels import LabelMap
    from guiapp.core.importers.lineage import check_fields, csv_field_cols
    from guiapp.core.importers.pieces import BAD_DATA, GOOD, UNUSABLE, ParseSpec, Piece, PieceParser
    from guiapp.core.importers.sources import display_name, open_source
    from guiapp.core.importers.text import CsvSource, TextSource, open_text_binary

    fields = check_fields(fmt, group_field, keep_fields)
    source = open_source(
        fmt, src, label_field=label_field, data_field=data_field, delimiter=delimiter,
        fields=fields.names, group=fields.group is not None,
    )  # fmt: skip
    assert isinstance(source, TextSource)
    path = source.files[0]
    name = display_name(path, source.root)
    layouts: dict[str, list[int | None]] = {}
    if isinstance(source, CsvSource):
        lay = source.file_layout(path)
        if lay is not None:
            layouts["0"] = [lay.li, lay.di, lay.header_len, lay.header_line]
            limit += bool(lay.header_line)  # a header is a line, not a row
    with tempfile.TemporaryDirectory(prefix="guiapp-preview-") as tmp:
        head = Path(tmp) / "head"  # the first lines of the file (of a .gz file, unpacked)
        with open_text_binary(path) as (lines, _raw), open(head, "wb") as out:
            seen = 0
            for line in lines:
                out.write(line)
                seen += bool(line.strip())
                if seen >= limit:
                    break
        spec = ParseSpec(
            format=fmt, files=[str(head)], names=[name], label_field=label_field,
            data_field=data_field, delimiter=getattr(source, "delimiter", ""), dtype=dtype,
            length=length, pad=pad, truncate=truncate, pad_value=0, sample_shape=None,
            class_names=class_names, csv_layouts=layouts, fields=fields.names,
            group=fields.group is not None,
        )  # fmt: skip
        if fields.names and isinstance(source, CsvSource):
            spec.field_cols = {"0": csv_field_cols(source, spec.fields, spec.group).get("0", [])}
        res = PieceParser(spec, jit=False).parse(Piece(0, 0, 0, head.stat().st_size))
        raw = head.read_bytes().splitlines()
    labels = res.labels if isinstance(res.labels, list) else res.labels.tolist()
    label_problems = dict(LabelMap(class_names).ids(labels)[1]) if labels else {}
    rows: list[PreviewRow] = []
    li = pi = gi = 0  # the next record's label, problem and sample (PieceResult's order)
    for r in range(len(res.kind)):
        no, kind = int(res.line[r]), int(res.kind[r])
        where = f"{name}:{no}"
        label = problem = ""
        if kind != UNUSABLE:  # the job reports a bad label before bad data
            label, problem = str(labels[li]), label_problems.get(li, "")
            li += 1
        if kind in (UNUSABLE, BAD_DATA):
            problem = problem or res.problems[pi]
            pi += 1
        if kind == GOOD:
            x, fitted = res.x[gi], int(res.fitted[gi])
            gi += 1
            row = PreviewRow(
                where, label, _show(x), int(x.size), problem, "", FITTED.get(fitted, "")
            )
            if not problem and x.dtype.kind == "f" and not np.isfinite(x).all():
                row.problem = "NaN/Inf values (the import stops unless --on-nonfinite skip)"
        else:
            text = raw[no - 1].decode("utf-8", "replace") if 0 < no <= len(raw) else ""
            row = PreviewRow(where, label, text[:80], None, problem)
        rows.append(row)
    if res.fatal:
        rows.append(PreviewRow("", "", "", None, f"the import stops here: {res.fatal}"))
    if group_field or keep_fields:
        _add_fields([r for r in rows if r.where], source, path, group_field, keep_fields or [])
    return rows


def _add_fields(
    rows: list[PreviewRow], source: object, path: Path, group: str | None, keep: list[str]
) -> None:
    """Each previewed row's lineage fields, read from its line by the import's rules."""
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
            for name, (_kind, text) in zip(names, values, strict=True):
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
    files = first_npy_files(src, limit)
    return [PreviewRow(p.relative_to(src).as_posix(), p.parent.name, "", None) for p in files]


def first_npy_files(src: Path, limit: int, budget: int = 20_000) -> list[Path]:
    """Up to ``limit`` ``.npy`` files under ``src`` in sorted order, looking at no more than
    ``budget`` entries (the Source field passes through "/" while a path is typed: a
    whole-disk ``rglob`` held the dialog for seconds)."""
    found: list[Path] = []
    seen = 0
    for root, dirs, names in os.walk(src):
        dirs.sort()
        seen += len(dirs) + len(names)
        found += [Path(root) / n for n in sorted(names) if n.endswith(".npy")]
        if len(found) >= limit or seen >= budget:
            break
    return found[:limit]


def preview(fmt: str, src: Path, limit: int = 20, **fields: object) -> list[PreviewRow]:
    """The first ``limit`` rows of ``src`` as the import will parse them."""
    if fmt in TEXT_FORMATS:
        return preview_text(fmt, src, limit=limit, **fields)  # type: ignore[arg-type]
    return preview_arrays(fmt, src, limit=limit)
