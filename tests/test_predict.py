"""Predictions: `guiapp predict`, the run's predictions.h5 and `guiapp export`, as real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import ENV, guiapp, killed_predict

from guiapp.core.predict import PredictionTable, cell_rows, confusion_from_table
from guiapp.core.store import Dataset
from guiapp.core.train.run_files import validation_rows


def events_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 1,500-row patterns2d dataset and a cnn2d-small run trained on it for 30 steps."""
    folder = tmp_path_factory.mktemp("predict")
    data = folder / "cells.h5"
    r = guiapp("generate", data, "--generator", "patterns2d", "--n", "1500", "--seed", "4")
    assert r.returncode == 0, r.stderr
    run = folder / "run"
    r = guiapp(
        "train", "--data", data, "--model", "cnn2d-small", "--out", run,
        "--batch", "32", "--val", "0.3", "--max-steps", "30",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return data, run


def table_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    with h5py.File(path, "r", locking=False) as f:
        return {k: f[k][()] for k in f}, {k: f.attrs[k] for k in f.attrs}


def test_predictions_equal_model_predict_row_by_row(tmp_path: Path, trained) -> None:
    import keras

    data, run = trained
    out = tmp_path / "all.h5"
    r = guiapp("predict", "--model", run, "--data", data, "--out", out, "--probs", "--top-k", "3",
               "--events", "-")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    kinds = [e["event"] for e in events_of(r.stdout)]
    assert kinds[0] == "started" and kinds[-1] == "finished" and "progress" in kinds
    cols, attrs = table_arrays(out)
    assert set(cols) == {"row", "label", "pred", "prob", "topk_class", "topk_prob", "probs"}
    with Dataset(data) as ds:
        x, y = ds.read_range(0, len(ds))
    model = keras.saving.load_model(run / "best.keras", safe_mode=True)
    ref = model.predict(x.reshape(-1, 25, 25, 1), batch_size=256, verbose=0)
    assert np.array_equal(cols["row"], np.arange(len(x)))
    assert np.array_equal(cols["label"], y)
    np.testing.assert_allclose(cols["probs"], ref, atol=1e-5)
    assert np.array_equal(cols["pred"], ref.argmax(axis=1))
    np.testing.assert_allclose(cols["prob"], ref.max(axis=1), atol=1e-5)
    assert cols["topk_class"].shape == (len(x), 3)
    assert np.array_equal(cols["topk_class"][:, 0], cols["pred"])
    assert np.all(np.diff(cols["topk_prob"], axis=1) <= 0)
    assert attrs["model_hash"].startswith("sha256:") and attrs["dataset_hash"].startswith("sha256:")
    assert int(attrs["committed"]) == len(x) and int(attrs["complete"]) == 1


def test_run_confusion_is_computed_from_its_predictions(tmp_path: Path, trained) -> None:
    data, run = trained
    table = PredictionTable(run / "predictions.h5")
    report = json.loads((run / "report.json").read_text())
    cm = np.array(report["confusion"])
    label, pred = table.read("label"), table.read("pred")
    for i in range(len(cm)):
        for j in range(len(cm)):
            assert cm[i, j] == np.sum((label == i) & (pred == j))
    assert np.array_equal(confusion_from_table(table), cm)
    csv = [line.split(",")[1:] for line in (run / "confusion.csv").read_text().splitlines()[1:]]
    assert np.array_equal(np.array(csv, dtype=np.int64), cm)
    config = json.loads((run / "config.json").read_text())["config"]
    assert np.array_equal(table.read("row"), validation_rows(config, 1500))
    # `guiapp predict --split val` of the run gives the same table's predictions.
    r = guiapp("predict", "--model", run, "--which", "last", "--data", data, "--split", "val",
               "--out", tmp_path / "val.h5", "--batch", "256")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    again = PredictionTable(tmp_path / "val.h5")
    assert np.array_equal(again.read("row"), table.read("row"))
    assert np.array_equal(again.read("pred"), pred)
    # (the run's table holds its last validation's outputs, kept: a forward pass's values)
    np.testing.assert_allclose(again.read("prob"), table.read("prob"), rtol=0, atol=1e-6)
    # a cell's rows: exactly that cell, most confident first
    i, j = np.unravel_index(np.argmax(cm - np.diag(np.diag(cm))), cm.shape)
    rows = cell_rows(run / "predictions.h5", int(i), int(j))
    assert len(rows) == cm[i, j]
    at = np.searchsorted(table.read("row"), rows)
    assert np.all(np.diff(table.read("prob")[at]) <= 0)


def test_killed_or_stopped_predict_resumes_to_the_identical_file(tmp_path: Path, trained) -> None:
    data, run = trained
    args = ["--model", str(run), "--data", str(data), "--batch", "16", "--commit-rows", "16"]
    ref = guiapp("predict", *args, "--out", tmp_path / "ref.h5")
    assert ref.returncode == 0, ref.stderr[-2000:]
    out = tmp_path / "killed.h5"
    cmd = [sys.executable, "-m", "guiapp", "predict", *args, "--out", str(out), "--events", "-"]
    killed_predict(args, out)
    committed = PredictionTable(out).committed
    assert 64 <= committed < 1500 and committed % 16 == 0
    r = guiapp("predict", *args, "--out", out, "--events", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    assert events_of(r.stdout)[0]["resumed_from"] == committed
    a, b = table_arrays(tmp_path / "ref.h5"), table_arrays(out)
    assert a[0].keys() == b[0].keys() and all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
    assert {k: str(v) for k, v in a[1].items()} == {k: str(v) for k, v in b[1].items()}

    stopped = tmp_path / "stopped.h5"
    proc = subprocess.Popen(
        [*cmd[:-3], str(stopped), "--events", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout and proc.stdin
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "progress" and e.get("phase") == "predict":
            proc.stdin.write("stop\n")
            proc.stdin.flush()
            break
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0 and events_of(rest)[-1]["event"] == "stopped"
    assert PredictionTable(stopped).committed < 1500
    assert guiapp("predict", *args, "--out", stopped).returncode == 0
    c = table_arrays(stopped)
    assert all(np.array_equal(a[0][k], c[0][k]) for k in a[0])


def test_jsonl_file_predicts_like_its_imported_dataset(tmp_path: Path, trained) -> None:
    data, run = trained
    with Dataset(data) as ds:
        x, y = ds.read_range(0, 300)
        names = ds.class_names
    src = tmp_path / "new.jsonl"
    with open(src, "w") as fh:
        for xi, yi in zip(x, y, strict=True):
            fh.write(json.dumps({"label": names[yi], "data": xi.reshape(-1).tolist()}) + "\n")
    r = guiapp("predict", "--model", run, "--data", src, "--out", tmp_path / "direct.h5")
    assert r.returncode == 0, r.stderr[-2000:]
    imported = tmp_path / "imported.h5"
    r = guiapp("import", src, imported, "--format", "jsonl", "--dtype", "float32",
               "--class-names", ",".join(names))  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    r = guiapp("predict", "--model", run, "--data", imported, "--out", tmp_path / "via.h5")
    assert r.returncode == 0, r.stderr[-2000:]
    direct, via = table_arrays(tmp_path / "direct.h5")[0], table_arrays(tmp_path / "via.h5")[0]
    assert np.array_equal(direct["label"], y)  # file order
    with Dataset(imported) as ds:
        xi, _ = ds.read_range(0, len(ds))
    position = {row.tobytes(): i for i, row in enumerate(x.reshape(300, -1))}
    order = np.array([position[row.tobytes()] for row in xi.reshape(300, -1)])
    assert np.array_equal(via["pred"], direct["pred"][order])
    np.testing.assert_allclose(via["topk_prob"], direct["topk_prob"][order], atol=1e-6)


def test_two_devices_give_the_same_predictions(tmp_path: Path, trained) -> None:
    data, run = trained
    r = guiapp("predict", "--model", run, "--data", data, "--out", tmp_path / "two.h5",
               "--devices", "cpu:2", "--batch", "100", "--events", "-")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert events_of(r.stdout)[0]["replicas"] == 2
    r = guiapp("predict", "--model", run, "--data", data, "--out", tmp_path / "one.h5")
    assert r.returncode == 0
    two, one = table_arrays(tmp_path / "two.h5")[0], table_arrays(tmp_path / "one.h5")[0]
    assert np.array_equal(two["row"], one["row"]) and np.array_equal(two["pred"], one["pred"])
    np.testing.assert_allclose(two["topk_prob"], one["topk_prob"], atol=1e-5)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no-model", "does not exist"),
        ("other-out", "holds predictions of another model"),
        ("bad-split", "a bare model file has no splits"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, trained, case: str, expected: str) -> None:
    data, run = trained
    out = tmp_path / "p.h5"
    if case == "no-model":
        r = guiapp("predict", "--model", tmp_path / "none", "--data", data, "--out", out)
    elif case == "other-out":
        assert guiapp("predict", "--model", run, "--data", data, "--out", out).returncode == 0
        r = guiapp("predict", "--model", run, "--data", data, "--out", out, "--top-k", "2")
    else:
        r = guiapp("predict", "--model", run / "best.keras", "--data", data, "--out", out,
                   "--split", "val")  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert expected in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_every_export_format_reloads_and_matches(tmp_path: Path, trained) -> None:
    _data, run = trained
    for fmt, name in (("keras", "m.keras"), ("savedmodel", "m.savedmodel"), ("tflite", "m.tflite")):
        out = tmp_path / name
        r = guiapp("export", run, "--format", fmt, "--out", out, "--rows", "300")
        assert r.returncode == 0, r.stderr[-2000:]
        result = json.loads(r.stdout)
        assert result["ok"] and result["rows_checked"] == 300 and out.exists()
        assert result["max_abs_diff"] <= (1e-5 if fmt != "tflite" else 1e-4)


def test_replay_gives_kept_outputs_until_a_batch_differs() -> None:
    """A run's predictions table reuses its validation's outputs only while each batch's
    labels are the kept batch's: from the first that differs, the forward pass computes."""
    from guiapp.core.train.evaluate import Replay

    kept = [(np.full((2, 3), i, np.float32), np.array([i, i + 1])) for i in range(3)]
    computed: list[str] = []

    def forward(x: str, y: np.ndarray) -> np.ndarray:
        computed.append(x)
        return np.full((len(y), 3), -1, np.float32)

    replay = Replay(kept, forward)
    assert replay("x0", np.array([0, 1]))[0, 0] == 0
    assert replay("x1", np.array([1, 2]))[0, 0] == 1
    assert replay("x2", np.array([9, 9]))[0, 0] == -1  # another batch: computed
    assert replay("x3", np.array([2, 3]))[0, 0] == -1  # and every one after it
    assert computed == ["x2", "x3"] and replay.replayed == 2
