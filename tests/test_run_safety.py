"""Issue 35.3 and 35.4: a run never overwrites what is not a run, and one process at a
time writes a run folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import generated, guiapp

QUICK = ["--batch", "32", "--val", "0.2", "--max-steps", "2", "--epochs", "1"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated(tmp_path_factory.mktemp("data") / "cells.h5", "patterns2d", 600)


@pytest.mark.parametrize("sweep", [[], ["--folds", "2"]])
def test_a_folder_that_is_not_a_run_is_never_written(
    data: Path, tmp_path: Path, sweep: list[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("my own report\n")
    (out / "history.csv").write_text("a,b\n1,2\n")
    r = guiapp("train", "--data", data, "--model", "cnn2d-small", "--out", out, *QUICK, *sweep)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a run folder" in lines[0] and str(out) in lines[0]
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["history.csv", "report.md"]
    assert (out / "report.md").read_text() == "my own report\n"


def test_one_process_writes_a_run_at_a_time(data: Path, tmp_path: Path) -> None:
    """A second `train --out R`, and `--restart` of R, while R trains: exit 2, one line
    naming R and the holder's pid; the live run goes on unharmed. The lock is the
    kernel's (flock), so it ends with its process, even a killed one."""
    import json
    import subprocess
    import sys

    from conftest import ENV

    from guiapp.core.train.run_lock import lock_path, run_active

    out = tmp_path / "R"
    argv = ["train", "--data", str(data), "--model", "cnn2d-small", "--out", str(out),
            "--batch", "32", "--val", "0.2", "--epochs", "50"]  # fmt: skip
    first = subprocess.Popen([sys.executable, "-m", "guiapp", *argv, "--events", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)  # fmt: skip
    assert first.stdout and first.stdin
    for line in first.stdout:
        if json.loads(line)["event"] == "epoch":
            break
    assert run_active(out)
    for extra in ([], ["--restart"], ["--resume"]):
        r = guiapp(*argv, *extra)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {first.pid}" in lines[0] and str(out) in lines[0]
        assert (out / "config.json").exists()  # --restart removed nothing
    first.stdin.write("stop\n")
    first.stdin.flush()
    rest = first.communicate(timeout=120)[0]
    assert first.returncode == 0 and '"stopped"' in rest
    assert rest.count('"started"') == 0  # (the second start never started)
    assert not run_active(out) and not lock_path(out).exists()
    r = guiapp(*argv[:-2], "--epochs", "2", "--resume")  # the lock went with its process
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_refused_start_leaves_no_lock_file(tmp_path: Path) -> None:
    from guiapp.core.train.run_lock import lock_path

    out = tmp_path / "never"
    r = guiapp("train", "--data", tmp_path / "missing.h5", "--model", "cnn2d-small", "--out", out)
    assert r.returncode == 2 and not out.exists() and not lock_path(out).exists()


def test_a_project_never_writes_a_run_outside_its_folder(data: Path, tmp_path: Path) -> None:
    """Issue 35.3: a training config whose relative `out` climbs out of the project's
    folder is refused in one line; nothing is written there."""
    from guiapp.core.project import DatasetRef, Project, TrainingEntry

    home = tmp_path / "a" / "b"
    home.mkdir(parents=True)
    project = Project.new(home / "p.gproj", "P")
    project.datasets.append(DatasetRef("cells", data))
    entry = {"name": "away", "dataset": "cells", "model": "cnn2d-small",
             "out": "../../escaped_run", "epochs": 1}  # fmt: skip
    project.training.append(TrainingEntry.from_dict(entry, "training[0]"))
    project.save()
    r = guiapp("train", "--project", home / "p.gproj", "--config", "away")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "outside the project's folder" in lines[0]
    assert not (tmp_path / "escaped_run").exists()
