"""`guiapp generate` as users run it: real processes, kills, stops, full disks, user code."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import guiapp, kmer_cnn

from guiapp.core.generate import Source, resolve_config
from guiapp.core.store import Dataset

N, SHARD = 40_000, 4096  # 10 shards, the last one partial
BASE = ["--n", str(N), "--shard-rows", str(SHARD), "--seed", "7"]


def start(*args: Any, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "guiapp", *map(str, args), "--events", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def wait_for(proc: subprocess.Popen[str], rows: int) -> list[dict[str, Any]]:
    """Read events until ``rows`` rows are done (at least one shard sealed if rows > SHARD)."""
    events = []
    assert proc.stdout is not None
    for line in proc.stdout:
        e = json.loads(line)
        events.append(e)
        if e["event"] == "progress" and e["rows_done"] >= rows:
            return events
        assert e["event"] in ("started", "progress"), e
    raise AssertionError(f"job ended early: {events[-3:]}")


def hashes(path: Path) -> list[str]:
    with Dataset(path) as ds:
        return [s.content_hash for s in ds.shards]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("ref") / "ref.h5"
    r = guiapp("generate", path, *BASE, "--workers", "1")
    assert r.returncode == 0, r.stderr
    return path, hashes(path)


def test_same_bytes_for_any_worker_count(tmp_path: Path, reference: tuple[Path, list[str]]) -> None:
    ref_path, ref = reference
    out = tmp_path / "w2.h5"
    r = guiapp("generate", out, *BASE, "--workers", "2", "--events", "-")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[0]["event"] == "started" and events[-1]["event"] == "finished"
    progress = [e for e in events if e["event"] == "progress"]
    assert progress and {"rows_per_s", "eta_s", "bytes_written", "rows_done"} <= set(progress[-1])
    assert hashes(out) == ref and len(ref) == 10 and all(ref)
    log = (tmp_path / "w2.events.jsonl").read_text().splitlines()
    assert [json.loads(x)["event"] for x in log] == [e["event"] for e in events]
    with Dataset(out) as ds, Dataset(ref_path) as rd:
        assert len(ds) == N and ds.complete and ds.uuid == rd.uuid
        assert ds.shards[-1].capacity == N - 9 * SHARD
        assert np.all(np.abs(ds.class_counts - 8000) < 40)  # balanced per chunk
        prov, st = ds.provenance, ds.statistics
        assert prov["seed"] == 7 and prov["generator"] == "patterns2d"
        assert prov["params"]["difficulty"] == 0.3 and "numpy" in prov["versions"]
        assert (
            st["rows"] == N
            and sum(st["histogram"]["counts"]) + st["histogram"]["above"] + st["histogram"]["below"]
            == N * 625
        )
        x, _ = ds.read_range(0, N)
        flat = x.reshape(N, -1).astype(np.float64)
        assert np.allclose(st["position_mean"], flat.mean(0), atol=1e-4)
        assert np.allclose(st["position_std"], flat.std(0), atol=1e-4)
    assert guiapp("check", "--full", out).returncode == 0


def test_sigkill_then_resume_equals_uninterrupted(
    tmp_path: Path, reference: tuple[Path, list[str]]
) -> None:
    out = tmp_path / "k.h5"
    proc = start("generate", out, *BASE, "--workers", "2")
    wait_for(proc, 2 * SHARD)
    proc.kill()
    proc.wait()
    with Dataset(out) as ds:  # valid after the kill: the committed rows are readable
        assert 0 < len(ds) < N and not ds.complete
        ds.read_range(0, len(ds))
    r = guiapp("generate", out, *BASE, "--workers", "2", "--resume")
    assert r.returncode == 0, r.stderr
    assert hashes(out) == reference[1]


@pytest.mark.parametrize("how", ["stdin", "sigterm"])
def test_stop_gives_valid_dataset_and_resume_completes(
    tmp_path: Path, reference: tuple[Path, list[str]], how: str
) -> None:
    out = tmp_path / "s.h5"
    proc = start("generate", out, *BASE, "--workers", "2")
    wait_for(proc, SHARD // 2)
    if how == "stdin":
        assert proc.stdin is not None
        proc.stdin.write("stop\n")
        proc.stdin.flush()
    else:
        proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    last = json.loads(stdout.splitlines()[-1])
    assert last["event"] == "stopped" and last["rows"] < N
    with Dataset(out) as ds:
        assert len(ds) == last["rows"] and not ds.complete
    r = guiapp("generate", out, *BASE, "--workers", "1", "--resume")
    assert r.returncode == 0, r.stderr
    assert hashes(out) == reference[1]


def _limit_file_size(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_disk_full_midway_then_resume(tmp_path: Path, reference: tuple[Path, list[str]]) -> None:
    out = tmp_path / "d.h5"
    proc = start("generate", out, *BASE, "--workers", "1")
    wait_for(proc, 2 * SHARD + 1)  # two shards sealed
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    with Dataset(out) as ds:
        before = len(ds)
    # Files may not grow past 1 MB: the next shard (10 MB) cannot be written.
    r = guiapp("generate", out, *BASE, "--resume", preexec_fn=lambda: _limit_file_size(1 << 20))
    assert r.returncode == 2, r.stderr
    assert "d.shards/000" in r.stderr and "file too large" in r.stderr, r.stderr
    assert "--resume" in r.stderr and "Traceback" not in r.stderr
    assert [x for x in r.stderr.splitlines() if "error" in x] == [r.stderr.strip()]
    with Dataset(out) as ds:
        assert len(ds) >= before >= 2 * SHARD and not ds.complete
        ds.read_range(0, len(ds))
    r = guiapp("generate", out, *BASE, "--resume")
    assert r.returncode == 0, r.stderr
    assert hashes(out) == reference[1]


def test_resume_with_other_config_names_the_difference(
    tmp_path: Path, reference: tuple[Path, list[str]]
) -> None:
    r = guiapp("generate", reference[0], "--n", N, "--shard-rows", SHARD, "--seed", 8, "--resume")
    assert r.returncode == 2
    assert "seed: stored 7, now 8" in r.stderr
    r = guiapp("generate", reference[0], *BASE)
    assert r.returncode == 2 and "already exists" in r.stderr and "--overwrite" in r.stderr


def test_plan_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "p.h5"
    r = guiapp("generate", out, "--n", 10**6, "--plan")
    assert r.returncode == 0, r.stderr
    assert "shard(s)" in r.stdout and "GiB" in r.stdout and "rows/s" in r.stdout
    r = guiapp("generate", out, "--generator", "kmer1d", "--n", 10**6, "--plan", "--events", "-")
    plan = json.loads(r.stdout)
    assert plan["event"] == "plan" and plan["shards"] == 1 and plan["estimated_s"] > 0
    assert plan["bytes_total"] > 10**6 * 256
    assert list(tmp_path.iterdir()) == []
    r = guiapp("generate", out, "--n", 10**13)
    assert r.returncode == 2 and "not enough free disk space" in r.stderr
    assert not out.exists()
    r = guiapp("generate", out, "--n", 10**13, "--plan")  # the plan says so too, and fails
    assert r.returncode == 2 and "not enough free disk space" in r.stderr
    assert "fits        no" in r.stdout and list(tmp_path.iterdir()) == []


USER_OK = """
import numpy as np
CLASS_NAMES = ["low", "high"]
def generate(rng, n, params):
    y = rng.integers(0, params["classes"], n)
    x = rng.normal(size=(n, *params["shape"])) + y[:, None] * params["gap"]
    return x, y
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("def make(rng, n, params):\n    pass\n", "defines no function generate"),
        (
            "import numpy as np\ndef generate(rng, n, params):\n    return np.zeros((n, 3)), np.zeros(n, int)\n",
            "x of shape",
        ),
        (
            "def generate(rng, n, params):\n    data = {}\n    return data['missing_key']\n",
            "return data['missing_key']",
        ),
        ("import numpy as np\nboom(\n", "importing the generator file failed"),
    ],
)
def test_user_generator_errors(tmp_path: Path, body: str, expected: str) -> None:
    gen = tmp_path / "gen.py"
    gen.write_text(body)
    r = guiapp("generate", tmp_path / "u.h5", "--generator", gen, "--shape", "4", "--n", 100)
    assert r.returncode == 2
    assert expected in r.stderr and str(gen) in r.stderr
    if "missing_key" in expected:
        assert "KeyError" in r.stderr and "Traceback" in r.stderr and "job.py" not in r.stderr


def test_user_generator_runs_in_workers(tmp_path: Path) -> None:
    gen = tmp_path / "gen.py"
    gen.write_text(USER_OK)
    out = tmp_path / "u.h5"
    args = ["--generator", gen, "--shape", "4", "--classes", 2, "--n", 3000, "--shard-rows", 1000]
    r = guiapp("generate", out, *args, "--params", '{"gap": 3}', "--workers", 2)
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        assert ds.class_names == ["low", "high"] and len(ds) == 3000
        x, y = ds.read_range(0, 3000)
        assert x[y == 1].mean() - x[y == 0].mean() > 2.5
        assert ds.provenance["config"]["file_sha256"]


def rows(cfg: Any) -> tuple[np.ndarray, np.ndarray]:
    parts = list(Source(cfg).shard(0))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def test_patterns2d_is_learnable() -> None:
    import keras

    cfg = resolve_config("patterns2d", n=24_000, seed=3, shard_rows=24_000)
    x, y = rows(cfg)
    x = x[..., None]
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((25, 25, 1)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(5, activation="softmax"),
        ]
    )
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x[:20_000], y[:20_000], batch_size=128, epochs=1, verbose=0)
    acc = model.evaluate(x[20_000:], y[20_000:], verbose=0)[1]
    assert acc > 0.4, acc  # chance is 0.2; about 0.6 here


def test_kmer1d_is_learnable() -> None:
    import keras

    cfg = resolve_config("kmer1d", n=6000, seed=3, shard_rows=6000)
    x, y = rows(cfg)
    keras.utils.set_random_seed(0)
    model = kmer_cnn(16, 32, "GlobalMaxPooling1D", 5)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x[:5000].astype(np.int32), y[:5000], batch_size=32, epochs=1, verbose=0)
    acc = model.evaluate(x[5000:].astype(np.int32), y[5000:], verbose=0)[1]
    assert acc > 0.35, acc  # chance is 0.2; about 0.58 here


def test_user_generator_file_is_documented() -> None:
    from guiapp.core.generate import user

    assert user.__doc__ is not None and "generate(rng, n, params)" in user.__doc__
    assert textwrap.dedent(USER_OK)
    assert os.path.basename(user.__file__) == "user.py"


ONE = ["--n", "40000", "--shard-rows", "40000", "--shape", "40x40", "--seed", "3"]


@pytest.fixture(scope="module")
def one_shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("one") / "one.h5"
    r = guiapp("generate", path, *ONE)
    assert r.returncode == 0, r.stderr
    return path


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_one_shard_stopped_midway_resumes_from_its_committed_rows(
    tmp_path: Path, one_shard: Path, how: str
) -> None:
    """A job of one shard reports progress per chunk (with an ETA), commits inside the
    shard, and a stop (or SIGKILL) then --resume continues from the committed rows: the
    shard's bytes equal an uninterrupted run's."""
    out = tmp_path / "r.h5"
    proc = start("generate", out, *ONE)
    events = wait_for(proc, 20_000)
    inside = [e for e in events if e["event"] == "progress" and 0 < e["rows_done"] < 40_000]
    assert inside and inside[-1]["eta_s"] is not None and inside[-1]["rows_total"] == 40_000
    if how == "stop":
        assert proc.stdin is not None
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        stdout, _ = proc.communicate(timeout=60)
        assert json.loads(stdout.splitlines()[-1])["event"] == "stopped"
    else:
        proc.kill()
        proc.wait()
    with Dataset(out) as ds:
        kept = len(ds)
        assert 8192 <= kept < 40_000 and not ds.complete
    resumed = start("generate", out, *ONE, "--resume")
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    progress = [json.loads(x) for x in stdout.splitlines() if '"progress"' in x]
    start_row = min(e["rows_done"] for e in progress)  # (a killed job's worker may add some)
    assert start_row >= kept and max(e["done"] for e in progress) == 40_000 - start_row
    assert hashes(out) == hashes(one_shard)
    with Dataset(out) as a, Dataset(one_shard) as b:
        xa, ya = a.read_range(0, 40_000)
        xb, yb = b.read_range(0, 40_000)
        assert xa.tobytes() == xb.tobytes() and ya.tobytes() == yb.tobytes()
