"""The Generate, Import and Predict dialogs (and the Runs page's Export) build their job's
request (issue 29.2): their controls come from the request type, Start saves the request
beside the output and the job runs ``--request FILE``; the generated dataset keeps it, and
Resume reruns the reference."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QWidget

from guiapp.core.requests import (
    ExportRequest,
    GenerateRequest,
    ImportRequest,
    PredictRequest,
    controls,
    flags,
    gui_request_path,
    load_request,
    output_request_path,
    rerun_argv,
)
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from guiapp.ui.dialogs.import_dialog import ImportDialog
from guiapp.ui.dialogs.predict_dialog import PredictDialog
from guiapp.ui.jobs.cli_job import written_dataset
from guiapp.ui.pages.runs.run_export import export_job, export_request


def test_generate_dialog_builds_its_request_and_the_job_runs_it(qtbot, tmp_path: Path) -> None:
    dialog = GenerateDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    # every control the form maps is a real widget and a field of the request type
    assert {
        **controls(GenerateRequest, GenerateDialog.FIELDS),
        "--manifest": "manifest",
    } == GenerateDialog.CONTROLS
    for field, widget in GenerateDialog.FIELDS.items():
        assert field in flags(GenerateRequest) and isinstance(getattr(dialog, widget), QWidget)
    dialog.generator.setCurrentText("kmer1d")
    dialog.rows.setText("1,500")
    dialog.seed.setValue(4)
    dialog.workers.setValue(1)
    dialog.param_widgets["k"].setText("5")  # type: ignore[attr-defined]
    out = tmp_path / "data" / "reads.h5"
    dialog.output.set_path(out)
    req = dialog.request()
    assert (req.generator, req.n, req.seed, req.shape, req.dtype) == (
        "kmer1d", 1500, 4, "126", "uint16"
    )  # fmt: skip
    assert isinstance(req.params, dict) and req.params["k"] == 5
    started: list = []
    dialog.job_ready.connect(lambda job, where: started.append((job, where)))
    job = dialog.start()
    assert job is not None and started == [(job, out)]
    saved = gui_request_path(out)
    assert job.args == ["--request", str(saved)]  # no option list: the request file
    assert load_request(saved, GenerateRequest) == req.replace(out=str(out))
    assert written_dataset(job) == out  # the pages that follow jobs find its dataset
    job.start()
    qtbot.waitUntil(lambda: job.status != "running", timeout=60_000)
    assert job.status == "finished", job.log_text()
    kept = load_request(output_request_path(out), GenerateRequest)
    assert kept == req.replace(out=str(out))  # the dataset keeps the request that made it
    assert rerun_argv(job.args) == ["--request", str(saved), "--resume"]


def test_predict_dialog_builds_its_request(qtbot, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    dialog = PredictDialog(run=str(tmp_path / "run"), datasets=[("d", str(tmp_path / "d.h5"))])
    qtbot.addWidget(dialog)
    assert controls(PredictRequest, PredictDialog.FIELDS) == PredictDialog.CONTROLS
    for widget in PredictDialog.FIELDS.values():
        assert isinstance(getattr(dialog, widget), QWidget)
    dialog.top_k.setValue(3)
    dialog.split.setCurrentText("val")
    dialog.probs.setChecked(True)
    req = dialog.request()
    assert req == PredictRequest(
        model=str(tmp_path / "run"),
        data=str(tmp_path / "d.h5"),
        out=str(tmp_path / "run" / "predictions-new.h5"),
        split="val",
        top_k=3,
        probs=True,
    )
    job = dialog.start()  # (it fails at once: the run folder holds no model)
    assert job is not None
    saved = gui_request_path(req.out)
    assert job.args == ["--request", str(saved)]
    assert load_request(saved, PredictRequest) == req
    qtbot.waitUntil(lambda: job.status != "running", timeout=60_000)
    assert job.status == "failed" and "run" in job.message


def test_import_dialog_builds_its_request(qtbot, tmp_path: Path) -> None:
    """The form's controls are the request type's fields; Start saves the request beside
    the output and the job runs ``--request FILE`` (no option list: Resume reruns it)."""
    src = tmp_path / "t.csv"
    src.write_text("label,data\na,1 2\nb,3 4\n")
    dialog = ImportDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    assert {**controls(ImportRequest, ImportDialog.FIELDS), "--out": "output"} == (
        ImportDialog.CONTROLS
    )
    for field, widget in ImportDialog.FIELDS.items():
        assert field in flags(ImportRequest) and isinstance(getattr(dialog, widget), QWidget)
    dialog.source.set_path(src)
    dialog.delimiter.setText(",")
    dialog.length.setValue(3)
    dialog.truncate.setCurrentText("post")
    dialog.class_names.setText("a, b")
    dialog.keep_fields.setText(" label , data")
    dialog.seed.setValue(7)
    out = tmp_path / "data" / "t.h5"
    req = dialog.request()
    assert req == ImportRequest(
        src=str(src), out=str(out), format="csv", delimiter=",", length=3, truncate="post",
        class_names="a, b", keep_fields="label,data", seed=7,
    )  # fmt: skip
    job = dialog.start()
    assert job is not None
    saved = gui_request_path(out)
    assert job.args == ["--request", str(saved)]
    assert load_request(saved, ImportRequest) == req
    assert written_dataset(job) == out
    assert rerun_argv(job.args) == ["--request", str(saved), "--resume"]


def test_the_runs_pages_export_runs_its_request(qtbot, tmp_path: Path) -> None:
    """Export model builds an ExportRequest, saves it beside the target and the job runs
    ``--request FILE``; a run without a model is refused by the job in one line."""
    run, target = tmp_path / "run", tmp_path / "exports" / "m.tflite"
    run.mkdir()
    job = export_job({"path": str(run)}, str(target))
    saved = gui_request_path(target)
    assert job.args == ["--request", str(saved)]
    assert load_request(saved, ExportRequest) == ExportRequest(
        run=str(run), format="tflite", out=str(target)
    )
    assert export_request({"path": str(run)}, str(tmp_path / "sm")).format == "savedmodel"
    job.start()
    qtbot.waitUntil(lambda: job.status != "running", timeout=60_000)
    assert job.status == "failed" and str(run) in job.message, job.message
