"""Lineage in predictions: the per-row fields a predictions table carries for a dataset, and
per-group results computed from a table (or from several, e.g. every fold of a k-fold
experiment).

``DatasetFields`` gives a table its fields (``table.py``, ``fields/NAME``): ``group`` (the
group's name, or ``#<id>`` where the dataset has no name for it), ``group_id`` (the int64
id of the dataset's ``group`` column) and every kept field (``_id``, ``accession``, ...),
read for each commit's rows, so a prediction joins back to its source document.

``aggregate`` reads tables in chunks and keeps, per group (the distinct values of one
field), its rows, the sum of its rows' probability vectors, its votes (predicted class
counts) and its true-class counts: memory grows with groups x classes, never with rows.
From these, per group: the class by mean probability, the class by majority vote, the share
of rows agreeing with the vote, the chosen (mean-probability) class's mean probability,
``unclassified`` when that is below a threshold, and the true class (the majority label).
Ties go to the lower class index. The mean probabilities are exact when the tables hold the
full vectors (``--probs``) or their top-k covers every class; otherwise a row adds its top-k
probabilities only (``exact`` says which).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..atomic import atomic_write_text
from ..store.columns import GROUP, dtype_text, group_names, name_groups, read_rows
from .table import PredictionTable

#: ``#`` and the 19 digits of a 63-bit id.
ID_NAME_BYTES = 20
#: Probability values read per chunk while aggregating (rows x classes).
CHUNK_VALUES = 1 << 22
#: The table field of the group's id (``group`` holds its name).
GROUP_ID = "group_id"


class DatasetFields:
    """The fields a predictions table of ``ds`` carries, and their values at given rows."""

    def __init__(self, ds: Any) -> None:
        self.ds = ds
        self.kept = [name for name in ds.columns if name != GROUP]
        self.has_groups = bool(ds.has_groups)
        self.with_id = self.has_groups and GROUP_ID not in self.kept
        self.table = group_names(ds) if self.has_groups else None
        width = ID_NAME_BYTES
        if self.table is not None and self.table[1]:
            width = max(width, max(len(n.encode("utf-8")) for n in self.table[1]))
        self.name_dtype = np.dtype(f"S{width}")

    def spec(self) -> tuple[tuple[str, str], ...]:
        """``(name, dtype)`` of each field, for ``TableSpec.fields``."""
        out: list[tuple[str, str]] = []
        if self.has_groups:
            out.append((GROUP, dtype_text(self.name_dtype)))
        if self.with_id:
            out.append((GROUP_ID, "int64"))
        out += [(name, dtype_text(self.ds.columns[name])) for name in self.kept]
        return tuple(out)

    def names(self) -> list[str]:
        return [name for name, _ in self.spec()]

    def values(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if self.has_groups:
            ids = read_rows(self.ds, GROUP, rows)
            u, inv = np.unique(ids, return_inverse=True)
            names = [n.encode("utf-8") for n in name_groups(u, self.table)]
            out[GROUP] = np.asarray(names, dtype=self.name_dtype)[inv.reshape(-1)]
            if self.with_id:
                out[GROUP_ID] = ids
        for name in self.kept:
            out[name] = read_rows(self.ds, name, rows)
        return out


class Choice(NamedTuple):
    """Per group: the class with the largest of its sums, and that sum's share of the
    group's rows (the mean probability of its class, or its class's share of the votes)."""

    classes: np.ndarray
    share: np.ndarray


def _choice(sums: np.ndarray, rows: np.ndarray) -> Choice:
    classes = np.asarray(np.argmax(sums, axis=1))
    top = sums[np.arange(len(sums)), classes]
    return Choice(classes, np.asarray(top / np.maximum(rows, 1)))


@dataclass
class GroupTable:
    """Per group (in order of first appearance): the sums ``aggregate`` keeps."""

    field: str
    keys: np.ndarray
    rows: np.ndarray
    prob_sum: np.ndarray
    votes: np.ndarray
    labels: np.ndarray | None
    class_names: list[str]
    exact: bool

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def mean(self) -> Choice:
        """Each group's class by mean probability, and that mean probability."""
        return _choice(self.prob_sum, self.rows)

    @property
    def vote(self) -> Choice:
        """Each group's class by vote, and its share of the group's rows."""
        return _choice(self.votes, self.rows)

    @property
    def true_class(self) -> np.ndarray | None:
        """The majority label of each group (-1 where none of its rows has one)."""
        if self.labels is None:
            return None
        known = self.labels.sum(axis=1) > 0
        return np.where(known, np.argmax(self.labels, axis=1), -1)

    def unclassified(self, min_confidence: float) -> np.ndarray:
        return np.asarray(self.mean.share < min_confidence)

    def key_text(self) -> list[Any]:
        if self.keys.dtype.kind == "S":
            return [v.decode("utf-8", "replace") for v in self.keys.tolist()]
        return [int(v) for v in self.keys.tolist()]

    def confusion(self) -> np.ndarray:
        """Groups by true class (rows) and mean-probability class (columns)."""
        c = len(self.class_names)
        cm = np.zeros((c, c), np.int64)
        true = self.true_class
        if true is None:
            return cm
        ok = true >= 0
        np.add.at(cm, (true[ok], self.mean.classes[ok]), 1)
        return cm

    def summary(self, min_confidence: float = 0.0) -> dict[str, Any]:
        out: dict[str, Any] = {
            "field": self.field,
            "groups": len(self),
            "rows": int(self.rows.sum()),
            "min_confidence": min_confidence,
            "unclassified": int(self.unclassified(min_confidence).sum()),
            "exact": self.exact,
        }
        true = self.true_class
        if true is not None:
            ok = true >= 0
            hits = int(np.sum(self.mean.classes[ok] == true[ok]))
            out["accuracy"] = round(hits / int(ok.sum()), 6) if ok.any() else 0.0
        return out

    def write_csv(self, path: str | os.PathLike[str], min_confidence: float = 0.0) -> None:
        """One line per group: the field's value, rows, mean-probability class and its mean
        probability, vote class and share, unclassified (0/1), true class (with labels)."""
        names = self.class_names
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        header = [self.field, "rows", "mean_class", "mean_class_name", "mean_prob"]
        header += ["vote_class", "vote_class_name", "vote_share", "unclassified"]
        true = self.true_class
        if true is not None:
            header += ["true_class", "true_class_name"]
        w.writerow(header)
        (mc, mp), (vc, vs) = self.mean, self.vote
        off = self.unclassified(min_confidence)
        for i, key in enumerate(self.key_text()):
            line: list[Any] = [key, int(self.rows[i]), int(mc[i]), names[mc[i]], f"{mp[i]:.6g}"]
            line += [int(vc[i]), names[vc[i]], f"{vs[i]:.6g}", int(off[i])]
            if true is not None:
                line += [int(true[i]), names[true[i]] if true[i] >= 0 else ""]
            w.writerow(line)
        atomic_write_text(Path(path), buf.getvalue())


class _Sums:
    """Per-group sums merged chunk by chunk, keys kept sorted."""

    def __init__(self, classes: int, with_labels: bool) -> None:
        self.c = classes
        self.with_labels = with_labels
        self.keys: np.ndarray | None = None
        self.first: np.ndarray = np.zeros(0, np.int64)
        self.rows: np.ndarray = np.zeros(0, np.int64)
        self.prob: np.ndarray = np.zeros((0, classes))
        self.votes: np.ndarray = np.zeros((0, classes), np.int64)
        self.labels: np.ndarray = np.zeros((0, classes), np.int64)

    def add(
        self,
        keys: np.ndarray,
        at: int,
        pred: np.ndarray,
        prob_classes: np.ndarray,
        prob_values: np.ndarray,
        label: np.ndarray | None,
    ) -> None:
        """A chunk: ``prob_classes``/``prob_values`` (n, m) the classes and probabilities
        each row adds to its group's sums (its top k, or every class)."""
        c = self.c
        u, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        inv = inv.reshape(-1).astype(np.int64)
        g = len(u)
        rows = np.bincount(inv, minlength=g)
        votes = np.bincount(inv * c + pred, minlength=g * c).reshape(g, c)
        flat = (inv[:, None] * c + prob_classes).reshape(-1)
        w = prob_values.reshape(-1).astype(np.float64)
        prob = np.bincount(flat, weights=w, minlength=g * c).reshape(g, c)
        labels = np.zeros((g, c), np.int64)
        if label is not None:
            ok = (label >= 0) & (label < c)
            labels = np.bincount(inv[ok] * c + label[ok], minlength=g * c).reshape(g, c)
        if self.keys is None:
            self.keys, self.first = u, first.astype(np.int64) + at
            self.rows, self.prob, self.votes, self.labels = rows, prob, votes, labels
            return
        merged = np.union1d(self.keys, u)
        if len(merged) > len(self.keys):  # new groups: widen every array
            old = np.searchsorted(merged, self.keys)
            grown = len(merged)
            self.first = _placed(self.first, old, grown, fill=np.iinfo(np.int64).max)
            self.rows = _placed(self.rows, old, grown)
            self.prob = _placed(self.prob, old, grown)
            self.votes = _placed(self.votes, old, grown)
            self.labels = _placed(self.labels, old, grown)
            self.keys = merged
        i = np.searchsorted(self.keys, u)
        self.first[i] = np.minimum(self.first[i], first + at)
        self.rows[i] += rows
        self.prob[i] += prob
        self.votes[i] += votes
        self.labels[i] += labels

    def result(self, field: str, class_names: list[str], exact: bool) -> GroupTable:
        keys = self.keys if self.keys is not None else np.zeros(0, np.int64)
        order = np.argsort(self.first, kind="stable")
        return GroupTable(
            field=field,
            keys=keys[order],
            rows=self.rows[order],
            prob_sum=self.prob[order],
            votes=self.votes[order],
            labels=self.labels[order] if self.with_labels else None,
            class_names=class_names,
            exact=exact,
        )


def _placed(a: np.ndarray, at: np.ndarray, n: int, fill: int = 0) -> np.ndarray:
    out = np.full((n, *a.shape[1:]), fill, a.dtype)
    out[at] = a
    return out


def aggregate(paths: Sequence[str | os.PathLike[str]], field: str) -> GroupTable:
    """Per-group results of the committed rows of one or more predictions tables (of the
    same model classes), grouped by ``field``. KeyError when a table lacks the field."""
    tables = [PredictionTable(p) for p in paths]
    if not tables:
        raise ValueError("no predictions tables to aggregate")
    names = tables[0].class_names
    c = int(tables[0].attrs["num_classes"])
    for t in tables:
        if field not in t.fields:
            raise KeyError(field)
        if int(t.attrs["num_classes"]) != c:
            raise ValueError(f"{t.path}: {t.attrs['num_classes']} classes, not {c}")
    with_labels = all(t.has_labels for t in tables)
    exact = all("probs" in t.columns or t.top_k >= c for t in tables)
    sums = _Sums(c, with_labels)
    step = max(1024, CHUNK_VALUES // max(1, c))
    at = 0
    for t in tables:
        dense = "probs" in t.columns
        for a in range(0, t.committed, step):
            b = min(t.committed, a + step)
            keys = t.read_field(field, a, b)
            pred = t.read("pred", a, b).astype(np.int64)
            if dense:
                values = t.read("probs", a, b)
                classes = np.broadcast_to(np.arange(c, dtype=np.int64), values.shape)
            else:
                values = t.read("topk_prob", a, b)
                classes = t.read("topk_class", a, b).astype(np.int64)
            label = t.read("label", a, b).astype(np.int64) if with_labels else None
            sums.add(keys, at + a, pred, classes, values, label)
        at += t.committed
    return sums.result(field, names, exact)


def groups_path(out: str | os.PathLike[str]) -> Path:
    """Where ``predict --aggregate-by`` writes its per-group table: ``PRED.groups.csv``."""
    p = Path(out)
    return p.parent / f"{p.stem}.groups.csv"
