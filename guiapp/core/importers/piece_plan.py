"""Text inputs cut into pieces, and a piece's lines read back.

A piece is a ``.gz`` file whole, or a byte range of a plain file cut at a line end
(``PIECE_BYTES`` each, the same cuts whatever the worker count); ``pieces.py`` parses one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .formats import is_compressed
from .text import open_text_binary

PIECE_BYTES = 16 * 2**20
#: The input's first piece is short: the job parses it alone (the first good row fixes the
#: sample shape) before the workers start, without the compiled scan (it needs the length),
#: so it is serial and slow work: 64 KiB is ~100 of the benchmark's lines (1 MiB was 0.1 s).
FIRST_PIECE_BYTES = 2**16


@dataclass
class Piece:
    index: int
    file: int  # index into the source's files
    start: int  # byte range of a plain file; a .gz file is one piece (0, -1)
    end: int


def plan_pieces(files: list[Path], piece_bytes: int = PIECE_BYTES) -> list[Piece]:
    """Cut every file into pieces at line ends (``.gz``: one piece per file)."""
    out: list[Piece] = []
    for fi, path in enumerate(files):
        if is_compressed(path):
            out.append(Piece(len(out), fi, 0, -1))
            continue
        size = path.stat().st_size
        pos = 0
        with open(path, "rb") as fh:
            while pos < size:
                first = not out and pos == 0
                end = min(
                    size, pos + (min(piece_bytes, FIRST_PIECE_BYTES) if first else piece_bytes)
                )
                if end < size:
                    fh.seek(end - 1)
                    while True:
                        block = fh.read(1 << 16)
                        if not block:
                            end = size
                            break
                        k = block.find(b"\n")
                        if k >= 0:
                            end = fh.tell() - len(block) + k + 1
                            break
                out.append(Piece(len(out), fi, pos, end))
                pos = end
    return out


def read_lines(path: Path, piece: Piece) -> tuple[list[bytes], np.ndarray]:
    """The piece's physical lines (without line ends) and the byte position after each."""
    if piece.end < 0:
        lines: list[bytes] = []
        ends: list[int] = []
        with open_text_binary(path) as (stream, raw):
            for line in stream:
                lines.append(line[:-1] if line.endswith(b"\n") else line)
                ends.append(raw.tell())
        return lines, np.asarray(ends, np.int64)
    with open(path, "rb") as fh:
        fh.seek(piece.start)
        buf = fh.read(piece.end - piece.start)
    lines = buf.split(b"\n")
    if lines and lines[-1] == b"" and buf.endswith(b"\n"):
        lines.pop()
    lens = np.fromiter(map(len, lines), np.int64, len(lines)) + 1
    ends_a = piece.start + np.cumsum(lens)
    if len(lines) and not buf.endswith(b"\n"):
        ends_a[-1] -= 1
    return lines, ends_a
