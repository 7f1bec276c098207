"""What a predictions table says: its summary (histograms, accuracy, confusion), its rows as
CSV, and the rows that answer a question ("true i, predicted j", "misclassified", a
confidence range), most confident first. Read in chunks, so any size of table works.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write_text
from .table import PredictionTable

#: Rows of a predictions table read at a time (its commits' size): a million at a time made
#: a run's end and ``predict`` ~80-90 MB larger from ~2 M rows on (``--out`` CSV, the
#: confusion matrix, the summary), bounded but not flat.
READ_ROWS = 1 << 16
CONFIDENCE_BINS = 20


def confusion_from_table(table: PredictionTable) -> np.ndarray:
    """The ``C`` x ``C`` confusion matrix of the committed rows (rows: true, columns: predicted)."""
    c = int(table.attrs["num_classes"])
    cm = np.zeros((c, c), np.int64)
    if not table.has_labels:
        return cm
    for a in range(0, table.committed, READ_ROWS):
        y = table.read("label", a, a + READ_ROWS).astype(np.int64)
        p = table.read("pred", a, a + READ_ROWS).astype(np.int64)
        ok = (y >= 0) & (y < c)
        np.add.at(cm, (y[ok], p[ok]), 1)
    return cm


def summarize(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Rows, predicted-class counts, a confidence histogram and, with labels, accuracy and
    the confusion matrix."""
    table = PredictionTable(path)
    c = int(table.attrs["num_classes"])
    counts = np.zeros(c, np.int64)
    hist = np.zeros(CONFIDENCE_BINS, np.int64)
    for a in range(0, table.committed, READ_ROWS):
        counts += np.bincount(table.read("pred", a, a + READ_ROWS), minlength=c)[:c]
        prob = table.read("prob", a, a + READ_ROWS)
        hist += np.histogram(prob, bins=CONFIDENCE_BINS, range=(0.0, 1.0))[0]
    out: dict[str, Any] = {
        "rows": table.committed,
        "class_names": table.class_names,
        "pred_counts": counts.tolist(),
        "confidence_hist": hist.tolist(),
        "confidence_bins": np.linspace(0, 1, CONFIDENCE_BINS + 1).round(3).tolist(),
        "model_hash": table.attrs["model_hash"],
        "dataset_hash": table.attrs["dataset_hash"],
        "fields": table.fields,
    }
    if table.has_labels:
        cm = confusion_from_table(table)
        total = int(cm.sum())
        out["accuracy"] = round(float(np.trace(cm)) / total, 6) if total else 0.0
        out["confusion"] = cm.tolist()
    return out


def write_csv(path: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """The table as CSV: row, label, pred, pred_name, prob, the top-k class/prob pairs, the
    full vector (with ``probs``), then the fields (``group``, ``group_id``, ``_id``, ...; a
    field whose name another column has is headed ``field.NAME``)."""
    table = PredictionTable(path)
    names = table.class_names
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    k = table.top_k
    header = ["row", *(["label"] if table.has_labels else []), "pred", "pred_name", "prob"]
    header += [f"top{i + 1}_{what}" for i in range(k) for what in ("class", "prob")]
    if "probs" in table.columns:
        header += [f"prob_{n}" for n in names]
    header += [f"field.{n}" if n in header else n for n in table.fields]
    w.writerow(header)
    for a in range(0, table.committed, READ_ROWS):
        cols = table.read_all(a, a + READ_ROWS)
        fields = [_decoded(table.read_field(n, a, a + READ_ROWS)) for n in table.fields]
        for i in range(len(cols["row"])):
            line: list[Any] = [int(cols["row"][i])]
            if table.has_labels:
                line.append(int(cols["label"][i]))
            p = int(cols["pred"][i])
            line += [p, names[p] if 0 <= p < len(names) else p, f"{cols['prob'][i]:.6g}"]
            for j in range(k):
                line += [int(cols["topk_class"][i, j]), f"{cols['topk_prob'][i, j]:.6g}"]
            if "probs" in cols:
                line += [f"{v:.6g}" for v in cols["probs"][i]]
            line += [values[i] for values in fields]
            w.writerow(line)
    atomic_write_text(Path(out), buf.getvalue())


def _decoded(a: np.ndarray) -> list[Any]:
    if a.dtype.kind == "S":
        return [v.decode("utf-8", "replace") for v in a.tolist()]
    return [int(v) for v in a.tolist()]


@dataclass(frozen=True)
class PredictionFilter:
    """Which predictions to show: ``-1`` means any class; ``correct`` None means both."""

    true_class: int = -1
    pred_class: int = -1
    correct: bool | None = None
    min_prob: float = 0.0
    max_prob: float = 1.0
    #: Most confident first (the ones most worth a look when they are wrong).
    by_confidence: bool = True


def select_rows(
    path: str | os.PathLike[str], flt: PredictionFilter
) -> tuple[np.ndarray, np.ndarray]:
    """Dataset rows matching ``flt`` and their positions in the table, ordered as asked."""
    table = PredictionTable(path)
    rows, where, probs = [], [], []
    for a in range(0, table.committed, READ_ROWS):
        pred = table.read("pred", a, a + READ_ROWS)
        prob = table.read("prob", a, a + READ_ROWS)
        keep = (prob >= flt.min_prob) & (prob <= flt.max_prob)
        if flt.pred_class >= 0:
            keep &= pred == flt.pred_class
        if table.has_labels and (flt.true_class >= 0 or flt.correct is not None):
            label = table.read("label", a, a + READ_ROWS)
            if flt.true_class >= 0:
                keep &= label == flt.true_class
            if flt.correct is not None:
                keep &= (label == pred) == flt.correct
        elif flt.true_class >= 0 or flt.correct is not None:
            keep[:] = False  # no labels: nothing is known to be of a class or correct
        at = np.flatnonzero(keep)
        rows.append(table.read("row", a, a + READ_ROWS)[at])
        where.append(at + a)
        probs.append(prob[at])
    if not rows:
        z = np.zeros(0, np.int64)
        return z, z
    r, w, p = np.concatenate(rows), np.concatenate(where), np.concatenate(probs)
    if flt.by_confidence:
        order = np.argsort(-p, kind="stable")
        r, w = r[order], w[order]
    return r.astype(np.int64), w.astype(np.int64)


def cell_rows(path: str | os.PathLike[str], true_class: int, pred_class: int) -> np.ndarray:
    """The dataset rows of confusion cell (true, predicted), most confident first."""
    return select_rows(path, PredictionFilter(true_class=true_class, pred_class=pred_class))[0]


class PredictionLookup:
    """The predictions of given dataset rows, read only for those rows (any table size).

    A table of every row (``split`` all) is indexed by the row itself; any other table
    finds positions by binary search in its sorted ``row`` column, read on first use.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.table = PredictionTable(path)
        self._rows: np.ndarray | None = None
        self.identity_rows = self.table.attrs.get("split") == "all"

    def positions(self, rows: np.ndarray) -> np.ndarray:
        """Table positions of ``rows`` (``-1`` where the table has no prediction)."""
        rows = np.asarray(rows, dtype=np.int64)
        n = self.table.committed
        if self.identity_rows:
            return np.where((rows >= 0) & (rows < n), rows, -1)
        if self._rows is None:
            self._rows = self.table.read("row")
        at = np.searchsorted(self._rows, rows)
        ok = (at < n) & (self._rows[np.minimum(at, max(0, n - 1))] == rows) if n else at < 0
        return np.where(ok, at, -1)

    def lookup(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Columns (label when known, pred, prob, topk_class, topk_prob) of ``rows``;
        ``found`` marks the rows the table holds."""
        pos = self.positions(rows)
        found = pos >= 0
        out: dict[str, np.ndarray] = {"found": found}
        names = ["pred", "prob", "topk_class", "topk_prob"]
        if self.table.has_labels:
            names.append("label")
        if not found.any():
            return out
        p = pos[found]
        lo, hi = int(p.min()), int(p.max()) + 1
        for name in names:
            span = self.table.read(name, lo, hi)  # the visible rows lie close together
            full = np.zeros((len(rows), *span.shape[1:]), span.dtype)
            full[found] = span[p - lo]
            out[name] = full
        return out
