"""The Browser's "what the model sees" (issue 32), offscreen through the real widgets: a
sample's attribution map computed by a child ``guiapp explain`` and drawn in the sample
detail; "Likely mislabeled" runs ``guiapp labels`` on a run and the grid shows exactly its
ranked issues, with each row's suggested label; the embedding map (a child ``guiapp
embed``) selects rows for the grid. The GUI process never imports TensorFlow."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import open_browser

from guiapp.core.explain.job import read_explained
from guiapp.core.project import DatasetRef, Project
from tests.conftest import generated, trained

LONG = 120_000


@pytest.mark.timeout(300)
def test_attribution_and_likely_mislabeled_in_the_browser(qtbot, tmp_path: Path) -> None:
    data = generated(tmp_path / "cells.h5", "patterns2d", 600)  # (seed 3)
    run = trained(tmp_path / "run", data, "cnn2d-small", "--epochs", 1, "--batch", 32,
                  "--max-steps", 6)  # fmt: skip
    project = Project.new(tmp_path / "p.gproj", "Explain")
    project.datasets = [DatasetRef("cells", data)]
    _, page = open_browser(qtbot, project, LONG)
    view = page.detail.attribution

    # the run's predictions overlaid: its model explains; pick row 5, Explain
    page.predictions.set_predictions(str(run / "predictions.h5"))
    page.jump_to(5)
    qtbot.waitUntil(lambda: page.detail.row == 5, timeout=LONG)
    assert view.model == str(run) and view.explain_button.isEnabled()
    view.explain_button.click()
    qtbot.waitUntil(lambda: view.shown_map() is not None, timeout=LONG)
    files = list((run / "explain").glob("*/row5-pred.npz"))
    assert len(files) == 1
    saved = read_explained(files[0])
    shown = view.shown_map()
    assert shown is not None and shown.shape == (25, 25)
    assert np.array_equal(shown, saved["integrated_gradients"])
    assert np.array_equal(view.image.image, saved["integrated_gradients"].T)
    view.method.setCurrentIndex(view.method.findData("occlusion"))
    assert np.array_equal(view.shown_map(), saved["occlusion"])
    assert "for class" in view.status.text()

    # likely mislabeled: the grid shows the ranked issues, the detail their suggestion
    view.find_label_issues(str(run))
    qtbot.waitUntil(lambda: page.grid.selection.title.startswith("likely mislabeled"), timeout=LONG)
    with open(run / "labels.csv", newline="") as fh:
        lines = list(csv.DictReader(fh))
    issues = [line for line in lines if line["issue"] == "1"]
    assert issues, "an untrained model's validation rows have likely issues"
    sel = page.grid.selection
    assert sel.rows(0, len(sel)).tolist() == [int(line["row"]) for line in issues]
    first = int(issues[0]["row"])
    page.grid.set_current(0)
    qtbot.waitUntil(lambda: page.detail.row == first, timeout=LONG)
    assert f"suggested <b>{issues[0]['suggested_name']}</b>" in view.issue_label.text()
    assert "rank 1 of" in view.issue_label.text()

    # the embedding map (a child guiapp embed): a rectangle's rows, then one point's row
    view.map_button.click()
    qtbot.waitUntil(lambda: view.map is not None and view.map.data is not None, timeout=LONG)
    emb = view.map
    assert emb is not None and emb.isVisible() and len(emb.data["row"]) == 600
    qtbot.waitUntil(lambda: emb.redraws > 0, timeout=LONG)
    assert emb.image.image is not None and emb.image.image[..., 3].any()  # points drawn
    emb.colour_by.setCurrentText("correct")
    xy = emb.data["pca"]
    x0, y0 = np.percentile(xy, 20, axis=0)
    x1, y1 = np.percentile(xy, 70, axis=0)
    emb.roi.setPos([x0, y0])
    emb.roi.setSize([x1 - x0, y1 - y0])
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    expected = emb.data["row"][inside].tolist()
    assert 0 < len(expected) < 600
    emb.show_button.click()
    qtbot.waitUntil(lambda: page.grid.selection.title.startswith("embedding map"), timeout=LONG)
    sel = page.grid.selection
    assert sel.rows(0, len(sel)).tolist() == expected
    emb.show_nearest(float(xy[7, 0]), float(xy[7, 1]))
    qtbot.waitUntil(lambda: len(page.grid.selection) == 1, timeout=LONG)
    assert page.grid.selection.row(0) == int(emb.data["row"][7])
    assert "tensorflow" not in sys.modules
