"""Likely label issues: confident learning over out-of-sample predicted probabilities.

The rule is Northcutt, Jiang and Chuang, "Confident Learning: Estimating Uncertainty in
Dataset Labels" (JAIR 2021), as cleanlab's ``find_label_issues(filter_by=
"confident_learning")`` applies it, written here in numpy (cleanlab would bring scikit-learn
and pandas for these few lines):

1. per class j, the threshold ``t_j`` = the mean predicted probability of j over the rows
   labelled j (their mean self-confidence);
2. each row goes to the class of highest probability among those whose probability reaches
   their threshold (no class reached: no assignment); counted by (given label, assigned
   class) this is the confident joint;
3. a row in an off-diagonal cell (assigned a class other than its label) is a likely issue,
   and the assigned class is the suggested label;
4. issues are ranked by self-confidence (the label's probability, lowest first) or by the
   normalized margin (the label's probability minus the highest other class's).

The probabilities must come from models that did not train on the rows: a k-fold
experiment's folds (each fold's ``predictions.h5`` holds its validation rows, so together
they hold every row once) or a ``guiapp predict`` table of rows a run did not train on.
Predictions that include training rows are refused (a model is confident on the labels it
memorised, wrong ones included). Tables written without ``--probs`` keep the top k classes
(k = 5, or every class when there are at most 5): the other classes share what is left of
the probability equally; with every class in the top k this is exact.

Out: a CSV, ranked (``rank``, ``row``, ``label``/``label_name``, ``suggested``/
``suggested_name``, ``self_confidence``, ``margin``, ``issue``, ``class_rank``, ``source``,
then the rows' fields: ``group``, ``_id``, ...), and a summary (per class: rows, issues,
threshold; the confident joint).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_path
from ..errors import FileError, OptionError, UserError

READ_ROWS = 1 << 18
RANK_BY = ("self_confidence", "normalized_margin")
CSV_HEAD = ["rank", "row", "label", "label_name", "suggested", "suggested_name"]
CSV_HEAD += ["self_confidence", "margin", "issue", "class_rank", "source"]


@dataclass(frozen=True)
class Source:
    """One predictions table and what it is (``fold-2``, a file's name)."""

    name: str
    path: Path


# ------------------------------------------------------------------------- the sources
def experiment_sources(folder: str | os.PathLike[str]) -> list[Source]:
    """A k-fold experiment's out-of-fold tables (the folds of its best group), or a single
    run's validation table. One line (UserError) when they are missing or unfinished."""
    from ..train.experiment_spec import ExperimentSpec
    from ..train.runfolder import RunFolder

    folder = Path(folder)
    if not folder.is_dir():
        raise FileError(
            folder, "is not a folder", "Give an experiment or run folder (--out of guiapp train)"
        )
    spec = ExperimentSpec.of_folder(folder)
    trials = spec.trials()
    if len(spec.folds) > 1:
        groups: dict[str, list[Any]] = {}
        for t in trials:
            key = json.dumps({k: v for k, v in t.params.items() if k != "fold"}, sort_keys=True)
            groups.setdefault(key, []).append(t)
        chosen = list(groups.values())[0]
        if len(groups) > 1:
            best = _best_trial(folder)
            chosen = next((g for g in groups.values() if any(t.id == best for t in g)), chosen)
        trials = chosen
    elif len(trials) > 1:
        raise FileError(
            folder,
            "is a sweep without folds: its trials' validation rows overlap",
            "Give one trial's run folder, or an experiment with --folds K",
        )
    out = []
    for t in trials:
        path = RunFolder(t.run_dir).predictions
        if not path.exists():
            raise FileError(
                path,
                f"is missing: trial {t.id} has not finished",
                f"Finish the experiment (guiapp train --resume {folder}) and try again",
            )
        out.append(Source(t.id, path))
    return out


def _best_trial(folder: Path) -> str | None:
    try:
        data = json.loads((folder / "experiment.json").read_text(encoding="utf-8"))
        return str(data["summary"]["best_trial"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def trained_on(table: Any) -> str | None:
    """Why a table's rows include rows its model trained on (None when they do not, or
    when nothing says so: a bare model file or a dataset that moved)."""
    split = str(table.attrs.get("split", "all"))
    if split not in ("all", "train"):
        return None
    model = Path(str(table.attrs.get("model_path", "")))
    try:
        run_data = json.loads((model.parent / "config.json").read_text(encoding="utf-8"))
        run_uuid = run_data["dataset"]["uuid"]
        run_path = run_data["dataset"]["path"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    data = Path(str(table.attrs.get("dataset_path", "")))
    same = data.exists() and Path(run_path).exists() and data.samefile(run_path)
    if not same:
        try:
            from ..store import Dataset

            with Dataset(data) as ds:
                same = ds.uuid == run_uuid
        except Exception:  # noqa: BLE001 - no dataset there: nothing says it is the same
            same = False
    if not same:
        return None
    return f"split '{split}' of {data.name}, the dataset {model.parent.name} trained on"


def check_sources(sources: list[Source]) -> list[Any]:
    """The tables, opened and checked: complete, labelled, one class list, no training rows,
    no row twice."""
    from ..predict.table import PredictionTable

    tables = [PredictionTable(s.path) for s in sources]
    for s, t in zip(sources, tables, strict=True):
        if not t.complete:
            raise FileError(
                s.path, "is unfinished", "Run the prediction to its end, then try again"
            )
        if not t.has_labels:
            raise FileError(
                s.path,
                "has no labels (predictions of unlabelled rows)",
                "Give predictions of a labelled dataset",
            )
        if t.class_names != tables[0].class_names:
            raise FileError(
                s.path,
                "has other classes than " + str(sources[0].path),
                "Give tables of one dataset",
            )
        why = trained_on(t)
        if why is not None:
            raise FileError(
                s.path,
                f"includes the rows its model trained on ({why})",
                "Give a k-fold experiment (--experiment) or predictions of rows the model "
                "did not train on (guiapp predict --split val or test, or other data)",
            )
    if len(tables) > 1:
        rows = np.concatenate([t.read("row") for t in tables])
        uniq, counts = np.unique(rows, return_counts=True)
        if (counts > 1).any():
            raise UserError(
                f"{sources[0].path.parent.parent}: row {int(uniq[counts > 1][0])} is in two "
                "folds' predictions: they are not out-of-fold. Give an experiment with --folds K"
            )
    return tables


def _probs(t: Any, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, labels and the (n, C) probabilities of rows ``[a, b)`` of table ``t``."""
    cols = t.read_all(a, b)
    c = len(t.class_names)
    if "probs" in cols:
        p = cols["probs"].astype(np.float64)
    else:
        tk, tp = cols["topk_class"].astype(np.int64), cols["topk_prob"].astype(np.float64)
        k = tk.shape[1]
        rest = np.clip(1.0 - tp.sum(axis=1), 0.0, None) / max(1, c - k)
        p = np.repeat(rest[:, None], c, axis=1)
        np.put_along_axis(p, tk, tp, axis=1)
    return cols["row"], cols["label"].astype(np.int64), p


# ---------------------------------------------------------------------- the rule itself
@dataclass
class LabelIssues:
    """Every row's result, in the order the tables hold them, and the per-class figures."""

    class_names: list[str]
    sources: list[Source]
    rank_by: str
    row: np.ndarray
    label: np.ndarray
    suggested: np.ndarray
    self_confidence: np.ndarray
    margin: np.ndarray
    issue: np.ndarray
    source: np.ndarray
    position: np.ndarray
    thresholds: np.ndarray
    joint: np.ndarray
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: The dataset the rows are of (the first table's ``dataset_path``).
    dataset: str = ""

    def __post_init__(self) -> None:
        score = self.self_confidence if self.rank_by == "self_confidence" else self.margin
        self.order = np.lexsort((self.row, score, ~self.issue))

    def summary(self) -> dict[str, Any]:
        counts = np.bincount(self.label, minlength=len(self.class_names))
        issues = np.bincount(self.label[self.issue], minlength=len(self.class_names))
        return {
            "rows": int(len(self.row)),
            "issues": int(self.issue.sum()),
            "dataset": self.dataset,
            "rank_by": self.rank_by,
            "sources": [s.name for s in self.sources],
            "classes": [
                {
                    "class": i,
                    "name": n,
                    "rows": int(counts[i]),
                    "issues": int(issues[i]),
                    "threshold": round(float(self.thresholds[i]), 6)
                    if np.isfinite(self.thresholds[i])
                    else None,
                }
                for i, n in enumerate(self.class_names)
            ],
            "confident_joint": self.joint.tolist(),
        }

    def ranked_rows(self, issues_only: bool = True) -> np.ndarray:
        """Dataset rows, most likely mislabeled first (only the issues, by default)."""
        order = self.order[: int(self.issue.sum())] if issues_only else self.order
        rows: np.ndarray = self.row[order]
        return rows


def thresholds_of(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per class, the mean self-confidence of its rows; infinite for a class with no rows
    (nothing is confidently assigned to it)."""
    out = np.full(len(sums), np.inf)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def assign(p: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Each row's confidently assigned class (-1: none reached its threshold)."""
    above = p >= thresholds[None, :]
    masked = np.where(above, p, -1.0)
    j = np.argmax(masked, axis=1)
    return np.where(above.any(axis=1), j, -1)


def find_label_issues(
    sources: list[Source],
    rank_by: str = "self_confidence",
    progress: Callable[[int, int], None] | None = None,
) -> LabelIssues:
    """Confident learning over the tables of ``sources`` (two passes, chunk by chunk)."""
    if rank_by not in RANK_BY:
        raise OptionError("rank-by", rank_by, "unknown ranking", f"use one of {', '.join(RANK_BY)}")
    tables = check_sources(sources)
    c = len(tables[0].class_names)
    sums, counts = np.zeros(c), np.zeros(c)
    total = sum(t.committed for t in tables)
    for t in tables:
        for a in range(0, t.committed, READ_ROWS):
            _, y, p = _probs(t, a, a + READ_ROWS)
            sums += np.bincount(y, weights=p[np.arange(len(y)), y], minlength=c)[:c]
            counts += np.bincount(y, minlength=c)[:c]
    th = thresholds_of(sums, counts)
    parts: dict[str, list[np.ndarray]] = {
        k: [] for k in ("row", "label", "sugg", "sc", "m", "src", "pos")
    }
    joint = np.zeros((c, c), np.int64)
    done = 0
    for s, t in enumerate(tables):
        for a in range(0, t.committed, READ_ROWS):
            rows, y, p = _probs(t, a, a + READ_ROWS)
            n = len(y)
            sc = p[np.arange(n), y]
            other = p.copy()
            other[np.arange(n), y] = -np.inf
            margin = sc - other.max(axis=1) if c > 1 else sc
            j = assign(p, th)
            ok = j >= 0
            np.add.at(joint, (y[ok], j[ok]), 1)
            parts["row"].append(rows.astype(np.int64))
            parts["label"].append(y)
            parts["sugg"].append(np.where(ok, j, np.argmax(p, axis=1)))
            parts["sc"].append(sc.astype(np.float32))
            parts["m"].append(margin.astype(np.float32))
            parts["src"].append(np.full(n, s, np.int32))
            parts["pos"].append(np.arange(a, a + n, dtype=np.int64))
            done += n
            if progress is not None:
                progress(done, total)
    cat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    label, sugg = cat["label"].astype(np.int64), cat["sugg"].astype(np.int64)
    return LabelIssues(
        class_names=list(tables[0].class_names),
        sources=sources,
        rank_by=rank_by,
        row=cat["row"].astype(np.int64),
        label=label,
        suggested=sugg,
        self_confidence=cat["sc"].astype(np.float32),
        margin=cat["m"].astype(np.float32),
        issue=sugg != label,
        source=cat["src"].astype(np.int32),
        position=cat["pos"].astype(np.int64),
        thresholds=th,
        joint=joint,
        dataset=str(tables[0].attrs.get("dataset_path", "")),
    )


# ---------------------------------------------------------------------------- the CSV
def write_csv(
    issues: LabelIssues,
    out: str | os.PathLike[str],
    *,
    everything: bool = False,
    class_index: int | None = None,
) -> int:
    """The ranked CSV (atomically): the issues, or with ``everything`` every row (issues
    first); ``class_index`` keeps the rows labelled that class. Returns the lines written."""
    from ..predict.table import PredictionTable

    order = issues.order if everything else issues.order[: int(issues.issue.sum())]
    if class_index is not None:
        order = order[issues.label[order] == class_index]
    class_rank = class_ranks(issues.label, issues.order, len(issues.class_names))
    tables = [PredictionTable(s.path) for s in issues.sources]
    names = [n for n in tables[0].fields if all(n in t.fields for t in tables)]
    columns: dict[str, list[np.ndarray]] = {
        n: [t.read_field(n) if len(order) else np.zeros(0) for t in tables] for n in names
    }
    header = CSV_HEAD + [f"field.{n}" if n in CSV_HEAD else n for n in names]
    cn = issues.class_names
    with atomic_path(out) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for rank, i in enumerate(order, 1):
            y, s = int(issues.label[i]), int(issues.suggested[i])
            src, pos = int(issues.source[i]), int(issues.position[i])
            line: list[Any] = [rank, int(issues.row[i]), y, cn[y], s, cn[s]]
            line += [f"{issues.self_confidence[i]:.6g}", f"{issues.margin[i]:.6g}"]
            line += [int(issues.issue[i]), int(class_rank[i]), issues.sources[src].name]
            for n in names:
                v = columns[n][src][pos]
                line.append(v.decode("utf-8", "replace") if isinstance(v, bytes) else int(v))
            w.writerow(line)
    return len(order)


def class_ranks(label: np.ndarray, order: np.ndarray, classes: int) -> np.ndarray:
    """Each row's 1-based rank within its given class, in the overall ``order``."""
    by_class = order[np.argsort(label[order], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(np.bincount(label, minlength=classes))[:-1]])
    out = np.zeros(len(label), np.int64)
    out[by_class] = np.arange(len(by_class)) - starts[label[by_class]] + 1
    return out


def read_ranked(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A labels CSV as the Browser shows it: ``rows`` (dataset rows, most likely
    mislabeled first), ``suggested`` (class names) and ``issue`` (0/1), in CSV order."""
    rows, suggested, issue = [], [], []
    with open(path, newline="", encoding="utf-8") as fh:
        for line in csv.DictReader(fh):
            rows.append(int(line["row"]))
            suggested.append(line["suggested_name"])
            issue.append(line["issue"] == "1")
    return {"rows": np.asarray(rows, np.int64), "suggested": suggested, "issue": np.asarray(issue)}
