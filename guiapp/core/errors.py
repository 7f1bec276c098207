"""Errors that reach the user as one clear line (exit code 2), never as a traceback."""

from __future__ import annotations

import os


class UserError(Exception):
    """Bad input or usage: the message says what is wrong, where, and how to fix it."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class FileError(UserError):
    """A file that cannot be used as it is: ``"<path>: <problem><separator><fix>"``."""

    separator = ". "

    def __init__(self, path: str | os.PathLike[str], problem: str, fix: str = "") -> None:
        self.path = os.fspath(path)
        self.problem = problem
        self.fix = fix
        text = f"{self.path}: {problem}"
        if fix:
            text += f"{self.separator}{fix}"
        super().__init__(text)


class DatasetError(FileError):
    """A dataset file that cannot be used as it is: ``"<path>: <problem>. <fix>"``."""


class Cancelled(Exception):
    """A long job was asked to stop (``stop`` on stdin, SIGINT or SIGTERM); exit code 130."""

    exit_code = 130
