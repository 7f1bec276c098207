"""Issue 28.6: the Runs page shows a run's evaluation per row and per group, and says how
the run split (a real run trained by ``guiapp train`` in a child process)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import open_project

from guiapp.core.project import RunEntry
from guiapp.core.store import DatasetWriter
from tests.conftest import dense_spec, trained


def test_runs_page_shows_per_row_and_per_group_evaluations(qtbot, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(120), 10)
    y = (g % 3).astype(np.int32)
    x = (rng.normal(size=(1200, 6)) + y[:, None]).astype("float32")
    data = tmp_path / "d.h5"
    with DatasetWriter(data, sample_shape=(6,), dtype="float32", class_names=["a", "b", "c"],
                       columns={"group": "int64"}) as w:  # fmt: skip
        w.append(x, y, {"group": g})
    run = trained(tmp_path / "runs" / "r1", data, dense_spec(6, 3), "--epochs", "2", "--batch",
                  "32", "--val", "0.25")  # fmt: skip
    report = json.loads((run / "report.json").read_text())
    ref = RunEntry(str(run), name="r1", dataset="d", model="dense")
    window = open_project(qtbot, tmp_path, "Runs", {"d": data}, [ref])
    window.set_page(4)
    runs = window.page("Runs")
    qtbot.waitUntil(lambda: runs.groups_pane.isVisibleTo(runs), timeout=10_000)
    # both evaluations at once, side by side: per row on the left, per group on the right
    assert int(runs.confusion.matrix.sum()) == report["rows"] == 300
    assert "split by groups: 120 groups" in runs.summary.text()
    assert int(runs.group_confusion.matrix.sum()) == report["groups"]["groups"] == 30
    assert runs.confusion.isVisibleTo(runs) and runs.group_confusion.isVisibleTo(runs)
    left = runs.confusion.mapTo(runs, runs.confusion.rect().topLeft()).x()
    right = runs.group_confusion.mapTo(runs, runs.group_confusion.rect().topLeft()).x()
    assert left + runs.confusion.width() <= right
    assert "30 groups" in runs.group_summary.text() and "groups.csv" in runs.group_summary.text()
    assert runs.report.rowCount() == runs.group_report.rowCount() == 3
    assert sum(int(runs.report.item(i, 4).text().replace(",", "")) for i in range(3)) == 300
    assert sum(int(runs.group_report.item(i, 4).text()) for i in range(3)) == 30
