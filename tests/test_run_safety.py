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
