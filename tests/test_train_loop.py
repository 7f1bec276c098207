"""The training loop's meters, divergence and steps per call: real `guiapp train` processes.

Input wait is classified into the profiler's bands only (< 5% fine, > 20% input-bound),
with sizes chosen so the margins are wide on a loaded 2-core machine. The slow case's reads
are made slow for certain: ``GUIAPP_READ_DELAY_MS`` (a test aid of the pipeline) has every
segment read wait 10 ms per batch (of 32 rows of 64x64), one read at a time, for a
linear model that takes well under 1 ms; it runs 8 steps per call, so the sampled wait
estimate is what it checks, on the windows after the pipeline's read-ahead is used up. The
fast case (cnn2d-small on uncompressed shards, with two busy processes beside it) is
``tests/test_input_wait.py``.
(Gzip shards read through h5py used to be the slow case, but they are not slower than the
linear model once the wait clock is cheap: ~5-25%, issue #13.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
from test_train import ENV, assert_same_history, events_of, guiapp  # noqa: F401

from guiapp.bench.train import TINY
from guiapp.core.train.meters import wait_band

LINEAR = TINY  # Flatten + Dense: next to no compute per row


def _spec(tmp_path: Path, spec: dict, **optimizer: object) -> Path:
    spec = {**spec, "optimizer": {**spec["optimizer"], **optimizer}}
    path = tmp_path / f"{spec['name']}.json"
    path.write_text(json.dumps(spec))
    return path


SLOW_ROWS = {**LINEAR, "input": {"shape": [64, 64, 1], "dtype": "float32"}}


@pytest.mark.parametrize(
    ("case", "model", "shape", "steps", "extra", "band"),
    [
        (
            "slow",
            SLOW_ROWS,
            (64, 64),
            "160",
            ["--log-every", "8", "--steps-per-call", "8"],
            "input-bound",
        ),
    ],
)
def test_input_wait_bands(
    tmp_path: Path,
    make_dataset,
    case: str,
    model: dict,
    shape: tuple[int, int],
    steps: str,
    extra: list[str],
    band: str,
) -> None:
    data = make_dataset(f"{case}.h5", 6000, capacity=4096, shape=shape)
    r = guiapp(
        "train",
        "--data",
        data,
        "--model",
        _spec(tmp_path, model),
        "--out",
        tmp_path / "run",
        "--batch",
        "32",
        "--max-steps",
        steps,
        *extra,
        "--events",
        "-",
        env={"GUIAPP_READ_DELAY_MS": "10" if case == "slow" else ""},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    ev = events_of(r.stdout)
    windows = [e for e in ev if e["event"] == "batch"]
    assert len(windows) >= 4
    for e in windows:
        assert 0.0 <= e["input_wait"] <= 1.0
        assert e["supply_rows_per_s"] > 0 and e["consume_rows_per_s"] > 0
        # wall rate = rows / (waiting + stepping): never above either of its parts
        assert e["rows_per_s"] <= min(e["supply_rows_per_s"], e["consume_rows_per_s"]) * 1.001
    # The first window also holds the step's compilation, and the slow case's first
    # windows are fed by the read-ahead: the later half is the steady state. Its input wait
    # is the share of its wall time spent waiting (a segment of many batches arrives at
    # once, so single windows wait all or nothing).
    steady = windows[len(windows) // 2 :]
    wall = [
        (e["global_step"] - p["global_step"]) * 32 / e["rows_per_s"]
        for p, e in zip(windows, windows[1:], strict=False)
    ]
    wall = wall[len(wall) - len(steady) :]
    waited = sum(e["input_wait"] * t for e, t in zip(steady, wall, strict=True))
    assert wait_band(waited / sum(wall)) == band
    epoch = next(e for e in ev if e["event"] == "epoch")
    assert {"input_wait", "supply_rows_per_s", "consume_rows_per_s"} <= set(epoch)


def test_diverging_loss_stops_with_one_line_and_resumes(tmp_path: Path, make_dataset) -> None:
    """SGD at learning rate 10 blows up within a few steps: exit 2, one line, a `failed`
    event, the last checkpoint before it intact and finite, and `--resume` from it reaches
    the same divergence at the same step."""
    data = make_dataset("cells.h5", 1200, capacity=1024)
    from guiapp.core.model import get_template

    spec = _spec(tmp_path, get_template("cnn2d-small"), type="sgd", learning_rate=10.0)
    out = tmp_path / "run"
    args = ["train", "--data", data, "--model", spec, "--out", out, "--batch", "32"]
    args += ["--log-every", "5", "--checkpoint-every", "2", "--events", "-"]
    r = guiapp(*args)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    line = lines[0]
    got = re.fullmatch(
        r"guiapp: error: loss became (NaN|Inf) at epoch 1 step (\d+): "
        r"lower the learning rate or check the data",
        line,
    )
    assert got, line
    step = got.group(2)
    ev = events_of(r.stdout)
    assert ev[-1]["event"] == "failed" and ev[-1]["reason"] == line.removeprefix("guiapp: error: ")
    saved = [e["step"] for e in ev if e["event"] == "checkpoint"]
    assert saved and all(s < int(step) for s in saved)  # it diverges after a checkpoint
    assert not (out / "history.csv").exists() and not (out / "last.keras").exists()
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]  # nothing half-written
    with h5py.File(out / "checkpoints" / "last.h5") as f:
        assert json.loads(f.attrs["position"])["step"] == saved[-1]
        for k in f["model"]:
            assert np.isfinite(f["model"][k][()]).all()
    again = guiapp(*args, "--resume")
    assert again.returncode == 2 and again.stderr.strip() == line
    assert events_of(again.stdout)[0]["resumed_from"]["step"] == saved[-1]


def test_steps_per_call_gives_the_same_run(tmp_path: Path, make_dataset) -> None:
    """Three steps per call (log every 5, checkpoint every 7: calls cut short at each), and
    calls sized by their time (the default, 0, in epochs of AUTO_MIN_STEPS steps or more:
    this tiny model's calls reach the logs' 5), train to the same weights, history and
    checkpoint positions as one per call; and a run that reads its rows from the files
    (--cache off) as one that read them once into memory (--cache auto, small data)."""
    from guiapp.core.train.steps import AUTO_MIN_STEPS

    data = make_dataset("cells.h5", 1200, capacity=1024)
    runs = {}
    for k, cache in (("1", "auto"), ("3", "off"), ("0", "off")):
        r = guiapp(
            "train",
            "--data",
            data,
            "--model",
            _spec(tmp_path, LINEAR),
            "--out",
            tmp_path / k,
            "--epochs",
            "2",
            "--batch",
            "4",
            "--log-every",
            "5",
            "--checkpoint-every",
            "7",
            "--steps-per-call",
            k,
            "--cache",
            cache,
            "--events",
            "-",
        )
        assert r.returncode == 0, r.stderr[-2000:]
        runs[k] = events_of(r.stdout)
    assert runs["1"][0]["cache"]["mode"] == "memory" and runs["3"][0]["cache"]["mode"] == "off"
    positions = {
        k: [
            (e["event"], e["epoch"], e["step"]) for e in ev if e["event"] in ("batch", "checkpoint")
        ]
        for k, ev in runs.items()
    }
    per_call = {
        k: [e["steps_per_call"] for e in ev if e["event"] == "epoch"] for k, ev in runs.items()
    }
    assert runs["1"][0]["steps_per_epoch"] >= AUTO_MIN_STEPS
    assert per_call["1"] == [1.0, 1.0]
    # 3 a call, cut at the logs (every 5) and checkpoints (every 7)
    assert 2.0 < per_call["3"][0] < 3.0
    # auto: calls of several steps (this model's steps take ~1 ms; 2 a call up to 25 ms)
    assert per_call["0"][1] > 1.5
    for k in ("3", "0"):
        assert positions["1"] == positions[k]
        assert runs["1"][-1]["weights_hash"] == runs[k][-1]["weights_hash"]
        assert_same_history(tmp_path / "1", tmp_path / k)


def test_call_sizer() -> None:
    """--steps-per-call N runs N a call; 0 sizes calls to about AUTO_CALL_S by the calls so
    far (from 2, so the first traces the loop's graph), within 1..AUTO_CALL_MAX; and runs one
    step a call where it may not size them (several devices)."""
    from guiapp.core.train.steps import AUTO_CALL_MAX, AUTO_CALL_S, CallSizer

    fixed = CallSizer(3, True)
    fixed.took(3, 30.0)
    assert fixed.per_call == 3
    assert CallSizer(0, False).per_call == 1
    auto = CallSizer(0, True)
    assert auto.per_call == 2
    auto.took(2, 2 * AUTO_CALL_S / 10.5)  # steps of a tenth and a bit of the target
    assert auto.per_call == 10
    auto.took(10, 10 * AUTO_CALL_S / 10.5)
    assert auto.per_call == 10
    auto.took(1, 4 * AUTO_CALL_S)  # slow steps: calls of one (the mean of the last two)
    assert auto.per_call == 1
    for _ in range(20):
        auto.took(1, AUTO_CALL_S / 1000)
    assert auto.per_call == AUTO_CALL_MAX
