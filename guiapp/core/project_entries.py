"""The typed entries of a project file's lists: runs, recipes, model specs, training configs.

Each entry is a small dataclass with the fields guiapp reads and writes, built from the
file's JSON object by ``from_dict(data, where)`` (``where`` names the entry in messages:
``runs[3].path must be a non-empty string, got 7``) and written back by ``to_dict()``.
A key this guiapp does not know (one a newer guiapp wrote) is kept in ``extra`` and
written back unchanged, so an older guiapp's save never drops a newer one's data.

Fields are optional unless said otherwise (a missing string is ``""``): files written by
earlier versions, and by hand, hold only some of them, and ``to_dict`` writes only the
fields that are set, so a file keeps its shape through a load and a save. Paths are
as the file holds them; :class:`~guiapp.core.project.Project` resolves a run's ``path``
(absolute in memory, relative to the project's folder on disk).

A model spec and a training config's options stay JSON objects inside their entry (the
spec is the model's own format, ``core/model``; the options are ``TrainConfig`` fields).

This module never imports Qt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from functools import partial
from typing import Any, ClassVar, TypeVar

__all__ = ["EntryError", "ModelEntry", "RecipeEntry", "RunEntry", "TrainingEntry"]

JsonDict = dict[str, Any]

#: the statuses a run's entry records (its events.jsonl has the last word)
RUN_STATUSES = ("running", "finished", "stopped", "failed")


class EntryError(ValueError):
    """An entry that is not as it must be; the message names it (``runs[3].path ...``)."""


# --------------------------------------------------------------------------- readers


def _object(data: object, where: str) -> JsonDict:
    if not isinstance(data, dict):
        raise EntryError(f"{where} must be an object, got {data!r}")
    return data


def _text(data: JsonDict, key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key, "" if not required else None)
    if not isinstance(value, str) or (required and not value):
        what = "a non-empty string" if required else "a string"
        raise EntryError(f"{where}.{key} must be {what}, got {value!r}")
    return value


def _whole(data: JsonDict, key: str, where: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise EntryError(f"{where}.{key} must be a whole number, got {value!r}")
    return value


def _strings(data: JsonDict, key: str, where: str) -> list[str] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EntryError(f"{where}.{key} must be a list of strings, got {value!r}")
    return list(value)


def _json_object(data: JsonDict, key: str, where: str) -> JsonDict | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise EntryError(f"{where}.{key} must be an object, got {value!r}")
    return value


def _extra(data: JsonDict, known: tuple[str, ...]) -> JsonDict:
    return {k: v for k, v in data.items() if k not in known}


def _written(known: JsonDict, extra: JsonDict) -> JsonDict:
    """The known fields that are set (not ``""`` or ``None``), then the unknown keys."""
    out = {k: v for k, v in known.items() if v is not None and v != ""}
    for k, v in extra.items():
        out.setdefault(k, v)
    return out


#: reads one field of an entry: ``reader(data, key, where)``, an EntryError naming it
Reader = Callable[[JsonDict, str, str], Any]
#: the reader of a field by its declared type (as written: annotations here are strings)
TYPE_READERS: dict[str, Reader] = {
    "str": _text,
    "int | None": _whole,
    "list[str] | None": _strings,
    "JsonDict | None": _json_object,
}
E = TypeVar("E", bound="_Entry")


class _Entry:
    """What the four entries share: ``READERS``, each known field (in the file's order)
    with its reader, taken from the dataclass's fields by :func:`_entry`; ``from_dict``
    reads them and keeps the rest in ``extra``, ``to_dict`` writes the set ones back, then
    ``extra``."""

    READERS: ClassVar[dict[str, Reader]]
    KEYS: ClassVar[tuple[str, ...]]
    extra: JsonDict

    @classmethod
    def from_dict(cls: type[E], data: object, where: str) -> E:
        d = _object(data, where)
        known = {k: read(d, k, where) for k, read in cls.READERS.items()}
        # cls is one of the dataclasses below: its __init__ takes the fields and extra
        return cls(**known, extra=_extra(d, cls.KEYS))  # type: ignore[call-arg]

    def to_dict(self) -> JsonDict:
        return _written({k: getattr(self, k) for k in self.KEYS}, self.extra)


def _reader(f: Field[Any]) -> Reader:
    """A field's reader: by its type; a field without a default is a required string."""
    if f.default is MISSING and f.default_factory is MISSING:
        assert f.type == "str", f"{f.name}: only a string field may be required"
        return partial(_text, required=True)
    return TYPE_READERS[str(f.type)]


def _entry(cls: type[E]) -> type[E]:
    """``cls`` (a dataclass) with ``READERS`` and ``KEYS`` from its fields but ``extra``."""
    declared = fields(cls)  # type: ignore[arg-type]
    cls.READERS = {f.name: _reader(f) for f in declared if f.name != "extra"}
    cls.KEYS = tuple(cls.READERS)
    return cls


# --------------------------------------------------------------------------- entries


@_entry
@dataclass(eq=True)
class RunEntry(_Entry):
    """A training run (or an experiment, or one of its trials) listed in the project.

    ``path``: the run's folder (required; absolute in memory). ``status``: the last one
    this guiapp saw (one of :data:`RUN_STATUSES`, or ``""``). ``pid``: the process that
    ran it when it was last started here, kept as information only: whether a run is
    live goes by its run lock's holder (``core/train/run_lock.run_holder``), never by
    this number, which another process may own after a reboot. ``trial_of``: the
    experiment folder a trial belongs to (``""`` for a run or an experiment).
    """

    path: str
    name: str = ""
    status: str = ""
    dataset: str = ""
    model: str = ""
    pid: int | None = None
    trial_of: str = ""
    extra: JsonDict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The name shown for the run: its name, else its folder's."""
        return self.name or self.path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


@_entry
@dataclass(eq=True)
class RecipeEntry(_Entry):
    """How something of the project was made, kept to remake or resume it.

    A dataset's job (``kind="dataset_job"``): ``path`` the dataset it writes (absolute,
    as saved), ``command`` the guiapp command (``"import"``, ``"generate"``) and ``args``
    its arguments (``--request FILE``, the saved request; an earlier version saved the
    options themselves), rerun with ``--resume``. Other kinds keep their content in
    ``extra``.
    """

    kind: str = ""
    name: str = ""
    path: str = ""
    command: str = ""
    args: list[str] | None = None
    extra: JsonDict = field(default_factory=dict)


@_entry
@dataclass(eq=True)
class ModelEntry(_Entry):
    """A model spec of the project: its ``name``, the ``spec`` (the model's JSON, edited
    in place by the Model page) and the ``template`` it was fitted from, while it is
    still as the template made it (refitted when the dataset changes; ``""`` once edited).
    """

    name: str = ""
    spec: JsonDict | None = None
    template: str = ""
    extra: JsonDict = field(default_factory=dict)


@_entry
@dataclass(eq=True)
class TrainingEntry(_Entry):
    """A named training config, run by ``guiapp train --project FILE --config NAME``.

    ``dataset``: a dataset's name in the project or a path; ``model``: a model's name in
    the project, a template's name or a spec file; ``out``: the run folder (``""``:
    ``runs/NAME``). ``extra`` holds its ``TrainConfig`` options (``epochs``, ``batch``,
    ...) and any key this guiapp does not know.
    """

    name: str = ""
    dataset: str = ""
    model: str = ""
    out: str = ""
    extra: JsonDict = field(default_factory=dict)
