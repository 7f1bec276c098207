"""Issue 28.7: the Import dialog offers Group field and Keep fields, its preview shows them
(and a line whose group is unusable as a problem), and the job keeps them."""

from __future__ import annotations

import json
from pathlib import Path

from guiapp.core.store import Dataset
from guiapp.core.store.columns import group_summary, read_column
from guiapp.ui.dialogs.import_dialog import ImportDialog
from guiapp.ui.jobs.cli_job import CliJob


def mongoexport(path: Path, rows: int) -> Path:
    lines = []
    for i in range(rows):
        doc = {"_id": {"$oid": f"{i:024x}"}, "accession": f"GCF_{i % 7:06d}.1",
               "label": f"sp{i % 7 % 3}", "data": [i % 50 + 1] * 8}  # fmt: skip
        if i == 4:
            del doc["accession"]
        lines.append(json.dumps(doc))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_group_and_kept_fields_from_the_dialog(qtbot, tmp_path: Path) -> None:
    src = mongoexport(tmp_path / "reads.jsonl", 70)
    (tmp_path / "data").mkdir()
    dialog = ImportDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    dialog.source.set_path(src)
    dialog.group_field.setText("accession")
    dialog.keep_fields.setText("_id")
    fields = dialog.preview_table.item(0, 5).text()
    assert fields == f"accession=GCF_000000.1, _id={0:024x}"
    # the job's own words (issue 34.4: the preview runs the import's parser)
    assert "has no 'accession' field" in dialog.preview_table.item(4, 4).text()
    dialog.on_error.setCurrentText("skip")
    args = dialog.cli_args()
    assert args[args.index("--group-field") + 1] == "accession"
    assert args[args.index("--keep-fields") + 1] == "_id"
    jobs: list[CliJob] = []
    dialog.job_ready.connect(lambda job, _out: (jobs.append(job), job.start()))
    assert dialog.start() is not None
    qtbot.waitUntil(lambda: jobs[0].status in ("finished", "failed"), timeout=60_000)
    assert jobs[0].status == "finished", (
        jobs[0].stderr_text() if hasattr(jobs[0], "stderr_text") else ""
    )
    with Dataset(tmp_path / "data" / "reads.h5") as ds:
        assert len(ds) == 69 and ds.has_groups
        assert group_summary(ds)["groups"] == 7
        ids = {v.decode() for v in read_column(ds, "_id").tolist()}
    assert ids == {f"{i:024x}" for i in range(70) if i != 4}
