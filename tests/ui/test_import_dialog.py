"""Issue 17.7 and 17.11: the Import dialog's preview, output default and path checks, and
what an import with ``--on-error skip`` says it left out (a real ``guiapp import`` job)."""

from __future__ import annotations

import json
from pathlib import Path

from guiapp.ui.dialogs.import_dialog import ImportDialog
from guiapp.ui.jobs.cli_job import CliJob


def write_jsonl(path: Path, rows: int, bad: set[int]) -> Path:
    lines = []
    for i in range(rows):
        if i in bad:
            lines.append("{not json")
        else:
            lines.append(json.dumps({"label": f"g{i % 2}", "data": [i, i + 1, i + 2]}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_preview_rows_output_from_the_source_name_and_bad_paths(qtbot, tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "genomes.jsonl", 300, bad={150})
    dialog = ImportDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    for text in ("/", str(tmp_path), str(src)):  # typed: the output follows the name
        dialog.source.set_path(text)
    assert dialog.output.path() == str(tmp_path / "data" / "genomes.h5")
    assert dialog.preview_table.rowCount() == 200  # not only the first 20
    dialog.preview_rows.setValue(300)
    assert dialog.preview_table.rowCount() == 300
    assert "invalid JSON" in dialog.preview_table.item(150, 4).text()
    assert "1 with a problem" in dialog.preview_label.text()
    assert "stops at the first" in dialog.preview_label.text()
    dialog.on_error.setCurrentText("skip")
    assert "leaves them out" in dialog.preview_label.text()

    dialog.output.set_path("/proc/nowhere/x.h5")  # refused inline, before any job
    started: list[object] = []
    dialog.job_ready.connect(lambda job, out: started.append(job))
    assert dialog.start() is None and not started
    assert "/proc/nowhere" in dialog.message.text() and "does not exist" in dialog.message.text()
    dialog.output.set_path(tmp_path)  # an existing folder
    assert dialog.start() is None and "is a folder" in dialog.message.text()
    dialog.source.set_path(tmp_path / "other.jsonl")  # the user's own output stays
    assert dialog.output.path() == str(tmp_path)


def test_skip_says_how_many_rows_it_dropped(qtbot, tmp_path: Path, dialogs) -> None:
    src = write_jsonl(tmp_path / "reads.jsonl", 50, bad=set(range(2, 50)))
    dialog = ImportDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    (tmp_path / "data").mkdir()
    dialog.source.set_path(src)
    dialog.on_error.setCurrentText("skip")
    jobs: list[CliJob] = []
    dialog.job_ready.connect(lambda job, _out: (jobs.append(job), job.start()))
    assert dialog.start() is not None
    qtbot.waitUntil(lambda: jobs[0].status in ("finished", "failed"), timeout=60_000)
    assert jobs[0].status == "finished"
    qtbot.waitUntil(lambda: bool(dialog.skipped_message), timeout=10_000)
    text = dialog.skipped_message
    assert "skipped 48 of 50 rows" in text and "kept 2" in text
    assert "reads.jsonl:3" in text  # the first reasons, file:line
    assert ("warning", "Import skipped rows", text) in dialogs.shown


def test_after_a_failed_import_the_dialog_reopens_with_what_was_entered(
    qtbot, tmp_path: Path
) -> None:
    from conftest import open_project

    src = write_jsonl(tmp_path / "reads.jsonl", 20, bad={5})  # abort: the import fails
    window = open_project(qtbot, tmp_path, "Import")
    page = window.page("Datasets")
    dialog = page.open_import_dialog()
    dialog.source.set_path(src)
    dialog.output.set_path(tmp_path / "mine.h5")
    dialog.label_field.setText("label")
    dialog.class_names.setText("g0,g1")
    dialog.seed.setValue(7)
    dialog.preview_rows.setValue(50)
    entered = dialog.values()
    dialog.start_button.click()
    assert not dialog.isVisible()
    job = window.jobs_panel.rows[0].job
    qtbot.waitUntil(lambda: job.status == "failed", timeout=60_000)

    again = page.open_import_dialog()
    assert again is not dialog and again.isVisible()
    assert again.values() == entered
    assert again.source.path() == str(src) and again.output.path() == str(tmp_path / "mine.h5")
    assert again.class_names.text() == "g0,g1" and again.seed.value() == 7
    assert again.preview_table.rowCount() == 20  # the preview is shown again too
    again.reject()

    src.write_text(src.read_text().replace("{not json", '{"label": "g1", "data": [1, 2, 3]}'))
    again = page.open_import_dialog()
    again.overwrite.setChecked(True)
    again.start_button.click()
    job = window.jobs_panel.rows[0].job
    qtbot.waitUntil(lambda: job.status == "finished", timeout=60_000)
    fresh = page.open_import_dialog()  # a successful import: the next one starts blank
    assert fresh.source.path() == "" and fresh.class_names.text() == ""
