"""The Datasets page through its real widgets: generate, import, check, locate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import open_project
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from guiapp.core.project import DatasetRef
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from guiapp.ui.dialogs.import_dialog import ImportDialog
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages.datasets.datasets_page import DatasetsPage
from guiapp.ui.widgets.failure_controls import MARK


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    return open_project(qtbot, tmp_path, "Demo", saved=True)


def page_of(window: MainWindow) -> DatasetsPage:
    page = window.page("Datasets")
    assert isinstance(page, DatasetsPage)
    return page


def cell(page: DatasetsPage, row: int, col: int) -> str:
    item = page.table.item(row, col)
    return item.text() if item else ""


def test_generate_dialog_end_to_end(window: MainWindow, qtbot, tmp_path: Path) -> None:
    page = page_of(window)
    page.generate_button.click()
    dialog = page.findChild(GenerateDialog)
    assert dialog is not None and dialog.isVisible()
    dialog.rows.setText("abc")
    assert "Rows" in dialog.message.text()
    assert dialog.start() is None  # not started while the form is wrong
    dialog.rows.setText("2,000")
    dialog.classes.setValue(4)
    dialog.seed.setValue(3)
    dialog.output.set_path(tmp_path / "data" / "gen.h5")
    assert dialog.message.text() == ""
    dialog.plan_button.click()
    qtbot.waitUntil(lambda: "Plan:" in dialog.plan_label.text(), timeout=30_000)
    assert "2,000 rows in 1 shard" in dialog.plan_label.text()
    dialog.start_button.click()
    assert not dialog.isVisible()
    assert window.jobs_panel.table.rowCount() == 1
    qtbot.waitUntil(
        lambda: page.table.rowCount() == 1 and cell(page, 0, 1) == "2,000", timeout=30_000
    )
    assert cell(page, 0, page.NAME) == "gen"
    assert cell(page, 0, page.SAMPLE) == "25x25 float32"
    assert cell(page, 0, page.CLASSES).startswith("4: grating")
    assert window.is_modified() and window.windowTitle().startswith("Demo*")
    assert window.project.datasets[0].path == tmp_path / "data" / "gen.h5"
    assert window.jobs_panel.table.item(0, 1).text() == "done"

    again = page.open_generate_dialog()  # the same output again: refused, --overwrite's
    again.output.set_path(tmp_path / "data" / "gen.h5")
    job = again.start()
    assert job is not None
    qtbot.waitUntil(lambda: job.status == "failed", timeout=30_000)
    assert (job.last_event["option"], job.last_event["value"]) == ("--overwrite", False)
    dialog = page.open_generate_dialog()  # the next dialog focuses the option's control
    assert dialog.focusWidget() is dialog.overwrite and dialog.overwrite.property(MARK)
    assert "already exists" in dialog.message.text()
    dialog.reject()


def test_generate_dialog_kmer_parameters_form(window: MainWindow) -> None:
    dialog = page_of(window).open_generate_dialog()
    dialog.generator.setCurrentText("kmer1d")
    assert dialog.shape.text() == "126" and dialog.dtype.currentText() == "uint16"
    assert {"k", "vocab", "difficulty", "reverse_complement"} <= set(dialog.param_widgets)
    dialog.param_widgets["k"].setText("99")
    assert "k 99" in dialog.message.text()
    dialog.param_widgets["k"].setText("5")
    assert dialog.message.text() == ""
    args = dialog.cli_args()
    assert json.loads(args[args.index("--params") + 1])["k"] == 5
    dialog.reject()


def test_import_dialog_preview_and_import(window: MainWindow, qtbot, tmp_path: Path) -> None:
    src = tmp_path / "reads.jsonl"
    lines = [json.dumps({"cls": f"g{i % 2}", "kmers": list(range(i, i + 5))}) for i in range(30)]
    lines.insert(2, "{not json")
    src.write_text("\n".join(lines) + "\n")
    page = page_of(window)
    page.import_button.click()
    dialog = page.findChild(ImportDialog)
    assert dialog is not None
    dialog.label_field.setText("cls")
    dialog.data_field.setText("kmers")
    dialog.source.set_path(src)
    assert dialog.format.currentText() == "jsonl"
    table = dialog.preview_table
    assert table.rowCount() == 31  # every line (the preview shows up to 200)
    assert [table.item(0, c).text() for c in range(4)] == [
        "reads.jsonl:1",
        "g0",
        "[0, 1, 2, 3, 4]",
        "5",
    ]
    assert "invalid JSON" in table.item(2, 4).text()
    assert "1 with a problem" in dialog.preview_label.text()
    dialog.on_error.setCurrentText("skip")
    dialog.length.setValue(8)
    assert dialog.output.path().endswith("reads.h5")
    dialog.start_button.click()
    qtbot.waitUntil(lambda: cell(page, 0, page.ROWS) == "30", timeout=30_000)
    assert cell(page, 0, page.SAMPLE) == "8 uint16"


def test_missing_dataset_is_shown_and_located_and_checked(
    window: MainWindow, qtbot, tmp_path: Path, monkeypatch, make_dataset
) -> None:
    real = make_dataset(tmp_path / "moved" / "d.h5", 500)
    window.project.datasets = [DatasetRef("d", tmp_path / "old" / "d.h5")]
    window.set_project(window.project)
    page = page_of(window)
    assert "missing" in cell(page, 0, page.STATUS)
    page.table.selectRow(0)
    assert page.locate_button.isEnabled() and not page.check_button.isEnabled()
    monkeypatch.setattr(
        QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(real), ""))
    )
    page.locate_button.click()
    assert window.project.datasets[0].path == real and window.is_modified()
    qtbot.waitUntil(lambda: cell(page, 0, page.ROWS) == "500", timeout=10_000)
    assert cell(page, 0, page.STATUS) == "not checked"
    page.table.selectRow(0)
    job = page.check_selected()
    assert job is not None
    qtbot.waitUntil(lambda: cell(page, 0, page.STATUS) == "checked OK", timeout=30_000)


def test_undo_redo_adding_renaming_and_removing_datasets_from_the_edit_menu(
    window: MainWindow, qtbot, tmp_path: Path, make_dataset
) -> None:
    page = page_of(window)
    window.set_page(window.pages.index(page))
    a, b = make_dataset(tmp_path / "a.h5", 50), make_dataset(tmp_path / "b.h5", 60)
    assert not window.action_undo.isEnabled()  # a new project: nothing to undo
    page.add_dataset(a)
    page.add_dataset(b)
    assert [r.name for r in window.project.datasets] == ["a", "b"]
    assert "Add dataset b" in window.action_undo.text()

    name = page.table.item(0, page.NAME)  # the Name cell is edited in place
    assert name.flags() & Qt.ItemFlag.ItemIsEditable
    assert not page.table.item(0, page.ROWS).flags() & Qt.ItemFlag.ItemIsEditable
    name.setText("alpha")
    assert window.project.datasets[0].name == "alpha" and cell(page, 0, page.NAME) == "alpha"
    page.table.selectRow(1)
    page.remove_button.click()
    assert [r.name for r in window.project.datasets] == ["alpha"]
    assert "Remove dataset b" in window.action_undo.text() and window.is_modified()

    window.action_undo.trigger()  # b comes back, where it was, and is shown
    assert [r.name for r in window.project.datasets] == ["alpha", "b"]
    assert page.table.rowCount() == 2 and cell(page, 1, page.NAME) == "b"
    assert window.project.datasets[1].path == b.absolute()
    window.action_undo.trigger()
    assert [r.name for r in window.project.datasets] == ["a", "b"]
    window.action_redo.trigger()
    window.action_redo.trigger()
    assert [r.name for r in window.project.datasets] == ["alpha"]
    while page.undo_stack.canUndo():
        page.undo_stack.undo()
    assert window.project.datasets == []
    assert page.table.rowCount() == 0 and page.empty_label.isVisible()
