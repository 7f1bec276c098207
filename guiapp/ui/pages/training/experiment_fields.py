"""What an experiment varies, under the run settings: fractions, a sweep, early stopping.

The text fields use the CLI's own syntax, parsed by the core's parsers
(:func:`~guiapp.core.train.experiment_spec.parse_fractions`, ``parse_grid``, ``load_space``),
so the form and ``guiapp train`` accept exactly the same experiments.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from guiapp.core.errors import UserError
from guiapp.core.train.experiment_spec import load_space, parse_fractions, parse_grid

SWEEPS = ("none", "grid", "random")


class ExperimentFields(QGroupBox):
    """Fractions, grid or random sweep, early stopping and parallel trials."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Experiment", parent)
        self.fractions = QLineEdit()
        self.fractions.setPlaceholderText("e.g. 0.01,0.1,1.0 (data-scaling curve)")
        self.sweep = QComboBox()
        self.sweep.addItems(SWEEPS)
        self.grid = QLineEdit()
        self.grid.setPlaceholderText("learning_rate=0.001,0.003;batch=64,128")
        self.grid.setToolTip(
            "NAME=V1,V2;NAME=...: a trial per combination. Names: learning_rate, optimizer, "
            "dropout, filters, batch, epochs, layers.N.PARAM, ..."
        )
        self.random = QSpinBox()
        self.random.setRange(1, 10_000)
        self.random.setValue(8)
        self.space = QLineEdit()
        self.space.setPlaceholderText("space.json: ranges to draw from")
        self.space.setToolTip('e.g. {"learning_rate": {"log_uniform": [1e-4, 1e-2]}}')
        self.early_stopping = QSpinBox()
        self.early_stopping.setRange(0, 10_000)
        self.early_stopping.setSpecialValueText("off")
        self.early_stopping.setToolTip(
            "Stop after this many epochs without a better validation accuracy; keep the best model"
        )
        self.parallel = QCheckBox("one trial per listed device")
        # what a steps-per-epoch cap does to a data-scaling curve, said before Start
        self.scaling_info = QLabel("")
        self.scaling_info.setWordWrap(True)
        self.scaling_info.setObjectName("scalingInfo")
        self.scaling_info.setStyleSheet("color: #8a4b00;")
        form = QFormLayout(self)
        form.addRow("Fractions", self.fractions)
        form.addRow(self.scaling_info)
        form.addRow("Sweep", self.sweep)
        form.addRow("Grid", self.grid)
        form.addRow("Random trials", self.random)
        form.addRow("Space file", self.space)
        form.addRow("Early stopping", self.early_stopping)
        form.addRow("Parallel", self.parallel)
        self.sweep.currentIndexChanged.connect(self._sweep_changed)
        self._sweep_changed()

    def _sweep_changed(self) -> None:
        kind = self.sweep.currentText()
        self.grid.setEnabled(kind == "grid")
        self.random.setEnabled(kind == "random")
        self.space.setEnabled(kind == "random")

    def fraction_list(self) -> list[float]:
        """The fractions typed so far ([] while empty or not parsing)."""
        try:
            return parse_fractions(self.fractions.text()) if self.fractions.text().strip() else []
        except (UserError, ValueError):
            return []

    def values(self) -> dict[str, Any]:
        """The spec fields these widgets set; a UserError for text that does not parse."""
        kind = self.sweep.currentText()
        out: dict[str, Any] = {
            "fractions": parse_fractions(self.fractions.text())
            if self.fractions.text().strip()
            else [],
            "grid": {},
            "random": 0,
            "space": {},
            "parallel_trials": self.parallel.isChecked(),
        }
        if kind == "grid":
            if not self.grid.text().strip():
                raise UserError("Grid: give NAME=V1,V2, e.g. learning_rate=0.001,0.003")
            out["grid"] = parse_grid(self.grid.text())
        elif kind == "random":
            if not self.space.text().strip():
                raise UserError("Random sweep: give a space file")
            out["random"] = self.random.value()
            out["space"] = load_space(self.space.text().strip())
        return out


def scaling_note(fractions: list[float], max_steps: int, batch: int, train_rows: int) -> str:
    """What a steps-per-epoch cap does to a data-scaling experiment ("" when nothing).

    The core scales the cap with each trial's fraction (``ceil(max_steps * fraction)``
    steps, :meth:`ExperimentSpec.trials`), so the curve scales; but where the cap's rows
    (``max_steps * batch``) are fewer than the training rows, each trial trains on only a
    part of its fraction's rows per epoch."""
    if not fractions or max_steps <= 0 or batch <= 0 or train_rows <= 0:
        return ""
    cap = max_steps * batch
    if cap >= train_rows:
        return ""
    parts = []
    for f in sorted(set(fractions)):
        steps = max(1, math.ceil(max_steps * f))
        rows = round(train_rows * f)
        parts.append(f"{f:g}: {steps:,} steps, {min(steps * batch, rows):,} of its ~{rows:,} rows")
    return (
        f"Steps per epoch {max_steps:,} caps an epoch at {cap:,} rows (batch {batch:,}) of "
        f"~{train_rows:,} training rows; the cap scales with each fraction, so each trial "
        f"sees part of its rows an epoch ({'; '.join(parts)}). Set Steps per epoch to "
        '"all" to train every row.'
    )
