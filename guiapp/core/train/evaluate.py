"""Evaluation: one pass over a split (loss, accuracy, confusion matrix) and the per-class
precision/recall/F1 report, written as CSV, JSON and Markdown.

At the end of a run the split's per-row predictions are written to ``predictions.h5``
(in dataset order, by the same loop as ``guiapp predict``) and the confusion matrix and
report are computed from that file, so confusion cell (i, j) is exactly the file's rows
with label i and prediction j. When the dataset has groups, the file carries each row's
group (and kept fields), and the run also gets ``groups.csv`` (per group: rows, class by
mean probability and by vote, agreement, true class) and ``group_confusion.csv`` (groups
by majority true class vs mean-probability class), reported beside the per-row results;
the report says how the run split (config.json's ``split``).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..atomic import atomic_write_text
from ..pipeline import BatchPipeline
from .metrics import ACCURACY, top_k
from .metrics import label as metric_label
from .runfolder import RunFolder, read_json_object

GROUPS_CSV = "groups.csv"
GROUP_CONFUSION_CSV = "group_confusion.csv"


#: The most bytes of validation outputs a run keeps for its predictions table (``Replay``);
#: a larger split's table runs its own forward pass, so memory does not grow with the rows.
KEEP_OUTPUTS_BYTES = 64 << 20


def evaluate_split(
    pipe: BatchPipeline,
    evaluate: Any,
    x_shape: tuple[int, ...],
    k: int,
    metrics: Sequence[str] = (ACCURACY,),
    keep: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """One pass over ``pipe`` with ``evaluate(x, y) -> (outputs, loss sum)``
    (``Steps.evaluate``): ``{"loss": mean loss, "accuracy": ..., each other metric of
    ``metrics``: ...}`` and the ``k`` x ``k`` confusion matrix. ``keep``: a list that gets
    each batch's outputs and labels, in the pass's order."""
    cm = np.zeros((k, k), np.int64)
    total_loss = 0.0
    extras = {m: top_k(m) for m in metrics if m != ACCURACY}
    hits = dict.fromkeys(extras, 0)
    for x, y in pipe.whole_split_dataset(x_shape):
        probs, loss_sum = evaluate(x, y)
        total_loss += float(loss_sum)
        p = probs.numpy()
        labels = y.numpy()
        if keep is not None:
            keep.append((p, labels))
        pred = (p.reshape(-1) > 0.5).astype(np.int64) if p.shape[-1] == 1 else np.argmax(p, axis=-1)
        cm += confusion_matrix(labels, pred, k)
        for m, top in extras.items():
            hits[m] += top_k_hits(p, labels, top)
    rows = max(1, int(cm.sum()))
    scores = {"loss": total_loss / rows, ACCURACY: float(np.trace(cm)) / rows}
    scores.update({m: hits[m] / rows for m in extras})
    return scores, cm


def top_k_hits(probs: np.ndarray, labels: np.ndarray, k: int) -> int:
    """Rows whose label's output is among the ``k`` highest (ties at the k-th place count,
    as ``tf.math.in_top_k`` and Keras's ``SparseTopKCategoricalAccuracy`` have them)."""
    probs = np.asarray(probs, np.float32).reshape(len(labels), -1)
    own = probs[np.arange(len(labels)), labels.astype(np.int64)]
    higher = (probs > own[:, None]).sum(axis=1)
    return int(np.sum((higher < k) & np.isfinite(own)))


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(cm, (y_true.astype(np.int64), y_pred.astype(np.int64)), 1)
    return cm


def class_report(cm: np.ndarray, class_names: list[str]) -> dict[str, Any]:
    tp = np.diag(cm).astype(np.float64)
    support = cm.sum(axis=1).astype(np.float64)
    predicted = cm.sum(axis=0).astype(np.float64)
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    recall = np.divide(tp, support, out=np.zeros_like(tp), where=support > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(tp), where=denom > 0)
    total = float(cm.sum())
    per_class = [
        {
            "class": i,
            "name": name,
            "precision": round(float(precision[i]), 6),
            "recall": round(float(recall[i]), 6),
            "f1": round(float(f1[i]), 6),
            "support": int(support[i]),
        }
        for i, name in enumerate(class_names)
    ]
    return {
        "accuracy": round(float(tp.sum() / total), 6) if total else 0.0,
        "macro_f1": round(float(f1.mean()), 6),
        "rows": int(total),
        "classes": per_class,
        "class_names": class_names,
        "confusion": cm.tolist(),
    }


class Replay:
    """A forward pass ``predict(x, y)`` that returns a validation pass's kept outputs
    (:func:`evaluate_split`'s ``keep``) batch by batch, for the predictions table of the
    weights that pass evaluated: the same compiled call on the same batches gave them, so
    they are the bytes a second pass would give. Each batch's labels are compared with the
    kept ones; from the first that differs (another order or batch), ``predict`` computes."""

    def __init__(self, kept: list[tuple[np.ndarray, np.ndarray]], predict: Any) -> None:
        self.kept: list[tuple[np.ndarray, np.ndarray]] | None = kept
        self.predict = predict
        self.replayed = 0

    def __call__(self, x: Any, y: Any) -> Any:
        kept, i = self.kept, self.replayed
        if kept is not None and i < len(kept):
            out, labels = kept[i]
            if np.array_equal(labels, np.asarray(y)):
                self.replayed += 1
                return out
        self.kept = None
        return self.predict(x, y)


def write_predictions(
    run: RunFolder,
    prep: Any,
    predict: Any,
    split: str,
    kept: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> np.ndarray:
    """The split's predictions into ``run.predictions``; the confusion matrix read back from it.

    ``prep`` is the run's ``PreparedRun``, ``predict(x, y)`` its compiled forward pass (run
    here on this process's devices only, so the chief of a multi-worker run needs no peers).
    ``kept``: a validation pass's outputs for these weights (:class:`Replay`), used where
    that pass read the very batches the table is written from (the same plan, unshuffled).
    """
    from ..predict.engine import heads_from_predict, pipeline_for, predict_into
    from ..predict.groups import DatasetFields
    from ..predict.output import confusion_from_table
    from ..predict.source import dataset_hash, file_hash, plan_rows
    from ..predict.table import PredictionTable, TableSpec, TableWriter, create_table

    k = prep.ds.num_classes
    val_plan = prep.val.plan
    plan = dataclasses.replace(val_plan, shuffle=False, worker=0, workers=1, fraction=1.0)
    same_batches = not val_plan.shuffle and val_plan.workers == 1 and val_plan.fraction == 1.0
    if kept is not None and same_batches:
        predict = Replay(kept, predict)
    rows = plan_rows(plan)
    model_file = run.best_model if run.best_model.exists() else run.last_model
    fields = DatasetFields(prep.ds)
    spec = TableSpec(
        rows=len(rows),
        num_classes=k,
        top_k=min(5, k),
        class_names=tuple(prep.ds.class_names),
        has_labels=True,
        with_probs=False,
        model_hash=file_hash(model_file) if model_file.exists() else "",
        model_path=str(model_file.resolve()),
        dataset_hash=dataset_hash(prep.ds),
        dataset_path=str(prep.ds.path.resolve()),
        split=split,
        batch=plan.batch_size,
        fields=fields.spec(),
    )
    create_table(run.predictions, spec, rows)
    pipe = pipeline_for(prep.ds, plan, dtype=prep.val.out_dtype, cache=prep.val.reader.cache)
    predict_into(
        TableWriter(run.predictions, fields),
        pipe,
        heads_from_predict(predict, spec.top_k),
        x_shape=prep.x_shape,
    )
    return confusion_from_table(PredictionTable(run.predictions))


def write_evaluation(
    run: RunFolder,
    cm: np.ndarray | None,
    class_names: list[str],
    split: str,
    predictions: tuple[Any, Any] | None = None,
    model: dict[str, Any] | None = None,
    scores: dict[str, float] | None = None,
    kept: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Write the report; with ``predictions=(prep, steps)`` the split's per-row predictions
    first, and the confusion matrix computed from them instead of ``cm``. ``model``: which
    weights were evaluated (file, 1-based epoch of how many, why they were chosen).
    ``scores``: the run's other metrics on the split (:func:`evaluate_split`'s, the same
    weights), reported beside accuracy (``report.json``'s ``metrics``). ``kept``: the
    outputs of the validation pass that gave ``scores`` (:class:`Replay`)."""
    if predictions is not None:
        prep, steps = predictions
        # (validation's compiled call, already traced: not a second trace of the model)
        predict = lambda x, y: steps.evaluate(x, y)[0]  # noqa: E731
        cm = write_predictions(run, prep, predict, split, kept=kept)
    assert cm is not None, "a confusion matrix or the predictions to count it from"
    report = class_report(cm, class_names)
    report["split"] = split
    report["split_by"] = split_text(read_json_object(run.config).get("split"))
    if model is not None:
        report["model"] = model
    others = {
        k: round(float(v), 6) for k, v in (scores or {}).items() if k not in ("loss", ACCURACY)
    }
    if others:
        report["metrics"] = others
    atomic_write_text(run.path / "confusion.csv", confusion_csv(cm, class_names))
    groups = group_evaluation(run) if predictions is not None else None
    if groups is not None:
        report["groups"] = groups
    run.write_json("report.json", report)
    md = [
        f"# Evaluation on the {split} split",
        "",
        f"Accuracy {report['accuracy']:.4f}, macro F1 {report['macro_f1']:.4f}, {report['rows']:,} rows."
        + "".join(f" {metric_label(k).capitalize()} {v:.4f}." for k, v in others.items()),
        "",
        f"Split: {report['split_by']}.",
        "",
    ]
    if model is not None:
        md += [
            f"Model: `{model['file']}`, epoch {model['epoch']} of {model['epochs']} "
            f"({model['chosen']}): the model Export ships and `guiapp predict` uses.",
            "",
        ]
    md += report_markdown(report, "rows")
    if groups is not None:
        md += ["", f"## Per group ({groups['groups']:,} groups, `{GROUPS_CSV}`)", ""]
        md += [
            "Each group's true class is its rows' majority label, its predicted class the "
            "class of highest mean probability over its rows.",
            "",
            f"Accuracy {groups['accuracy']:.4f}, macro F1 {groups['macro_f1']:.4f}.",
            "",
        ]
        md += report_markdown(groups, "groups")
    atomic_write_text(run.path / "report.md", "\n".join(md) + "\n")
    return report


def split_text(split: Any) -> str:
    """How a run split, from its config.json's ``split``: ``by groups: N groups`` or
    ``rows: groups may cross splits`` (or why there are no groups)."""
    if not isinstance(split, dict):
        return "not recorded"
    if split.get("by") == "groups":
        text = f"by groups: {int(split.get('total_groups', 0)):,} groups"
        counts = split.get("groups") or {}
        parts = [f"{k} {int(v):,}" for k, v in counts.items() if v]
        return text + (f" ({', '.join(parts)})" if parts else "")
    return str(split.get("note") or "rows: groups may cross splits")


def confusion_csv(cm: np.ndarray, class_names: list[str]) -> str:
    buf = io.StringIO()
    buf.write("true\\predicted," + ",".join(class_names) + "\n")
    for name, row in zip(class_names, cm.tolist(), strict=True):
        buf.write(name + "," + ",".join(map(str, row)) + "\n")
    return buf.getvalue()


def group_evaluation(run: RunFolder) -> dict[str, Any] | None:
    """Per-group results of the run's predictions (None when its rows have no groups):
    ``groups.csv``, ``group_confusion.csv`` and the groups' class report."""
    from ..predict.groups import aggregate
    from ..predict.table import PredictionTable

    if "group" not in PredictionTable(run.predictions).fields:
        return None
    table = aggregate([run.predictions], "group")
    table.write_csv(run.path / GROUPS_CSV)
    return group_report(table, run.path / GROUP_CONFUSION_CSV)


def group_report(table: Any, confusion_path: Any = None) -> dict[str, Any]:
    """The class report of a ``GroupTable``'s groups (majority true class vs
    mean-probability class), and its confusion matrix as CSV at ``confusion_path``."""
    names = list(table.class_names)
    cm = table.confusion()
    if confusion_path is not None:
        atomic_write_text(confusion_path, confusion_csv(cm, names))
    report = class_report(cm, names)
    report.pop("class_names")
    report["groups"] = report.pop("rows")
    report["exact"] = table.exact
    return report


def report_markdown(report: dict[str, Any], unit: str) -> list[str]:
    """The per-class table and the confusion matrix of a class report, in Markdown."""
    class_names = [c["name"] for c in report["classes"]]
    md = [
        "| class | precision | recall | F1 | support |",
        "|---|---|---|---|---|",
    ]
    for c in report["classes"]:
        md.append(
            f"| {c['name']} | {c['precision']:.4f} | {c['recall']:.4f} | {c['f1']:.4f} | {c['support']:,} |"
        )
    md += [
        "",
        f"Confusion matrix, counting {unit} (rows: true class, columns: predicted):",
        "",
        "| | " + " | ".join(class_names) + " |",
        "|---" * (len(class_names) + 1) + "|",
    ]
    for name, row in zip(class_names, report["confusion"], strict=True):
        md.append(f"| **{name}** | " + " | ".join(f"{v:,}" for v in row) + " |")
    return md
