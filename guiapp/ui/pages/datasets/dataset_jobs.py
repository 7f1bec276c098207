"""The Datasets page's jobs: make a dataset (and resume a half-made one), check one.

A dataset joins the project as soon as its job wrote anything, so a stopped or half-made
one is listed ("unfinished") with Resume, which reruns its recorded command
(``project.recipes``, kind ``dataset_job``) with ``--resume``: the reference to its saved
request (``--request FILE``, core/requests.py; the Generate and Import dialogs save it
beside the output), never an argument list of options (a project saved by an earlier
version may hold one: it is rerun the same way). A check's result is kept in
``project.ui["checks"]`` while the dataset's index file is unchanged (:func:`saved_checks`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QMessageBox

from guiapp.core.events import Failure
from guiapp.core.project import DatasetRef, Project, RecipeEntry
from guiapp.core.requests import CheckRequest, rerun_argv, to_argv, without_switches
from guiapp.ui.jobs.cli_job import CliJob
from guiapp.ui.pages.base import PagePart


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def saved_checks(project: Project) -> dict[str, str]:
    """The kept check results of the project's datasets whose index is unchanged."""
    saved = project.ui.get("checks")
    out: dict[str, str] = {}
    if not isinstance(saved, dict):
        return out
    for ref in project.datasets:
        entry = saved.get(project.relativize(ref.path))
        if isinstance(entry, dict) and entry.get("mtime") == _mtime(ref.path):
            out[str(ref.path)] = str(entry.get("status", ""))
    return out


DATASET_JOB = "dataset_job"  #: the recipe kind of a dataset's job


class DatasetJobs(PagePart):
    """Mixed into :class:`~.datasets_page.DatasetsPage`; uses its project, tables and signals."""

    info: dict[str, dict[str, Any]]
    checks: dict[str, str]
    #: the last failure of each command's dataset job ("import", "generate"), until the
    #: next one starts: the dialog opened next marks the control of its option
    failures: dict[str, Failure]

    if TYPE_CHECKING:  # the page's own (declared for mypy only: no run-time stand-ins)

        def add_dataset(self, path: Path, name: str | None = None) -> None: ...
        def forget(self, path: Path) -> None: ...
        def selected_ref(self) -> DatasetRef | None: ...
        def _fill_table(self) -> None: ...

    def start_dataset_job(self, job: CliJob, out: Path) -> None:
        """Run a job that writes ``out``; when it ends with anything written (finished,
        stopped, failed midway), the dataset joins the project; its command is recorded
        so that an unfinished one can be resumed, after a reopen too."""
        job.working_dir = str(self.project.folder)
        job.finished.connect(lambda ok, _msg, out=out: self._dataset_job_done(ok, Path(out)))
        job.finished.connect(lambda _ok, _msg, job=job: self._keep_failure(job))
        self.failures.pop(job.command, None)
        args = without_switches(job.args)  # a dialog's job: --request FILE
        recipe = RecipeEntry(
            kind=DATASET_JOB,
            name=job.name,
            path=str(Path(out).absolute()),
            command=job.command,
            args=args,
        )
        self.project.recipes[:] = [r for r in self.project.recipes if r.path != recipe.path] + [
            recipe
        ]
        self.job_started.emit(job)
        job.start()

    def _keep_failure(self, job: CliJob) -> None:
        if job.failure is not None:
            self.failures[job.command] = job.failure

    def _dataset_job_done(self, ok: bool, out: Path) -> None:
        if ok or out.exists():
            self.add_dataset(out)

    def _resumable(self, ref: DatasetRef) -> RecipeEntry | None:
        """The recorded job of an unfinished dataset (None when complete or unknown)."""
        info = self.info.get(str(ref.path))
        if info is None or info.get("complete", True):
            return None
        return next(
            (
                r
                for r in self.project.recipes
                if r.kind == DATASET_JOB
                and r.path == str(ref.path)
                and r.command
                and r.args is not None
            ),
            None,
        )

    def resume_selected(self) -> CliJob | None:
        """Resume the selected unfinished dataset's job where it stopped."""
        ref = self.selected_ref()
        recipe = self._resumable(ref) if ref is not None else None
        if ref is None or recipe is None or recipe.args is None:
            return None
        job = CliJob(
            recipe.name or f"resume {ref.name}",
            recipe.command,
            rerun_argv(recipe.args),
            resumable=True,
        )
        self.forget(ref.path)
        self.start_dataset_job(job, ref.path)
        return job

    def check_selected(self) -> CliJob | None:
        ref = self.selected_ref()
        if ref is None:
            return None
        key = str(ref.path)
        args = to_argv(CheckRequest(path=key, json=True))
        job = CliJob(f"check {ref.name}", "check", args, events=False)
        job.finished.connect(lambda ok, msg, job=job, key=key: self._check_done(job, key))
        self.checks[key] = "checking…"
        self._fill_table()
        self.job_started.emit(job)
        job.start()
        return job

    def _check_done(self, job: CliJob, key: str) -> None:
        try:
            report = json.loads(job.output)
        except json.JSONDecodeError:
            report = None
        if isinstance(report, dict):
            problems = report.get("problems") or []
            self.checks[key] = "checked OK" if report.get("ok") else f"{len(problems)} problem(s)"
            self._keep_check(key)
            if problems:
                QMessageBox.warning(self, "Dataset check", "\n".join(map(str, problems[:20])))
        else:
            self.checks[key] = f"check failed: {job.message}"
        self._fill_table()

    def _keep_check(self, key: str) -> None:
        """Keep the check's result in the project while the index file stays as it is."""
        checks = self.project.ui.setdefault("checks", {})
        checks[self.project.relativize(key)] = {
            "status": self.checks[key],
            "mtime": _mtime(Path(key)),
        }
        self.project_changed.emit()
