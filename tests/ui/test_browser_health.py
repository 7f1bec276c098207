"""The dataset health window (issue 32, point 4), offscreen: opened from the Browser's
sample detail, its numbers equal the report's, and a click on a number, a group or the
identical-rows button shows exactly those rows in the grid."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import open_browser

from guiapp.core.explain.health import health_config, rows_of
from guiapp.core.project import DatasetRef, Project
from guiapp.core.store import Dataset
from tests.conftest import imported

LONG = 60_000


@pytest.mark.timeout(120)
def test_health_numbers_open_their_rows(qtbot, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    docs = [
        {"label": f"c{i % 3}", "g": f"g{i % 20}", "data": rng.integers(0, 900, 6).tolist()}
        for i in range(400)
    ]
    docs += [{**docs[i * 5], "g": f"g{(i * 5 + 7) % 20}"} for i in range(10)]  # copies
    with open(tmp_path / "d.jsonl", "w") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    data = imported(
        tmp_path / "d.jsonl", tmp_path / "d.h5", "--format", "jsonl", "--group-field", "g"
    )
    project = Project.new(tmp_path / "p.gproj", "Health")
    project.datasets = [DatasetRef("d", data)]
    _, page = open_browser(qtbot, project, LONG)
    view = page.detail.attribution
    view.health_button.click()
    health = view.health
    assert health is not None
    qtbot.waitUntil(lambda: health.report is not None, timeout=LONG)
    rep = health.report
    cfg = health_config(None, str(data))
    with Dataset(data) as ds:
        labels = ds.read_labels()
        expected_val_c1 = rows_of(ds, cfg, ("class", "val", 1)).tolist()
        expected_dup = rows_of(ds, cfg, ("duplicates",)).tolist()
    assert rep["columns"]["all"] == np.bincount(labels, minlength=3).tolist()
    col = list(rep["columns"]).index("val")
    assert health.table.item(1, col).text() == f"{len(expected_val_c1):,}"

    health.table.cellClicked.emit(1, col)  # class c1 in val
    qtbot.waitUntil(lambda: page.grid.selection.title.startswith("c1 in val"), timeout=LONG)
    sel = page.grid.selection
    assert sel.rows(0, len(sel)).tolist() == expected_val_c1

    top = rep["groups"]["largest"][0]
    health.groups.cellClicked.emit(0, 0)
    qtbot.waitUntil(lambda: page.grid.selection.title.startswith("group "), timeout=LONG)
    assert len(page.grid.selection) == top["rows"]

    assert len(expected_dup) >= 2 and health.duplicates_button.isEnabled()
    health.duplicates_button.click()
    qtbot.waitUntil(lambda: page.grid.selection.title.startswith("identical"), timeout=LONG)
    sel = page.grid.selection
    assert sel.rows(0, len(sel)).tolist() == expected_dup
    assert not health.issues_button.isEnabled()  # no labels ranked yet
