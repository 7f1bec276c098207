"""Issue 35.11: running a finished job again with --resume is safe: it says so, exit 0."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import guiapp


def test_resume_of_a_finished_import_says_so(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text(
        "".join(json.dumps({"label": i % 2, "data": [i, 1, 2]}) + "\n" for i in range(50))
    )
    out = tmp_path / "r.h5"
    args = ["import", src, out, "--format", "jsonl"]
    assert guiapp(*args).returncode == 0
    before = out.stat().st_mtime_ns
    r = guiapp(*args, "--resume")
    assert r.returncode == 0, r.stderr
    assert "already imported (50 rows); nothing to resume" in r.stdout
    assert out.stat().st_mtime_ns == before  # nothing rewritten
    r = guiapp(*args, "--resume", "--seed", "3")  # other options: not this import
    assert r.returncode == 2 and "already exists" in r.stderr
    r = guiapp(*args, "--resume", "--events", "-")
    last = json.loads(r.stdout.strip().splitlines()[-1])
    assert last["event"] == "finished" and last["already_complete"] and last["rows"] == 50


def test_resume_of_a_run_killed_before_its_config_starts_it(tmp_path: Path) -> None:
    """A run killed after its spec.json and before its config.json (nothing trained yet)
    is started by the same command with --resume, so a retry loop of --resume goes on;
    a folder with nothing of a run still says there is nothing to resume."""
    import numpy as np

    from guiapp.core.store import DatasetWriter

    data = tmp_path / "d.h5"
    with DatasetWriter(data, sample_shape=(4,), dtype="float32", class_names=["a", "b"]) as w:
        w.append(np.random.default_rng(0).normal(size=(2000, 4)), np.arange(2000) % 2)
    model = tmp_path / "m.json"
    model.write_text(
        '{"name": "d", "input": {"shape": [4], "dtype": "float32"}, "layers": [{"type": '
        '"Dense", "units": 2, "activation": "softmax"}], "loss": '
        '"sparse_categorical_crossentropy", "optimizer": {"type": "adam"}}'
    )
    done, killed = tmp_path / "done", tmp_path / "killed"
    args = ["--data", data, "--model", model, "--epochs", 1, "--max-steps", 3]
    assert guiapp("train", *args, "--out", done).returncode == 0
    killed.mkdir()
    (killed / "spec.json").write_text((done / "spec.json").read_text())  # the state at the kill
    r = guiapp("train", *args, "--out", killed, "--resume")
    assert r.returncode == 0, r.stderr
    assert (
        json.loads((killed / "config.json").read_text())["identity"]
        == json.loads((done / "config.json").read_text())["identity"]
    )
    r = guiapp("train", *args, "--out", tmp_path / "nothing", "--resume")
    assert r.returncode == 2 and "no run to resume here" in r.stderr
