"""``genomes``: FASTA/FASTQ genomes (a manifest: file, class, group) as k-mer token rows.

Every row is a read of ``length + k - 1`` bases (``length`` = the sample shape, 126 by
default) tokenised by :mod:`.tokenizer`. How rows are cut (``mode``):

- ``random``: ``reads_per_genome`` reads per genome (or ``coverage`` x its length / read
  length), each at a uniformly random position of a random record, on a random strand
  (``strand: both``) or the forward one; ``errors`` substitutes that fraction of bases;
- ``tiling``: every ``stride`` bases of every record, forward strand (or both strands
  with ``strand: both``: a second row per tile, reverse complemented);
- ``reads``: each record (a FASTQ read) as it is: its first ``length + k - 1`` bases,
  a shorter one padded with token 0 (``short: pad``) or left out (``short: drop``).

Rows carry the genome's class as label and its group (the manifest's ``group``, else the
file) as group, with the names in the index, plus kept fields ``file``, ``contig``,
``position`` (0-based, on the record's forward strand) and ``strand`` (``+``/``-``).
Row ``i`` of the dataset is item ``order[i]`` of a seeded permutation of every genome's
reads or tiles (so classes interleave); its random draws (position, strand, errors, N
replacements) come from its shard's chunk stream: shard ``k`` is a pure function of
(config, seed, k) as for every generator.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FileError, UserError
from ..store.columns import GROUP, group_id
from .manifest import read_manifest
from .seqfile import file_digest, read_sequences
from .tokenizer import END_CODE, N_CODE, Tokenizer, check_tokenizer, reverse_complement

MODES = ("random", "tiling", "reads")
DEFAULTS: dict[str, Any] = {
    "manifest": None,
    "k": 12,
    "canonical": True,
    "encoding": "auto",
    "vocab": 65521,
    "mode": "random",
    "reads_per_genome": 1000,
    "coverage": None,
    "stride": None,
    "strand": "both",
    "non_acgt": "pad",
    "errors": 0.0,
    "short": "pad",
    "class_names": None,
}
#: Parameters that the tokenizer is made of (predict refuses a run's differing ones).
TOKENIZER_KEYS = ("k", "canonical", "encoding", "vocab")
ORDER_TAG = 0x67656E6F
MAX_NAME = 200  # kept names (file, contig) are cut to this many bytes


def dataset_tokenizer(provenance: dict[str, Any], sample_shape: Any) -> dict[str, Any] | None:
    """The tokenizer a genomes dataset was made with (plus its row ``length``), or None:
    what a run records (``config.json``: ``dataset.tokenizer``) for ``predict``."""
    params = provenance.get("params") or {}
    if provenance.get("generator") != "genomes" or "tokenizer" not in params:
        return None
    return {**params["tokenizer"], "length": int(list(sample_shape)[0])}


def class_names(params: dict[str, Any]) -> list[str]:
    return list(params["class_names"])


def tokenizer_of(params: dict[str, Any]) -> Tokenizer:
    return Tokenizer.from_json(params["tokenizer"])


def _choice(p: dict[str, Any], key: str, options: tuple[str, ...]) -> str:
    if p[key] not in options:
        raise UserError(f"genomes: {key} {p[key]!r}: use one of {', '.join(options)}")
    return str(p[key])


def _positive(p: dict[str, Any], key: str, number: type = int) -> Any:
    v = p[key]
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    if not ok or (number is int and not isinstance(v, int)):
        raise UserError(f"genomes: {key} {v!r} must be a positive {number.__name__}")
    return v


def resolve_params(
    params: dict[str, Any], seed: int, n: int | None, length: int, *, need_class: bool = True
) -> dict[str, Any]:
    """Checked parameters with the manifest read: every file, its class, group and digest,
    the tokenizer and the number of rows. Bad input raises UserError naming where."""
    unknown = set(params) - set(DEFAULTS) - {"shape", "classes", "dtype"}
    if unknown:
        raise UserError(
            f"genomes: unknown parameter(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(DEFAULTS))}"
        )
    p = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    if not p["manifest"]:
        raise UserError(
            'genomes: give "manifest": a CSV/TSV of file, class[, group], or a folder with '
            "one sub-folder of FASTA/FASTQ files per class"
        )
    tok = check_tokenizer(p)
    mode = _choice(p, "mode", MODES)
    _choice(p, "strand", ("both", "forward"))
    _choice(p, "non_acgt", ("pad", "random", "error"))
    _choice(p, "short", ("pad", "drop"))
    err = p["errors"]
    if isinstance(err, bool) or not isinstance(err, (int, float)) or not 0 <= err < 1:
        raise UserError(f"genomes: errors {err!r} must be a fraction of bases in [0, 1)")
    entries = read_manifest(p["manifest"], need_class=need_class)
    names = p["class_names"]
    if names is None:
        names = sorted({e.label for e in entries if e.label}) or ["unknown"]
    names = [str(c) for c in names]
    known = set(names)
    for e in entries:
        if e.label and e.label not in known:
            where = f"{p['manifest']}, line {e.line}" if e.line else e.file
            raise FileError(
                where,
                f"class {e.label!r} is not one of the classes ({', '.join(names)})",
                "Fix the class, or add it to class_names",
            )
    files = [
        {"file": e.file, "class": e.label, "group": e.group, "sha256": file_digest(e.file)}
        for e in entries
    ]
    out = {
        **{key: p[key] for key in DEFAULTS},
        "manifest": str(Path(p["manifest"]).resolve()),
        "class_names": names,
        "files": files,
        "tokenizer": tok.to_json(),
        "length": int(length),
        "errors": float(err),
    }
    if mode == "random" and n is not None:
        out["reads_per_genome"] = None
        out["total_reads"] = int(n)
    elif mode == "random":
        if p["coverage"] is not None:
            _positive(p, "coverage", float)
        else:
            _positive(p, "reads_per_genome")
    if mode == "tiling":
        out["stride"] = int(_positive(p, "stride") if p["stride"] is not None else length)
    lib = library(json.dumps(files), p["non_acgt"])
    plan = row_plan(json.dumps(out, sort_keys=True), seed)
    if mode != "random" and n is not None and n != len(plan.order):
        raise UserError(
            f"--n {n}: mode {mode} makes one row per {'tile' if mode == 'tiling' else 'read'} "
            f"({len(plan.order):,} here); leave --n out"
        )
    out["rows"] = len(plan.order)
    if out["rows"] == 0:
        raise UserError(f"genomes: {p['manifest']} gives no rows (every read was too short)")
    wf = max(len(Path(f["file"]).name.encode()) for f in files)
    wc = max((len(s.encode()) for s in lib.record_names), default=1)
    out["kept"] = {
        "file": f"S{min(MAX_NAME, max(1, wf))}",
        "contig": f"S{min(MAX_NAME, max(1, wc))}",
        "position": "int64",
        "strand": "S1",
    }
    return out


@dataclass
class Library:
    """Every file's records, their bases in one array."""

    bases: np.ndarray  # uint8 base codes of every record, end to end
    rec_start: np.ndarray  # int64 per record
    rec_len: np.ndarray  # int64 per record
    rec_file: np.ndarray  # int64 per record: index into files
    record_names: list[str]
    names_bytes: np.ndarray  # the record names as bytes (cut to MAX_NAME)
    file_first: np.ndarray  # int64 per file + 1: its first record


@functools.lru_cache(maxsize=2)
def library(files_json: str, non_acgt: str = "pad") -> Library:
    files = json.loads(files_json)
    parts, starts, lens, rfile, names, first = [], [], [], [], [], [0]
    at = 0
    for i, f in enumerate(files):
        seqs = read_sequences(f["file"], refuse_iupac=non_acgt == "error")
        parts.append(seqs.bases)
        starts.append(at + seqs.starts[:-1])
        lens.append(seqs.lengths)
        rfile.append(np.full(len(seqs), i, np.int64))
        names.extend(seqs.names)
        first.append(first[-1] + len(seqs))
        at += len(seqs.bases)
    return Library(
        np.concatenate(parts),
        np.concatenate(starts).astype(np.int64),
        np.concatenate(lens).astype(np.int64),
        np.concatenate(rfile),
        names,
        np.array([s.encode()[:MAX_NAME] for s in names]),
        np.asarray(first, np.int64),
    )


@dataclass
class RowPlan:
    order: np.ndarray  # item of each dataset row
    item_genome: np.ndarray  # per item: its file
    item_record: np.ndarray  # tiling/reads: per item its record (random: -1)
    item_pos: np.ndarray  # tiling: per item its start; reads: 0
    item_strand: np.ndarray  # tiling: 1 for the reverse copy
    valid_cum: np.ndarray  # random: per record, cumulative valid read starts (len + 1)
    file_valid: np.ndarray  # random: per file, [first, end) in valid_cum units


def _lib(params: dict[str, Any]) -> Library:
    return library(json.dumps(params["files"]), params["non_acgt"])


@functools.lru_cache(maxsize=2)
def row_plan(params_json: str, seed: int) -> RowPlan:
    p = json.loads(params_json)
    lib = _lib(p)
    files = p["files"]
    read_len = p["length"] + p["tokenizer"]["k"] - 1
    nfiles = len(files)
    mode = p["mode"]
    empty = np.zeros(0, np.int64)
    valid = np.maximum(0, lib.rec_len - read_len + 1)
    valid_cum = np.zeros(len(valid) + 1, np.int64)
    np.cumsum(valid, out=valid_cum[1:])
    file_valid = np.stack([valid_cum[lib.file_first[:-1]], valid_cum[lib.file_first[1:]]], 1)
    rec, pos, strand = empty, empty, empty
    if mode in ("random", "tiling"):
        short = np.flatnonzero(file_valid[:, 1] == file_valid[:, 0])
        if len(short):
            f = files[int(short[0])]
            longest = int(
                lib.rec_len[lib.file_first[short[0]] : lib.file_first[short[0] + 1]].max(initial=0)
            )
            raise FileError(
                f["file"],
                f"no record is as long as one read ({read_len} bases = {p['length']} k-mers "
                f"+ k - 1; the longest has {longest})",
                "Give a longer genome, a smaller shape or k, or use mode reads with short pad",
            )
    if mode == "random":
        if p.get("total_reads") is not None:
            total = int(p["total_reads"])
            counts = np.full(nfiles, total // nfiles, np.int64)
            counts[: total % nfiles] += 1
        elif p["coverage"] is not None:
            glen = np.add.reduceat(lib.rec_len, lib.file_first[:-1])
            counts = np.ceil(float(p["coverage"]) * glen / read_len).astype(np.int64)
        else:
            counts = np.full(nfiles, int(p["reads_per_genome"]), np.int64)
        genome = np.repeat(np.arange(nfiles, dtype=np.int64), counts)
        rec = np.full(len(genome), -1, np.int64)
    elif mode == "tiling":
        stride = int(p["stride"])
        ntiles = np.where(lib.rec_len >= read_len, (lib.rec_len - read_len) // stride + 1, 0)
        rec = np.repeat(np.arange(len(ntiles), dtype=np.int64), ntiles)
        first = np.repeat(np.cumsum(ntiles) - ntiles, ntiles)
        pos = (np.arange(len(rec), dtype=np.int64) - first) * stride
        strand = np.zeros(len(rec), np.int64)
        if p["strand"] == "both":
            rec, pos = np.concatenate([rec, rec]), np.concatenate([pos, pos])
            strand = np.concatenate([strand, np.ones_like(strand)])
        genome = lib.rec_file[rec]
    else:  # reads
        keep = lib.rec_len >= (read_len if p["short"] == "drop" else 1)
        rec = np.flatnonzero(keep).astype(np.int64)
        pos = np.zeros(len(rec), np.int64)
        strand = np.zeros(len(rec), np.int64)
        genome = lib.rec_file[rec]
    order = np.random.default_rng([seed, ORDER_TAG]).permutation(len(genome))
    return RowPlan(order, genome, rec, pos, strand, valid_cum, file_valid)


def group_ids(params: dict[str, Any]) -> np.ndarray:
    """Each file's group id (``store.columns.group_id`` of its group name)."""
    return group_id([f["group"] for f in params["files"]])


def group_table(params: dict[str, Any]) -> tuple[np.ndarray, list[str]]:
    """The index's table of group names: ids sorted, one name each."""
    names = sorted({f["group"] for f in params["files"]})
    ids = group_id(names)
    o = np.argsort(ids)
    return ids[o], [names[i] for i in o]


def file_labels(params: dict[str, Any]) -> np.ndarray:
    names = params["class_names"]
    return np.array(
        [names.index(f["class"]) if f["class"] else 0 for f in params["files"]], np.int32
    )


def read_windows(
    params: dict[str, Any], seed: int, start: int, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``[start, start + n)``: their bases ``(n, length + k - 1)`` (strand applied,
    errors made), file, record, position and strand (1 = reverse)."""
    lib = _lib(params)
    plan = row_plan(json.dumps(params, sort_keys=True), seed)
    read_len = params["length"] + params["tokenizer"]["k"] - 1
    items = plan.order[start : start + n]
    genome = plan.item_genome[items]
    if params["mode"] == "random":
        lo, hi = plan.file_valid[genome, 0], plan.file_valid[genome, 1]
        u = lo + (rng.random(n) * (hi - lo)).astype(np.int64)
        u = np.minimum(u, hi - 1)
        rec = np.searchsorted(plan.valid_cum, u, side="right") - 1
        pos = u - plan.valid_cum[rec]
        strand = (
            (rng.random(n) < 0.5).astype(np.int64)
            if params["strand"] == "both"
            else np.zeros(n, np.int64)
        )
    else:
        rec, pos, strand = plan.item_record[items], plan.item_pos[items], plan.item_strand[items]
    offs = pos[:, None] + np.arange(read_len)
    inside = offs < lib.rec_len[rec][:, None]
    idx = lib.rec_start[rec][:, None] + np.where(inside, offs, 0)
    bases = np.where(inside, lib.bases[idx], END_CODE).astype(np.uint8)
    rev = strand == 1
    if rev.any():
        bases[rev] = reverse_complement(bases[rev])
    if params["non_acgt"] == "random":
        nn = bases == N_CODE
        if nn.any():
            bases[nn] = rng.integers(0, 4, int(nn.sum()), dtype=np.uint8)
    if params["errors"] > 0:
        hit = (rng.random(bases.shape) < params["errors"]) & (bases < N_CODE)
        shift = rng.integers(1, 4, int(hit.sum()), dtype=np.uint8)
        bases[hit] = (bases[hit] + shift) % 4
    return bases, genome, rec, pos, strand


def generate_rows(
    params: dict[str, Any], seed: int, start: int, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Tokens ``(n, length)``, labels, groups and kept fields of rows ``[start, start+n)``."""
    bases, genome, rec, pos, strand = read_windows(params, seed, start, n, rng)
    tok = tokenizer_of(params)
    x = tok(bases)
    lib = _lib(params)
    kept = params["kept"]
    fnames = np.array([Path(f["file"]).name.encode()[:MAX_NAME] for f in params["files"]])
    fields = {
        "file": fnames[genome].astype(kept["file"]),
        "contig": lib.names_bytes[rec].astype(kept["contig"]),
        "position": pos.astype(np.int64),
        "strand": np.where(strand == 1, b"-", b"+").astype("S1"),
    }
    return x, file_labels(params)[genome], group_ids(params)[genome], fields


def columns(params: dict[str, Any]) -> dict[str, str]:
    return {GROUP: "int64", **params["kept"]}


def preview(params: dict[str, Any], seed: int, length: int, rows: int = 4) -> list[dict[str, Any]]:
    """A few rows as the source cuts them (the Generate dialog's preview): each row's
    class, genome, place, bases and tokens. Reads the manifest's files: not for the GUI
    thread."""
    from .tokenizer import as_bases

    p = resolve_params(params, seed, None, length)
    n = min(rows, int(p["rows"]))
    bases, genome, rec, pos, strand = read_windows(p, seed, 0, n, np.random.default_rng(seed))
    x = tokenizer_of(p)(bases)
    lib = _lib(p)
    return [
        {
            "class": p["files"][int(genome[i])]["class"],
            "group": p["files"][int(genome[i])]["group"],
            "file": Path(p["files"][int(genome[i])]["file"]).name,
            "contig": lib.record_names[int(rec[i])],
            "position": int(pos[i]),
            "strand": "-" if strand[i] else "+",
            "bases": as_bases(bases[i]),
            "tokens": [int(t) for t in x[i]],
        }
        for i in range(n)
    ]
