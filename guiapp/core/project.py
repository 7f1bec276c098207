"""The ``*.gproj`` project file: datasets, recipes, model specs, training configs and runs.

A project file is JSON::

    {"schema_version": 1, "name": "Demo",
     "datasets": [{"name": "digits", "path": "data/digits.h5"}],
     "recipes": [...], "models": [...], "training": [...],
     "runs": [{"path": "runs/2024-01-01_cnn", ...}],
     "ui": {"checks": {...}, "forms": {...}, "jobs": [...]}}

``ui`` is what the window shows and should show again on reopen (datasets checked OK,
the Training form's values, the Jobs panel's history); it is optional, any JSON object.
The lists hold typed entries (:class:`DatasetRef` here, the others in
``core/project_entries.py``); a key this guiapp does not know, in an entry or at the top
level, is kept and saved back unchanged. Dataset and run paths are stored relative to
the project file's folder and held absolute in memory. Older files are upgraded in memory through explicit
``@migrator(from, to)`` steps; a newer, unreadable or malformed file raises
:class:`ProjectError` and is never written by :meth:`Project.load`. :meth:`Project.save`
is atomic and keeps the previous file as ``NAME.gproj.bak``.

This module never imports Qt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .atomic import atomic_write_bytes
from .errors import TOO_DEEP, FileError, json_problem
from .project_entries import EntryError, ModelEntry, RecipeEntry, RunEntry, TrainingEntry

__all__ = [
    "SCHEMA_VERSION",
    "SUFFIX",
    "DatasetRef",
    "ModelEntry",
    "Project",
    "ProjectError",
    "RecipeEntry",
    "RunEntry",
    "TrainingEntry",
    "migrator",
]

SCHEMA_VERSION = 1

SUFFIX = ".gproj"

JsonDict = dict[str, Any]
Migration = Callable[[JsonDict], JsonDict]
_E = TypeVar("_E")

_UNCHANGED = "The file was not changed."
#: the top-level keys of the file (others are kept in ``Project.extra``)
_KEYS = ("schema_version", "name", "datasets", "recipes", "models", "training", "runs", "ui")


class ProjectError(FileError):
    """A project file that cannot be read or written; one line naming file, problem and fix."""

    separator = "; "


# --------------------------------------------------------------------------- migrations

_MIGRATIONS: dict[int, tuple[int, Migration]] = {}


def migrator(from_version: int, to_version: int) -> Callable[[Migration], Migration]:
    """Register ``func(data) -> data`` as the step from ``from_version`` to ``to_version``."""
    if to_version <= from_version:
        raise ValueError(f"migrator({from_version}, {to_version}): to_version must be larger")

    def register(func: Migration) -> Migration:
        if from_version in _MIGRATIONS:
            raise ValueError(f"migrator({from_version}, ...) is already registered")
        _MIGRATIONS[from_version] = (to_version, func)
        return func

    return register


@migrator(0, 1)
def _v0_to_v1(data: JsonDict) -> JsonDict:
    """v0 listed dataset paths in ``data`` and had no recipes, training configs or runs."""
    out = {k: v for k, v in data.items() if k != "data"}
    paths = data.get("data", [])
    if isinstance(paths, list):
        out["datasets"] = [
            {"name": Path(str(p)).stem, "path": p} if isinstance(p, str) else p for p in paths
        ]
    else:
        out["datasets"] = paths  # left for validation to name
    for key in ("recipes", "models", "training", "runs"):
        out.setdefault(key, [])
    out["schema_version"] = 1
    return out


def _migrate(path: Path, data: JsonDict, version: int) -> JsonDict:
    while version < SCHEMA_VERSION:
        step = _MIGRATIONS.get(version)
        if step is None:
            raise ProjectError(
                path,
                f"schema_version {version} has no upgrade step in this guiapp",
                f"open it with the guiapp version that wrote it. {_UNCHANGED}",
            )
        version, func = step
        data = func(dict(data))
        data["schema_version"] = version
    return data


# --------------------------------------------------------------------------- model


@dataclass
class DatasetRef:
    """A dataset of the project: a display name and the absolute path of its ``NAME.h5``."""

    name: str
    path: Path


@dataclass
class Project:
    """An open project. ``path`` is ``None`` until an untitled project is first saved.

    The lists hold typed entries (``core/project_entries.py``). Paths in ``datasets``
    and each run's ``path`` are absolute in memory.
    ``extra``: the file's top-level keys this guiapp does not know (a newer one wrote
    them), saved back unchanged. ``migrated_from`` is the file's schema_version when
    :meth:`load` upgraded it.
    """

    path: Path | None
    name: str
    datasets: list[DatasetRef] = field(default_factory=list)
    recipes: list[RecipeEntry] = field(default_factory=list)
    models: list[ModelEntry] = field(default_factory=list)
    training: list[TrainingEntry] = field(default_factory=list)
    runs: list[RunEntry] = field(default_factory=list)
    ui: JsonDict = field(default_factory=dict)
    extra: JsonDict = field(default_factory=dict)
    migrated_from: int | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def new(cls, path: str | os.PathLike[str] | None, name: str) -> Project:
        """An empty project in memory; nothing is written until :meth:`save`."""
        return cls(path=None if path is None else Path(os.path.abspath(path)), name=name)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Project:
        """Read, migrate and validate a project file. Never writes anything."""
        file = Path(os.path.abspath(path))
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ProjectError(file, "no such file", "check the path") from None
        except IsADirectoryError:
            raise ProjectError(
                file, "is a folder, not a project file", "pick a .gproj file"
            ) from None
        except UnicodeDecodeError:
            raise ProjectError(
                file, "is not UTF-8 text", f"pick a .gproj file or restore {file.name}.bak"
            ) from None
        except OSError as exc:
            raise ProjectError(
                file, f"cannot be read ({exc.strerror})", "check the file's permissions"
            ) from None
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            what = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else TOO_DEEP
            raise ProjectError(
                file, f"is {what}", f"fix the file or restore {file.name}.bak. {_UNCHANGED}"
            ) from None
        return cls.from_dict(data, file)

    @classmethod
    def from_dict(cls, data: object, path: Path) -> Project:
        """Build a project from parsed JSON that was read from ``path``."""
        if not isinstance(data, dict):
            raise _structure(path, f"the top level is a {_kind(data)}, not an object")
        version = data.get("schema_version", 0)
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise _structure(path, f"schema_version must be a whole number >= 0, got {version!r}")
        if version > SCHEMA_VERSION:
            raise ProjectError(
                path,
                f"schema_version {version} is newer than this guiapp supports ({SCHEMA_VERSION})",
                f"update guiapp. {_UNCHANGED}",
            )
        migrated_from = version if version < SCHEMA_VERSION else None
        data = _migrate(path, data, version)

        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _structure(path, f"name must be a non-empty string, got {name!r}")
        project = cls(path=path, name=name, migrated_from=migrated_from)
        for key in ("datasets", "recipes", "models", "training", "runs"):
            items = data.get(key, [])
            if not isinstance(items, list):
                raise _structure(path, f"{key} must be a list, got a {_kind(items)}")
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    raise _structure(path, f"{key}[{i}] must be an object, got {item!r}")
        for i, item in enumerate(data.get("datasets", [])):
            for k in ("name", "path"):
                if not isinstance(item.get(k), str) or not item[k]:
                    raise _structure(
                        path, f"datasets[{i}].{k} must be a non-empty string, got {item.get(k)!r}"
                    )
            project.datasets.append(DatasetRef(item["name"], project.resolve(item["path"])))
        try:
            project.recipes = _entries(data, "recipes", RecipeEntry.from_dict)
            project.models = _entries(data, "models", ModelEntry.from_dict)
            project.training = _entries(data, "training", TrainingEntry.from_dict)
            project.runs = _entries(data, "runs", RunEntry.from_dict)
        except EntryError as exc:
            raise _structure(path, str(exc)) from None
        for run in project.runs:
            run.path = str(project.resolve(run.path))
        ui = data.get("ui", {})
        if not isinstance(ui, dict):
            raise _structure(path, f"ui must be an object, got a {_kind(ui)}")
        project.ui = dict(ui)
        project.extra = {k: v for k, v in data.items() if k not in _KEYS}
        return project

    # ------------------------------------------------------------------ paths
    @property
    def folder(self) -> Path:
        """The folder relative paths are resolved against (the working folder if untitled)."""
        return self.path.parent if self.path is not None else Path.cwd()

    def resolve(self, relpath: str | os.PathLike[str]) -> Path:
        """The absolute path of a path stored in the file (absolute paths stay as they are)."""
        p = Path(relpath).expanduser()
        if not p.is_absolute():
            p = self.folder / p
        return Path(os.path.normpath(p))

    def relativize(self, abspath: str | os.PathLike[str]) -> str:
        """The path to store in the file: relative to the project folder, with ``/``.

        A path on another drive (Windows) cannot be relative and is stored absolute.
        """
        p = os.path.abspath(abspath)
        try:
            rel = os.path.relpath(p, self.folder)
        except ValueError:
            return p
        return Path(rel).as_posix()

    # ------------------------------------------------------------------ saving
    def to_dict(self) -> JsonDict:
        """The JSON object written to the file (paths relative to the project folder)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "datasets": [{"name": d.name, "path": self.relativize(d.path)} for d in self.datasets],
            "recipes": [r.to_dict() for r in self.recipes],
            "models": [m.to_dict() for m in self.models],
            "training": [t.to_dict() for t in self.training],
            "runs": [{**r.to_dict(), "path": self.relativize(r.path)} for r in self.runs],
            "ui": self.ui,
            **{k: v for k, v in self.extra.items() if k not in _KEYS},
        }

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the project atomically to ``path`` (default: :attr:`path`) and adopt it.

        The file is written to a temporary name beside the target, flushed and
        fsynced, the previous file is kept as ``NAME.gproj.bak``, and the temporary
        file replaces the target with :func:`os.replace` (all in
        :func:`guiapp.core.atomic.atomic_path`). On any failure the target is
        unchanged and the temporary file is removed.
        """
        if path is None and self.path is None:
            raise ValueError("an untitled project needs a path to be saved")
        target = Path(os.path.abspath(path)) if path is not None else self.path
        assert target is not None
        previous, self.path = self.path, target  # relativize against the new folder
        try:
            try:
                text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
            except (TypeError, ValueError) as exc:
                raise ProjectError(
                    target,
                    f"cannot be saved: the project holds a value JSON cannot store ({exc})",
                    f"this is a bug in guiapp. {_UNCHANGED}",
                ) from exc
            _atomic_write(target, text.encode("utf-8"))
        except BaseException:
            self.path = previous
            raise
        self.migrated_from = None
        return target


def _atomic_write(target: Path, payload: bytes) -> None:
    """``atomic_write_bytes`` keeping ``NAME.gproj.bak``; an OS error becomes a ``ProjectError``."""
    try:
        atomic_write_bytes(target, payload, keep_backup=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ProjectError(
            target,
            f"could not be saved ({reason})",
            "check free disk space and write permission. The previous file was not changed.",
        ) from exc


def _entries(data: JsonDict, key: str, build: Callable[[object, str], _E]) -> list[_E]:
    """The typed entries of the list ``data[key]`` (each checked an object already)."""
    return [build(item, f"{key}[{i}]") for i, item in enumerate(data.get(key, []))]


def _structure(path: Path, problem: str) -> ProjectError:
    return ProjectError(path, problem, f"fix the file or restore {path.name}.bak. {_UNCHANGED}")


def _kind(value: object) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )
