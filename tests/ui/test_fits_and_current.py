"""Issue 34.9, "it fits and it is current": the Model page takes the dtype from the dataset,
names problems in the summary and keeps the selected model across a reopen; Save As opens in
the project's folder; Resume is not offered for a run refused before it started."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QFileDialog

from guiapp.core.model import fit_template
from guiapp.core.project import ModelEntry, Project, RunEntry
from guiapp.core.store import DatasetWriter
from guiapp.ui.main_window import MainWindow
from tests.ui.conftest import open_project, write_dataset


def _tokens(path: Path) -> Path:
    x = np.random.default_rng(0).integers(1, 200, size=(64, 126)).astype(np.uint8)
    with DatasetWriter(path, sample_shape=(126,), dtype="uint8", class_names=["a", "b"]) as w:
        w.append(x, np.arange(64) % 2)
    return path


def test_model_page_takes_dtype_from_the_dataset_and_names_problems(qtbot, tmp_path: Path) -> None:
    window = open_project(qtbot, tmp_path, "Dtype", {"tokens": _tokens(tmp_path / "t.h5")})
    page = window.page("Model")
    page.settings.dataset.setCurrentIndex(page.settings.dataset.findText("tokens"))  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: page.settings.data_info is not None, timeout=10_000)  # type: ignore[attr-defined]
    page.new_model("kmer-conv1d")  # type: ignore[attr-defined]
    assert page.spec["input"]["dtype"] == "uint8"  # type: ignore[attr-defined]
    assert page.settings.dtype.currentText() == "uint8"  # type: ignore[attr-defined]
    # a cnn2d on 126-long vectors cannot be built: the summary's place says where and why
    page.new_model("cnn2d-small")  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: "problem(s)" in page.totals.text(), timeout=10_000)  # type: ignore[attr-defined]
    text = page.totals.text()  # type: ignore[attr-defined]
    assert "fix them to see the summary:" in text and "• " in text
    assert "layer" in text or "input" in text


def test_reopening_a_project_keeps_the_selected_model(qtbot, tmp_path: Path) -> None:
    project = Project.new(tmp_path / "p.gproj", "Models")
    for name in ("first", "second"):
        spec = fit_template("cnn2d-small", (8, 8), 3)
        spec["name"] = name
        project.models.append(ModelEntry(name, spec))
    window = MainWindow(project)
    qtbot.addWidget(window)
    page = window.page("Model")
    assert page.model_combo.currentText() == "second"  # type: ignore[attr-defined]
    page.model_combo.setCurrentIndex(0)  # type: ignore[attr-defined]
    assert window.save()
    again = MainWindow(Project.load(tmp_path / "p.gproj"))
    qtbot.addWidget(again)
    assert again.page("Model").model_combo.currentText() == "first"  # type: ignore[attr-defined]


def test_save_as_opens_in_the_projects_folder(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # an untitled project's relative paths point here
    window = MainWindow(Project.new(None, "Untitled"))
    qtbot.addWidget(window)
    window.remember_recent(tmp_path / "elsewhere" / "other.gproj")  # a recent project
    asked: list[str] = []

    def save_name(_parent: object, _title: str, start: str, _filter: str) -> tuple[str, str]:
        asked.append(start)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_name)
    assert not window.save_as()
    assert Path(asked[0]) == tmp_path


@pytest.mark.timeout(120)
def test_resume_is_not_offered_for_a_run_refused_before_it_started(qtbot, tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.h5", 300, shape=(8, 8), classes=3)
    window = open_project(qtbot, tmp_path, "Refused", {"d": data})
    page = window.page("Training")
    form = page.form  # type: ignore[attr-defined]
    form.select_model("cnn2d-small")
    form.devices.setEditText("gpu:7")  # the form's words; train refuses it (no such GPU)
    job = page.start()  # type: ignore[attr-defined]
    assert job is not None
    qtbot.waitUntil(lambda: not job.is_running(), timeout=90_000)
    qtbot.waitUntil(lambda: page.run.status == "failed", timeout=10_000)  # type: ignore[attr-defined]
    assert (Path(page.run.path) / "spec.json").exists()  # type: ignore[attr-defined]
    assert page.start_button.isEnabled()  # type: ignore[attr-defined]
    assert not page.resume_button.isEnabled()  # type: ignore[attr-defined]


def test_training_form_fits_its_column_at_the_default_size(qtbot, tmp_path: Path) -> None:
    """No cut-off fields: the Training page's scrolling form (no horizontal scroll bar)
    is no wider than its column at the default window size (Split by and its note were cut)."""
    window = open_project(qtbot, tmp_path, "Fits")
    window.resize(1100, 690)
    page = window.page("Training")
    window.set_page(window.pages.index(page))
    column = page.form.parentWidget()  # type: ignore[attr-defined]
    viewport = column.parentWidget()
    qtbot.waitUntil(lambda: viewport.width() > 0)
    assert column.minimumSizeHint().width() <= viewport.width()


def test_export_reports_a_short_sentence_not_raw_json() -> None:
    """The Runs page said `Exported ... { "format": "keras", ... "ma` (raw JSON cut off)."""
    import json

    from guiapp.ui.pages.runs.run_export import export_summary

    line = {"format": "keras", "out": "/x/m.keras", "model": "/r/best.keras",
            "model_hash": "sha256:" + "0" * 64, "rows_checked": 256,
            "max_abs_diff": 3.2e-7, "tolerance": 1e-5, "ok": True, "bytes": 1_234_567}  # fmt: skip
    text = export_summary(json.dumps(line) + "\n")
    assert text == (
        "256 rows give the same predictions (largest difference 3.2e-07, tolerance 1e-05); 1.2 MiB."
    )
    assert "{" not in text and len(text) < 120
    assert export_summary("not json") == "see the job's log for the details."


def test_predict_and_export_offer_an_experiments_best_trial_or_say_why_not(
    qtbot, tmp_path: Path
) -> None:
    """An experiment's folder has no best.keras of its own: Predict and Export use its best
    trial's (named in their tooltips); a run without a model says why they are off."""
    import json

    exp = tmp_path / "runs" / "kfold"
    for fold in ("fold-0", "fold-1"):
        (exp / fold).mkdir(parents=True)
    (exp / "fold-1" / "best.keras").write_bytes(b"a model file")
    trials = [{"id": f, "run": f} for f in ("fold-0", "fold-1")]
    summary = {"trials": trials, "summary": {"best_trial": "fold-1"}}
    (exp / "experiment.json").write_text(json.dumps(summary))
    early = tmp_path / "runs" / "early"
    early.mkdir()
    runs = [
        RunEntry(str(early), name="early", status="failed"),
        RunEntry(str(exp), name="kfold", status="finished"),
    ]
    window = open_project(qtbot, tmp_path, "Trials", runs=runs)
    page = window.page("Runs")
    page.select_run(str(exp))  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: page.predict_button.isEnabled(), timeout=10_000)  # type: ignore[attr-defined]
    assert "best trial's model (fold-1)" in page.predict_button.toolTip()  # type: ignore[attr-defined]
    assert "best trial's model (fold-1)" in page.export_button.toolTip()  # type: ignore[attr-defined]
    dialog = page.open_predict_dialog()  # type: ignore[attr-defined]
    qtbot.addWidget(dialog)
    assert Path(dialog.run.path()) == exp / "fold-1"
    dialog.close()
    page.select_run(str(early))  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: not page.predict_button.isEnabled(), timeout=10_000)  # type: ignore[attr-defined]
    tip = page.predict_button.toolTip()  # type: ignore[attr-defined]
    assert tip.startswith("No model to predict with: this run has no model yet")
    assert "No model to export" in page.export_button.toolTip()  # type: ignore[attr-defined]


def test_input_wait_band_labels_are_not_covered_by_the_data(qtbot) -> None:
    """The 5% and 20% labels sat under the input-wait curve where it crossed them."""
    import pyqtgraph as pg

    from guiapp.ui.pages.training.training_plots import TrainingPlots

    plots = TrainingPlots()
    qtbot.addWidget(plots)
    items = plots.wait_plot.items
    bands = [i for i in items if isinstance(i, pg.InfiniteLine)]
    data = [i for i in items if isinstance(i, pg.PlotDataItem)]
    assert len(bands) == 2 and data
    for band in bands:
        assert band.zValue() > max(d.zValue() for d in data)
        assert band.label.fill.color().alpha() > 0  # an opaque box behind the words


def test_jobs_panel_clears_ended_jobs_and_offers_no_resume_for_a_refused_one(
    qtbot, tmp_path: Path
) -> None:
    """Issue 34.9: a stopped generation shows its committed rows, without an ETA or rows/s
    of a job that no longer runs; a job refused before it started offers no Resume."""
    from guiapp.ui.jobs.cli_job import CliJob
    from guiapp.ui.jobs.jobs_panel import JobsPanel

    panel = JobsPanel()
    qtbot.addWidget(panel)
    args = [str(tmp_path / "big.h5"), "--n", "400000", "--shard-rows", "4096", "--workers", "1"]
    job = CliJob("generate big", "generate", args, resumable=True)
    row = panel.add_job(job)
    with qtbot.waitSignal(job.progress, timeout=30_000):
        job.start()
    qtbot.waitUntil(lambda: panel.table.item(0, JobsPanel.RATE).text() != "", timeout=30_000)
    with qtbot.waitSignal(job.finished, timeout=30_000):
        job.stop()
    end = job.last_event
    assert end["event"] == "stopped" and 0 < end["rows"] < end["total"]
    assert row.bar.value() == int(1000 * end["rows"] / end["total"])
    assert panel.table.item(0, JobsPanel.ETA).text() == ""
    assert panel.table.item(0, JobsPanel.RATE).text() == ""
    assert row.resume_button.isEnabled()

    x = np.zeros((40, 8, 8), "float32")
    x[3, 0, 0] = np.nan  # train refuses it before it starts: exit 2, a failed event
    with DatasetWriter(tmp_path / "nan.h5", sample_shape=(8, 8), dtype="float32",
                       class_names=["a", "b"]) as w:  # fmt: skip
        w.append(x, np.arange(40) % 2)
    args = ["--data", str(tmp_path / "nan.h5"), "--model", "cnn2d-small", "--out", "R"]
    refused = CliJob("train refused", "train", args, resumable=True, working_dir=str(tmp_path))
    refused_row = panel.add_job(refused)
    with qtbot.waitSignal(refused.finished, timeout=30_000):
        refused.start()
    assert refused.status == "failed" and "NaN" in refused.message
    assert not refused_row.resume_button.isEnabled()
