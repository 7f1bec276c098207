"""``guiapp bench baselines`` runs as a user runs it: every asked path, a finite ratio;
it and ``bench first-call`` refuse what they do not know in one line."""

from __future__ import annotations

import json
import math

import pytest
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


@pytest.mark.parametrize(
    ("args", "named", "offered"),
    [
        (("baselines", "--paths", "guiapp,mongodb"), "--paths 'mongodb'", "sqlite"),
        (("first-call", "--variants", "runner,xla"), "--variants 'runner,xla'", "no_meter"),
    ],
)
def test_an_unknown_path_or_variant_is_refused_in_one_line(
    args: tuple[str, ...], named: str, offered: str
) -> None:
    r = guiapp("bench", *args, "--json")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert named in line and offered in line
    assert r.stdout == ""
