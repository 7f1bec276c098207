"""Genomes in the GUI: the Generate dialog's genomes source (manifest, preview of rows as
bases and tokens, the command it builds), the Predict dialog's FASTA input and per-genome
table, the Browser's sample detail showing a genome row's bases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from guiapp.core.genomes.rows import row_lineage_with_bases
from guiapp.core.genomes.simulate import simulate_genomes
from guiapp.core.genomes.tokenizer import Tokenizer, as_codes, tokenize
from guiapp.ui.dialogs.generate_dialog import GenerateDialog
from guiapp.ui.dialogs.predict_dialog import PredictDialog
from guiapp.ui.pages.browser.sample_detail import SampleDetail


def test_generate_dialog_offers_genomes_with_a_preview(qtbot, tmp_path: Path) -> None:
    manifest = simulate_genomes(tmp_path / "g", classes=2, genomes_per_class=2, length=3000)
    dialog = GenerateDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    dialog.generator.setCurrentText("genomes")
    assert dialog.genome_box.isVisibleTo(dialog) and not dialog.rows.isVisibleTo(dialog)
    assert dialog.shape.text() == "126"
    assert "Manifest" in dialog.message.text()  # no manifest yet: Start says what is missing
    dialog.manifest.set_path(str(manifest))
    dialog.param_widgets["k"].setText("5")  # type: ignore[attr-defined]
    dialog.param_widgets["mode"].setCurrentText("tiling")  # type: ignore[attr-defined]
    dialog.shape.setText("20")
    args = dialog.validate()
    assert args is not None and "--n" not in args and "--classes" not in args
    params = json.loads(args[args.index("--params") + 1])
    assert params["manifest"] == str(manifest) and params["k"] == 5 and params["mode"] == "tiling"
    dialog.preview_button.click()
    qtbot.waitUntil(lambda: "·" in dialog.genome_preview.toPlainText(), timeout=20_000)
    lines = dialog.genome_preview.toPlainText().splitlines()
    bases, tokens = lines[1].strip(), [int(t) for t in lines[2].replace("…", "").split()]
    assert len(bases) == 24 and lines[0].startswith("species_")
    want = tokenize(as_codes(bases)[None], Tokenizer(5, True, "auto", 65521))[0][:12]
    assert tokens == want.tolist()
    values = dialog.values()
    again = GenerateDialog(tmp_path / "data")
    qtbot.addWidget(again)
    again.set_values(values)
    assert again.manifest.path() == str(manifest)
    assert again.param_widgets["mode"].currentText() == "tiling"  # type: ignore[attr-defined]


def test_predict_dialog_takes_fasta_and_shows_the_per_genome_table(qtbot, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    dialog = PredictDialog(run=str(tmp_path / "run"))
    qtbot.addWidget(dialog)
    dialog.data.setEditText(str(tmp_path / "new.fasta.gz"))
    dialog.rc_average.setChecked(True)
    args = dialog.cli_args()
    assert args[args.index("--data") + 1].endswith("new.fasta.gz") and "--rc-average" in args
    groups = tmp_path / "pred.groups.csv"
    groups.write_text(
        "group,rows,mean_class,mean_class_name,mean_prob,vote_class,vote_class_name,"
        "vote_share,unclassified,true_class,true_class_name\n"
        "ACC00002,157,0,species_0,0.93,0,species_0,0.97,0,0,species_0\n"
        "new.fasta.gz,40,1,species_1,0.51,1,species_1,0.6,1,,\n"
    )
    dialog.show_summary(
        {"rows": 197, "out": str(tmp_path / "pred.csv"), "class_names": ["a", "b"],
         "groups": {"out": str(groups), "groups": 2}}
    )  # fmt: skip
    qtbot.waitUntil(lambda: dialog.groups_table.rowCount() == 2, timeout=10_000)
    assert dialog.groups_table.isVisibleTo(dialog)
    assert dialog.groups_table.item(1, 0).text() == "new.fasta.gz"
    assert dialog.groups_table.item(1, 2).text() == "species_1"
    assert dialog.groups_table.item(1, 5).text() == "1"


def test_sample_detail_shows_a_genome_rows_bases(qtbot, tmp_path: Path) -> None:
    manifest = simulate_genomes(tmp_path / "g", classes=2, genomes_per_class=1, length=3000)
    out = tmp_path / "g.h5"
    params = {"manifest": str(manifest), "k": 5, "reads_per_genome": 20}
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", "generate", str(out), "--generator", "genomes",
         "--params", json.dumps(params), "--shape", "30"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    from guiapp.core.store import Dataset

    with Dataset(out) as ds:
        x, y = ds.read_range(3, 4)
    info = row_lineage_with_bases(out, 3)
    tokens = tokenize(as_codes(info["bases"])[None], Tokenizer(5, True, "auto", 65521))[0]
    assert np.array_equal(tokens, x[0])  # the bases shown are the row's (errors off)
    detail = SampleDetail()
    qtbot.addWidget(detail)
    detail.show_sample(3, x[0], int(y[0]), "species")
    detail.show_lineage(info)
    assert info["bases"] in detail.bases.text() and detail.bases.isVisibleTo(detail)
    detail.show_lineage({"row": 3, "group": None, "fields": {}})
    assert not detail.bases.isVisibleTo(detail)
