"""Experiments: k folds, fraction curves, sweeps, resume, early stopping, TensorBoard files.

Real ``guiapp train`` processes on a small dataset (1 epoch, a few steps per trial).
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

from guiapp.core.train.early_stopping import best_epoch, should_stop
from guiapp.core.train.experiment_history import ExperimentHistory
from guiapp.core.train.experiment_spec import ExperimentSpec, parse_grid
from guiapp.core.train.history import RunHistory

QUICK = ["--batch", "32", "--val", "0.2", "--max-steps", "3", "--checkpoint-every", "2"]
QUICK += ["--log-every", "1", "--events", "-"]


def train(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return guiapp("train", "--data", data, "--model", "cnn2d-small", "--out", out, *extra)


def events_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def summary_of(out: Path) -> dict:
    return json.loads((out / "experiment.json").read_text())


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated(tmp_path_factory.mktemp("data") / "cells.h5", "patterns2d", 1200)


@pytest.fixture(scope="module")
def three_folds(images: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cv") / "cv"
    r = train(images, out, "--folds", "3", *QUICK)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


# ---------------------------------------------------------------------- the three shapes
def test_three_fold_experiment(three_folds: Path) -> None:
    data = summary_of(three_folds)
    assert [t["id"] for t in data["trials"]] == ["fold-0", "fold-1", "fold-2"]
    assert [t["params"] for t in data["trials"]] == [{"fold": 0}, {"fold": 1}, {"fold": 2}]
    accs = [t["final"]["val_accuracy"] for t in data["trials"]]
    s = data["summary"]
    assert s["finished"] == 3 and s["folds"] == 3
    assert s["mean_val_accuracy"] == pytest.approx(sum(accs) / 3)
    assert s["best_trial"] == data["trials"][accs.index(max(accs))]["id"]
    md = (three_folds / "experiment.md").read_text()
    assert "Mean ± std over 3 folds" in md and "fold-2" in md
    spec = ExperimentSpec.load(three_folds / "spec.json")
    assert spec.folds == [0, 1, 2] and spec.base.batch == 32
    # one event stream for all trials, each event tagged with its trial
    events = [json.loads(x) for x in (three_folds / "events.jsonl").read_text().splitlines()]
    started = [e for e in events if e["event"] == "started"]
    assert [e["trial"] for e in started] == ["fold-0", "fold-1", "fold-2"]
    assert events[-1]["event"] == "experiment_finished"


def test_fraction_curve(images: Path, tmp_path: Path) -> None:
    out = tmp_path / "curve"
    r = train(images, out, "--fractions", "0.2,0.5,1.0", "--batch", "32", "--events", "-")
    assert r.returncode == 0, r.stderr[-3000:]
    data = summary_of(out)
    assert [t["id"] for t in data["trials"]] == [
        "fraction-0.2",
        "fraction-0.5",
        "fraction-1.0",
    ]
    curve = data["summary"]["curve"]
    rows = [p["train_rows"] for p in curve]
    assert len(curve) == 3 and rows == sorted(rows) and rows[0] < rows[-1]
    assert "Data-scaling curve" in (out / "experiment.md").read_text()


def test_grid_two_by_two(images: Path, tmp_path: Path) -> None:
    out = tmp_path / "grid"
    grid = "learning_rate=0.001,0.003;dropout=0.1,0.3"
    r = train(images, out, "--grid", grid, *QUICK)
    assert r.returncode == 0, r.stderr[-3000:]
    data = summary_of(out)
    assert len(data["trials"]) == 4
    # Trials enumerate the names sorted (dropout, then learning_rate), whatever their order
    # on the command line: the same trials after a JSON round trip (issue 30.4).
    assert [t["params"] for t in data["trials"]][1] == {"dropout": 0.1, "learning_rate": 0.003}
    recorded = json.loads((out / "grid-002" / "config.json").read_text())["config"]["model"]
    assert recorded["optimizer"]["learning_rate"] == 0.001
    assert [layer["rate"] for layer in recorded["layers"] if layer["type"] == "Dropout"] == [0.3]
    assert data["summary"]["best_trial"] in {t["id"] for t in data["trials"]}


# ---------------------------------------------------------------------- resume
def test_sigkill_in_second_trial_then_resume_equals_uninterrupted(
    images: Path, tmp_path: Path, three_folds: Path
) -> None:
    out = tmp_path / "killed"
    argv = [sys.executable, "-m", "guiapp", "train", "--data", str(images)]
    argv += ["--model", "cnn2d-small", "--out", str(out), "--folds", "3", *QUICK]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "checkpoint" and e.get("trial") == "fold-1" and e["epoch"] == 1:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(60)
    assert not (out / "fold-2").exists()
    r = guiapp("train", "--out", out, "--resume", "--events", "-")
    assert r.returncode == 0, r.stderr[-3000:]
    events = events_of(r.stdout)
    skipped = [e for e in events if e["event"] == "trial" and e["status"] == "finished"]
    assert [e["trial"] for e in skipped] == ["fold-0"]
    started = {e["trial"]: e for e in events if e["event"] == "started"}
    assert started["fold-1"]["resumed_from"]["step"] == 2 and "fold-0" not in started
    got, ref = summary_of(out), summary_of(three_folds)
    for a, b in zip(got["trials"], ref["trials"], strict=True):
        assert a["final"]["val_accuracy"] == b["final"]["val_accuracy"]
        assert a["final"]["val_loss"] == pytest.approx(b["final"]["val_loss"], rel=1e-5)
    for key in ("mean_val_accuracy", "std_val_accuracy", "best_trial"):
        assert got["summary"][key] == ref["summary"][key]


def test_resume_with_other_settings_is_refused(three_folds: Path, images: Path) -> None:
    r = train(images, three_folds, "--folds", "3", *QUICK[:-2], "--seed", "9", "--resume")
    assert r.returncode == 2 and "other data, model or settings" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------- early stopping
def test_early_stopping_decision() -> None:
    rows = [{"val_accuracy": v} for v in (0.5, 0.6, 0.6, 0.55)]
    assert best_epoch(rows) == 1
    assert not should_stop(rows[:3], 2) and should_stop(rows, 2)
    assert not should_stop(rows, 0) and not should_stop([], 3)


def test_early_stopping_stops_and_keeps_best(images: Path, tmp_path: Path) -> None:
    from guiapp.core.model import get_template

    spec = get_template("cnn2d-small", num_classes=5, input_shape=[25, 25, 1])
    spec["optimizer"]["learning_rate"] = 1e-9  # the validation accuracy cannot improve
    model = tmp_path / "still.json"
    model.write_text(json.dumps(spec))
    run = tmp_path / "es"
    r = guiapp(
        "train", "--data", images, "--model", model, "--out", run,
        "--epochs", "6", "--early-stopping", "2", *QUICK,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    events = events_of(r.stdout)
    stop = next(e for e in events if e["event"] == "early_stopping")
    assert stop["stopped"] and stop["best_epoch"] == 1 and stop["epochs_run"] == 3
    history = (run / "history.csv").read_text().splitlines()
    assert len(history) == 1 + 3
    report = json.loads((run / "report.json").read_text())
    best = summary_of(run)["trials"][0]["best"]["val_accuracy"]
    assert report["accuracy"] == pytest.approx(best, abs=1e-6)
    assert (run / "best.keras").exists()


# ---------------------------------------------------------------------- TensorBoard
def test_tensorboard_reader_reads_scalars_and_hparams(three_folds: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = EventAccumulator(str(three_folds / "fold-1" / "tensorboard"))
    acc.Reload()
    tags = acc.Tags()["tensors"]
    assert {"batch/loss", "epoch/loss", "epoch/val_accuracy"} <= set(tags)
    losses = acc.Tensors("batch/loss")
    assert [t.step for t in losses] == [1, 2, 3]
    content = acc.PluginTagToContent("hparams")
    infos = [plugin_data_pb2.HParamsPluginData.FromString(c) for c in content.values()]
    start = next(i.session_start_info for i in infos if i.HasField("session_start_info"))
    assert start.hparams["fold"].number_value == 1 and start.hparams["batch"].number_value == 32


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--grid", "learning_rate"], "NAME=V1,V2"),
        (["--grid", "colour=red,blue"], "cannot be varied"),
        (["--random", "2"], "--space"),
        (["--fractions", "0.1,x"], "not a number"),
        (["--fractions", "0,1"], "not in (0, 1]"),
        (["--early-stopping", "2", "--val", "0"], "validation split"),
        (["--grid", "dropout=2.0"], "rate"),
    ],
)
def test_bad_experiment_options(
    images: Path, tmp_path: Path, extra: list[str], expected: str
) -> None:
    out = tmp_path / "bad"
    r = train(images, out, *extra)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr and expected in lines[0]
    assert not out.exists()


# ---------------------------------------------------------------------- events as curves
def _trial_events(trial: str, steps: int) -> list[dict]:
    out: list[dict] = [{"event": "started", "trial": trial, "steps_per_epoch": steps}]
    for s in range(1, steps + 1):
        out.append({"event": "batch", "trial": trial, "global_step": s, "loss": 1.0 / s})
    out.append({"event": "epoch", "trial": trial, "epoch": 0, "val_accuracy": 0.5})
    out.append({"event": "finished", "trial": trial, "best_val_accuracy": 0.5})
    return out


def test_run_history_keeps_every_fold() -> None:
    h = RunHistory()
    for trial in ("fold-0", "fold-1", "fold-2"):
        for e in _trial_events(trial, 4):
            h.feed(e)
    x = h.step.view()
    assert len(x) == 12 and (x[1:] > x[:-1]).all()
    assert len(h.epoch_step) == 3 and [t for t, _ in h.trial_starts] == [
        "fold-0",
        "fold-1",
        "fold-2",
    ]


def test_experiment_history_rows_band_and_curve() -> None:
    h = ExperimentHistory()
    h.feed({"event": "experiment", "varied": ["fraction", "fold"], "trials": [
        {"id": f"fraction-{f}-fold-{k}", "params": {"fraction": f, "fold": k}}
        for f in (0.1, 1.0) for k in (0, 1)
    ]})  # fmt: skip
    for i, tid in enumerate(h.trial_ids()):
        for e in _trial_events(tid, 2):
            if e["event"] == "epoch":
                e["val_accuracy"] = 0.5 + 0.1 * i
            if e["event"] == "started":
                e["train_rows"] = 100 if "0.1" in tid else 1000
            h.feed(e)
    assert [r["status"] for r in h.rows()] == ["finished"] * 4
    curve = h.curve()
    assert [p["train_rows"] for p in curve] == [100, 1000]
    assert curve[0]["mean_val_accuracy"] == pytest.approx(0.55)
    _, mean, std = h.fold_band(["fraction-1.0-fold-0", "fraction-1.0-fold-1"])
    assert mean[0] == pytest.approx(0.75) and std[0] == pytest.approx(0.05)


def test_spec_trials_and_round_trip(tmp_path: Path) -> None:
    from guiapp.core.train.config import TrainConfig

    base = TrainConfig(data="d.h5", model={"layers": []}, out=str(tmp_path / "x"), folds=2)
    spec = ExperimentSpec(base=base, folds=[0, 1], grid=parse_grid("batch=32,64;seed=1"))
    ids = [t.id for t in spec.trials()]
    assert ids == ["grid-000-fold-0", "grid-000-fold-1", "grid-001-fold-0", "grid-001-fold-1"]
    assert spec.trials()[2].config.batch == 64 and spec.trials()[3].config.fold == 1
    spec.save()
    again = ExperimentSpec.load(tmp_path / "x" / "spec.json")
    assert again.to_json() == spec.to_json()
    random = ExperimentSpec(
        base=base, random=3, space={"learning_rate": {"log_uniform": [1e-4, 1e-2]}}
    )
    first = [t.params for t in random.trials()]
    assert first == [t.params for t in random.trials()] and len({str(p) for p in first}) == 3


# ---------------------------------------------------------------------- parallel trials
def test_parallel_trials_on_two_cpu_slots_equal_sequential(
    images: Path, tmp_path: Path, three_folds: Path
) -> None:
    """Three folds on two slots (``cpu:2``: two child processes at once, one reused)."""
    out = tmp_path / "par"
    r = train(images, out, "--folds", "3", *QUICK, "--devices", "cpu:2", "--parallel-trials")
    assert r.returncode == 0, r.stderr[-3000:]
    events = events_of(r.stdout)
    starts = [e["trial"] for e in events if e["event"] == "started"]
    assert sorted(starts) == ["fold-0", "fold-1", "fold-2"]
    first_finish = next(i for i, e in enumerate(events) if e["event"] == "finished")
    # two child processes at once: both launched before any trial ends (a trial's own
    # ``started`` comes after its process has imported TensorFlow and prepared, and a short
    # trial on one slot can end before the other's is there)
    launched = [e for e in events if e["event"] == "trial" and e.get("status") == "started"]
    assert len(launched) == 3
    assert sum(e in launched for e in events[:first_finish]) == 2
    got, ref = summary_of(out), summary_of(three_folds)
    for a, b in zip(got["trials"], ref["trials"], strict=True):
        assert a["final"]["val_accuracy"] == b["final"]["val_accuracy"]
    # Trials one after another in one process end with the very weights of a process each.
    in_process = events_of((three_folds / "events.jsonl").read_text())
    hashes = {e["trial"]: e["weights_hash"] for e in in_process if e["event"] == "finished"}
    assert hashes == {e["trial"]: e["weights_hash"] for e in events if e["event"] == "finished"}
    assert (out / "fold-2" / "events.jsonl").exists() and (out / "events.jsonl").exists()
