"""One text piece parsed into records (in any process): ``PieceParser``.

``parse`` turns a piece (``piece_plan.py``) into a ``PieceResult`` (``piece_result.py``):
one record per non-blank line, in line order, with its kind (good, unusable line, bad data,
bad label), its raw label, its problem, and the samples of the good ones, already
padded/truncated and in the storage dtype. It is a pure function of the piece and the
``ParseSpec``, so workers can run it; the job turns records into chunks exactly as the
serial reader did (``records.py``). Line numbers are relative to the piece. The three parse
paths (the compiled scan, the numpy fast path, the exact per-line path) hand blocks to each
other and build the same records (``scanned.py`` holds the scan's block plan).
"""

from __future__ import annotations

import csv
import json
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..jit import available as numba_available
from . import jitparse, lineage_piece, scanned
from .fastparse import fast_csv, fast_jsonl, fast_values
from .labels import IntLabels, LabelMap, normalize
from .parse import Shaper, as_number_array, parse_text_rows
from .piece_plan import FIRST_PIECE_BYTES, PIECE_BYTES, Piece, plan_pieces, read_lines
from .piece_result import (
    BAD_DATA,
    BAD_LABEL,
    GOOD,
    UNUSABLE,
    ParseSpec,
    PieceResult,
    Records,
)
from .text import CsvLayout, first_json_line, json_record

BLOCK_LINES = 4096


class PieceParser:
    """Parses pieces for one ``ParseSpec`` (one per process; keeps the fitted shape)."""

    def __init__(self, spec: ParseSpec, *, fast: bool = True, jit: bool | None = None) -> None:
        self.spec = spec
        self.use_fast = fast  # False: every line by the exact path (tests compare the two)
        #: the compiled scan first (``jitparse.py``); False: the numpy fast path only
        self.use_jit = fast and (numba_available() if jit is None else jit)
        self._header = 0  # the CSV header's line in the piece being parsed (0: none)
        self.fit = spec.fit()
        self.shaper = Shaper(self.fit)
        self.dtype = np.dtype(spec.dtype)
        self.labels = LabelMap(spec.class_names)
        self._label_ok: dict[Any, bool] = {}
        self._seen: dict[bytes, Any] = {}
        self._decode = json.JSONDecoder().decode
        self._first = -1  # index in the piece of the file's first non-blank line
        self._file_name = ""
        self._pool: np.ndarray | None = None  # the scan's copies of the lineage fields

    def label_ok(self, v: Any) -> bool:
        """Whether the job's label map will take ``v`` (the same rules, no side effects)."""
        if type(v) is int or type(v) is str:
            key: Any = v
        elif isinstance(v, dict) and len(v) == 1:
            item = next(iter(v.items()))
            key = item if type(item[1]) is str else None
        else:
            key = None
        if key is not None and key in self._label_ok:
            return self._label_ok[key]
        try:
            self.labels._provisional(normalize(v))
            ok = True
        except ValueError:
            ok = False
        except UserError:  # too many labels: the job says so at the right row
            ok = True
        if key is not None:
            self._label_ok[key] = ok
        return ok

    def _labels_ok(self, labels: list[Any]) -> list[bool]:
        """``label_ok`` of each label; a block of plain ints (or strings) by its distinct values."""
        kind = type(labels[0]) if labels else None
        if (kind is int or kind is str) and all(type(v) is kind for v in labels):
            ok_of = {v: self.label_ok(v) for v in set(labels)}
            if all(ok_of.values()):
                return [True] * len(labels)
            return [ok_of[v] for v in labels]
        return [self.label_ok(v) for v in labels]

    def target_length(self) -> int | None:
        if self.fit.length is not None:
            return self.fit.length
        s = self.fit.sample_shape
        return s[0] if s is not None and len(s) == 1 else None

    def _layout(self, piece: Piece) -> CsvLayout | None:
        raw = self.spec.csv_layouts.get(str(piece.file))
        return None if raw is None else CsvLayout(*raw)  # type: ignore[arg-type]

    def _scan_format(self, piece: Piece) -> int | None:
        """``jitparse.JSONL`` or ``CSV`` when the compiled scan may parse this piece."""
        spec = self.spec
        if not self.use_jit or piece.end < 0 or self.target_length() is None:
            return None
        fmt = jitparse.JSONL if spec.format == "jsonl" else jitparse.CSV
        if fmt == jitparse.CSV:
            lay = self._layout(piece)
            if lay is None or (lay.li, lay.di) != (0, 1) or lay.header_len not in (None, 2):
                return None
        ok = jitparse.takes(self.dtype, fmt, spec.label_field, spec.data_field, spec.delimiter)
        return fmt if ok else None

    def scans(self, piece: Piece) -> bool:
        """Whether the compiled scan parses this piece (it runs without the GIL)."""
        return self._scan_format(piece) is not None

    def parse(self, piece: Piece) -> PieceResult:
        spec = self.spec
        self._file_name = spec.names[piece.file]
        self._first = -1
        lay = self._layout(piece) if spec.format != "jsonl" else None
        # line numbers are the piece's: only the file's first piece holds its header
        self._header = lay.header_line if lay is not None and piece.start == 0 else 0
        fmt = self._scan_format(piece)
        if fmt is not None:
            return self._parse_scanned(piece, fmt)
        path = Path(spec.files[piece.file])
        lines, ends = read_lines(path, piece)
        if piece.start == 0 and lines:
            at = 0
            if spec.format == "jsonl":
                at = next((i for i, ln in enumerate(lines) if ln and not ln.isspace()), -1)
                self._first = at
            if at >= 0 and lines[at].startswith(b"\xef\xbb\xbf"):  # a byte order mark
                lines[at] = lines[at][3:]
        out = Records()
        fatal: UserError | None = None
        try:
            for b in range(0, len(lines), BLOCK_LINES):
                self._block(lines[b : b + BLOCK_LINES], b, ends, piece, out)
        except UserError as exc:
            fatal = exc
        shape = self.fit.sample_shape
        res = out.result(piece.index, len(lines), self.dtype, shape, fatal)
        if spec.fields:  # the lines again, as one buffer (their byte order marks removed)
            stops = np.cumsum(np.fromiter(map(len, lines), np.int64, len(lines)) + 1) - 1
            res = lineage_piece.attach(res, spec, piece.file, b"\n".join(lines), stops, -1)
        return res

    def _parse_scanned(self, piece: Piece, fmt: int) -> PieceResult:
        """``parse`` by the compiled scan; the blocks it cannot take as the other paths do."""
        spec = self.spec
        with open(spec.files[piece.file], "rb") as fh:
            fh.seek(piece.start)
            buf = fh.read(piece.end - piece.start)
        length = self.target_length()
        assert length is not None
        scanned_fields = fmt == jitparse.JSONL and lineage_piece.scan_takes(spec)
        sc = jitparse.scan(
            buf, fmt, length, self.dtype, spec.label_field, spec.data_field, spec.delimiter,
            spec.fields if scanned_fields else None, self._pool,
        )  # fmt: skip
        self._pool = sc.fields[3] if sc.fields is not None and scanned_fields else None
        ends = piece.start + np.minimum(sc.stops + 1, len(buf))
        special: list[int] = []  # lines the numpy and exact paths must see
        if piece.start == 0 and len(sc.stops):
            at = 0
            if fmt == jitparse.JSONL:
                at = -1
                for i in range(len(sc.stops)):  # the file's first non-blank line
                    ln = scanned.lines_of(buf, sc.stops, i, i + 1)[0]
                    if ln and not ln.isspace():
                        at = i
                        break
                self._first = at
            special = [at, self._header - 1]
        text = fmt == jitparse.CSV
        ok_before = np.concatenate([[0], np.cumsum(sc.status == jitparse.OK)])
        out = Records()
        fatal: UserError | None = None
        try:
            for a, b, taken in scanned.runs(sc, BLOCK_LINES, special, self.label_ok, text):
                if taken:
                    ok = np.flatnonzero(sc.status[a:b] == jitparse.OK) + a
                    m0, m1 = int(ok_before[a]), int(ok_before[b])
                    out.add_block(
                        ok + 1, ends[ok], np.full(len(ok), GOOD, np.int8),
                        IntLabels(sc.labels[m0:m1], text), [], sc.x[m0:m1], None,
                    )  # fmt: skip
                    continue
                for c in range(a, b, BLOCK_LINES):
                    lines = scanned.lines_of(buf, sc.stops, c, min(b, c + BLOCK_LINES))
                    if c <= max(self._first, 0) < c + len(lines) and piece.start == 0:
                        k = max(self._first, 0) - c
                        if lines[k].startswith(b"\xef\xbb\xbf"):  # a byte order mark
                            lines[k] = lines[k][3:]
                    self._block(lines, c, ends, piece, out)
        except UserError as exc:
            fatal = exc
        shape = self.fit.sample_shape
        res = out.result(piece.index, len(sc.stops), self.dtype, shape, fatal)
        if not spec.fields:
            return res
        bom = (max(self._first, 0) if fmt == jitparse.JSONL else 0) if piece.start == 0 else -1
        known = sc if scanned_fields else None
        return lineage_piece.attach(res, spec, piece.file, buf, sc.stops, bom, known)

    def _fast(
        self, stripped: list[bytes], base: int, layout: CsvLayout | None
    ) -> tuple[list[int], list[Any], np.ndarray]:
        """Indices in the block, raw labels and values of the lines the fast path takes."""
        spec = self.spec
        length = self.target_length()
        none: tuple[list[int], list[Any], np.ndarray] = ([], [], np.empty((0, 0), np.int64))
        if length is None or not self.use_fast:
            return none
        if spec.format == "jsonl":
            idx, labs, datas = fast_jsonl(stripped, spec.label_field, spec.data_field, self._seen)
        elif (
            layout is not None
            and (layout.li, layout.di) == (0, 1)
            and layout.header_len in (None, 2)
        ):
            idx, labs, datas = fast_csv(stripped, spec.delimiter)
            if self._header and 0 <= self._header - 1 - base < len(stripped):
                h = self._header - 1 - base
                keep = [k for k, i in enumerate(idx) if i != h]
                idx, labs, datas = (
                    [idx[k] for k in keep],
                    [labs[k] for k in keep],
                    [datas[k] for k in keep],
                )
        else:
            return none
        if self._first >= 0 and base <= self._first < base + len(stripped):
            keep = [k for k, i in enumerate(idx) if base + i != self._first]
            idx, labs, datas = (
                [idx[k] for k in keep],
                [labs[k] for k in keep],
                [datas[k] for k in keep],
            )
        if not idx:
            return none
        vals, ok = fast_values(datas, length, self.dtype)
        if not ok.all():
            okl = ok.tolist()
            idx = [i for i, g in zip(idx, okl, strict=True) if g]
            labs = [v for v, g in zip(labs, okl, strict=True) if g]
        return idx, labs, vals

    def _block(
        self, lines: list[bytes], base: int, ends: np.ndarray, piece: Piece, out: Records
    ) -> None:
        layout = None
        if self.spec.format != "jsonl":
            raw = self.spec.csv_layouts.get(str(piece.file))
            layout = None if raw is None else CsvLayout(*raw)  # type: ignore[arg-type]
        stripped = lines
        if any(map(bytes.endswith, lines, repeat(b"\r"))):
            stripped = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
        fast_i, fast_lab, fast_x = self._fast(stripped, base, layout)
        oks = self._labels_ok(fast_lab)
        if len(fast_i) == len(lines) and all(oks):  # the usual block: every line fast
            at = np.arange(base, base + len(lines))
            out.add_block(
                at + 1, ends[at], np.full(len(at), GOOD, np.int8), fast_lab, [], fast_x, None
            )
            return
        fast_at = {i: n for n, i in enumerate(fast_i)}
        recs: list[tuple[int, int, Any, Any, str]] = []  # (i, kind, label, data, problem)
        for i, line in enumerate(lines):
            n = fast_at.get(i)
            if n is not None:
                recs.append((i, GOOD if oks[n] else BAD_LABEL, fast_lab[n], n, ""))
                continue
            rec = self._exact(line, base + i, layout)
            if rec is not None:
                recs.append((i, *rec))
        self._finish_block(recs, fast_x, base, ends, out)

    def _exact(
        self, line: bytes, at: int, layout: CsvLayout | None
    ) -> tuple[int, Any, Any, str] | None:
        """(kind, label, data, problem) of one line by the exact rules; None if blank."""
        spec = self.spec
        no = at + 1
        if spec.format == "jsonl":
            if not line or line.isspace():
                return None
            if at == self._first:
                line = first_json_line(line, self._file_name, no)
            label, value, problem = json_record(
                line, spec.label_field, spec.data_field, self._decode
            )
        else:
            text = line.decode("utf-8", "replace")
            try:
                row = next(csv.reader([text], delimiter=spec.delimiter), [])
            except csv.Error as exc:
                return UNUSABLE, None, None, f"is not valid CSV ({exc})"
            if not row or all(not c.strip() for c in row):
                return None
            if layout is None or no == self._header:
                return None
            _, label, value, problem = layout.record(no, row)
        if problem:
            return UNUSABLE, None, None, problem
        if not self.label_ok(label):
            return BAD_LABEL, label, None, ""
        return GOOD, label, value, ""

    def _finish_block(
        self,
        recs: list[tuple[int, int, Any, Any, str]],
        fast_x: np.ndarray,
        base: int,
        ends: np.ndarray,
        out: Records,
    ) -> None:
        """Shape the exact-path rows (the serial reader's rules) and append the records."""
        slow = [k for k, r in enumerate(recs) if r[1] == GOOD and not isinstance(r[3], int)]
        rows: list[np.ndarray | str | None] = [None] * len(slow)
        texts = [j for j, k in enumerate(slow) if isinstance(recs[k][3], str)]
        if texts:
            parsed = parse_text_rows([recs[slow[j]][3] for j in texts], self.dtype)
            for j, a in zip(texts, parsed, strict=True):
                rows[j] = a
        for j, k in enumerate(slow):
            if not isinstance(recs[k][3], str):
                rows[j] = as_number_array(recs[k][3])
        shaped = self.shaper.shape_rows(rows)
        problem_of = dict(shaped.errors)
        good_at = {int(r): n for n, r in enumerate(shaped.rows.tolist())}
        length = self.fit.length
        line_no, end, kind, labels, problems, xs, fitted = [], [], [], [], [], [], []
        slow_j = {k: j for j, k in enumerate(slow)}
        for k, (i, kd, label, data, problem) in enumerate(recs):
            line_no.append(base + i + 1)
            end.append(int(ends[base + i]))
            if kd == UNUSABLE:
                kind.append(kd)
                problems.append(problem)
                continue
            labels.append(label)
            if kd == BAD_LABEL:
                kind.append(kd)
            elif isinstance(data, int):  # the fast path's values
                kind.append(GOOD)
                xs.append(fast_x[data].astype(self.dtype))
                fitted.append(0)
            elif slow_j[k] in good_at:
                j = slow_j[k]
                kind.append(GOOD)
                xs.append(shaped.x[good_at[j]])
                r = rows[j]
                size = r.shape[0] if isinstance(r, np.ndarray) and r.ndim == 1 else -1
                f = 0
                if length is not None and size >= 0:
                    f = 2 if size == 0 else (-1 if size < length else int(size > length))
                fitted.append(f)
            else:
                kind.append(BAD_DATA)
                problems.append(problem_of[slow_j[k]])
        shape = self.fit.sample_shape or (0,)
        x = np.stack(xs) if xs else np.empty((0, *shape), self.dtype)
        out.add_block(
            np.asarray(line_no, np.int64), np.asarray(end, np.int64), np.asarray(kind, np.int8),
            labels, problems, x, np.asarray(fitted, np.int8),
        )  # fmt: skip


__all__ = [
    "BAD_DATA",
    "BAD_LABEL",
    "BLOCK_LINES",
    "FIRST_PIECE_BYTES",
    "GOOD",
    "PIECE_BYTES",
    "UNUSABLE",
    "ParseSpec",
    "Piece",
    "PieceParser",
    "PieceResult",
    "plan_pieces",
]
