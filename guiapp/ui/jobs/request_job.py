"""The job that runs a request the way the GUI starts every one: the request saved beside
its output (``.OUT.request.json``, atomically), the job running ``guiapp COMMAND --request
FILE`` (no argument list built in the GUI)."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QObject

from guiapp.core.requests import Request, gui_request_path, request_argv, save_request
from guiapp.ui.jobs.cli_job import CliJob


def request_job(
    req: Request,
    out: str | os.PathLike[str],
    *,
    name: str | None = None,
    events: bool = True,
    resumable: bool = False,
    parent: QObject | None = None,
) -> CliJob:
    """The (not yet started) job that runs ``req``, saved beside its output ``out``;
    named ``COMMAND OUT`` unless ``name`` is given (OSError or UserError: the request
    could not be saved)."""
    path = save_request(gui_request_path(out), req)
    return CliJob(
        name or f"{req.COMMAND} {Path(out).name}",
        req.COMMAND,
        request_argv(path, req),
        events=events,
        resumable=resumable,
        parent=parent,
    )
