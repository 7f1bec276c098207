"""The Runs page's Export model: ``guiapp export`` of a run's ``best.keras`` as a job,
into the one remembered export folder, saying which checkpoint (epoch, scores) it holds.
The job runs the export's request (:class:`ExportRequest`, saved beside the target as
``.NAME.request.json``): ``guiapp export --request FILE``, no argument list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox

from guiapp.core.requests import ExportRequest
from guiapp.core.train.run_files import checkpoint_text, model_folder
from guiapp.core.units import human_bytes
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.jobs.request_job import request_job
from guiapp.ui.pages.base import PagePart
from guiapp.ui.widgets.outputs import (
    export_folder,
    output_path_problem,
    remember_export,
    show_status,
)


class RunExport(PagePart):
    """Mixed into the Runs page: uses its ``current()``, ``summary`` and ``job_started``."""

    summary: QLabel

    def current(self) -> dict[str, Any] | None: ...

    def export_model(self) -> CliJob | None:
        """``guiapp export`` as a job: the format follows the name (.keras, .tflite, or a
        SavedModel folder); the job reloads the export and compares its predictions."""
        info = self.current()
        if info is None:
            return None
        start = str(export_folder() / f"{Path(info['path']).name}.keras")
        target, chosen = QFileDialog.getSaveFileName(
            self,
            "Export model",
            start,
            "Keras model (*.keras);;TensorFlow Lite (*.tflite);;SavedModel folder (*)",
        )
        return self.export_to(target) if target else None

    def export_to(self, target: str) -> CliJob | None:
        """Export the selected run's ``best.keras`` to ``target`` as a job; when it ends,
        the status bar names the file and which checkpoint (epoch, scores) it holds."""
        info = self.current()
        if info is None:
            return None
        problem = output_path_problem(target, "Export")
        if problem:
            QMessageBox.warning(self, "Export model", problem)
            return None
        remember_export(target)
        from guiapp.core.errors import UserError

        try:
            job = export_job(info, target)
        except (OSError, UserError) as exc:
            QMessageBox.warning(self, "Export model", f"Cannot save the job's request ({exc})")
            return None
        what = checkpoint_text(info.get("best"))
        job.finished.connect(
            lambda ok, msg, job=job, t=target, w=what: self._exported(ok, msg, job, t, w)
        )
        self.job_started.emit(job)
        job.start()
        return job

    def _exported(self, ok: bool, message: str, job: CliJob, target: str, what: str) -> None:
        if not ok:
            QMessageBox.warning(self, "Export model", message)
            return
        text = f"Exported {what} to {target}, reloaded and checked"
        self.summary.setText(f"{text}: {export_summary(job.output)}")
        show_status(self, text)


def export_request(info: dict[str, Any], target: str) -> ExportRequest:
    """The request that exports the run ``info`` shows to ``target``: the format follows
    the name (.keras, .tflite, else a SavedModel folder); an experiment's model is its best
    trial's."""
    fmt = {".keras": "keras", ".tflite": "tflite"}.get(Path(target).suffix, "savedmodel")
    folder, _note = model_folder(info)
    return ExportRequest(run=str(folder or info["path"]), format=fmt, out=target)


def export_job(info: dict[str, Any], target: str) -> CliJob:
    """The (not yet started) job that runs :func:`export_request`, saved beside the
    target (OSError or UserError: it could not be saved)."""
    return request_job(export_request(info, target), target, events=False)


def export_summary(output: str) -> str:
    """``guiapp export``'s JSON line in words (it was shown raw, cut off mid-key)."""
    try:
        r = json.loads(output.strip().splitlines()[-1])
        return (
            f"{r['rows_checked']:,} rows give the same predictions (largest difference "
            f"{r['max_abs_diff']:.1e}, tolerance {r['tolerance']:.0e}); {human_bytes(r['bytes'])}."
        )
    except (ValueError, IndexError, KeyError, TypeError):
        return "see the job's log for the details."
