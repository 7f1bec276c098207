"""Errors that reach the user as one clear line (exit code 2), never as a traceback.

One error type, :class:`UserError`, with subclasses that say what kind of thing is wrong
(docs/ERRORS.md states what each one promises). The messages the store, generation and
training raise about options, datasets, run folders, checkpoints and disks are built here,
by the functions below, so that every such message is written once and reads the same
wherever it is raised: what is wrong, where, and what to do about it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class UserError(Exception):
    """Bad input or usage: the message says what is wrong, where, and how to fix it.

    Besides its one-line ``message`` an error carries fields that a program can act on
    without reading the text (docs/ERRORS.md, "The failed event"): ``option``, the CLI
    option (``"--on-error"``) or request field the problem concerns, so a dialog can put
    the user on its control; ``value``, what was given; ``problem`` and ``fix``, the two
    halves of the message. All are optional; none changes the message.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        option: str | None = None,
        value: Any = None,
        problem: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.option = option
        self.value = value
        self.problem = problem
        self.fix = fix or None

    def __str__(self) -> str:
        return self.message

    def fields(self) -> dict[str, Any]:
        """The error as a ``failed`` event's fields: message, option, value, problem, fix
        (JSON values; None where the raise site gave none)."""
        value = self.value
        if value is not None and not isinstance(value, (str, int, float, bool)):
            value = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
        return {
            "message": self.message,
            "option": self.option,
            "value": value,
            "problem": self.problem,
            "fix": self.fix,
        }

    def concerning(self, option: str, value: Any = None) -> UserError:
        """This error, now naming ``option`` (and ``value``) unless it named one already:
        for a caller that knows which option led to a problem found deeper down."""
        if self.option is None:
            self.option = option
            if value is not None and self.value is None:
                self.value = value
        return self

    def restated(self, message: str) -> UserError:
        """A plain UserError with another message (a prefix added) and the same fields."""
        return UserError(
            message, option=self.option, value=self.value, problem=self.problem, fix=self.fix
        )


class Problem(str):
    """One problem found by a check that returns text (a config's ``check()`` list): the
    text itself, plus the fields of :class:`UserError` for :func:`problems_error`."""

    option: str | None
    value: Any
    fix: str | None

    def __new__(
        cls, text: str, *, option: str | None = None, value: Any = None, fix: str | None = None
    ) -> Problem:
        self = super().__new__(cls, text)
        self.option, self.value, self.fix = option, value, fix
        return self


def problems_error(problems: Sequence[str]) -> UserError:
    """One error for a list of problems, ``"; "``-joined; it names the option of the
    first :class:`Problem` that names one (a dialog points at that control first)."""
    first = next((p for p in problems if isinstance(p, Problem) and p.option), None)
    if first is None:
        return UserError("; ".join(problems))
    one = len(problems) == 1
    return UserError(
        "; ".join(problems),
        option=first.option,
        value=first.value,
        fix=first.fix if one else None,
    )


class OptionError(UserError):
    """A command-line option (or its training-config key) with a value that cannot work:
    ``"--<name> <value>: <problem>; <fix>"``; its ``option`` is ``"--<name>"``."""

    def __init__(self, name: str, value: Any, problem: str, fix: str = "") -> None:
        shown = value if isinstance(value, str) else repr(value)
        text = f"--{name} {shown}: {problem}"
        if fix:
            text += f"; {fix}"
        super().__init__(text, option=f"--{name}", value=value, problem=problem, fix=fix)


class FileError(UserError):
    """A file that cannot be used as it is: ``"<path>: <problem><separator><fix>"``. With
    ``option`` (the option that gave the path, ``"--out"``), its value is the path."""

    separator = ". "

    def __init__(
        self,
        path: str | os.PathLike[str],
        problem: str,
        fix: str = "",
        *,
        option: str | None = None,
    ) -> None:
        self.path = os.fspath(path)
        text = f"{self.path}: {problem}"
        if fix:
            text += f"{self.separator}{fix}"
        super().__init__(
            text,
            option=option,
            value=self.path if option else None,
            problem=problem,
            fix=fix,
        )


class DatasetError(FileError):
    """A dataset file that cannot be used as it is: ``"<path>: <problem>. <fix>"``."""


class DiskError(FileError):
    """Writing a file failed for a reason outside the program: a full disk, a quota, a size
    limit, permissions or a read-only file system. Names the file and the free space."""


class Cancelled(Exception):
    """A long job was asked to stop (``stop`` on stdin, SIGINT or SIGTERM); exit code 130."""

    exit_code = 130


# -- options ------------------------------------------------------------------------------
SEED_MAX = 2**32 - 1  # numpy, Python and TensorFlow all take seeds in 0..2**32-1


#: JSON nested deeper than Python's parser can follow (about 1,000 levels of ``[`` or ``{``):
#: never a file guiapp wrote, and not one anyone means to give it.
TOO_DEEP = "not usable JSON (nested too deeply: over 1,000 levels of [ or {)"


def json_problem(exc: json.JSONDecodeError) -> str:
    """The one wording of invalid JSON: what is wrong and where in the text."""
    return f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"


def load_json(text: str, where: str) -> Any:
    """``json.loads(text)``; invalid JSON is a :class:`UserError` naming WHERE, the line and
    the column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: {json_problem(exc)}") from None
    except RecursionError:
        raise UserError(f"{where}: {TOO_DEEP}") from None


def check_seed(value: Any, name: str = "seed") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX:
        raise OptionError(name, value, f"a seed is an integer in 0..{SEED_MAX}", "give e.g. 0")


# -- disks and paths ----------------------------------------------------------------------
DISK_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file grew past the size limit (file too large)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
}
SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def os_error_code(exc: BaseException) -> int | None:
    """errno of an OSError, also when HDF5 only mentions it in its message."""
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code:
        return code
    m = re.search(r"errno = (\d+)", str(exc))
    return int(m.group(1)) if m else None


def free_space_text(path: str | os.PathLike[str]) -> str:
    """``"1.2 GiB free"`` on the file system holding ``path`` (its nearest existing folder)."""
    from .units import human_bytes

    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return f"{human_bytes(shutil.disk_usage(p).free)} free"
    except OSError:
        return "free space unknown"


def disk_error(
    path: str | os.PathLike[str], exc: BaseException, *, resume: str
) -> DiskError | None:
    """The error for a write that failed because of the disk or the folder, or None when
    ``exc`` is something else (a bug to report). ``resume`` says how to continue after."""
    code = os_error_code(exc)
    if code not in DISK_ERRNOS:
        return None
    if code in SPACE_ERRNOS:
        fix = f"Free some space, then {resume}"
    else:
        fix = f"Fix the folder's permissions or choose another, then {resume}"
    return DiskError(
        path,
        f"{DISK_ERRNOS[code]} while writing, {free_space_text(path)}",
        fix,
    )


def not_enough_space(folder: str | os.PathLike[str], needed: int, free: int, fix: str) -> UserError:
    gib = 2**30
    return DiskError(
        folder,
        f"not enough free disk space: the dataset needs {needed / gib:.2f} GiB more, "
        f"{free / gib:.2f} GiB are free",
        fix,
    )


def unwritable_output(path: str | os.PathLike[str], why: str, option: str = "--out") -> UserError:
    return FileError(
        path, f"cannot be written ({why})", f"Choose another {option}", option=_flag(option)
    )


def _flag(option: str) -> str | None:
    """``option`` as an error's field when it is a flag (``--out``), not words of a
    message (``output path``)."""
    return option if option.startswith("--") else None


def check_writable_output(
    path: str | os.PathLike[str], *, folder: bool, option: str = "--out"
) -> None:
    """``path`` can be created (or, for a folder, written into): the right kind of thing is
    there or nothing is, and the nearest existing folder above it accepts new files."""
    p = Path(path).absolute()
    for q in (p, *p.parents):  # a link to nothing: mkdir and open would fail on it
        if q.is_symlink() and not q.exists():
            raise FileError(
                q,
                f"is a symbolic link to {os.readlink(q)}, which does not exist",
                f"Create what it points to, remove the link, or choose another {option}",
                option=_flag(option),
            )
    if p.exists():
        if folder and not p.is_dir():
            raise FileError(
                p, "is a file, not a folder", f"Give a folder as {option}", option=_flag(option)
            )
        if not folder and p.is_dir():
            raise FileError(
                p, "is a folder", f"Give a file name like NAME.h5 as {option}", option=_flag(option)
            )
    top = p if folder and p.is_dir() else p.parent
    while not top.exists() and top != top.parent:
        top = top.parent
    if not top.is_dir():
        raise unwritable_output(p, f"{top} is a file, not a folder", option)
    probe = top / f".guiapp-write-test-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        code = os_error_code(exc)
        why = DISK_ERRNOS.get(code or 0, os.strerror(code) if code else str(exc))
        raise unwritable_output(p, f"{top}: {why}", option) from None


# -- datasets -----------------------------------------------------------------------------
def no_rows(path: str | os.PathLike[str]) -> DatasetError:
    return DatasetError(path, "has no committed rows", "Generate or import rows into it first")


def being_written(path: str | os.PathLike[str]) -> DatasetError:
    return DatasetError(
        path,
        "is being written by another job (or its worker processes)",
        "Wait for it to finish or stop it first",
    )


def unfinished(path: str | os.PathLike[str], sealed: int, shards: int) -> DatasetError:
    return DatasetError(
        path,
        f"is unfinished ({sealed} of {shards} shard(s) sealed), so its rows may still change",
        "Finish it first (rerun the same 'guiapp generate' with --resume) and train afterwards",
    )


def nonfinite_values(path: str | os.PathLike[str], count: int, first: str = "") -> DatasetError:
    where = f", first in {first}" if first else ""
    return DatasetError(
        path,
        f"holds {count} NaN/Inf value(s){where}",
        "Clean the source data and write the dataset again",
    )


def nonfinite_generated(where: str, count: int, rows: int, first: str) -> UserError:
    problem = f"produced {count} NaN/Inf value(s) in {rows} rows, first at {first}"
    fix = (
        "Fix the generator, or pass --on-nonfinite skip (with --overwrite) to drop "
        "such rows, counted in the dataset's provenance"
    )
    return UserError(
        f"{where}: {problem}. {fix}",
        option="--on-nonfinite",
        value="abort",
        problem=problem,
        fix=fix,
    )


# -- training runs ------------------------------------------------------------------------
def restart_fix(run: str | os.PathLike[str]) -> str:
    return (
        f"Start it again from the beginning with --restart (replaces {os.fspath(run)}), "
        "or choose another --out"
    )


#: the way out of a run folder that cannot be resumed as asked
RESTART_OR_OUT = "start it again with --restart, or choose another --out"


def run_exists(run: str | os.PathLike[str]) -> FileError:
    fix = f"Resume it with --resume, {RESTART_OR_OUT}"
    return FileError(run, "a run already exists there", fix, option="--out")


def nothing_to_resume(run: str | os.PathLike[str]) -> FileError:
    return FileError(
        run,
        "there is no run to resume here (no config.json)",
        "Start it without --resume",
        option="--resume",
    )


def run_settings_differ(run: str | os.PathLike[str], differences: Sequence[str]) -> FileError:
    return FileError(
        run,
        "this run was started with other data, model or settings (" + "; ".join(differences) + ")",
        f"Resume it with the same options, {RESTART_OR_OUT}",
        option="--restart",
    )


def checkpoint_damaged(
    path: str | os.PathLike[str], why: str, run: str | os.PathLike[str]
) -> FileError:
    return FileError(
        path, f"the checkpoint is damaged ({why})", restart_fix(run), option="--restart"
    )


def not_a_run_folder(run: str | os.PathLike[str], restart: bool = True) -> FileError:
    then = "--restart will not replace it" if restart else "a run would overwrite its files"
    return FileError(
        run,
        f"holds files but is not a run folder (no config.json), so {then}",
        "Choose another --out (an empty or new folder)",
        option="--out",
    )


def loss_not_finite(epoch: int, step: int, value: float, what: str = "loss") -> UserError:
    """Training diverged: ``epoch`` 0-based (shown 1-based), ``step`` the 1-based step of
    that epoch whose loss (or, with ``what="weights"``, whose update) was NaN or infinite."""
    word = "NaN" if value != value else "Inf"  # NaN is the one value unequal to itself
    return UserError(
        f"{what} became {word} at epoch {epoch + 1} step {step}: "
        "lower the learning rate or check the data"
    )
