"""Issue 28.5 and 28.7: the Training page says how it splits before Start, and warns when
a dataset without groups holds identical rows on both sides of the split."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from guiapp.core.project import DatasetRef, ModelEntry, Project, RunEntry
from guiapp.core.store import DatasetWriter
from guiapp.ui.main_window import MainWindow


def _write(path: Path, x: np.ndarray, y: np.ndarray, groups: np.ndarray | None) -> Path:
    cols = {"group": "int64"} if groups is not None else None
    with DatasetWriter(path, sample_shape=x.shape[1:], dtype="float32", class_names=["a", "b"],
                       columns=cols) as w:  # fmt: skip
        w.append(x, y, {"group": groups} if groups is not None else None)
    return path


def test_training_page_says_how_it_splits_and_warns_of_duplicates(qtbot, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 6)).astype("float32")
    g = np.repeat(np.arange(500), 8)
    y = (g % 2).astype(np.int32)
    grouped = _write(tmp_path / "grouped.h5", x, y, g)
    dup_x = x.copy()
    dup_x[3000:] = dup_x[:1000]
    dup_y = y.copy()
    dup_y[3000:] = dup_y[:1000]
    plain = _write(tmp_path / "plain.h5", dup_x, dup_y, None)
    project = Project.new(tmp_path / "p.gproj", "Split")
    project.datasets += [DatasetRef("grouped", grouped), DatasetRef("plain", plain)]
    window = MainWindow(project)
    qtbot.addWidget(window)
    form = window.page("Training").form  # type: ignore[attr-defined]
    form.dataset.setCurrentIndex(0)
    form.val.setValue(0.2)
    qtbot.waitUntil(lambda: "Split by group: 500 groups" in form.split_info.text(), timeout=10_000)
    assert "validation 100 groups, 800 rows" in form.split_info.text()
    form.split_by.setCurrentIndex(1)  # by rows
    qtbot.waitUntil(lambda: "groups may cross splits" in form.split_info.text(), timeout=10_000)
    form.split_by.setCurrentIndex(0)
    form.dataset.setCurrentIndex(1)
    qtbot.waitUntil(lambda: "Warning:" in form.split_info.text(), timeout=10_000)
    text = form.split_info.text()
    assert "no groups" in text and "identical rows" in text and "check --leakage" in text
    spec = form.split_config()
    assert spec is not None and spec.split_by == "groups"


def test_refusals_show_at_the_top_and_clear_when_fixed(qtbot, tmp_path: Path) -> None:
    """Issue 34.1 and 34.9: at the default window size Start/Stop/Resume and why Start
    refused are on screen (a refusal printed under the scrolling form was never seen), in
    the status bar too, and the refusal clears once another model is chosen."""
    from guiapp.core.model import fit_template

    data = _write(tmp_path / "k.h5", np.zeros((300, 126), "float32"), np.arange(300) % 2, None)
    project = Project.new(tmp_path / "p.gproj", "Refusal")
    project.datasets.append(DatasetRef("kmers", data))
    project.models.append(ModelEntry("fits", dict(fit_template("kmer-conv1d", [126], 2))))
    window = MainWindow(project)
    qtbot.addWidget(window)
    window.resize(1100, 690)
    window.show()
    window.set_page(3)
    page = window.page("Training")
    assert page.form.select_model("cnn2d-small")  # type: ignore[attr-defined]
    assert page.start() is None  # type: ignore[attr-defined]
    message = page.message  # type: ignore[attr-defined]
    assert "Conv2D" in message.text() and "Conv2D" in window.statusBar().currentMessage()
    for widget in (message, page.start_button):  # type: ignore[attr-defined]
        assert widget.isVisible()
        corners = (widget.rect().topLeft(), widget.rect().bottomRight())
        assert all(window.rect().contains(widget.mapTo(window, c)) for c in corners), widget
    assert page.form.select_model("fits")  # type: ignore[attr-defined]
    assert message.text() == ""


def test_a_new_project_starts_from_its_own_state(qtbot, tmp_path: Path) -> None:
    """Issue 34.2: File > New after a project with a run and an edited form shows no run
    and the form's defaults (not 2 epochs and 60 steps an epoch from the last project)."""
    import json

    from guiapp.core.train.history import RunHistory

    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    events = [{"event": "started", "time": 1.0, "epochs": 2, "steps_per_epoch": 10},
              {"event": "epoch", "time": 2.0, "epoch": 0, "loss": 0.5, "accuracy": 0.7},
              {"event": "finished", "time": 3.0}]  # fmt: skip
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    old = Project.new(tmp_path / "old.gproj", "Old")
    old.runs.append(RunEntry(str(run), name="r1", dataset="d", model="m"))
    window = MainWindow(old)
    qtbot.addWidget(window)
    page = window.page("Training")
    qtbot.waitUntil(lambda: len(page.history.epoch_index) == 1, timeout=10_000)  # type: ignore[attr-defined]
    page.form.epochs.setValue(2)  # type: ignore[attr-defined]
    page.form.max_steps.setValue(60)  # type: ignore[attr-defined]
    page.form.name.setText("demo-run")  # type: ignore[attr-defined]
    window.set_project(Project.new(tmp_path / "new.gproj", "New"))
    form = page.form  # type: ignore[attr-defined]
    assert (form.epochs.value(), form.max_steps.value(), form.name.text()) == (5, 0, "")
    assert page.run is None and page.run_label.text() == "No run yet."  # type: ignore[attr-defined]
    assert isinstance(page.history, RunHistory) and len(page.history.epoch_index) == 0  # type: ignore[attr-defined]
