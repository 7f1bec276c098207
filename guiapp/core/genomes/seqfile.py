"""FASTA and FASTQ files (plain or gzip) as base codes, checked line by line.

A file becomes a :class:`Sequences`: its records' names, where each record starts in one
array of base codes (``tokenizer.BASE_CODES``: lowercase is the same base, IUPAC codes
such as N or R are code 4), and whether it was FASTQ. Anything else is refused with one
line naming the file, the line and the fix: an empty file, a first line that is neither
``>`` nor ``@``, a FASTQ record cut short or whose quality line does not match, a letter
that is no nucleotide (a protein FASTA, say).
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FileError
from .tokenizer import BASE_CODES

FASTA_SUFFIXES = (".fa", ".fasta", ".fna", ".ffn", ".fas")
FASTQ_SUFFIXES = (".fq", ".fastq")


def is_sequence_file(path: str | Path) -> bool:
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return name.endswith(FASTA_SUFFIXES + FASTQ_SUFFIXES)


@dataclass
class Sequences:
    path: str
    names: list[str]
    starts: np.ndarray  # int64, len(names) + 1: record i is bases[starts[i]:starts[i+1]]
    bases: np.ndarray  # uint8 base codes
    fastq: bool

    def record(self, i: int) -> np.ndarray:
        return self.bases[self.starts[i] : self.starts[i + 1]]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def __len__(self) -> int:
        return len(self.names)


def read_bytes(path: str | Path) -> bytes:
    p = Path(path)
    try:
        raw = p.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except FileNotFoundError:
        raise FileError(p, "does not exist", "Give the path of a FASTA or FASTQ file") from None
    except IsADirectoryError:
        raise FileError(p, "is a folder", "Give the path of a FASTA or FASTQ file") from None
    except (OSError, EOFError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise FileError(p, f"cannot be read ({why})", "Check the file (a damaged gzip?)") from None
    return raw


def file_digest(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _bad_letter(path: str, line_no: int, line: bytes) -> FileError:
    codes = BASE_CODES[np.frombuffer(line, np.uint8)]
    at = int(np.flatnonzero(codes == 255)[0])
    ch = chr(line[at]) if 32 < line[at] < 127 else f"byte 0x{line[at]:02x}"
    return FileError(
        f"{path}, line {line_no}",
        f"{ch!r} at column {at + 1} is not a nucleotide letter (ACGT, lowercase or IUPAC)",
        "Give DNA sequences (a protein FASTA cannot be tokenised into k-mers)",
    )


def read_sequences(path: str | Path, refuse_iupac: bool = False) -> Sequences:
    """The file's records as base codes (FASTA or FASTQ, told from the first byte);
    ``refuse_iupac``: N and the other IUPAC codes are refused too (``non_acgt: error``)."""
    p = str(path)
    raw = read_bytes(path)
    lines = raw.replace(b"\r", b"").split(b"\n")
    first = next((i for i, s in enumerate(lines) if s.strip()), None)
    if first is None:
        raise FileError(p, "is empty", "Give a FASTA (>name, then bases) or FASTQ file")
    head = lines[first][:1]
    if head not in (b">", b"@"):
        raise FileError(
            f"{p}, line {first + 1}",
            "is neither FASTA ('>' first) nor FASTQ ('@' first)",
            "Give a FASTA or FASTQ file (gzip allowed)",
        )
    seqs = _fastq(p, lines, first) if head == b"@" else _fasta(p, lines, first)
    if refuse_iupac and (seqs.bases == 4).any():
        _raise_bad(p, lines, first, seqs.fastq, iupac=True)
    return seqs


def _fasta(p: str, lines: list[bytes], first: int) -> Sequences:
    names: list[str] = []
    starts: list[int] = []
    parts: list[bytes] = []
    size = 0
    for i in range(first, len(lines)):
        s = lines[i].strip()
        if not s or s[:1] == b";":
            continue
        if s[:1] == b">":
            names.append(
                s[1:].split(maxsplit=1)[0].decode("utf-8", "replace")
                if s[1:].strip()
                else f"record{len(names) + 1}"
            )
            starts.append(size)
            continue
        parts.append(s)
        size += len(s)
    starts.append(size)
    bases = BASE_CODES[np.frombuffer(b"".join(parts), np.uint8)]
    if (bases == 255).any():
        _raise_bad(p, lines, first, fastq=False)
    st = np.asarray(starts, np.int64)
    empty = np.flatnonzero(np.diff(st) == 0)
    if len(empty) == len(names):
        raise FileError(p, "holds no bases", "Give a FASTA file with sequences under its > lines")
    return Sequences(p, names, st, bases, False)


def _raise_bad(p: str, lines: list[bytes], first: int, fastq: bool, iupac: bool = False) -> None:
    for i in range(first, len(lines)):
        s = lines[i].strip()
        if fastq and (i - first) % 4 != 1:
            continue
        if not fastq and (not s or s[:1] in (b">", b";")):
            continue
        codes = BASE_CODES[np.frombuffer(s, np.uint8)]
        if (codes == 255).any():
            raise _bad_letter(p, i + 1, s)
        if iupac and (codes == 4).any():
            at = int(np.flatnonzero(codes == 4)[0])
            raise FileError(
                f"{p}, line {i + 1}",
                f"{chr(s[at])!r} at column {at + 1} is not A, C, G or T (non_acgt is error)",
                'Set "non_acgt" to "pad" or "random" to accept N and other IUPAC codes',
            )


def _fastq(p: str, lines: list[bytes], first: int) -> Sequences:
    body = lines[first:]
    while body and not body[-1].strip():
        body.pop()
    if len(body) % 4:
        at = first + len(body) - len(body) % 4 + 1
        raise FileError(
            f"{p}, line {at}",
            "a FASTQ record is cut short (a record is 4 lines: @name, bases, +, qualities)",
            "Give the whole file (was it truncated?)",
        )
    names = []
    for r in range(0, len(body), 4):
        at = first + r + 1
        h, s, plus, q = (x.strip() for x in body[r : r + 4])
        if h[:1] != b"@":
            raise FileError(f"{p}, line {at}", "a FASTQ record must start with '@'", "Fix the file")
        if plus[:1] != b"+":
            raise FileError(
                f"{p}, line {at + 2}",
                "the third line of a FASTQ record must start with '+'",
                "Fix the file",
            )
        if len(q) != len(s):
            raise FileError(
                f"{p}, line {at + 3}",
                f"{len(q)} quality values for {len(s)} bases",
                "Give the whole record (was the file truncated?)",
            )
        names.append(
            h[1:].split(maxsplit=1)[0].decode("utf-8", "replace")
            if h[1:].strip()
            else f"read{r // 4 + 1}"
        )
    seqs = [x.strip() for x in body[1::4]]
    lens = np.fromiter((len(s) for s in seqs), np.int64, len(seqs))
    starts = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(lens, out=starts[1:])
    bases = BASE_CODES[np.frombuffer(b"".join(seqs), np.uint8)]
    if (bases == 255).any():
        _raise_bad(p, lines, first, fastq=True)
    return Sequences(p, names, starts, bases, True)
