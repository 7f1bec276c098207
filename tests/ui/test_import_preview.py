"""Issue 34.4: the Import dialog's preview runs the import's own parser and rules, so what
it flags is exactly what ``guiapp import`` refuses or leaves out, in the job's words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from guiapp.ui.dialogs.import_dialog import ImportDialog


def reads(path: Path) -> Path:
    """40 lines of 126 k-mer ids; line 5 is not JSON, line 18 has 104 values, line 30 a
    value uint16 cannot hold, line 33 a null label."""
    lines = []
    for i in range(1, 41):
        doc: dict[str, object] = {"label": f"sp{i % 3}", "data": [i % 50 + 1] * 126}
        if i == 18:
            doc["data"] = [7] * 104
        if i == 30:
            doc["data"] = [70_000] + [1] * 125
        if i == 33:
            doc["label"] = None
        lines.append('{"label": "sp1", "data": [1, 2' if i == 5 else json.dumps(doc))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_preview_flags_what_the_import_refuses_in_its_words(qtbot, tmp_path: Path) -> None:
    src = reads(tmp_path / "reads.jsonl")
    dialog = ImportDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    dialog.source.set_path(src)  # Length "keep as is"
    table = dialog.preview_table
    assert table.rowCount() == 40
    problems = {
        table.item(r, 0).text(): table.item(r, 4).text()
        for r in range(table.rowCount())
        if table.item(r, 4).text()
    }
    assert set(problems) == {"reads.jsonl:5", "reads.jsonl:18", "reads.jsonl:30", "reads.jsonl:33"}
    assert "has 104 values, but the first row has 126" in problems["reads.jsonl:18"]
    assert "4 with a problem" in dialog.preview_label.text()
    assert "stops at the first, reads.jsonl:5" in dialog.preview_label.text()

    # the job, run as a user runs it, reports the same rows with the same words
    (tmp_path / "data").mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", "import", str(src), str(tmp_path / "data" / "r.h5"),
         "--format", "jsonl", "--on-error", "skip", "--events", "-"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    finished = next(e for e in events if e.get("event") == "finished")
    assert sorted(finished["row_errors"]) == sorted(f"{w}: {p}" for w, p in problems.items())

    # Length 126 pads line 18 (the import keeps it), and the preview says so
    dialog.length.setValue(126)
    assert table.item(17, 4).text() == "" and table.item(17, 3).text() == "126 (padded)"
    assert "3 with a problem" in dialog.preview_label.text()
    assert "1 padded or truncated" in dialog.preview_label.text()


def test_a_folder_preview_lists_its_first_files_without_walking_the_disk(tmp_path: Path) -> None:
    import numpy as np

    from guiapp.core.importers.preview import first_npy_files, preview

    for name in ("b/2.npy", "a/1.npy", "b/1.npy"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        np.save(tmp_path / name, np.zeros((2, 3)))
    rows = preview("npy-dir", tmp_path)
    assert [(r.where, r.label) for r in rows] == [("a/1.npy", "a"), ("b/1.npy", "b"),
                                                  ("b/2.npy", "b")]  # fmt: skip
    assert first_npy_files(tmp_path, 20, budget=3) == [tmp_path / "a" / "1.npy"]
