"""The *.gproj project file, without Qt: round trip, paths, atomic save, migrations, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guiapp.core import project as project_module
from guiapp.core.project import (
    SCHEMA_VERSION,
    DatasetRef,
    ModelEntry,
    Project,
    ProjectError,
    RecipeEntry,
    RunEntry,
    TrainingEntry,
)
from guiapp.core.project_entries import EntryError

REPO = Path(__file__).resolve().parents[1]


def make_project(folder: Path) -> Project:
    p = Project.new(folder / "p.gproj", "Demo")
    p.datasets = [
        DatasetRef("digits", folder / "data" / "digits.h5"),
        DatasetRef("far", folder.parent / "elsewhere" / "far.h5"),
    ]
    p.recipes = [RecipeEntry(kind="generator", extra={"file": "gen.py", "params": {"n": 1000}})]
    p.models = [ModelEntry(name="cnn", spec={"layers": [{"type": "Conv2D", "filters": 32}]})]
    p.training = [TrainingEntry(model="cnn", dataset="digits", extra={"epochs": 3})]
    p.runs = [RunEntry(str(folder / "runs" / "r1"), status="finished")]
    return p


def test_new_project_is_not_written_until_saved(tmp_path: Path) -> None:
    p = Project.new(tmp_path / "p.gproj", "Demo")
    assert p.path == tmp_path / "p.gproj"
    assert not p.path.exists()
    assert p.save() == tmp_path / "p.gproj"
    assert json.loads(p.path.read_text())["schema_version"] == SCHEMA_VERSION


def test_round_trip(tmp_path: Path) -> None:
    p = make_project(tmp_path)
    p.save()
    loaded = Project.load(tmp_path / "p.gproj")
    assert loaded == p
    assert loaded.migrated_from is None
    assert loaded.datasets[0].path == tmp_path / "data" / "digits.h5"
    assert loaded.runs[0] == RunEntry(str(tmp_path / "runs" / "r1"), status="finished")


def test_paths_are_stored_relative_and_resolved_absolute(tmp_path: Path) -> None:
    p = make_project(tmp_path)
    p.save()
    raw = json.loads((tmp_path / "p.gproj").read_text())
    assert [d["path"] for d in raw["datasets"]] == ["data/digits.h5", "../elsewhere/far.h5"]
    assert raw["runs"][0]["path"] == "runs/r1"
    # Moving the whole folder keeps the project working.
    moved = tmp_path.parent / (tmp_path.name + "_moved")
    os.rename(tmp_path, moved)
    try:
        loaded = Project.load(moved / "p.gproj")
        assert loaded.datasets[0].path == moved / "data" / "digits.h5"
        assert loaded.resolve("data/x.h5") == moved / "data" / "x.h5"
        assert loaded.relativize(moved / "a" / "b.h5") == "a/b.h5"
        assert loaded.resolve(moved / "abs.h5") == moved / "abs.h5"
    finally:
        os.rename(moved, tmp_path)


def test_save_as_relativizes_against_the_new_folder(tmp_path: Path) -> None:
    p = make_project(tmp_path)
    p.save()
    (tmp_path / "sub").mkdir()
    p.save(tmp_path / "sub" / "q.gproj")
    assert p.path == tmp_path / "sub" / "q.gproj"
    raw = json.loads((tmp_path / "sub" / "q.gproj").read_text())
    assert raw["datasets"][0]["path"] == "../data/digits.h5"
    assert Project.load(tmp_path / "sub" / "q.gproj").datasets == p.datasets


def test_save_keeps_previous_file_as_bak(tmp_path: Path) -> None:
    p = make_project(tmp_path)
    p.save()
    first = (tmp_path / "p.gproj").read_text()
    assert not (tmp_path / "p.gproj.bak").exists()
    p.name = "Second"
    p.save()
    assert (tmp_path / "p.gproj.bak").read_text() == first
    assert Project.load(tmp_path / "p.gproj").name == "Second"
    p.name = "Third"
    p.save()
    assert Project.load(tmp_path / "p.gproj.bak").name == "Second"
    assert sorted(f.name for f in tmp_path.iterdir() if f.is_file()) == ["p.gproj", "p.gproj.bak"]


def test_unserializable_value_leaves_original_file(tmp_path: Path) -> None:
    p = make_project(tmp_path)
    p.save()
    before = (tmp_path / "p.gproj").read_bytes()
    p.models.append(ModelEntry("bad", {"layers": {1, 2}}))  # a set: JSON cannot store it
    with pytest.raises(ProjectError, match="JSON cannot store"):
        p.save()
    assert (tmp_path / "p.gproj").read_bytes() == before
    assert not (tmp_path / "p.gproj.bak").exists()
    assert sorted(f.name for f in tmp_path.iterdir() if f.is_file()) == ["p.gproj"]


def test_failure_midway_through_the_write_leaves_original_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = make_project(tmp_path)
    p.save()
    before = (tmp_path / "p.gproj").read_bytes()
    p.name = "Changed"

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(project_module.os, "fsync", disk_full)
    with pytest.raises(ProjectError) as info:
        p.save()
    assert "No space left on device" in str(info.value)
    assert "previous file was not changed" in str(info.value)
    assert (tmp_path / "p.gproj").read_bytes() == before
    assert sorted(f.name for f in tmp_path.iterdir() if f.is_file()) == ["p.gproj"]


def test_failed_save_as_keeps_the_old_path(tmp_path: Path) -> None:
    p = make_project(tmp_path)
    p.save()
    with pytest.raises(ProjectError):
        p.save(tmp_path / "no_such_folder" / "q.gproj")
    assert p.path == tmp_path / "p.gproj"


def test_migration_from_schema_version_0(tmp_path: Path) -> None:
    old = tmp_path / "old.gproj"
    text = json.dumps(
        {
            "schema_version": 0,
            "name": "Old",
            "data": ["data/a.h5", "/abs/b.h5"],
            "models": [{"name": "cnn", "spec": {"layers": []}, "template": "cnn2d-small"}],
        }
    )
    old.write_text(text)
    p = Project.load(old)
    assert p.migrated_from == 0
    assert p.name == "Old"
    assert p.datasets == [
        DatasetRef("a", tmp_path / "data" / "a.h5"),
        DatasetRef("b", Path("/abs/b.h5")),
    ]
    assert p.recipes == p.training == p.runs == []
    assert p.models == [ModelEntry("cnn", {"layers": []}, "cnn2d-small")]  # typed
    assert old.read_text() == text  # loading never writes
    p.save()
    raw = json.loads(old.read_text())
    assert raw["schema_version"] == 1 and "data" not in raw
    assert raw["models"] == [{"name": "cnn", "spec": {"layers": []}, "template": "cnn2d-small"}]
    assert (tmp_path / "old.gproj.bak").read_text() == text


def test_file_without_schema_version_is_version_0(tmp_path: Path) -> None:
    old = tmp_path / "old.gproj"
    old.write_text(json.dumps({"name": "Old", "data": ["x.h5"]}))
    assert Project.load(old).datasets == [DatasetRef("x", tmp_path / "x.h5")]


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "new.gproj"
    text = json.dumps({"schema_version": 7, "name": "Future"})
    f.write_text(text)
    with pytest.raises(ProjectError) as info:
        Project.load(f)
    err = info.value
    assert str(err) == (
        f"{f}: schema_version 7 is newer than this guiapp supports (1); "
        "update guiapp. The file was not changed."
    )
    assert err.path == str(f)
    assert "newer" in err.problem
    assert f.read_text() == text


def test_corrupt_json_is_refused_and_file_unchanged(tmp_path: Path) -> None:
    f = tmp_path / "broken.gproj"
    text = '{"schema_version": 1, "name": "B", "datasets": [\n'
    f.write_text(text)
    with pytest.raises(ProjectError, match=r"is not valid JSON .*line 2.*broken.gproj.bak"):
        Project.load(f)
    assert f.read_text() == text
    assert not (tmp_path / "broken.gproj.bak").exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[1, 2]", "top level is a list"),
        ('{"schema_version": "1", "name": "x"}', "schema_version must be a whole number"),
        ('{"schema_version": 1}', "name must be a non-empty string"),
        ('{"schema_version": 1, "name": "x", "datasets": {}}', "datasets must be a list"),
        ('{"schema_version": 1, "name": "x", "models": [3]}', r"models\[0\] must be an object"),
        (
            '{"schema_version": 1, "name": "x", "datasets": [{"name": "a"}]}',
            r"datasets\[0\].path must be a non-empty string, got None",
        ),
        ('{"schema_version": 1, "name": "x", "runs": [{}]}', r"runs\[0\].path"),
        (
            '{"schema_version": 1, "name": "x", "runs": [{"path": "r", "pid": "12"}]}',
            r"runs\[0\].pid must be a whole number, got '12'",
        ),
        (
            '{"schema_version": 1, "name": "x", "runs": [{"path": "a"}, {"path": "b", "status": 3}]}',
            r"runs\[1\].status must be a string, got 3",
        ),
        (
            '{"schema_version": 1, "name": "x", "models": [{"name": "m", "spec": []}]}',
            r"models\[0\].spec must be an object, got \[\]",
        ),
        (
            '{"schema_version": 1, "name": "x", "recipes": [{"args": ["--request", 1]}]}',
            r"recipes\[0\].args must be a list of strings",
        ),
        (
            '{"schema_version": 1, "name": "x", "training": [{"name": 5}]}',
            r"training\[0\].name must be a string, got 5",
        ),
    ],
)
def test_wrong_structure_is_refused(tmp_path: Path, content: str, problem: str) -> None:
    f = tmp_path / "bad.gproj"
    f.write_text(content)
    with pytest.raises(ProjectError, match=problem) as info:
        Project.load(f)
    assert str(info.value).startswith(f"{f}: ")
    assert f.read_text() == content


def test_missing_file_and_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="no such file"):
        Project.load(tmp_path / "nope.gproj")
    with pytest.raises(ProjectError, match="is a folder"):
        Project.load(tmp_path)


def test_migrator_refuses_duplicate_and_backward_steps() -> None:
    with pytest.raises(ValueError, match="already registered"):
        project_module.migrator(0, 1)(lambda d: d)
    with pytest.raises(ValueError, match="must be larger"):
        project_module.migrator(3, 2)


def test_untitled_project_needs_a_path_to_save() -> None:
    p = Project.new(None, "Untitled")
    assert p.path is None
    with pytest.raises(ValueError):
        p.save()


def test_demo_project_loads() -> None:
    p = Project.load(REPO / "resources" / "demo" / "demo.gproj")
    assert p.name == "Demo"
    assert p.datasets == [] and p.migrated_from is None


def test_project_module_imports_no_qt() -> None:
    code = (
        "import sys, guiapp.core.project; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', "
        "'tensorflow', 'keras')]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ui_state_round_trips_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    """What the window shows again on reopen (checks, forms, jobs) is kept in the file."""
    p = Project.new(tmp_path / "u.gproj", "U")
    p.ui = {"checks": {"data/d.h5": {"status": "checked OK", "mtime": 1.5}}, "jobs": [{"n": 1}]}
    p.save()
    assert Project.load(tmp_path / "u.gproj").ui == p.ui
    bad = tmp_path / "bad.gproj"
    bad.write_text('{"schema_version": 1, "name": "x", "ui": []}')
    with pytest.raises(ProjectError, match="ui must be an object"):
        Project.load(bad)
    old = tmp_path / "old.gproj"
    old.write_text('{"schema_version": 1, "name": "x"}')
    assert Project.load(old).ui == {}


ENTRIES = [
    (
        RunEntry,
        {
            "path": "/abs/runs/r1",
            "name": "r1",
            "status": "stopped",
            "dataset": "digits",
            "model": "cnn",
            "pid": 4242,
            "trial_of": "/abs/runs",
            "seen_by": {"guiapp": "9.0"},  # a newer guiapp's key
        },
    ),
    (
        RecipeEntry,
        {
            "kind": "dataset_job",
            "name": "import cells",
            "path": "/abs/cells.h5",
            "command": "import",
            "args": ["--request", "cells.request.json"],
            "lineage": [1, {"a": None}],
        },
    ),
    (ModelEntry, {"name": "cnn", "spec": {"layers": [{"type": "Dense"}]}, "template": "t", "x": 1}),
    (
        TrainingEntry,
        {"name": "t", "dataset": "digits", "model": "cnn", "out": "runs/t", "epochs": 3, "y": []},
    ),
]


@pytest.mark.parametrize(("cls", "data"), ENTRIES, ids=[c.__name__ for c, _ in ENTRIES])
def test_each_entry_type_round_trips_with_unknown_keys(cls: type, data: dict[str, object]) -> None:
    entry = cls.from_dict(data, "items[0]")
    assert entry.to_dict() == data
    assert list(entry.to_dict()) == list(data)  # known fields first, then the others
    assert entry.extra == {k: v for k, v in data.items() if k not in cls.KEYS}
    assert cls.from_dict(entry.to_dict(), "items[0]") == entry
    assert cls.from_dict({"path": "p"} if cls is RunEntry else {}, "i").to_dict() == (
        {"path": "p"} if cls is RunEntry else {}
    )  # fields not set are not written


def test_typed_fields_of_entries() -> None:
    run = RunEntry.from_dict(ENTRIES[0][1], "runs[0]")
    assert (run.pid, run.status, run.label) == (4242, "stopped", "r1")
    assert RunEntry("/abs/runs/r2").label == "r2"
    recipe = RecipeEntry.from_dict(ENTRIES[1][1], "recipes[0]")
    assert recipe.args == ["--request", "cells.request.json"] and recipe.command == "import"
    training = TrainingEntry.from_dict(ENTRIES[3][1], "training[0]")
    assert training.extra["epochs"] == 3 and training.out == "runs/t"
    with pytest.raises(EntryError, match=r"^runs\[3\] must be an object, got \[\]$"):
        RunEntry.from_dict([], "runs[3]")
    with pytest.raises(EntryError, match=r"^runs\[3\].pid must be a whole number, got True$"):
        RunEntry.from_dict({"path": "r", "pid": True}, "runs[3]")


def test_a_newer_guiapps_keys_survive_an_older_ones_save(tmp_path: Path) -> None:
    """Keys this guiapp does not know, in each entry and at the top level, are saved back
    unchanged beside the fields it changed."""
    f = tmp_path / "p.gproj"
    newer = {
        "schema_version": SCHEMA_VERSION,
        "name": "N",
        "datasets": [{"name": "d", "path": "data/d.h5"}],
        "recipes": [{**ENTRIES[1][1], "path": str(tmp_path / "data" / "d.h5")}],
        "models": [ENTRIES[2][1]],
        "training": [ENTRIES[3][1]],
        "runs": [{**ENTRIES[0][1], "path": "runs/r1"}],
        "ui": {"model": "cnn"},
        "lineage": {"graph": [1, 2]},
    }
    f.write_text(json.dumps(newer))
    p = Project.load(f)
    assert p.runs[0].path == str(tmp_path / "runs" / "r1")
    p.runs[0].status, p.runs[0].pid = "finished", None
    p.models[0].spec = {"layers": []}
    p.save()
    raw = json.loads(f.read_text())
    run = {k: v for k, v in newer["runs"][0].items() if k != "pid"}  # type: ignore[attr-defined]
    assert raw["runs"] == [{**run, "status": "finished"}]  # the pid cleared is not written
    assert raw["models"] == [{**ENTRIES[2][1], "spec": {"layers": []}}]
    assert raw["recipes"] == newer["recipes"] and raw["training"] == newer["training"]
    assert raw["lineage"] == {"graph": [1, 2]} and raw["ui"] == {"model": "cnn"}
    assert Project.load(f) == p
