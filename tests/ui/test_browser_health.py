"""The dataset health window (issue 32, point 4), offscreen: opened from the Browser's
sample detail, its numbers equal the report's, and a click on a number, a group or the
identical-rows button shows exactly those rows in the grid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from guiapp.core.explain.health import health_config, rows_of
from guiapp.core.project import DatasetRef, Project
from guiapp.core.store import Dataset
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages.browser.browser_page import BrowserPage

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
    data = tmp_path / "d.h5"
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", "import", str(tmp_path / "d.jsonl"), str(data),
         "--format", "jsonl", "--group-field", "g"],
        capture_output=True, text=True, timeout=120, env=os.environ,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    project = Project.new(tmp_path / "p.gproj", "Health")
    project.datasets = [DatasetRef("d", data)]
    window = MainWindow(project)
    window.resize(1100, 720)
    qtbot.addWidget(window)
    window.show()
    window.set_page(1)
    page = window.page("Browser")
    assert isinstance(page, BrowserPage)
    qtbot.waitUntil(lambda: page.detail.row == 0, timeout=LONG)
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
