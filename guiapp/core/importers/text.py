"""Line-based sources: JSON lines (``mongoexport``) and CSV/TSV."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import zlib
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import Problem, UserError
from .formats import BY_NAME, is_compressed
from .sources import TEXT_ROWS_PER_CHUNK, Chunk, Source, display_name


def text_files(src: Path, fmt: str) -> list[Path]:
    """``src``, or the files of format ``fmt`` below the folder ``src`` in name order
    (the names ``formats.py`` gives the format, ``.gz`` too)."""
    if src.is_dir():
        record = BY_NAME[fmt]
        files = sorted(
            p
            for p in src.rglob("*")
            if p.is_file() and not p.name.startswith(".") and record.reads_name(p.name)
        )
        if not files:
            exts = record.folder_suffixes()
            raise UserError(
                f"{src}: no {fmt} files in this folder (looked for {', '.join(exts)} and .gz)"
            )
        return files
    if not src.exists():
        raise UserError(f"{src}: does not exist. Check the path")
    return [src]


@contextlib.contextmanager
def open_text_binary(path: Path) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """(lines stream, raw file) — the raw file's position measures progress."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror}). Check the path") from None
    try:
        if is_compressed(path):
            try:
                with gzip.GzipFile(fileobj=raw) as gz:
                    yield gz, raw  # type: ignore[misc]
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
                raise UserError(
                    f"{path}: is a damaged or truncated gzip file ({exc}). Download or "
                    "compress it again (check it with 'gzip -t')"
                ) from None
        else:
            yield raw, raw
    finally:
        raw.close()


def _field(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    if name in obj:
        return True, obj[name]
    if "." in name:  # a nested field of a MongoDB document: "meta.label"
        cur: Any = obj
        for part in name.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return False, None
            cur = cur[part]
        return True, cur
    return False, None


class TextSource(Source):
    """Common loop of the line-based formats: chunks of (label, data) with line numbers."""

    def __init__(self, src: Path, fmt: str) -> None:
        super().__init__()
        self.src = src
        self.format = fmt
        self.files = text_files(src, fmt)
        self.total_bytes = sum(p.stat().st_size for p in self.files)
        self.root = src if src.is_dir() else src.parent

    @abstractmethod
    def rows(self, lines: IO[bytes], name: str) -> Iterator[tuple[int, Any, Any, str]]:
        """(line number, label, data, problem) per row; problem "" when it is usable."""

    def chunks(self) -> Iterator[Chunk]:
        base = 0
        for path in self.files:
            name = display_name(path, self.root)
            with open_text_binary(path) as (lines, raw):
                keys: list[int] = []
                labels: list[Any] = []
                data: list[Any] = []
                bad: list[tuple[int, str, str]] = []
                for no, label, value, problem in self.rows(lines, name):
                    if problem:
                        bad.append((no, f"{name}:{no}", problem))
                    else:
                        keys.append(no)
                        labels.append(label)
                        data.append(value)
                    if len(keys) + len(bad) >= TEXT_ROWS_PER_CHUNK:
                        yield self._chunk(name, keys, labels, data, bad, base + raw.tell())
                        keys, labels, data, bad = [], [], [], []
                yield self._chunk(name, keys, labels, data, bad, base + raw.tell())
            base += path.stat().st_size

    @staticmethod
    def _chunk(
        name: str,
        keys: list[int],
        labels: list[Any],
        data: list[Any],
        bad: list[tuple[int, str, str]],
        done: int,
    ) -> Chunk:
        k = np.asarray(keys, dtype=np.int64)
        return Chunk(
            labels=labels,
            data=data,
            keys=k,
            locate=lambda i: f"{name}:{int(k[i])}",
            bytes_done=done,
            bad=bad,
        )


def _data_value(v: Any, field_name: str) -> tuple[Any, str]:
    if isinstance(v, str):
        return v, ""
    if isinstance(v, list):
        return v, ""
    if v is None:
        return None, f"field {field_name!r} is null"
    return None, f"field {field_name!r} is a {type(v).__name__}, not integers"


class JsonlSource(TextSource):
    """JSON lines as ``mongoexport`` writes them: one document per line."""

    def __init__(self, src: Path, label_field: str, data_field: str) -> None:
        super().__init__(src, "jsonl")
        self.label_field = label_field
        self.data_field = data_field

    def rows(self, lines: IO[bytes], name: str) -> Iterator[tuple[int, Any, Any, str]]:
        lf, df = self.label_field, self.data_field
        decode = json.JSONDecoder().decode
        first = True
        for no, line in enumerate(lines, 1):
            if not line or line.isspace():
                continue
            if first:
                first = False
                line = first_json_line(line, name, no)
            label, value, problem = json_record(line, lf, df, decode)
            yield no, label, value, problem


def first_json_line(line: bytes, name: str, no: int) -> bytes:
    """The first non-blank line of a file: without a byte order mark; a JSON array refused."""
    if line.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
        line = line[3:]
    if line.lstrip()[:1] == b"[":
        raise UserError(
            f"{name}:{no}: is a JSON array, not JSON lines. Export with "
            "'mongoexport' without --jsonArray (one document per line)"
        )
    return line


def json_record(line: bytes, lf: str, df: str, decode: Any) -> tuple[Any, Any, str]:
    """(label, data, problem) of one non-blank JSON line; problem "" when it is usable."""
    try:
        obj = decode(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, None, "is not valid UTF-8"
    except json.JSONDecodeError as exc:
        return None, None, f"invalid JSON ({exc.msg}, column {exc.colno})"
    except RecursionError:
        return None, None, "is nested too deeply (over 1,000 levels of [ or {)"
    if not isinstance(obj, dict):
        return None, None, "is not a JSON object"
    ok, label = _field(obj, lf)
    if not ok:
        return None, None, _no_field(lf, "--label-field")
    ok, value = _field(obj, df)
    if not ok:
        return None, None, _no_field(df, "--data-field")
    value, problem = _data_value(value, df)
    return label, value, problem


def _no_field(name: str, option: str) -> Problem:
    return Problem(f"has no {name!r} field (see {option})", option=option, value=name)


def _column(spec: str, header: list[str] | None, what: str, where: str) -> int:
    if spec.isdigit() and (header is None or spec not in header):
        return int(spec)
    option = f"--{what}-field"
    if header is None:
        problem = f"{option} {spec!r} needs a header row"
        raise UserError(f"{where}: {problem}", option=option, value=spec, problem=problem)
    names = [h.strip() for h in header]
    if spec not in names:
        problem = f"has no column {spec!r} (header: {', '.join(names)[:200]})"
        fix = f"Pass {option} NAME or a 0-based column number"
        raise UserError(
            f"{where}: {problem}. {fix}", option=option, value=spec, problem=problem, fix=fix
        )
    return names.index(spec)


class CsvSource(TextSource):
    """CSV/TSV lines: a label column and a data column of comma-separated integers."""

    def __init__(
        self, src: Path, fmt: str, label_field: str, data_field: str, delimiter: str | None
    ) -> None:
        super().__init__(src, fmt)
        self.label_field = label_field
        self.data_field = data_field
        self.delimiter = delimiter or ("\t" if fmt == "tsv" else ",")
        if self.delimiter in ("\\t", "tab"):
            self.delimiter = "\t"
        if len(self.delimiter) != 1:
            raise UserError(
                f"--delimiter {self.delimiter!r} must be one character",
                option="--delimiter",
                value=self.delimiter,
            )
        csv.field_size_limit(2**31 - 1)

    def rows(self, lines: IO[bytes], name: str) -> Iterator[tuple[int, Any, Any, str]]:
        text = io.TextIOWrapper(lines, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text, delimiter=self.delimiter)
        layout: CsvLayout | None = None
        try:
            for row in reader:
                no = reader.line_num
                if not row or all(not c.strip() for c in row):
                    continue
                if layout is None:
                    layout = self.layout_of(row, no, name)
                    if layout.header_line == no:
                        continue
                yield layout.record(no, row)
        finally:
            text.detach()

    def layout_of(self, first_row: list[str], no: int, name: str) -> CsvLayout:
        """Columns and header from a file's first non-blank row."""
        header: list[str] | None = first_row
        if self.label_field.isdigit() and self.data_field.isdigit():
            # a header only if the data cell holds no digits at all
            d = int(self.data_field)
            cell = first_row[d] if d < len(first_row) else ""
            header = None if any(ch.isdigit() for ch in cell) else first_row
        li = _column(self.label_field, header, "label", f"{name}:{no}")
        di = _column(self.data_field, header, "data", f"{name}:{no}")
        return CsvLayout(li, di, None if header is None else len(header), no if header else 0)

    def file_layout(self, path: Path) -> CsvLayout | None:
        """The layout of one file (None if it has no non-blank row)."""
        first = self.first_row(path)
        return None if first is None else self.layout_of(*first, display_name(path, self.root))

    def first_row(self, path: Path) -> tuple[list[str], int] | None:
        """A file's first non-blank row and its line number (None if it has none)."""
        with open_text_binary(path) as (lines, _raw):
            text = io.TextIOWrapper(lines, encoding="utf-8-sig", errors="replace", newline="")
            try:
                reader = csv.reader(text, delimiter=self.delimiter)
                for row in reader:
                    if row and not all(not c.strip() for c in row):
                        return row, reader.line_num
            finally:
                text.detach()
        return None


@dataclass
class CsvLayout:
    """Where a CSV file's label and data are: columns, header width, the header's line."""

    li: int
    di: int
    header_len: int | None
    header_line: int  # 0: no header

    def record(self, no: int, row: list[str]) -> tuple[int, Any, Any, str]:
        need = max(self.li, self.di) + 1
        if len(row) < need:
            return no, None, None, f"has {len(row)} column(s), needs {need}"
        if self.header_len is not None and len(row) != self.header_len:
            return (
                no,
                None,
                None,
                f"has {len(row)} columns, the header has {self.header_len} (is the data "
                'column quoted, like "1,2,3"?)',
            )
        return no, row[self.li], row[self.di], ""
