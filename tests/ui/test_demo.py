"""`make run`'s first start: the demo project is made in the data folder, in the background."""

from __future__ import annotations

from pathlib import Path

import pytest

from guiapp.core.project import Project
from guiapp.ui.app import start_demo_build
from guiapp.ui.demo import TEMPLATE, demo_path, open_demo
from guiapp.ui.main_window import MainWindow

LONG = 240_000


@pytest.mark.timeout(400)
def test_first_start_makes_a_dataset_and_a_run_in_the_data_folder_with_progress(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUIAPP_DATA_DIR", str(tmp_path / "share"))
    monkeypatch.setenv("GUIAPP_DEMO_ROWS", "3000")  # small in tests; 20,000 for a user
    monkeypatch.setenv("GUIAPP_DEMO_STEPS", "6")
    template = TEMPLATE.read_bytes()
    project = open_demo()
    assert project.path == demo_path() == tmp_path / "share" / "demo" / "demo.gproj"
    window = MainWindow(project)
    qtbot.addWidget(window)
    window.show()
    assert start_demo_build(window)
    builder = window.demo
    panel = window.jobs_panel
    # the window stays live while the jobs run; the Jobs panel shows each one's progress
    qtbot.waitUntil(lambda: any(r.job.command == "train" for r in panel.rows), timeout=LONG)
    train = next(r for r in panel.rows if r.job.command == "train")
    seen: list[tuple[int, str, str]] = []
    train.job.progress.connect(
        lambda *_a: seen.append(
            (train.bar.value(), train.bar.format(), panel.table.item(0, panel.RATE).text())
        )
    )
    with qtbot.waitSignal(builder.done, timeout=LONG) as done:  # type: ignore[attr-defined]
        pass
    assert done.args == [True]
    assert seen and all(v > 0 and fmt.endswith("%") for v, fmt, _ in seen)
    assert any(rate for _, _, rate in seen)  # rows/s of the run
    assert [r.job.status for r in panel.rows] == ["finished", "finished"]

    saved = Project.load(demo_path())
    assert [d.name for d in saved.datasets] == ["patterns"]
    assert saved.datasets[0].path.is_relative_to(tmp_path / "share")
    assert [r.status for r in saved.runs] == ["finished"]
    # issue 34.9: the Model page shows the model the demo trained (it was the template's)
    assert [m.name for m in saved.models] == [saved.runs[0].model] == ["cnn2d-small"]
    assert window.page("Model").model_combo.currentText() == "cnn2d-small"  # type: ignore[attr-defined]
    assert TEMPLATE.read_bytes() == template  # the checkout is never written
    again = MainWindow(open_demo())
    qtbot.addWidget(again)
    assert not start_demo_build(again)  # made once


def test_run_gui_demo_smoke_makes_the_project_in_the_data_folder_only(
    qapp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run` is `guiapp --demo`: the project goes to GUIAPP_DATA_DIR, not the checkout."""
    from guiapp.ui.app import run_gui

    monkeypatch.setenv("GUIAPP_DATA_DIR", str(tmp_path / "share"))
    template = TEMPLATE.read_bytes()
    assert run_gui(["--smoke", str(tmp_path / "demo.png"), "--demo"]) == 0
    assert (tmp_path / "demo.png").stat().st_size > 0
    assert Project.load(tmp_path / "share" / "demo" / "demo.gproj").name == "Demo"
    assert TEMPLATE.read_bytes() == template
    assert "DEMO   := --demo" in (TEMPLATE.parents[2] / "Makefile").read_text()
