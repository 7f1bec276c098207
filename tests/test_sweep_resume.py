"""Issue 30.4: grid and random sweeps resume after kill -9 at any moment.

Trials come from a canonical enumeration (parameter names sorted), so the order of the
options, a JSON round trip through ``spec.json`` and ``--spec`` all give the same trials;
a sweep started before that (its trial folders in the order of the options) is matched
to its trials by the identity each folder records.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ENV, generated, guiapp

from guiapp.core.train.experiment_spec import ExperimentSpec, parse_grid

QUICK = ["--batch", "32", "--val", "0.2", "--max-steps", "3", "--checkpoint-every", "2"]
QUICK += ["--log-every", "1", "--events", "-"]
GRID = "learning_rate=0.001,0.003;batch=32,64"  # names not in sorted order
SPACE = {"learning_rate": {"log_uniform": [0.0001, 0.01]}, "dropout": {"uniform": [0.0, 0.5]}}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated(tmp_path_factory.mktemp("data") / "cells.h5", "patterns2d", 1200)


def command(data: Path, out: Path, sweep: list[str]) -> list[str]:
    return ["train", "--data", str(data), "--model", "cnn2d-small", "--out", str(out),
            *sweep, *QUICK]  # fmt: skip


def results(out: Path) -> list[tuple[str, dict, float, float]]:
    data = json.loads((out / "experiment.json").read_text())
    return [
        (t["id"], t["params"], t["final"]["val_accuracy"], t["final"]["val_loss"])
        for t in data["trials"]
    ]


def same(a: list, b: list) -> None:
    assert [(i, p) for i, p, _, _ in a] == [(i, p) for i, p, _, _ in b]
    for (_, _, acc_a, loss_a), (_, _, acc_b, loss_b) in zip(a, b, strict=True):
        assert acc_a == acc_b and loss_a == pytest.approx(loss_b, rel=1e-5)


def killed_at(argv: list[str], when: str) -> None:
    """Run ``guiapp ARGV`` and SIGKILL it at ``when``: ``inside`` the second trial (at its
    first checkpoint) or ``between`` (the second trial's ``trial started`` event)."""
    proc = subprocess.Popen([sys.executable, "-m", "guiapp", *argv], stdout=subprocess.PIPE,
                            text=True, env=ENV)  # fmt: skip
    assert proc.stdout
    trials: list[str] = []
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "trial" and e.get("status") == "started":
            trials.append(e["trial"])
            if when == "between" and len(trials) == 2:
                break
        if when == "inside" and e["event"] == "checkpoint" and len(trials) == 2:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(60)


def test_trials_do_not_depend_on_the_order_of_names(tmp_path: Path) -> None:
    from guiapp.core.model import get_template
    from guiapp.core.train.config import TrainConfig

    model = get_template("cnn2d-small", num_classes=5, input_shape=[25, 25, 1])
    base = TrainConfig(data="d.h5", model=model, out=str(tmp_path))
    a = ExperimentSpec(base=base, grid=parse_grid(GRID))
    b = ExperimentSpec(base=base, grid=parse_grid("batch=32,64;learning_rate=0.001,0.003"))
    c = ExperimentSpec.from_json(json.loads(json.dumps(a.to_json())))
    ids = [[(t.id, t.params) for t in s.trials()] for s in (a, b, c)]
    assert ids[0] == ids[1] == ids[2]
    r1 = ExperimentSpec(base=base, random=3, space=SPACE)
    r2 = ExperimentSpec(base=base, random=3, space=dict(reversed(list(SPACE.items()))))
    assert [t.params for t in r1.trials()] == [t.params for t in r2.trials()]


@pytest.mark.parametrize(
    ("sweep", "when"),
    [
        (["--grid", GRID], "inside"),
        (["--grid", GRID], "between"),
        (["--random", "3", "--space", "SPACE"], "inside"),
        (["--random", "3", "--space", "SPACE"], "between"),
    ],
)
def test_killed_sweep_resumes_to_the_uninterrupted_results(
    data: Path, tmp_path: Path, sweep: list[str], when: str
) -> None:
    space = tmp_path / "space.json"
    space.write_text(json.dumps(SPACE))
    sweep = [str(space) if s == "SPACE" else s for s in sweep]
    ref = tmp_path / "ref"
    r = guiapp(*command(data, ref, sweep))
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "killed"
    killed_at(command(data, out, sweep), when)
    r = guiapp(*command(data, out, sweep), "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    skipped = [json.loads(x) for x in r.stdout.splitlines() if '"status": "finished"' in x]
    assert any(e["event"] == "trial" for e in skipped)  # the first trial was not run again
    same(results(out), results(ref))
    # --spec of the stored spec.json resumes too (nothing left to do: same results)
    r = guiapp("train", "--spec", out / "spec.json", "--resume", "--events", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    same(results(out), results(ref))


def test_a_sweep_named_in_the_old_order_resumes(data: Path, tmp_path: Path) -> None:
    """Trial folders named in the order of the options (as before canonical trials): the
    resume gives each folder its trial's id by the identity it records."""
    out = tmp_path / "old"
    r = guiapp(*command(data, out, ["--grid", GRID]))
    assert r.returncode == 0, r.stderr[-2000:]
    ref = results(out)
    # The old enumeration (learning_rate first) swapped grid-001 and grid-002.
    (out / "grid-001").rename(out / "tmp")
    (out / "grid-002").rename(out / "grid-001")
    (out / "tmp").rename(out / "grid-002")
    (out / "experiment.json").unlink()
    r = guiapp(*command(data, out, ["--grid", GRID]), "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    events = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert not [e for e in events if e["event"] == "started"]  # every trial was finished
    same(results(out), ref)


def test_a_steps_cap_scales_with_each_fraction(tmp_path: Path) -> None:
    """Issue 30.5: with Steps per epoch 100, fractions 0.01, 0.1 and 1.0 train 1, 10 and
    100 steps an epoch (before, the 0.1 and 1.0 trials both trained 100 steps)."""
    from guiapp.core.model import get_template
    from guiapp.core.train.config import TrainConfig

    model = get_template("cnn2d-small", num_classes=5, input_shape=[25, 25, 1])
    base = TrainConfig(data="d.h5", model=model, out=str(tmp_path), max_steps=100)
    spec = ExperimentSpec(base=base, fractions=[0.01, 0.1, 1.0])
    assert [t.config.max_steps for t in spec.trials()] == [1, 10, 100]
    uncapped = ExperimentSpec(base=TrainConfig(data="d.h5", model=model, out=str(tmp_path)),
                              fractions=[0.1, 1.0])  # fmt: skip
    assert [t.config.max_steps for t in uncapped.trials()] == [0, 0]
