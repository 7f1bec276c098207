"""Predictions: a trained model over a dataset or an importable file, in dataset order,
resumable, into a table scripts can read (``row``, ``label``, ``pred``, ``prob``,
``topk_class``, ``topk_prob``, ``probs``, and ``fields/*``: each row's group and kept
fields); per-group results from it (``groups.py``); evaluation's confusion matrix is
computed from the same table; exports of a run's model for deployment, each verified by reloading it.
TensorFlow is imported inside the functions that run a model, never at import time.
"""

from .output import PredictionFilter, cell_rows, confusion_from_table, select_rows, summarize
from .table import COLUMNS, PredictionTable

__all__ = [
    "COLUMNS",
    "PredictionFilter",
    "PredictionTable",
    "cell_rows",
    "confusion_from_table",
    "select_rows",
    "summarize",
]
