"""What an experiment varies, under the run settings: fractions, a sweep, early stopping.

The text fields use the CLI's own syntax, parsed by the core's parsers
(:func:`~guiapp.core.train.experiment_spec.parse_fractions`, ``parse_grid``, ``load_space``),
so the form and ``guiapp train`` accept exactly the same experiments.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
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
        form = QFormLayout(self)
        form.addRow("Fractions", self.fractions)
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
