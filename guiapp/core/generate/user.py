"""User generators: a Python file with ``generate(rng, n, params) -> (x, y)``.

The file is code: it is imported in each worker process (and once in the job's own
process, to measure and check it before anything is written). Its contract:

``generate(rng, n, params)``
    ``rng``     a ``numpy.random.Generator``; draw every random number from it (never from
                ``numpy.random`` or ``random``), or the dataset is not reproducible.
    ``n``       how many samples to return.
    ``params``  a dict: the ``--params`` JSON object plus ``shape`` (list of ints),
                ``classes`` (int) and ``dtype`` (str).
    returns     ``(x, y)``: ``x`` an array of shape ``(n, *shape)`` whose dtype converts to
                ``dtype`` without loss of kind (float64 -> float32 is fine, float -> uint16 is
                not); ``y`` ``n`` integer labels in ``0..classes-1``. Or ``(x, y, groups)``:
                ``groups`` ``n`` integers >= 0, each sample's group (its patient, slide,
                genome: rows of one group never cross train/validation/test). Without
                groups each sample is its own group (augmented copies share theirs).

Optionally the file defines ``CLASS_NAMES = [...]`` (one name per class).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import multiprocessing as mp
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import numpy as np

from ..errors import UserError

GenerateFn = Callable[[np.random.Generator, int, dict[str, Any]], Any]


def file_digest(path: str | Path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the generator file ({exc.strerror})") from None


def _user_traceback(exc: BaseException, path: Path) -> str:
    """The traceback's frames from the user's file (all frames if none is), and the error."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if Path(f.filename).resolve() == path] or frames
    lines = traceback.format_list(mine) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last):\n" + "".join(lines).rstrip()


class _ExitCalled(BaseException):
    """User code called ``os._exit(status)`` in the job's own process."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _exit_called(status: int) -> NoReturn:
    raise _ExitCalled(status)


@contextmanager
def _user_code(path: Path, failed: str) -> Iterator[None]:
    """Run user code; any error in it becomes a UserError with the user's own frames.
    What it prints goes to stderr (the job's log): stdout carries the job's events, and a
    printed ``{"event": "finished"}`` would be read as one.

    In the job's own process ``os._exit`` is an error too: the job would vanish without a
    word and leave its dataset locked. (In a worker process it stays a death, which the job
    sees and reports with the worker's exit status.)"""
    real_exit = os._exit
    if mp.parent_process() is None:
        os._exit = _exit_called
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except KeyboardInterrupt:
        raise
    except _ExitCalled as exc:
        raise UserError(
            f"{path}: {failed}: it called os._exit({exc.status}). A generator returns "
            "(x, y); it never ends the process"
        ) from None
    except BaseException as exc:  # noqa: BLE001 - any error in user code is reported
        raise UserError(f"{path}: {failed}:\n{_user_traceback(exc, path)}") from None
    finally:
        os._exit = real_exit


def load_module(path: str | Path) -> ModuleType:
    path = Path(path).resolve()
    if not path.is_file():
        raise UserError(f"{path}: generator file not found. Give the path of a .py file")
    name = "guiapp_user_generator_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: cannot be loaded as a Python module. Give a .py file")
    module = importlib.util.module_from_spec(spec)
    with _user_code(path, "importing the generator file failed"):
        spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def load(path: str | Path) -> GenerateFn:
    """The file's ``generate`` function, or a clear error."""
    module = load_module(path)
    fn = getattr(module, "generate", None)
    if not callable(fn):
        raise UserError(
            f"{Path(path).resolve()}: defines no function generate(rng, n, params). "
            "Add one that returns (x, y) for n samples (see docs/GENERATION.md)"
        )
    return fn  # type: ignore[no-any-return]


def class_names(path: str | Path, classes: int) -> list[str]:
    names = getattr(load_module(path), "CLASS_NAMES", None)
    if names is None:
        return [f"class_{c}" for c in range(classes)]
    names = [str(s) for s in names]
    if len(names) != classes:
        raise UserError(
            f"{Path(path).resolve()}: CLASS_NAMES has {len(names)} names but --classes is "
            f"{classes}. Make them agree"
        )
    return names


def returns_groups(path: str | Path, params: dict[str, Any]) -> bool:
    """Whether the file's ``generate`` returns ``(x, y, groups)`` (one small trial call)."""
    fn = load(path)
    where = Path(path).resolve()
    with _user_code(where, "generate(rng, 4, params) raised an error"):
        out = fn(np.random.default_rng(0), 4, dict(params))
    return isinstance(out, tuple) and len(out) == 3


def call(
    fn: GenerateFn, path: str | Path, rng: np.random.Generator, n: int, params: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Run the user's function and check what it returns against the dataset's schema:
    ``(x, y, groups or None)``."""
    where = Path(path).resolve()
    with _user_code(where, f"generate(rng, {n}, params) raised an error"):
        out = fn(rng, n, dict(params))
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        raise UserError(
            f"{where}: generate() returned {type(out).__name__}, not a tuple (x, y) or "
            "(x, y, groups). Return two arrays (samples and labels), or three with groups"
        )
    groups = None if len(out) == 2 else _groups(where, np.asarray(out[2]), n)
    x, y = np.asarray(out[0]), np.asarray(out[1])
    shape = tuple(int(s) for s in params["shape"])
    dtype = np.dtype(params["dtype"])
    if x.shape != (n, *shape):
        raise UserError(
            f"{where}: generate() returned x of shape {x.shape}, expected {(n, *shape)}. "
            "Return n samples of the dataset's --shape"
        )
    if x.dtype != dtype and not np.can_cast(x.dtype, dtype, casting="same_kind"):
        raise UserError(
            f"{where}: generate() returned x of dtype {x.dtype}, which cannot be stored as "
            f"{dtype}. Return {dtype} (or pass a matching --dtype)"
        )
    if y.shape != (n,) or (n and y.dtype.kind not in "iu"):
        raise UserError(
            f"{where}: generate() returned labels y of shape {y.shape} and dtype {y.dtype}; "
            f"expected {n} integers. Return one class index per sample"
        )
    k = int(params["classes"])
    if n and (int(y.min()) < 0 or int(y.max()) >= k):
        bad = int(y[(y < 0) | (y >= k)][0])
        raise UserError(
            f"{where}: generate() returned label {bad}, outside 0..{k - 1}. "
            "Return class indices below --classes"
        )
    return x.astype(dtype, copy=False), y.astype(np.int32, copy=False), groups


def _groups(where: Path, g: np.ndarray, n: int) -> np.ndarray:
    """The user's groups checked: ``n`` integers >= 0."""
    if g.shape != (n,) or (n and g.dtype.kind not in "iu"):
        raise UserError(
            f"{where}: generate() returned groups of shape {g.shape} and dtype {g.dtype}; "
            f"expected {n} integers. Return one integer group id per sample"
        )
    if n and (int(g.min()) < 0 or (g.dtype.kind == "u" and int(g.max()) >= 2**63)):
        i = int(np.flatnonzero(g < 0)[0]) if int(g.min()) < 0 else int(np.argmax(g))
        raise UserError(
            f"{where}: generate() returned group {int(g[i])} for sample {i}; "
            "group ids are integers in 0..2^63-1"
        )
    return g.astype(np.int64, copy=False)
