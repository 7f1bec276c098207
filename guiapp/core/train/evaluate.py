"""Evaluation: one pass over a split (loss, accuracy, confusion matrix) and the per-class
precision/recall/F1 report, written as CSV, JSON and Markdown.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from ..atomic import atomic_write_text
from ..pipeline import BatchPipeline
from .runfolder import RunFolder


def evaluate_split(
    pipe: BatchPipeline, predict: Any, loss_fn: Any, x_shape: tuple[int, ...], k: int
) -> tuple[float, float, np.ndarray]:
    """One pass over ``pipe``: mean loss, accuracy and the ``k`` x ``k`` confusion matrix."""
    cm = np.zeros((k, k), np.int64)
    total_loss = 0.0
    for x, y in pipe.tf_dataset(range(1), x_shape=x_shape):
        probs = predict(x)
        total_loss += float(np.sum(loss_fn(y, probs)))
        p = probs.numpy()
        pred = (p.reshape(-1) > 0.5).astype(np.int64) if p.shape[-1] == 1 else np.argmax(p, axis=-1)
        cm += confusion_matrix(y.numpy(), pred, k)
    rows = int(cm.sum())
    return total_loss / max(1, rows), float(np.trace(cm)) / max(1, rows), cm


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


def write_evaluation(
    run: RunFolder, cm: np.ndarray, class_names: list[str], split: str
) -> dict[str, Any]:
    report = class_report(cm, class_names)
    report["split"] = split
    buf = io.StringIO()
    buf.write("true\\predicted," + ",".join(class_names) + "\n")
    for name, row in zip(class_names, cm.tolist(), strict=True):
        buf.write(name + "," + ",".join(map(str, row)) + "\n")
    atomic_write_text(run.path / "confusion.csv", buf.getvalue())
    run.write_json("report.json", report)
    md = [
        f"# Evaluation on the {split} split",
        "",
        f"Accuracy {report['accuracy']:.4f}, macro F1 {report['macro_f1']:.4f}, {report['rows']:,} rows.",
        "",
        "| class | precision | recall | F1 | support |",
        "|---|---|---|---|---|",
    ]
    for c in report["classes"]:
        md.append(
            f"| {c['name']} | {c['precision']:.4f} | {c['recall']:.4f} | {c['f1']:.4f} | {c['support']:,} |"
        )
    md += [
        "",
        "Confusion matrix (rows: true class, columns: predicted):",
        "",
        "| | " + " | ".join(class_names) + " |",
        "|---" * (len(class_names) + 1) + "|",
    ]
    for name, row in zip(class_names, cm.tolist(), strict=True):
        md.append(f"| **{name}** | " + " | ".join(f"{v:,}" for v in row) + " |")
    atomic_write_text(run.path / "report.md", "\n".join(md) + "\n")
    return report
