"""``guiapp bench first-call`` times each asked variant's first call in a process of its own."""

from __future__ import annotations

import json

from conftest import guiapp


def test_first_call_times_every_asked_variant() -> None:
    r = guiapp(
        "bench", "first-call", "--batch", "64", "--repeats", "1",
        "--variants", "runner,keras", "--json",
        timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert (res["model"], res["batch"], res["repeats"]) == ("light-kmer", 64, 1)
    assert set(res["variants"]) == {"runner", "keras"}
    for s in res["variants"].values():
        # the first call traces and builds the graph; the second only runs a step
        assert s["first_s"]["median"] > s["second_s"]["median"] > 0


def test_first_call_refuses_an_unknown_variant_in_one_line() -> None:
    r = guiapp("bench", "first-call", "--variants", "runner,xla", "--json")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert "--variants 'runner,xla'" in line and "no_meter" in line
    assert r.stdout == ""
