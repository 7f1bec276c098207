"""A genomes dataset's row back to its bases, for the Browser's sample detail.

A row made by the genomes source keeps ``file``, ``contig``, ``position`` and ``strand``;
with the files its provenance lists, that is enough to show the genome's bases the row's
tokens were cut from (reverse complemented for a ``-`` row). The simulated sequencing
errors and ``N`` replacements of ``random`` reads are not redrawn: these are the genome's
own bases.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..store.columns import row_lineage
from .seqfile import Sequences, read_sequences
from .tokenizer import as_bases, reverse_complement


@functools.lru_cache(maxsize=4)
def _sequences(path: str, sha256: str) -> Sequences:
    return read_sequences(path)


def row_bases(path: str | Path, info: dict[str, Any]) -> str | None:
    """The bases of the row ``info`` describes (``columns.row_lineage``), or None when the
    dataset was not made from genomes or its files are gone or changed."""
    from ..store import Dataset
    from .seqfile import file_digest

    with Dataset(path) as ds:
        prov = ds.provenance
        length = int(ds.sample_shape[0]) if len(ds.sample_shape) == 1 else 0
    params = prov.get("params") or {}
    fields = info.get("fields") or {}
    if prov.get("generator") != "genomes" or not length or "file" not in fields:
        return None
    entry = next((f for f in params["files"] if Path(f["file"]).name == fields["file"]), None)
    if entry is None or not Path(entry["file"]).is_file():
        return None
    if file_digest(entry["file"]) != entry["sha256"]:
        return None
    seqs = _sequences(entry["file"], entry["sha256"])
    if fields.get("contig") not in seqs.names:
        return None
    rec = seqs.record(seqs.names.index(fields["contig"]))
    pos = int(fields.get("position", 0))
    window = rec[pos : pos + length + int(params["tokenizer"]["k"]) - 1]
    if fields.get("strand") == "-":
        window = reverse_complement(window)
    return as_bases(window)


def row_lineage_with_bases(path: str | Path, row: int) -> dict[str, Any]:
    """``columns.row_lineage`` plus ``bases`` for a row of a genomes dataset."""
    info = row_lineage(path, row)
    bases = row_bases(path, info)
    if bases is not None:
        info["bases"] = bases
    return info
