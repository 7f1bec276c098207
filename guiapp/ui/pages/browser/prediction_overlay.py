"""Predictions over the Browser's grid: a badge and caption per thumbnail (true, predicted,
probability), filters (true class, predicted class, correct or not, a confidence range)
and the top-k probabilities of the current sample.

Qt-free reading lives in ``guiapp.core.predict`` (``PredictionLookup`` reads only the
visible rows; ``select_rows`` runs on a worker thread); this module is the widgets.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QWidget,
)

from guiapp.core.predict import PredictionFilter
from guiapp.core.predict.output import PredictionLookup, select_rows

__all__ = ["PredictionOverlay", "select_rows"]

CORRECT = QColor(44, 160, 44)
WRONG = QColor(214, 39, 40)
UNKNOWN = QColor(120, 120, 120)
CACHE_ROWS = 8192


class PredictionOverlay(QWidget):
    """The controls row; ``annotate(row)`` gives the grid a caption and a badge colour."""

    #: the filter to apply to the predictions file shown
    filter_requested = Signal(object)
    #: a predictions file picked by the user
    file_picked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = ""
        self.lookup: PredictionLookup | None = None
        self.names: list[str] = []
        self._cache: OrderedDict[int, tuple[int, int, float, np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self.open_button = QPushButton("Predictions…")
        self.open_button.setToolTip("Overlay a predictions file (guiapp predict, a run's)")
        self.open_button.clicked.connect(self._pick_file)
        self.file_label = QLabel("none")
        self.file_label.setMaximumWidth(160)
        self.true_combo = QComboBox()
        self.pred_combo = QComboBox()
        for combo in (self.true_combo, self.pred_combo):  # class names never widen the window
            combo.setMinimumContentsLength(10)
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
        self.correct_combo = QComboBox()
        self.correct_combo.addItems(["all", "misclassified", "correct"])
        self.min_prob = QDoubleSpinBox()
        self.max_prob = QDoubleSpinBox()
        for spin, value in ((self.min_prob, 0.0), (self.max_prob, 1.0)):
            spin.setRange(0.0, 1.0)
            spin.setSingleStep(0.05)
            spin.setDecimals(2)
            spin.setValue(value)
        self.apply_button = QPushButton("Filter")
        self.apply_button.clicked.connect(self._apply)
        self.detail = QLabel("")
        self.detail.setWordWrap(True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.open_button)
        row.addWidget(self.file_label)
        for text, widget in (
            ("true", self.true_combo),
            ("predicted", self.pred_combo),
            ("", self.correct_combo),
            ("p ≥", self.min_prob),
            ("p ≤", self.max_prob),
        ):
            if text:
                row.addWidget(QLabel(text))
            row.addWidget(widget)
        row.addWidget(self.apply_button)
        row.addStretch(1)
        self._set_enabled(False)

    # ------------------------------------------------------------------ the file
    def set_predictions(self, path: str) -> None:
        """Overlay ``path`` ("" to remove the overlay)."""
        self._cache.clear()
        self.path = path
        self.lookup = PredictionLookup(path) if path else None
        self.names = self.lookup.table.class_names if self.lookup else []
        name = Path(path).name if path else "none"
        self.file_label.setText(
            self.file_label.fontMetrics().elidedText(
                name, Qt.TextElideMode.ElideMiddle, self.file_label.maximumWidth()
            )
        )
        self.file_label.setToolTip(path)
        for combo in (self.true_combo, self.pred_combo):
            combo.clear()
            combo.addItem("any", -1)
            for i, name in enumerate(self.names):
                combo.addItem(f"{i}: {name}", i)
        self._set_enabled(self.lookup is not None)

    def _set_enabled(self, on: bool) -> None:
        for w in (self.true_combo, self.pred_combo, self.correct_combo, self.min_prob):
            w.setEnabled(on)
        self.max_prob.setEnabled(on)
        self.apply_button.setEnabled(on)

    def _pick_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Predictions", str(Path.home()), "Predictions (*.h5)"
        )
        if path:
            self.file_picked.emit(path)

    def current_filter(self) -> PredictionFilter:
        correct = {0: None, 1: False, 2: True}[self.correct_combo.currentIndex()]
        return PredictionFilter(
            true_class=_data(self.true_combo),
            pred_class=_data(self.pred_combo),
            correct=correct,
            min_prob=self.min_prob.value(),
            max_prob=self.max_prob.value(),
        )

    def show_filter(self, flt: PredictionFilter) -> None:
        """Set the controls to ``flt``: the filter of the rows the grid shows."""
        for combo, value in ((self.true_combo, flt.true_class), (self.pred_combo, flt.pred_class)):
            at = combo.findData(value)
            combo.setCurrentIndex(at if at >= 0 else 0)
        self.correct_combo.setCurrentIndex({None: 0, False: 1, True: 2}[flt.correct])
        self.min_prob.setValue(flt.min_prob)
        self.max_prob.setValue(flt.max_prob)

    def describe(self, flt: PredictionFilter) -> str:
        """The title of a filtered view: "true ring, predicted blob, misclassified, p 0.5-1"."""
        parts = []
        if flt.true_class >= 0:
            parts.append(f"true {self._name(flt.true_class)}")
        if flt.pred_class >= 0:
            parts.append(f"predicted {self._name(flt.pred_class)}")
        if flt.correct is not None:
            parts.append("correct" if flt.correct else "misclassified")
        if flt.min_prob > 0 or flt.max_prob < 1:
            parts.append(f"p {flt.min_prob:.2f}-{flt.max_prob:.2f}")
        return ", ".join(parts or ["all predictions"]) + ", most confident first"

    def _apply(self) -> None:
        if self.lookup is not None:
            self.filter_requested.emit(self.current_filter())

    # ------------------------------------------------------------------ per row
    def prefetch(self, rows: np.ndarray) -> None:
        """Read the predictions of the rows about to be painted (only those not cached)."""
        if self.lookup is None:
            return
        missing = np.array([r for r in rows.tolist() if r not in self._cache], np.int64)
        if not len(missing):
            return
        cols = self.lookup.lookup(missing)
        found = cols["found"]
        for i, r in enumerate(missing.tolist()):
            if not found[i]:
                self._cache[r] = (-1, -1, 0.0, np.zeros(0), np.zeros(0))
                continue
            label = int(cols["label"][i]) if "label" in cols else -1
            self._cache[r] = (
                label,
                int(cols["pred"][i]),
                float(cols["prob"][i]),
                cols["topk_class"][i],
                cols["topk_prob"][i],
            )
        while len(self._cache) > CACHE_ROWS:
            self._cache.popitem(last=False)

    def _name(self, c: int) -> str:
        return self.names[c] if 0 <= c < len(self.names) else str(c)

    def annotate(self, row: int) -> tuple[str, QColor] | None:
        """``("true → predicted p", colour)`` for the grid: both classes by name and the
        probability of the predicted one beside it (the grid elides a narrow caption in
        the middle, so the true class and the number stay), or None without a prediction."""
        hit = self._cache.get(row)
        if hit is None or hit[1] < 0:
            return None
        label, pred, prob, _c, _p = hit
        if label < 0:
            return f"→ {self._name(pred)} {prob:.2f}", UNKNOWN
        colour = CORRECT if label == pred else WRONG
        return f"{self._name(label)} → {self._name(pred)} {prob:.2f}", colour

    def show_detail(self, row: int) -> None:
        """The top-k probabilities of ``row`` under the detail pane."""
        if self.lookup is None:
            self.detail.setText("")
            return
        self.prefetch(np.array([row], np.int64))
        hit = self._cache.get(row)
        if hit is None or hit[1] < 0:
            self.detail.setText("No prediction for this row.")
            return
        label, _pred, _prob, classes, probs = hit
        parts = [
            f"{self._name(int(c))} {float(p):.3f}" for c, p in zip(classes, probs, strict=True)
        ]
        true = f"true <b>{self._name(label)}</b> · " if label >= 0 else ""
        self.detail.setText(f"{true}top {len(parts)}: " + ", ".join(parts))


def _data(combo: QComboBox) -> int:
    value = combo.currentData()
    return -1 if value is None else int(value)
