"""``guiapp bench first-call`` times each asked variant's first call in a process of its own
(its refusal of an unknown variant: ``test_bench_baselines.py``)."""

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
