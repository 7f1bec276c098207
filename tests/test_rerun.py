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
