"""Piece results cut into the chunks the serial reader made: ``TEXT_ROWS_PER_CHUNK`` records
(non-blank lines) each, and a chunk ending at every file's end.

The shuffle draws its random bucket numbers per chunk, so cutting the records exactly where
the serial reader cut its chunks keeps the output identical to it, whatever the pieces and
the worker count. Each chunk knows where it ends (piece, record), so a checkpoint taken
after it can resume there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .labels import Labels, join_labels
from .piece_plan import Piece
from .piece_result import BAD_DATA, GOOD, UNUSABLE, PieceResult
from .rowcols import RowCols
from .sources import TEXT_ROWS_PER_CHUNK


@dataclass
class RecordChunk:
    name: str  # the file, as messages show it
    line: np.ndarray  # absolute 1-based line number per record
    kind: np.ndarray
    labels: Labels  # per record that is not UNUSABLE
    problems: list[str]  # per UNUSABLE or BAD_DATA record
    x: np.ndarray  # per GOOD record
    fitted: np.ndarray  # per GOOD record
    bytes_done: int  # input bytes up to the end of this chunk (all files)
    next_piece: int  # where the records after this chunk start
    next_record: int
    line_base: int  # line number before the first line of next_piece (in its file)
    lineage: RowCols | None  # per GOOD record: its group and kept fields (rowcols.py)

    def __len__(self) -> int:
        return len(self.kind)


class ChunkCutter:
    """Feed ``PieceResult`` in piece order; get ``RecordChunk`` back."""

    def __init__(
        self,
        pieces: list[Piece],
        file_sizes: list[int],
        names: list[str],
        *,
        skip_records: int = 0,
        line_base: int = 0,
        rows: int = TEXT_ROWS_PER_CHUNK,
    ) -> None:
        self.pieces = pieces
        self.names = names
        self.rows = rows
        self.base_bytes = np.concatenate([[0], np.cumsum(file_sizes, dtype=np.int64)]).tolist()
        self.file_sizes = file_sizes
        self.skip = skip_records  # of the first piece fed (a resume inside a piece)
        self.line_base = line_base  # of the piece being fed, within its file
        self._segs: list[tuple[PieceResult, int, int, int]] = []  # (result, a, b, line base)
        self._count = 0

    def feed(self, res: PieceResult) -> Iterator[RecordChunk]:
        piece = self.pieces[res.piece]
        last_of_file = (
            res.piece + 1 == len(self.pieces) or self.pieces[res.piece + 1].file != piece.file
        )
        a, n = self.skip, len(res.kind)
        self.skip = 0
        base = self.line_base
        while a < n:
            if self._count == self.rows:
                yield self._cut(res.piece, a, base, None)
            take = min(n - a, self.rows - self._count)
            self._segs.append((res, a, a + take, base))
            self._count += take
            a += take
        self.line_base = 0 if last_of_file else base + res.lines
        if last_of_file and self._segs:
            yield self._cut(res.piece + 1, 0, 0, piece.file)

    def _cut(self, nxt: int, rec: int, nbase: int, end_of_file: int | None) -> RecordChunk:
        """The records gathered so far; the next ones start at (nxt, rec)."""
        segs, self._segs, self._count = self._segs, [], 0
        res_last, _, b_last, _ = segs[-1]
        file = self.pieces[res_last.piece].file
        if end_of_file is not None:
            done = self.base_bytes[file] + self.file_sizes[file]
        else:
            done = self.base_bytes[file] + int(res_last.end[b_last - 1])
        parts = [_slice(r, a, b, lb) for r, a, b, lb in segs]
        cat = np.concatenate
        return RecordChunk(
            name=self.names[file],
            line=cat([p[0] for p in parts]),
            kind=cat([p[1] for p in parts]),
            labels=join_labels([p[2] for p in parts]),
            problems=[v for p in parts for v in p[3]],
            x=_join([p[4] for p in parts if len(p[4])] or [parts[-1][4]]),
            fitted=cat([p[5] for p in parts]),
            bytes_done=done,
            next_piece=nxt,
            next_record=rec,
            line_base=nbase,
            lineage=None if parts[0][6] is None else RowCols.concat([p[6] for p in parts]),  # type: ignore[misc]
        )


def _join(xs: list[np.ndarray]) -> np.ndarray:
    return xs[0] if len(xs) == 1 else np.concatenate(xs)  # one part (the usual): no copy


def _slice(
    r: PieceResult, a: int, b: int, line_base: int
) -> tuple[np.ndarray, np.ndarray, Labels, list[str], np.ndarray, np.ndarray, RowCols | None]:
    k = r.kind
    lab = np.count_nonzero(k[:a] != UNUSABLE), np.count_nonzero(k[:b] != UNUSABLE)
    bad = (k == UNUSABLE) | (k == BAD_DATA)
    prob = np.count_nonzero(bad[:a]), np.count_nonzero(bad[:b])
    good = np.count_nonzero(k[:a] == GOOD), np.count_nonzero(k[:b] == GOOD)
    return (
        r.line[a:b].astype(np.int64) + line_base,
        k[a:b],
        r.labels[lab[0] : lab[1]],
        r.problems[prob[0] : prob[1]],
        r.x[good[0] : good[1]],
        r.fitted[good[0] : good[1]],
        None if r.lineage is None else r.lineage.slice(int(good[0]), int(good[1])),
    )
