"""Text inputs cut into pieces, and one piece parsed into records (in any process).

A piece is a ``.gz`` file whole, or a byte range of a plain file cut at a line end
(``PIECE_BYTES`` each, the same cuts whatever the worker count). ``parse_piece`` turns a
piece into ``PieceResult``: one record per non-blank line, in line order, with its kind
(good, unusable line, bad data, bad label), its raw label, its problem, and the samples of
the good ones, already padded/truncated and in the storage dtype. It is a pure function of
the piece and the ``ParseSpec``, so workers can run it; the job turns records into chunks
exactly as the serial reader did (``job.py``). Line numbers are relative to the piece.

Over 350 lines on purpose: the three parse paths of a piece (the compiled scan, the numpy
fast path, the exact per-line path) hand blocks to each other and build the same records;
kept in one class they cannot drift apart (``scanned.py`` holds the scan's block plan).
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..jit import available as numba_available
from . import jitparse, lineage_piece, scanned
from .fastparse import fast_csv, fast_jsonl, fast_values
from .labels import IntLabels, LabelMap, Labels, join_labels, normalize
from .parse import Fit, Shaper, as_number_array, parse_text_rows
from .rowcols import RowCols
from .text import CsvLayout, first_json_line, json_record, open_text_binary

PIECE_BYTES = 16 * 2**20
#: The input's first piece is short: the job parses it alone (the first good row fixes the
#: sample shape) before the workers start, without the compiled scan (it needs the length),
#: so it is serial and slow work: 64 KiB is ~100 of the benchmark's lines (1 MiB was 0.1 s).
FIRST_PIECE_BYTES = 2**16
BLOCK_LINES = 4096
GOOD, UNUSABLE, BAD_DATA, BAD_LABEL = 0, 1, 2, 3


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
        if path.name.lower().endswith(".gz"):
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


@dataclass
class ParseSpec:
    """What a piece parser needs, JSON-able (sent to worker processes)."""

    format: str
    files: list[str]
    names: list[str]  # as messages show them
    label_field: str
    data_field: str
    delimiter: str
    dtype: str
    length: int | None
    pad: str
    truncate: str
    pad_value: float
    sample_shape: list[int] | None
    class_names: list[str] | None
    csv_layouts: dict[str, list[int | None]] = field(default_factory=dict)  # file -> layout
    #: ``--group-field`` (first, when ``group``) and ``--keep-fields`` (lineage_piece.py);
    #: for CSV/TSV their columns per file.
    fields: list[str] = field(default_factory=list)
    group: bool = False
    field_cols: dict[str, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ParseSpec:
        return cls(**d)

    def fit(self) -> Fit:
        fit = Fit(
            dtype=np.dtype(self.dtype),
            length=self.length,
            pad=self.pad,
            truncate=self.truncate,
            pad_value=self.pad_value,
        )
        if self.sample_shape is not None and self.length is None:
            fit.sample_shape = tuple(self.sample_shape)
        return fit


@dataclass
class PieceResult:
    piece: int
    lines: int  # physical lines in the piece (the next piece of the file starts after them)
    line: np.ndarray  # int32 per record: 1-based line number within the piece
    end: np.ndarray  # int64 per record: byte position after it (progress, estimates)
    kind: np.ndarray  # int8 per record
    labels: Labels  # per record of kind GOOD, BAD_DATA, BAD_LABEL
    problems: list[str]  # per record of kind UNUSABLE, BAD_DATA
    x: np.ndarray  # samples of the GOOD records
    fitted: np.ndarray  # int8 per GOOD record: -1 padded, 1 truncated, 0 as is; 2 empty
    sample_shape: list[int] | None = None
    fatal: str = ""  # a UserError that stops the import at the end of these records
    #: the GOOD records' group and kept fields (``ParseSpec.fields``)
    lineage: RowCols | None = None

    # -- transport: one JSON header and the raw arrays (no pickle) ------------------
    def to_bytes(self) -> bytes:
        labels = self.labels
        codes = labels.codes if isinstance(labels, IntLabels) else np.empty(0, np.int64)
        lin = self.lineage
        arrays = [self.line, self.end, self.kind, self.x, self.fitted, codes]
        arrays += [] if lin is None else lin.arrays()
        head = {
            "piece": self.piece,
            "lines": self.lines,
            "labels": labels.text if isinstance(labels, IntLabels) else labels,
            "problems": self.problems,
            "sample_shape": self.sample_shape,
            "fatal": self.fatal,
            "lineage": None if lin is None else {"group": lin.ids is not None},
            "arrays": [[a.dtype.str, list(a.shape)] for a in arrays],
        }
        h = json.dumps(head).encode()
        return b"".join(
            [len(h).to_bytes(8, "little"), h, *(np.ascontiguousarray(a).tobytes() for a in arrays)]
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> PieceResult:
        n = int.from_bytes(data[:8], "little")
        head = json.loads(data[8 : 8 + n])
        at = 8 + n
        arrays = []
        for dt, shape in head["arrays"]:
            d = np.dtype(dt)
            count = int(np.prod(shape, dtype=np.int64))
            arrays.append(np.frombuffer(data, d, count, at).reshape(shape))
            at += count * d.itemsize
        line, end, kind, x, fitted, codes = arrays[:6]
        lin = head["lineage"]
        labels = head["labels"]
        if isinstance(labels, bool):  # an IntLabels: its text flag, the codes as an array
            labels = IntLabels(codes, labels)
        return cls(
            head["piece"], head["lines"], line, end, kind, labels, head["problems"],
            x, fitted, head["sample_shape"], head["fatal"],
            None if lin is None else RowCols.from_arrays(arrays[6:], lin["group"]),
        )  # fmt: skip


def _read_lines(path: Path, piece: Piece) -> tuple[list[bytes], np.ndarray]:
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
        lines, ends = _read_lines(path, piece)
        if piece.start == 0 and lines:
            at = 0
            if spec.format == "jsonl":
                at = next((i for i, ln in enumerate(lines) if ln and not ln.isspace()), -1)
                self._first = at
            if at >= 0 and lines[at].startswith(b"\xef\xbb\xbf"):  # a byte order mark
                lines[at] = lines[at][3:]
        out = _Records()
        fatal = ""
        try:
            for b in range(0, len(lines), BLOCK_LINES):
                self._block(lines[b : b + BLOCK_LINES], b, ends, piece, out)
        except UserError as exc:
            fatal = str(exc)
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
        out = _Records()
        fatal = ""
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
            fatal = str(exc)
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
        self, lines: list[bytes], base: int, ends: np.ndarray, piece: Piece, out: _Records
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
        out: _Records,
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


class _Records:
    def __init__(self) -> None:
        self.parts: list[
            tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]
        ] = []
        self.labels: list[Labels] = []
        self.problems: list[str] = []

    def add_block(
        self, line: np.ndarray, end: np.ndarray, kind: np.ndarray, labels: Labels,
        problems: list[str], x: np.ndarray, fitted: np.ndarray | None,
    ) -> None:  # fmt: skip
        self.parts.append((line, end, kind, x, fitted))
        if len(labels):
            self.labels.append(labels)
        self.problems += problems

    def result(
        self, piece: int, lines: int, dtype: np.dtype, shape: Any, fatal: str
    ) -> PieceResult:
        s = tuple(shape) if shape is not None else (0,)
        xs = [p[3].astype(dtype, copy=False) for p in self.parts if len(p[3])]
        x = (xs[0] if len(xs) == 1 else np.concatenate(xs)) if xs else np.empty((0, *s), dtype)
        fit = [p[4] if p[4] is not None else np.zeros(len(p[3]), np.int8) for p in self.parts]
        cat = np.concatenate
        return PieceResult(
            piece=piece,
            lines=lines,
            line=cat([p[0] for p in self.parts]).astype(np.int32)
            if self.parts
            else np.empty(0, np.int32),
            end=cat([p[1] for p in self.parts]) if self.parts else np.empty(0, np.int64),
            kind=cat([p[2] for p in self.parts]) if self.parts else np.empty(0, np.int8),
            labels=join_labels(self.labels),
            problems=self.problems,
            x=x,
            fitted=cat(fit).astype(np.int8) if fit else np.empty(0, np.int8),
            sample_shape=None if shape is None else list(shape),
            fatal=fatal,
        )
