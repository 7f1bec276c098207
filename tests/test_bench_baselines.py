"""``guiapp bench baselines`` runs as a user runs it: every asked path, a finite ratio."""

from __future__ import annotations

import json
import math

from conftest import guiapp


def test_baselines_runs_every_asked_path_and_gives_finite_ratios() -> None:
    r = guiapp(
        "bench", "baselines", "--rows", "2048", "--batch", "512", "--repeats", "1",
        "--epochs", "1", "--paths", "guiapp,numpy", "--models", "light-kmer", "--no-phases", "--json",
        timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    (case,) = res["cases"]
    assert (case["model"], case["batch"]) == ("light-kmer", 512)
    assert set(case["paths"]) == {"guiapp", "numpy"}
    assert sorted(run["path"] for run in res["runs"]) == ["guiapp", "numpy"]
    for s in case["paths"].values():
        assert s["rows_per_epoch"] == 2048  # every path trains the same 4 batches of 512
        assert s["process_rows_per_s"]["median"] > 0
    ratio = case["ratio_guiapp_vs"]["numpy"]
    assert math.isfinite(ratio["first"]) and ratio["first"] > 0
    assert math.isfinite(ratio["process"]) and ratio["process"] > 0
    assert ratio["steady"] is None  # one epoch: no steady state to report


def test_baselines_refuses_an_unknown_path_in_one_line() -> None:
    r = guiapp("bench", "baselines", "--paths", "guiapp,mongodb", "--json")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert "--paths 'mongodb'" in line and "sqlite" in line
    assert r.stdout == ""
