"""Issue 34.8: augmentation as forms built from the one registry of ops, offline in the
Generate dialog and online on the Training page; the JSON stays as text, two ways; a preview
of a few augmented samples before anything starts. Issue 35.3: the Training page says where
a run will be written before Start. Issue 30.5: it warns before Start when a steps cap leaves
a data-scaling trial part of its rows."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np

from guiapp.core.augment.registry import OP_DEFS
from guiapp.core.project import DatasetRef
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from tests.conftest import guiapp
from tests.ui.conftest import open_project, write_dataset


def test_generate_dialog_builds_augmentation_from_the_registry(qtbot, tmp_path: Path) -> None:
    dialog = GenerateDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    form = dialog.augment_form
    # every offline op of the registry can be added, with its parameters and defaults
    offered = [form.add_op.itemData(i) for i in range(form.add_op.count())]
    assert offered == sorted(n for n, op in OP_DEFS.items() if "offline" in op.runs)
    row = form.append_op("cutout")
    assert set(row.fields) == set(OP_DEFS["cutout"].params)
    assert row.values() == {"op": "cutout", "size": 5, "fill": 0.0, "p": 0.5}
    # 25x25 float samples: the 1D token ops are marked as not fitting, with the reason
    model = form.add_op.model()
    mutate = model.item(form.add_op.findData("mutate"))
    assert not mutate.isEnabled() and "1D" in mutate.toolTip()
    assert model.item(form.add_op.findData("flip")).isEnabled()
    row.fields["p"].setValue(0.25)
    form.copies.setValue(3)
    # the form writes the JSON text...
    assert json.loads(form.json_text.toPlainText()) == {
        "copies": 3,
        "ops": [{"op": "cutout", "size": 5, "fill": 0.0, "p": 0.25}],
    }
    # ...and text that parses fills the form
    form.json_text.setPlainText(
        '{"copies": 2, "ops": [{"op": "flip", "axis": "v"}, {"op": "noise"}]}'
    )
    assert [r.name for r in form.rows] == ["flip", "noise"]
    assert form.rows[0].values() == {"op": "flip", "axis": "v", "p": 0.5}
    assert form.copies.value() == 2
    # text that names what the registry does not know says so and keeps the form
    form.json_text.setPlainText('{"copies": 2, "ops": [{"op": "flip", "angle": 3}]}')
    assert "unknown parameter 'angle'" in form.text_problem()
    assert [r.name for r in form.rows] == ["flip", "noise"]
    assert dialog.validate() is None and "angle" in dialog.message.text()
    form.json_text.setPlainText('{"copies": 2, "ops": [{"op": "flip", "axis": "v"}]}')
    args = dialog.validate()
    assert args is not None
    spec = json.loads(args[args.index("--augment") + 1])
    assert spec == {"copies": 2, "ops": [{"op": "flip", "axis": "v", "p": 0.5}]}

    # the preview: four generated samples and their augmented draws, in numpy
    form.preview()
    qtbot.waitUntil(lambda: len(form.preview_grid.cells) == 16, timeout=10_000)
    assert "4 sample(s)" in form.preview_note.text()
    # the ops and the preview scroll inside the tab: Start stays on a 690-pixel screen
    assert dialog.sizeHint().height() <= 690

    # the command the dialog builds runs: a dataset written with those copies
    out = tmp_path / "data" / "aug.h5"
    args[0] = str(out)
    args[args.index("--n") + 1] = "64"
    res = guiapp("generate", *args, "--workers", "1")
    assert res.returncode == 0, res.stderr
    info = guiapp("info", str(out), "--json")
    assert json.loads(info.stdout)["rows"] == 64, shlex.join(args)


def test_generate_dialog_remembers_its_values(qtbot, tmp_path: Path, make_dataset) -> None:
    """Issue 34.9: the Generate dialog opens with what the user entered last, like Import."""
    window = open_project(qtbot, tmp_path, "Remember")
    page = window.page("Datasets")
    dialog = page.open_generate_dialog()  # type: ignore[attr-defined]
    dialog.generator.setCurrentText("kmer1d")
    dialog.rows.setText("500")
    dialog.seed.setValue(7)
    dialog.augment_form.json_text.setPlainText('{"copies": 2, "ops": [{"op": "reverse"}]}')
    job = dialog.start()
    assert job is not None
    job.stop()
    again = page.open_generate_dialog()  # type: ignore[attr-defined]
    qtbot.addWidget(again)
    assert again.generator.currentText() == "kmer1d"
    assert again.rows.text() == "500" and again.seed.value() == 7
    assert again.augment_form.spec() == {"copies": 2, "ops": [{"op": "reverse", "p": 0.5}]}
    again.reject()
    qtbot.waitUntil(lambda: not job.is_running(), timeout=30_000)


def test_training_page_online_augmentation_where_and_scaling(qtbot, tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.h5", 9000, shape=(8, 8), classes=3)
    window = open_project(qtbot, tmp_path, "Online", {"d": data})
    page = window.page("Training")
    form = page.form  # type: ignore[attr-defined]
    aug = form.augment_form
    # the online keys as fields; the JSON text (what the spec and the project keep) follows
    aug.fields["flip_h"].setChecked(True)
    aug.fields["noise_std"].setValue(0.2)
    assert json.loads(form.augment.text()) == {"flip_h": True, "noise_std": 0.2}
    form.augment.setText('{"rot90": true}')
    assert aug.fields["rot90"].isChecked() and not aug.fields["flip_h"].isChecked()
    assert aug.fields["noise_std"].value() == 0
    form.augment.setText('{"noise_std": -1}')
    assert "noise_std must be >= 0" in aug.text_problem() and aug.fields["rot90"].isChecked()
    form.augment.setText('{"flip_v": true, "rot90": true}')
    aug.preview()
    qtbot.waitUntil(lambda: "sample(s)" in aug.preview_note.text(), timeout=10_000)
    assert len(aug.preview_grid.cells) == 16, aug.preview_note.text()  # 4 rows, 3 draws
    assert "numpy twin" in aug.preview_note.text()

    # the fields fit the data: 8x8 float samples take every online op; 1D integer ones no
    # flips, no turns (not 2D) and no noise (it would change nothing on integers)
    square = ("flip_h", "flip_v", "rot90", "noise_std")
    assert all(aug.fields[k].isEnabled() for k in square)
    tokens = write_dataset(tmp_path / "t.h5", 100, shape=(16,), classes=2)  # uint16 vectors
    page.project.datasets.append(DatasetRef("t", tokens))  # type: ignore[attr-defined]
    page.project_updated()  # type: ignore[attr-defined]
    form.dataset.setCurrentIndex(form.dataset.findText("t"))
    assert not aug.fields["rot90"].isEnabled() and "2D" in aug.fields["rot90"].toolTip()
    assert not aug.fields["noise_std"].isEnabled() and "uint16" in aug.fields["noise_std"].toolTip()
    if "reverse" in aug.fields:  # the registry's 1-D op: on for vectors, off for images
        assert aug.fields["reverse"].isEnabled()
    form.dataset.setCurrentIndex(form.dataset.findText("d"))
    assert aug.fields["noise_std"].isEnabled()

    # 35.3: where the run goes, before Start
    form.name.setText("my run")
    where = page.where_label.text()  # type: ignore[attr-defined]
    assert str(tmp_path / "runs" / "my-run") in where

    # 30.5: fractions with a steps cap below the training rows: the real numbers
    form.model.setCurrentIndex(form.model.findText("template: cnn2d-small"))
    form.val.setValue(0.1)
    form.batch.setValue(64)
    form.max_steps.setValue(50)
    form.experiment.fractions.setText("0.1,1.0")
    note = form.experiment.scaling_info.text()
    # 9,000 rows, 0.1 validation: ~8,100 training rows; 50 steps of 64 = 3,200 rows
    assert "caps an epoch at 3,200 rows" in note and "~8,100 training rows" in note
    assert "0.1: 5 steps, 320 of its ~810 rows" in note
    assert "1: 50 steps, 3,200 of its ~8,100 rows" in note
    form.max_steps.setValue(0)  # all steps: nothing to warn of
    assert form.experiment.scaling_info.text() == ""
    form.max_steps.setValue(50)
    spec = form.experiment_spec(page.project, tmp_path / "runs" / "x")  # type: ignore[attr-defined]
    assert spec.base.augment == {"flip_v": True, "rot90": True}
    steps = {t.id: t.config.max_steps for t in spec.trials()}
    assert sorted(steps.values()) == [5, 50]
    assert np.isclose(sum(spec.fractions), 1.1)
