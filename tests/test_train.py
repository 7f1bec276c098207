"""The training runner as the GUI and a cluster use it: real `guiapp train` processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import ENV, generated, guiapp

from guiapp.core.store import Dataset
from guiapp.core.train.steps import AUTO_MIN_STEPS


def cnn_args(data: Path, out: Path, *extra: str) -> list[str]:
    """``guiapp train``'s arguments for the cnn2d-small template with the suite's settings."""
    return ["--data", str(data), "--model", "cnn2d-small", "--out", str(out), *extra, *TRAIN]


def train_cnn(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``guiapp train`` of the cnn2d-small template with the suite's small settings."""
    return guiapp("train", *cnn_args(data, out, *extra))


def events_of(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "cells.h5"
    return generated(path, "patterns2d", 1200, "--shard-rows", 1024)


@pytest.fixture(scope="module")
def kmers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated(tmp_path_factory.mktemp("data") / "kmers.h5", "kmer1d", 600)


TRAIN = [
    "--batch",
    "32",
    "--val",
    "0.2",
    "--log-every",
    "5",
    "--checkpoint-every",
    "7",
    "--events",
    "-",
]


def test_cnn2d_small_run_folder_and_events(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "run"
    r = train_cnn(images, out, "--epochs", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    ev = events_of(r.stdout)
    kinds = [e["event"] for e in ev]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    for k in ("batch", "epoch", "checkpoint", "evaluation"):
        assert k in kinds
    batch = next(e for e in ev if e["event"] == "batch")
    assert {"loss", "accuracy", "rows_per_s", "input_wait"} <= set(batch)
    assert 0.0 <= batch["input_wait"] <= 1.0
    # epochs shorter than AUTO_MIN_STEPS run one step a call (the one-step graph)
    assert ev[0]["steps_per_epoch"] < AUTO_MIN_STEPS
    assert [e["steps_per_call"] for e in ev if e["event"] == "epoch"] == [1.0, 1.0]
    for name in (
        "config.json",
        "events.jsonl",
        "history.csv",
        "checkpoints/last.h5",
        "best.keras",
        "last.keras",
        "confusion.csv",
        "report.json",
        "report.md",
    ):
        assert (out / name).exists(), name
    report = json.loads((out / "report.json").read_text())
    with Dataset(images) as ds:
        assert report["class_names"] == ds.class_names
    assert len(report["confusion"]) == 5 and sum(map(sum, report["confusion"])) == report["rows"]
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"]["shard_hashes"] and config["versions"]["tensorflow"]
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 3 and history[0].startswith("epoch,loss,accuracy,val_loss")
    assert len(events_of((out / "events.jsonl").read_text())) == len(ev)
    # A saved model loads safely and predicts.
    import keras

    model = keras.saving.load_model(out / "last.keras", safe_mode=True)
    assert model.predict(np.zeros((2, 25, 25, 1), np.float32), verbose=0).shape == (2, 5)


def test_kmer_conv1d_trains(tmp_path: Path, kmers: Path) -> None:
    r = guiapp(
        "train",
        "--data",
        kmers,
        "--model",
        "kmer-conv1d",
        "--out",
        tmp_path / "k",
        "--epochs",
        "1",
        *TRAIN,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    fin = events_of(r.stdout)[-1]
    assert fin["event"] == "finished" and fin["val_accuracy"] is not None


#: history.csv columns that measure time, not the model; the others must survive a resume
WALL_TIME_COLUMNS = ("duration_s", "rows_per_s", "input_wait", "startup_s")


def assert_same_history(ref: Path, run: Path) -> None:
    """Every metric column of ``run``'s history.csv equals ``ref``'s (1e-6)."""
    from guiapp.core.train.runfolder import RunFolder

    a, b = RunFolder(ref).read_history(), RunFolder(run).read_history()
    assert len(a) == len(b) and a
    for ra, rb in zip(a, b, strict=True):
        for k in ra:
            if k in WALL_TIME_COLUMNS:
                continue
            assert (ra[k] == "") == (rb[k] == ""), k
            if ra[k]:
                np.testing.assert_allclose(float(rb[k]), float(ra[k]), rtol=1e-6, err_msg=k)


def _final_weights(run: Path) -> list[np.ndarray]:
    import keras

    return [np.asarray(w) for w in keras.saving.load_model(run / "last.keras").get_weights()]


def test_stop_then_resume_equals_uninterrupted(tmp_path: Path, images: Path) -> None:
    args = ["--model", "cnn2d-small", "--epochs", "2", *TRAIN]
    ref = guiapp("train", "--data", images, "--out", tmp_path / "ref", *args)
    assert ref.returncode == 0, ref.stderr[-2000:]
    out = tmp_path / "stopped"
    proc = subprocess.Popen(
        [sys.executable, "-m", "guiapp", "train", "--data", str(images), "--out", str(out), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdin and proc.stdout
    seen = []
    for line in proc.stdout:
        e = json.loads(line)
        seen.append(e)
        if e["event"] == "batch" and e["step"] >= 10:
            proc.stdin.write("stop\n")
            proc.stdin.flush()
            break
    rest = proc.stdout.read()
    assert proc.wait(120) == 0
    kinds = [e["event"] for e in events_of(rest)]
    assert kinds[-1] == "stopped" and "finished" not in kinds
    r = guiapp("train", "--data", images, "--out", out, *args, "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    started = events_of(r.stdout)[0]
    assert started["resumed_from"]["step"] >= 10
    for a, b in zip(_final_weights(tmp_path / "ref"), _final_weights(out), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # The epoch stopped in the middle reports the metrics of all its steps, not only of
    # those after the resume (the checkpoint carries the epoch's running sums).
    assert_same_history(tmp_path / "ref", out)


def test_sigkill_then_resume(tmp_path: Path, images: Path) -> None:
    args = ["--model", "cnn2d-small", "--epochs", "2", *TRAIN]
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "guiapp", "train", "--data", str(images), "--out", str(out), *args],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "checkpoint" and e["step"] >= 7:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(60)
    r = guiapp("train", "--data", images, "--out", out, *args, "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert events_of(r.stdout)[-1]["event"] == "finished"
    ref = guiapp("train", "--data", images, "--out", tmp_path / "ref", *args)
    assert ref.returncode == 0
    for a, b in zip(_final_weights(tmp_path / "ref"), _final_weights(out), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert_same_history(tmp_path / "ref", out)


def test_two_logical_devices(tmp_path: Path, images: Path) -> None:
    r = train_cnn(images, tmp_path / "m", "--devices", "cpu:2")
    assert r.returncode == 0, r.stderr[-2000:]
    started = events_of(r.stdout)[0]
    assert started["replicas"] == 2 and started["global_batch"] == 64
    assert events_of(r.stdout)[-1]["event"] == "finished"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Workers:
    """The workers of a cluster on 127.0.0.1: `guiapp train` processes writing their output
    to files (not pipes: a full pipe would stall a worker and with it the others)."""

    def __init__(self, tmp_path: Path, n: int = 2) -> None:
        self.tmp = tmp_path
        self.cluster = tmp_path / "cluster.json"
        self.addresses = [f"127.0.0.1:{_free_port()}" for _ in range(n)]
        self.cluster.write_text(json.dumps({"worker": self.addresses}))
        self.procs: list[subprocess.Popen[str]] = []
        self.logs: list[tuple[Path, Path]] = []

    def start(self, tag: str, *args: str) -> None:
        """Start every worker with ``guiapp train ARGS --cluster ... --worker-index i``."""
        self.procs, self.logs = [], []
        for i in range(len(self.addresses)):
            o, e = self.tmp / f"{tag}-out{i}.jsonl", self.tmp / f"{tag}-err{i}.txt"
            cmd = [sys.executable, "-m", "guiapp", "train", *args]
            cmd += ["--cluster", str(self.cluster), "--worker-index", str(i)]
            with o.open("w") as fo, e.open("w") as fe:
                self.procs.append(subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, env=ENV))
            self.logs.append((o, e))

    def events(self, i: int) -> list[dict]:
        return events_of(self.logs[i][0].read_text())

    def stderr(self, i: int) -> str:
        return self.logs[i][1].read_text()

    def wait(self, *which: int, timeout: float = 300) -> list[int]:
        """The return codes of workers WHICH (all by default); kills them all and fails the
        test, naming where each got to, if they have not ended in TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        for i in which or range(len(self.procs)):
            try:
                self.procs[i].wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill()
                last = [self.events(j)[-1:] for j in range(len(self.procs))]
                pytest.fail(
                    f"the workers did not end in {timeout:.0f} s; their last events: {last}"
                )
        return [int(self.procs[i].returncode) for i in which or range(len(self.procs))]

    def kill(self) -> None:
        for q in self.procs:
            if q.poll() is None:
                q.kill()
                q.wait()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    w = Workers(tmp_path)
    yield w
    w.kill()


def test_two_workers_multiworker_mirrored(tmp_path: Path, images: Path, workers: Workers) -> None:
    """Two workers on 127.0.0.1 train the same weights. Three epochs of one-step calls:
    45 calls, each planning which fetches its clock times; workers that planned apart
    waited for each other forever (7 of 8 such runs hung before the plans were agreed)."""
    out = tmp_path / "mw"
    workers.start("run", *cnn_args(images, out, "--epochs", "3"))
    rcs = workers.wait()
    assert rcs == [0, 0], [workers.stderr(i)[-3000:] for i in range(2)]
    fins = [workers.events(i)[-1] for i in range(2)]
    assert all(f["event"] == "finished" for f in fins)
    assert fins[0]["weights_hash"] == fins[1]["weights_hash"]
    assert (out / "last.keras").exists() and (out / "report.json").exists()
    epochs = (out / "history.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in epochs] == ["1", "2", "3"]


def test_a_lost_worker_stops_the_other_with_a_clear_error_and_both_resume(
    tmp_path: Path, images: Path, workers: Workers
) -> None:
    """Worker 1 killed mid-run: worker 0 ends (exit 2) with one line naming worker 1's
    address and --resume, no traceback; both started again with --resume (the same
    --cluster and --worker-index) go on from the checkpoint to the same weights."""
    out = tmp_path / "mw"
    workers.start("run", *cnn_args(images, out, "--epochs", "100"))
    deadline = time.monotonic() + 240
    while not any(e["event"] == "epoch" for e in workers.events(0)):
        assert workers.procs[0].poll() is None, workers.stderr(0)[-3000:]
        assert time.monotonic() < deadline, "worker 0 ended no epoch in 240 s"
        time.sleep(0.05)
    workers.procs[1].kill()
    assert workers.wait(0, timeout=200) == [2]
    err = workers.stderr(0).strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"lost worker 1 ({workers.addresses[1]})" in err and "--resume" in err, err
    failed = workers.events(0)[-1]
    assert failed["event"] == "failed" and failed["reason"] in err
    done = max(e["epoch"] for e in workers.events(0) if e["event"] == "epoch")
    assert done < 90  # the kill came long before the end

    epochs = done + 3
    workers.start("resume", "--out", str(out), "--resume", "--events", "-", "--epochs", str(epochs))
    rcs = workers.wait()
    assert rcs == [0, 0], [workers.stderr(i)[-3000:] for i in range(2)]
    started = [workers.events(i)[0] for i in range(2)]
    assert all(s["event"] == "started" and s["resumed_from"]["epoch"] > done - 1 for s in started)
    fins = [workers.events(i)[-1] for i in range(2)]
    assert [f["event"] for f in fins] == ["finished", "finished"]
    assert fins[0]["weights_hash"] == fins[1]["weights_hash"]
    rows = (out / "history.csv").read_text().splitlines()[1:]
    assert [int(r.split(",")[0]) for r in rows] == list(range(1, epochs + 1))


def test_a_worker_whose_port_is_taken_says_so(tmp_path: Path, images: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        cluster = tmp_path / "cluster.json"
        cluster.write_text(json.dumps({"worker": [address, f"127.0.0.1:{_free_port()}"]}))
        args = ["--data", images, "--model", "cnn2d-small", "--out", tmp_path / "mw"]
        r = guiapp("train", *args, "--cluster", cluster, "--worker-index", 0)
    assert r.returncode == 2, r.stderr[-3000:]
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"worker 0 cannot listen on {address}" in err and "port" in err, err


def _spec(tmp_path: Path, **change) -> Path:
    from guiapp.core.model import get_template

    spec = get_template("cnn2d-small")
    spec.update(change)
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    return p


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("unknown-layer", "Conv9D"),
        ("wrong-parameter", "filters"),
        ("input-shape", "input"),
        ("label-count", "class"),
        ("missing-dataset", "does not exist"),
    ],
)
def test_bad_input_exit_2_and_no_run_folder(
    tmp_path: Path, images: Path, case: str, expected: str
) -> None:
    from guiapp.core.model import get_template

    spec = get_template("cnn2d-small")
    data = images
    if case == "unknown-layer":
        spec["layers"][0]["type"] = "Conv9D"
    elif case == "wrong-parameter":
        spec["layers"][0]["filters"] = "sixteen"
    elif case == "input-shape":
        spec["input"]["shape"] = [32, 32, 1]
    elif case == "label-count":
        spec["layers"][-1]["units"] = 3
    elif case == "missing-dataset":
        data = tmp_path / "nope.h5"
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    out = tmp_path / "run"
    r = guiapp("train", "--data", data, "--model", p, "--out", out, *TRAIN)
    assert r.returncode == 2, r.stderr[-2000:]
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in r.stderr
    assert expected in err[0]
    assert not out.exists(), "bad input must not leave a run folder"


def test_corrupt_checkpoint_on_resume(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "run"
    r = train_cnn(images, out, "--max-steps", "3")
    assert r.returncode == 0, r.stderr[-2000:]
    ckpt = out / "checkpoints" / "last.h5"
    ckpt.write_bytes(ckpt.read_bytes()[:200])
    r = train_cnn(images, out, "--max-steps", "3", "--resume")
    assert r.returncode == 2
    assert "checkpoint is damaged" in r.stderr and "Traceback" not in r.stderr


def test_kfold_and_data_scaling_curve(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "cv"
    r = train_cnn(images, out, "--folds", "3", "--max-steps", "3")
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((out / "experiment.json").read_text())
    trials = summary["trials"]
    assert [t["params"]["fold"] for t in trials] == [0, 1, 2]
    accs = [t["final"]["val_accuracy"] for t in trials]
    assert summary["summary"]["mean_val_accuracy"] == pytest.approx(statistics.fmean(accs))
    assert summary["summary"]["std_val_accuracy"] == pytest.approx(statistics.pstdev(accs))
    assert all((out / f"fold-{i}" / "report.json").exists() for i in range(3))
    assert "±" in (out / "experiment.md").read_text()
    curve_dir = tmp_path / "curve"
    r = train_cnn(images, curve_dir, "--fractions", "0.3,1.0")
    assert r.returncode == 0, r.stderr[-2000:]
    curve = json.loads((curve_dir / "experiment.json").read_text())["summary"]["curve"]
    assert [c["fraction"] for c in curve] == [0.3, 1.0]
    started = [e for e in events_of(r.stdout) if e["event"] == "started"]
    assert started[0]["train_rows"] < started[1]["train_rows"]


def test_driven_from_a_project_file(tmp_path: Path, images: Path) -> None:
    from guiapp.core.model import get_template
    from guiapp.core.project import DatasetRef, ModelEntry, Project, TrainingEntry

    project = Project.new(tmp_path / "p.gproj", "P")
    project.datasets.append(DatasetRef("cells", images))
    spec = get_template("cnn2d-small", num_classes=5, input_shape=[25, 25, 1])
    project.models.append(ModelEntry("small", spec))
    project.training.append(
        TrainingEntry(
            "quick", "cells", "small", "runs/quick", {"epochs": 1, "batch": 32, "max_steps": 3}
        )
    )
    project.save()
    r = guiapp("train", "--project", tmp_path / "p.gproj", "--config", "quick", "--events", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    started = events_of(r.stdout)[0]
    assert started["global_batch"] == 32 and started["steps_per_epoch"] == 3
    assert (tmp_path / "runs" / "quick" / "report.json").exists()
    r = guiapp("train", "--project", tmp_path / "p.gproj", "--config", "nope")
    assert r.returncode == 2 and "no training config named 'nope'" in r.stderr
