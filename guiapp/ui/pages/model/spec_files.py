"""The Model page's specs as files and from templates: Import and Export (checked paths,
the remembered export folder, the written file named in the status bar), and a template
fitted to a dataset."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtWidgets import QFileDialog, QMessageBox

from guiapp.core import model as specs
from guiapp.ui.pages.base import PagePart
from guiapp.ui.widgets.outputs import (
    export_folder,
    output_path_problem,
    remember_export,
    show_status,
)

SPEC_FILTER = "Model specs (*.json);;All files (*)"


def fitted(template: str, info: dict[str, Any] | None) -> dict[str, Any]:
    """``template`` fitted to the dataset ``info`` describes (as is without one, or when
    it cannot fit: the check then says why)."""
    if info:
        try:
            spec = specs.fit_template(template, info["sample_shape"], len(info["classes"]))
        except Exception:  # noqa: BLE001 - a dataset the template cannot fit: use as is
            return specs.get_template(template)
        take_dtype(spec, info)
        return spec
    return specs.get_template(template)


def take_dtype(spec: dict[str, Any], info: dict[str, Any] | None) -> None:
    """The model's input dtype from the dataset's, where both are integer (token ids) or
    both floating (a uint16 k-mer dataset gives a uint16 input; float16 data a float16
    one); a mix is left for the check to name."""
    data = str((info or {}).get("dtype", ""))
    inp = spec.setdefault("input", {})
    model = str(inp.get("dtype", "float32"))
    integer = np.dtype(data).kind in "iu" if data in specs.INPUT_DTYPES else None
    if integer is not None and integer == (np.dtype(model).kind in "iu"):
        inp["dtype"] = data


def empty_spec(name: str = "model") -> dict[str, Any]:
    spec = specs.get_template("cnn2d-small")
    spec.update(name=name, description="", layers=[])
    return spec


class SpecFiles(PagePart):
    """Mixed into the Model page: uses its ``spec`` and ``add_model``."""

    if TYPE_CHECKING:  # the page's own (declared for mypy only)

        @property
        def spec(self) -> dict[str, Any] | None: ...

    def add_model(self, spec: dict[str, Any], template: str = "") -> None: ...

    def import_spec(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import model spec", "", SPEC_FILTER)
        if not path:
            return
        try:
            spec = dict(specs.load_spec(path))
        except Exception as exc:  # noqa: BLE001 - shown to the user
            QMessageBox.warning(self, "Import model spec", str(exc))
            return
        spec.setdefault("name", Path(path).stem)
        self.add_model(spec)

    def export_spec(self) -> None:
        spec = self.spec
        if spec is None:
            return
        start = str(export_folder() / f"{spec.get('name', 'model')}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Export model spec", start, SPEC_FILTER)
        if path:
            self.write_spec(path)

    def write_spec(self, path: str) -> bool:
        """Write the shown spec to ``path``; the status bar names the file written."""
        spec = self.spec
        problem = output_path_problem(path, "Export model spec")
        if spec is None or problem:
            if problem:
                QMessageBox.warning(self, "Export model spec", problem)
            return False
        try:
            specs.save_spec(spec, path)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            QMessageBox.warning(self, "Export model spec", str(exc))
            return False
        remember_export(path)
        show_status(self, f"Exported model spec {spec.get('name', '')} to {path}")
        return True
