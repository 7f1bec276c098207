"""What parsing a piece gives: the ``ParseSpec`` it is parsed with, the ``PieceResult`` it
gives (one record per non-blank line, in line order: its kind, raw label, problem, and the
good ones' samples), and ``Records``, which builds a result block by block.

Both cross to and from worker processes: the spec as JSON, the result as one JSON header
and the raw arrays (no pickle).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import Problem, UserError
from .labels import IntLabels, Labels, join_labels
from .parse import Fit
from .rowcols import RowCols

GOOD, UNUSABLE, BAD_DATA, BAD_LABEL = 0, 1, 2, 3


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
    #: that error's fields (``UserError.fields()``: its option, value, problem, fix)
    fatal_fields: dict[str, Any] | None = None
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
            "problem_fields": {  # a Problem's option (lost as JSON text, restored below)
                i: [p.option, p.value, p.fix]
                for i, p in enumerate(self.problems)
                if isinstance(p, Problem) and p.option
            },
            "sample_shape": self.sample_shape,
            "fatal": self.fatal,
            "fatal_fields": self.fatal_fields,
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
        problems = head["problems"]
        for i, (option, value, fix) in head["problem_fields"].items():
            problems[int(i)] = Problem(problems[int(i)], option=option, value=value, fix=fix)
        if isinstance(labels, bool):  # an IntLabels: its text flag, the codes as an array
            labels = IntLabels(codes, labels)
        return cls(
            head["piece"], head["lines"], line, end, kind, labels, problems,
            x, fitted, head["sample_shape"], head["fatal"], head["fatal_fields"],
            None if lin is None else RowCols.from_arrays(arrays[6:], lin["group"]),
        )  # fmt: skip

    def fatal_error(self) -> UserError:
        """The error that stops the import here, with the fields it was raised with."""
        fields = self.fatal_fields or {"message": self.fatal}
        return UserError(**fields)


class Records:
    """A piece's records, gathered block by block into one ``PieceResult``."""

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
        self, piece: int, lines: int, dtype: np.dtype, shape: Any, fatal: UserError | None
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
            fatal="" if fatal is None else str(fatal),
            fatal_fields=None if fatal is None else fatal.fields(),
        )
