"""The base of the dialogs whose form is one job's request (Generate, Import, Predict)."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from guiapp.core.requests import Request, to_argv


class RequestDialog(QDialog):
    """A dialog whose form builds a job's :class:`Request` (:meth:`request`); the job runs
    the request, saved (:func:`guiapp.ui.jobs.request_job.request_job`)."""

    def request(self) -> Request:
        """The form's request (ValueError: what to fix)."""
        raise NotImplementedError

    def cli_args(self) -> list[str]:
        """The arguments of ``guiapp COMMAND`` the form's request stands for (ValueError:
        what to fix); the job itself runs the saved request."""
        return to_argv(self.request())
