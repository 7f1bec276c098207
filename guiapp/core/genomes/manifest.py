"""Which genome files make a dataset: a manifest (CSV/TSV) or a folder of class folders.

A manifest is one genome file a line: ``file``, ``class`` and optionally ``group`` (an
accession or strain: files of one group are one genome), tab- or comma-separated, with a
header line naming those columns or without one (then in that order). Paths are relative
to the manifest. ``#`` starts a comment line. A folder holds one sub-folder per class,
each holding FASTA/FASTQ files (``.fa .fasta .fna .fq .fastq``, optionally ``.gz``).
A single FASTA/FASTQ file is a manifest of one genome of no known class (``predict``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from ..errors import FileError
from .seqfile import is_sequence_file, read_bytes


@dataclass(frozen=True)
class Entry:
    file: str  # absolute path
    label: str  # class name ("" when unknown)
    group: str  # the genome's name: the manifest's group, else the file's name
    line: int  # where the manifest names it (0 for a folder or a single file)


def read_manifest(path: str | Path, *, need_class: bool = True) -> list[Entry]:
    p = Path(path)
    if p.is_dir():
        return _folder(p)
    if is_sequence_file(p):
        if not p.exists():
            raise FileError(p, "does not exist", "Give a FASTA/FASTQ file or a manifest")
        return [Entry(str(p.resolve()), "", p.name, 0)]
    text = read_bytes(p).decode("utf-8", "replace")
    lines = text.splitlines()
    delim = "\t" if any("\t" in s for s in lines[:5]) else ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delim))
    out: list[Entry] = []
    cols = {"file": 0, "class": 1, "group": 2}
    seen_header = False
    for i, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if not seen_header and not out and cells[0].lower() in ("file", "path", "fasta"):
            names = [c.lower() for c in cells]
            cols = {"file": 0}
            for key, alts in (
                ("class", ("class", "label", "species")),
                ("group", ("group", "accession", "strain")),
            ):
                at = next((names.index(a) for a in alts if a in names), None)
                if at is not None:
                    cols[key] = at
            if need_class and "class" not in cols:
                raise FileError(
                    f"{p}, line {i}", "the header names no class column", "Add a column 'class'"
                )
            seen_header = True
            continue
        seen_header = True
        fi = cells[cols["file"]]
        label = cells[cols["class"]] if "class" in cols and cols["class"] < len(cells) else ""
        if need_class and not label:
            raise FileError(
                f"{p}, line {i}", "names no class", "Give each line: file, class[, group]"
            )
        f = (p.parent / fi).resolve()
        if not f.is_file():
            raise FileError(
                f"{p}, line {i}",
                f"names {fi}, which does not exist",
                "Fix the path (relative paths are read from the manifest's folder)",
            )
        group = cells[cols["group"]] if "group" in cols and cols["group"] < len(cells) else ""
        out.append(Entry(str(f), label, group or fi, i))
    if not out:
        raise FileError(p, "names no genome files", "Give one line per file: file, class[, group]")
    return out


def _folder(p: Path) -> list[Entry]:
    out = []
    for sub in sorted(q for q in p.iterdir() if q.is_dir()):
        for f in sorted(sub.iterdir()):
            if f.is_file() and is_sequence_file(f):
                out.append(Entry(str(f.resolve()), sub.name, f"{sub.name}/{f.name}", 0))
    if not out:
        raise FileError(
            p,
            "holds no class folders with FASTA/FASTQ files",
            "Give one sub-folder per class holding its genomes, or a manifest",
        )
    return out
