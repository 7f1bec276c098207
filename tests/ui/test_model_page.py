"""The Model page's editor: layers added, removed and reordered, inline validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

from guiapp.core.project import DatasetRef, Project
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages.model.model_page import ModelPage


@pytest.fixture
def window(qtbot) -> MainWindow:
    w = MainWindow(Project.new(None, "Models"))
    qtbot.addWidget(w)
    w.show()
    w.set_page(2)
    return w


def page_of(window: MainWindow) -> ModelPage:
    page = window.page("Model")
    assert isinstance(page, ModelPage)
    return page


def types(page: ModelPage) -> list[str]:
    return [page.layers.item(r, 1).text() for r in range(page.layers.rowCount())]


def test_template_layers_add_remove_reorder(window: MainWindow, qtbot) -> None:
    page = page_of(window)
    page.template_combo.setCurrentText("cnn2d-small")
    page.new_button.click()
    assert window.is_modified()
    spec = window.project.models[0].spec
    assert types(page)[:2] == ["Conv2D", "MaxPooling2D"] and len(spec["layers"]) == 8
    qtbot.waitUntil(lambda: page.summary.rowCount() == 9, timeout=10_000)
    assert "78,917 parameters" in page.totals.text()

    page.layers.selectRow(3)
    page.type_combo.setCurrentText("BatchNormalization")
    page.add_button.click()
    assert types(page)[4] == "BatchNormalization" and page.selected_layer() == 4
    assert spec["layers"][4]["type"] == "BatchNormalization"
    page.up_button.click()
    assert types(page)[3:5] == ["BatchNormalization", "MaxPooling2D"]
    assert page.selected_layer() == 3
    page.down_button.click()
    page.down_button.click()
    assert types(page)[3:6] == ["MaxPooling2D", "Flatten", "BatchNormalization"]
    page.remove_button.click()
    assert [layer["type"] for layer in spec["layers"]] == [
        "Conv2D",
        "MaxPooling2D",
        "Conv2D",
        "MaxPooling2D",
        "Flatten",
        "Dense",
        "Dropout",
        "Dense",
    ]


def test_typed_editors_and_inline_validation(window: MainWindow, qtbot) -> None:
    page = page_of(window)
    page.new_model("cnn2d-small")
    page.layers.selectRow(0)
    widgets = page.editor.widgets
    assert isinstance(widgets["filters"], QSpinBox)
    assert isinstance(widgets["padding"], QComboBox)
    assert isinstance(widgets["use_bias"], QCheckBox)
    kernel = widgets["kernel_size"]
    assert isinstance(kernel, QLineEdit) and kernel.text() == "3"

    kernel.setText("0")
    qtbot.waitUntil(lambda: page.editor.errors["kernel_size"].isVisible(), timeout=10_000)
    assert "kernel_size 0" in page.editor.errors["kernel_size"].text()
    assert "kernel_size 0" in page.layers.item(0, 0).toolTip()
    assert page.layers.item(0, 1).foreground().color().red() > 150
    assert page.summary.rowCount() == 0 and "problem" in page.totals.text()

    kernel.setText("5, 5")
    qtbot.waitUntil(lambda: page.layers.item(0, 0).toolTip() == "", timeout=10_000)
    assert not page.editor.errors["kernel_size"].isVisible()
    assert window.project.models[0].spec["layers"][0]["kernel_size"] == [5, 5]
    qtbot.waitUntil(lambda: page.summary.rowCount() == 9, timeout=10_000)
    assert "kernel_size=5,5" in page.layers.item(0, 2).text()

    kernel.setText("five")  # not parsed: a message, the spec keeps its last good value
    assert "whole numbers" in page.editor.errors["kernel_size"].text()
    assert window.project.models[0].spec["layers"][0]["kernel_size"] == [5, 5]


def test_spec_fields_dataset_fit_and_export(
    window: MainWindow, qtbot, tmp_path: Path, make_dataset, monkeypatch
) -> None:
    make_dataset(tmp_path / "d.h5", 300, shape=(8, 8), classes=3)
    window.project.datasets.append(DatasetRef("d", tmp_path / "d.h5"))
    window.set_project(window.project)
    page = page_of(window)
    qtbot.waitUntil(lambda: page.settings.data_info is not None, timeout=10_000)
    page.new_model("cnn2d-small")
    spec = window.project.models[0].spec
    assert spec["input"]["shape"] == [8, 8, 1] and spec["layers"][-1]["units"] == 3
    page.settings.optimizer.setCurrentText("sgd")
    page.settings.rate.setValue(0.01)
    page.settings.metrics["top3_accuracy"].setChecked(True)
    assert spec["optimizer"] == {"type": "sgd", "learning_rate": 0.01, "schedule": None}
    assert spec["metrics"] == ["accuracy", "top3_accuracy"]
    page.layers.selectRow(7)
    page.editor.widgets["units"].setValue(4)  # 4 outputs for 3 classes
    qtbot.waitUntil(lambda: page.editor.errors["units"].isVisible(), timeout=10_000)
    assert "3 classes" in page.editor.errors["units"].text()

    from PySide6.QtWidgets import QFileDialog

    from guiapp.core.model import load_spec

    out = tmp_path / "m.json"
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), ""))
    )
    page.export_spec()
    assert load_spec(out)["optimizer"]["type"] == "sgd"
    monkeypatch.setattr(
        QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(out), ""))
    )
    page.import_spec()
    assert [m.name for m in window.project.models] == ["cnn2d-small", "cnn2d-small-2"]
    page.template_combo.setCurrentText("empty model")
    page.new_button.click()
    assert page.layers.rowCount() == 0
    qtbot.waitUntil(lambda: "layers" in page.problems.text(), timeout=10_000)


def test_undo_redo_every_layer_edit_from_the_edit_menu(window: MainWindow, qtbot) -> None:
    """Issue 17.11: add, remove, move and edit a layer, then Ctrl+Z / Ctrl+Shift+Z (the
    Edit menu's actions, bound to the Model page's stack) walk back and forth."""
    page = page_of(window)
    page.new_model("cnn2d-small")
    original = [layer["type"] for layer in window.project.models[0].spec["layers"]]
    assert window.action_undo.isEnabled() and "Add model" in window.action_undo.text()

    page.layers.selectRow(2)
    page.remove_button.click()
    assert types(page)[2] != "Conv2D" and len(types(page)) == 7
    assert "Remove Conv2D layer" in window.action_undo.text()
    page.layers.setFocus()
    qtbot.keyClick(page.layers, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert types(page) == original
    assert window.project.models[0].spec["layers"][2]["type"] == "Conv2D"
    qtbot.keyClick(
        page.layers,
        Qt.Key.Key_Z,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert len(types(page)) == 7
    window.action_undo.trigger()

    page.layers.selectRow(0)
    page.down_button.click()
    assert types(page)[:2] == ["MaxPooling2D", "Conv2D"]
    page.layers.selectRow(1)
    kernel = page.editor.widgets["kernel_size"]
    for text in ("5", "5,", "5, 5"):  # three keystrokes: one undo step
        kernel.setText(text)
    assert window.project.models[0].spec["layers"][1]["kernel_size"] == [5, 5]
    window.action_undo.trigger()
    assert window.project.models[0].spec["layers"][1].get("kernel_size", 3) == 3
    window.action_undo.trigger()
    assert types(page) == original
    window.action_redo.trigger()
    window.action_redo.trigger()
    assert types(page)[:2] == ["MaxPooling2D", "Conv2D"]
    assert window.project.models[0].spec["layers"][1]["kernel_size"] == [5, 5]
    while page.undo_stack.canUndo():
        page.undo_stack.undo()
    assert window.project.models == [] and page.layers.rowCount() == 0

    window.set_page(0)  # another page: Edit > Undo has nothing to act on
    assert not window.action_undo.isEnabled() and not window.action_redo.isEnabled()


def test_template_refits_when_its_dataset_changes(
    window: MainWindow, qtbot, tmp_path: Path, make_dataset
) -> None:
    """Issue 17.6: kmer-conv1d made while a 2-D dataset is chosen is refitted when the
    1-D dataset is picked (and stays as the user left it once edited)."""
    make_dataset(tmp_path / "images.h5", 200, shape=(25, 25), classes=3)
    make_dataset(tmp_path / "genomes.h5", 200, shape=(40,), classes=4)
    window.project.datasets.append(DatasetRef("images", tmp_path / "images.h5"))
    window.project.datasets.append(DatasetRef("genomes", tmp_path / "genomes.h5"))
    window.set_project(window.project)
    page = page_of(window)
    qtbot.waitUntil(lambda: page.settings.data_info is not None, timeout=10_000)
    assert page.settings.dataset.currentText() == "images"
    page.new_model("kmer-conv1d")
    spec = window.project.models[0].spec
    qtbot.waitUntil(lambda: bool(page.problems.text() or page.errors), timeout=10_000)
    assert page.errors  # a 1-D template against 25 x 25 samples

    page.settings.dataset.setCurrentText("genomes")
    qtbot.waitUntil(lambda: spec["input"]["shape"][0] == 40, timeout=10_000)
    assert spec["layers"][-1]["units"] == 4
    qtbot.waitUntil(lambda: page.summary.rowCount() > 0, timeout=10_000)
    assert not [e for e in page.errors if e["severity"] == "error"]
    assert "Refit" in window.action_undo.text()

    page.layers.selectRow(0)
    page.remove_button.click()  # edited: the user's model from now on
    page.settings.dataset.setCurrentText("images")
    qtbot.waitUntil(
        lambda: list((page.settings.data_info or {}).get("sample_shape", [])) == [25, 25],
        timeout=10_000,
    )
    assert window.project.models[0].spec["input"]["shape"][0] == 40
