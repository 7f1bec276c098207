"""Issue 30, points 2 and 7: every metric of a spec is computed and shown, and epochs count
from 1 in every file, event and message (old 0-based run folders read the same way).

The metric values themselves are checked against Keras on the same weights and rows: the
device's top-k hits of the training step (in process, learning rate 0, so the weights the
step used are the ones Keras scores), and a real run's validation top-3 accuracy in
``history.csv``, ``report.json``, the events and TensorBoard.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import guiapp

from guiapp.bench.train import TINY
from guiapp.core.train.describe import describe_event
from guiapp.core.train.experiment_summary import trial_result
from guiapp.core.train.history import RunHistory
from guiapp.core.train.runfolder import RunFolder

TOP3 = {**TINY, "name": "tiny-top3", "metrics": ["accuracy", "top3_accuracy"]}


def events_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def keras_top_k(model_path: Path, data: Path, rows: np.ndarray, k: int) -> float:
    """Keras's own SparseTopKCategoricalAccuracy of a saved model on dataset rows."""
    import keras

    model = keras.saving.load_model(model_path, safe_mode=True, compile=False)
    rows = np.sort(rows)  # (the metric does not depend on the order)
    with h5py.File(data) as f:
        x, y = f["x"][rows], f["y"][rows]
    metric = keras.metrics.SparseTopKCategoricalAccuracy(k=k)
    metric.update_state(y, model.predict(x.reshape((len(x), 25, 25, 1)), verbose=0))
    return float(metric.result())


@pytest.fixture(scope="module")
def top3_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    """One run of the tiny model with top-3 accuracy: 2 epochs, validation 0.2."""
    from conftest import CLASSES, reference_rows

    from guiapp.core.store import DatasetWriter

    root = tmp_path_factory.mktemp("top3")
    data = root / "cells.h5"
    with DatasetWriter(
        data, sample_shape=(25, 25), dtype="float32", class_names=CLASSES, shard_capacity=2048,
        commit_rows=1000, provenance={"generator": "reference_rows", "seed": 0},
    ) as w:  # fmt: skip
        w.append(*reference_rows(0, 2000))
    spec = root / "top3.json"
    spec.write_text(json.dumps(TOP3))
    out = root / "run"
    r = guiapp("train", "--data", data, "--model", spec, "--out", out, "--epochs", "2",
               "--batch", "32", "--val", "0.2", "--log-every", "10", "--events", "-")  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return data, out, events_of(r.stdout)


def test_training_step_counts_top_k_as_keras_does() -> None:
    """The device's sums of the step (accuracy and top-3 hits) equal Keras's metrics on
    the same batches and weights (learning rate 0: the step does not change them)."""
    import keras
    import tensorflow as tf

    from guiapp.core.model import build_model
    from guiapp.core.train.steps import CORRECT, METRIC0, STEPS, make_steps

    keras.utils.set_random_seed(3)
    spec = {**TINY, "input": {"shape": [6, 6, 1], "dtype": "float32"}}
    spec["layers"] = [{"type": "Flatten"}, {"type": "Dense", "units": 7, "activation": "softmax"}]
    model = build_model(spec)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(12 * 16, 6, 6, 1)).astype(np.float32)
    y = rng.integers(0, 7, len(x)).astype(np.int32)
    strategy = tf.distribute.get_strategy()
    loss = keras.losses.SparseCategoricalCrossentropy()
    opt = keras.optimizers.SGD(learning_rate=0.0)
    opt.build(model.trainable_variables)
    names = ("accuracy", "top3_accuracy", "top5_accuracy")
    steps = make_steps(model, opt, loss, strategy, 16, False, metrics=names)
    steps.totals.reset()
    it = iter(tf.data.Dataset.from_tensor_slices((x, y)).batch(16))
    steps.train(it, 12)
    sums = steps.totals.read()
    assert int(sums[STEPS]) == 12
    probs = model.predict(x, verbose=0)
    for slot, k in ((METRIC0, 3), (METRIC0 + 1, 5)):
        m = keras.metrics.SparseTopKCategoricalAccuracy(k=k)
        m.update_state(y, probs)
        assert sums[slot] / len(x) == pytest.approx(float(m.result()), abs=1e-6)
    acc = keras.metrics.SparseCategoricalAccuracy()
    acc.update_state(y, probs)
    assert sums[CORRECT] / len(x) == pytest.approx(float(acc.result()), abs=1e-6)
    assert 0 < sums[CORRECT] < sums[METRIC0] < sums[METRIC0 + 1] < len(x)  # a real spread


def test_top3_is_in_history_events_report_and_tensorboard(top3_run) -> None:
    data, out, ev = top3_run
    started = ev[0]
    assert started["metrics"] == ["accuracy", "top3_accuracy"] and started["epochs_from"] == 1
    batches = [e for e in ev if e["event"] == "batch"]
    assert batches and all(e["accuracy"] <= e["top3_accuracy"] <= 1.0 for e in batches)
    with open(out / "history.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [c for c in rows[0] if "top3" in c] == ["top3_accuracy", "val_top3_accuracy"]
    epochs = [e for e in ev if e["event"] == "epoch"]
    for row, e in zip(rows, epochs, strict=True):
        for name in ("top3_accuracy", "val_top3_accuracy", "val_accuracy"):
            assert float(row[name]) == pytest.approx(e[name], abs=1e-9)
    # The last epoch's validation top-3 is Keras's on the last weights and the split's rows.
    with h5py.File(out / "predictions.h5") as f:
        val_rows = f["row"][:]
    assert float(rows[-1]["val_top3_accuracy"]) == pytest.approx(
        keras_top_k(out / "last.keras", data, val_rows, 3), abs=1e-6
    )
    # The evaluation (of best.keras, the shipped model) reports it, as Keras has it.
    report = json.loads((out / "report.json").read_text())
    shipped = keras_top_k(out / "best.keras", data, val_rows, 3)
    assert report["metrics"]["top3_accuracy"] == pytest.approx(shipped, abs=1e-6)
    evaluation = next(e for e in ev if e["event"] == "evaluation")
    assert evaluation["top3_accuracy"] == pytest.approx(shipped, abs=1e-6)
    assert f"Top-3 accuracy {shipped:.4f}." in (out / "report.md").read_text()
    assert " top3 " in describe_event(epochs[-1]) and "val top3" in describe_event(epochs[-1])
    # TensorBoard: the scalar at each (1-based) epoch
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util.tensor_util import make_ndarray

    acc = EventAccumulator(str(out / "tensorboard"))
    acc.Reload()
    points = acc.Tensors("epoch/val_top3_accuracy")
    assert [p.step for p in points] == [1, 2]
    got = [float(make_ndarray(p.tensor_proto)) for p in points]
    assert got == pytest.approx([float(r["val_top3_accuracy"]) for r in rows], abs=1e-6)
    assert "batch/top3_accuracy" in acc.Tags()["tensors"]
    # What the pages plot: the run's metrics and their series
    h = RunHistory.from_events_file(out / "events.jsonl")
    assert h.metrics == ("accuracy", "top3_accuracy")
    assert h.epoch["val_top3_accuracy"].view().tolist() == pytest.approx(
        [float(r["val_top3_accuracy"]) for r in rows]
    )


def test_epochs_count_from_one_everywhere(top3_run) -> None:
    """history.csv, events, experiment.json, experiment.md, report and messages: 1 and 2."""
    _data, out, ev = top3_run
    rows = RunFolder(out).read_history()
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert [e["epoch"] for e in ev if e["event"] == "epoch"] == [1, 2]
    assert {e["epoch"] for e in ev if e["event"] == "batch"} == {1, 2}
    assert [e["epoch"] for e in ev if e["event"] == "checkpoint" and e["step"] == 0] == [2, 3]
    summary = json.loads((out / "experiment.json").read_text())
    trial = summary["trials"][0]
    best = max(rows, key=lambda r: float(r["val_accuracy"]))
    assert trial["best"]["epoch"] == int(best["epoch"]) and trial["final"]["epoch"] == 2
    md = (out / "experiment.md").read_text()
    assert f"{float(best['val_accuracy']):.4f} ({best['epoch']})" in md
    report = json.loads((out / "report.json").read_text())
    assert report["model"]["epoch"] == int(best["epoch"])
    h = RunHistory.from_events_file(out / "events.jsonl")
    assert h.epoch_index.view().tolist() == [1.0, 2.0]
    assert [ln.split(":")[0] for ln in h.log if ln.startswith("epoch ")] == ["epoch 1", "epoch 2"]


def test_old_zero_based_run_folder_reads_one_based(top3_run, tmp_path: Path) -> None:
    """A run folder written before epochs counted from 1 (history.csv from 0, events
    without ``epochs_from``) reads exactly as the new one: files migrated on read."""
    _data, out, _ev = top3_run
    old = tmp_path / "old"
    shutil.copytree(out, old)
    text = (out / "history.csv").read_text().splitlines()
    old_rows = [text[0]] + [str(int(r.split(",", 1)[0]) - 1) + "," + r.split(",", 1)[1] for r in text[1:]]  # fmt: skip
    (old / "history.csv").write_text("\n".join(old_rows) + "\n")
    with open(out / "events.jsonl") as src, open(old / "events.jsonl", "w") as dst:
        for line in src:
            e = json.loads(line)
            e.pop("epochs_from", None)
            if e["event"] in ("batch", "epoch", "checkpoint", "stopped") and "epoch" in e:
                e["epoch"] -= 1
            dst.write(json.dumps(e) + "\n")
    assert RunFolder(old).read_history() == RunFolder(out).read_history()
    new_h, old_h = (RunHistory.from_events_file(p / "events.jsonl") for p in (out, old))
    assert old_h.epoch_index.view().tolist() == new_h.epoch_index.view().tolist() == [1.0, 2.0]
    assert old_h.log == new_h.log
    assert old_h.epoch_step.view().tolist() == new_h.epoch_step.view().tolist()

    class Trial:
        id, params, run_dir = "run", {}, old

    assert trial_result(Trial)["best"]["epoch"] in (1, 2)  # type: ignore[arg-type]
    assert trial_result(Trial)["final"]["epoch"] == 2  # type: ignore[arg-type]
