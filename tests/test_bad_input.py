"""User mistakes and damaged files, as a user meets them: real `guiapp` processes, each one
exit 2, exactly one line on stderr naming what, where and the fix, no traceback, and nothing
left half-written. Most cases stop before TensorFlow is imported, so they cost a fraction of
a second each; the few that train use a 1,200-row dataset and two steps."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from conftest import CLASSES, ENV, MakeDataset, fingerprint, guiapp

from guiapp.core.store import Dataset, DatasetWriter
from guiapp.core.store.lock import DatasetLock, lock_path

TRAIN = ["--model", "cnn2d-small", "--batch", "32", "--max-steps", "2", "--val", "0.2"]


def one_error_line(r: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "cells.h5"
    r = guiapp("generate", path, "--n", 1200, "--seed", 3, "--shard-rows", 1024)
    assert r.returncode == 0, r.stderr
    return path


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """A folder nobody may write into: immutable for root (who ignores permissions)."""
    folder.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", folder]).returncode:
            pytest.skip("root, and no chattr +i here to make a folder read-only")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", folder], check=True)
    else:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)


# -- item 8: every listed mistake, table-driven ------------------------------------------------
# (arguments after the command, what the one line must say); {d} is the dataset, {t} tmp_path.
GENERATE_CASES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "classes-0": (["{t}/g.h5", "--n", "100", "--classes", "0"], ("--classes 0", "at least 1")),
    "shard-rows-0": (["{t}/g.h5", "--n", "100", "--shard-rows", "0"], ("--shard-rows 0",)),
    "seed-negative": (["{t}/g.h5", "--n", "100", "--seed", "-1"], ("--seed -1", "0..4294967295")),
    "seed-too-big": (["{t}/g.h5", "--n", "100", "--seed", str(2**64)], ("--seed", "0..")),
    "huge-shape": (
        ["{t}/g.h5", "--n", "10", "--shape", "100000x100000"],
        ("--shape 100000x100000", "37.3 GiB"),
    ),
    "huge-shape-plan": (
        ["{t}/g.h5", "--n", "10", "--shape", "100000x100000", "--plan"],
        ("--shape 100000x100000",),
    ),
    "plan-does-not-fit": (["{t}/g.h5", "--n", str(10**13), "--plan"], ("not enough free disk",)),
    "output-is-a-folder": (["{t}", "--n", "100"], ("is a folder", "NAME.h5")),
    "output-under-a-file": (["{t}/file.txt/g.h5", "--n", "100"], ("is a file, not a folder",)),
    "bad-on-nonfinite": (["{t}/g.h5", "--n", "100", "--on-nonfinite", "zero"], ("invalid choice",)),
}


@pytest.mark.parametrize("case", list(GENERATE_CASES))
def test_generate_mistakes(tmp_path: Path, case: str) -> None:
    args, expected = GENERATE_CASES[case]
    (tmp_path / "file.txt").write_text("not a folder\n")
    before = fingerprint(tmp_path)
    r = guiapp("generate", *(a.format(t=tmp_path) for a in args))
    one_error_line(r, *expected)
    assert fingerprint(tmp_path) == before, "a refused generate must write nothing"


TRAIN_CASES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "augment-not-json": (["--augment", "{flip"], ("--augment {flip", "not valid JSON")),
    "augment-unknown-key": (["--augment", '{"zoom": 2}'], ("--augment", "zoom")),
    "augment-bad-value": (["--augment", '{"noise_std": "big"}'], ("noise_std", "a number")),
    "augment-bad-range": (["--augment", '{"noise_std": -1}'], ("noise_std",)),
    "fractions-not-numbers": (["--fractions", "a,b"], ("--fractions a,b",)),
    "fractions-out-of-range": (["--fractions", "0.5,2"], ("--fractions 0.5,2", "(0, 1]")),
    "seed-negative": (["--seed", "-3"], ("--seed -3", "0..4294967295")),
    "seed-too-big": (["--seed", str(2**40)], ("--seed", "0..4294967295")),
    "max-steps-negative": (["--max-steps", "-5"], ("--max-steps -5",)),
    "epochs-0": (["--epochs", "0"], ("--epochs 0",)),
    "devices-unknown": (["--devices", "tpu:1"], ("--devices tpu:1",)),
    "fold-out-of-range": (["--folds", "3", "--fold", "5"], ("--fold 5", "0..2")),
    "out-is-a-file": (["--out", "{t}/file.txt"], ("is a file, not a folder", "--out")),
    "out-under-a-file": (["--out", "{t}/file.txt/run"], ("cannot be written", "--out")),
    "resume-nothing": (["--resume"], ("no run to resume", "without --resume")),
    "resume-and-restart": (["--resume", "--restart"], ("--resume and --restart",)),
}


@pytest.mark.parametrize("case", list(TRAIN_CASES))
def test_train_mistakes(tmp_path: Path, images: Path, case: str) -> None:
    args, expected = TRAIN_CASES[case]
    (tmp_path / "file.txt").write_text("not a folder\n")
    before = fingerprint(tmp_path)
    extra = [a.replace("{t}", str(tmp_path)) for a in args]
    out = [] if "--out" in extra else ["--out", tmp_path / "run"]
    r = guiapp("train", "--data", images, *TRAIN, *out, *extra)
    one_error_line(r, *expected)
    assert fingerprint(tmp_path) == before, "a refused run must leave no run folder"


def test_read_only_output_folder(tmp_path: Path, images: Path) -> None:
    ro = tmp_path / "ro"
    with read_only(ro):
        r = guiapp("generate", ro / "g.h5", "--n", 100)
        one_error_line(r, str(ro / "g.h5"), "cannot be written", "Choose another")
        r = guiapp("train", "--data", images, *TRAIN, "--out", ro / "run")
        one_error_line(r, str(ro / "run"), "cannot be written", "--out")
        assert list(ro.iterdir()) == []


# -- item 1: labels against the output layer, before TensorFlow -----------------------------------
def test_labels_out_of_range_for_the_model_is_refused_before_tensorflow(
    tmp_path: Path, images: Path
) -> None:
    from guiapp.core.model import get_template

    spec = get_template("cnn2d-small")
    spec["layers"][-1]["units"] = 3  # the dataset has 5 classes: labels 3 and 4 do not fit
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    code = (
        "import sys, guiapp.cli as c\n"
        "rc = c.main(sys.argv[1:])\n"
        "sys.stderr.write('TF imported\\n' if 'tensorflow' in sys.modules else '')\n"
        "sys.exit(rc)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "train", "--data", str(images), "--model", str(p)]
        + ["--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    one_error_line(r, "class")
    assert not (tmp_path / "run").exists()


# -- item 2: non-finite values ------------------------------------------------------------------
NAN_GENERATOR = """
import numpy as np
def generate(rng, n, params):
    x = rng.normal(size=(n, *params["shape"]))
    x[rng.random(n) < params.get("p", 0.01), 0] = np.nan
    return x, rng.integers(0, params["classes"], n)
"""


def test_generate_refuses_nonfinite_then_skips_and_counts(tmp_path: Path) -> None:
    gen = tmp_path / "gen.py"
    gen.write_text(NAN_GENERATOR)
    out = tmp_path / "nan.h5"
    args = ["--generator", gen, "--shape", "4", "--n", 3000, "--shard-rows", 1000]
    r = guiapp("generate", out, *args)
    one_error_line(r, str(gen), "NaN/Inf", "first at row", "--on-nonfinite skip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gen.py"]
    r = guiapp("generate", out, *args, "--on-nonfinite", "skip")
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        assert len(ds) == 3000 and ds.complete
        x, _ = ds.read_range(0, 3000)
        assert np.isfinite(x).all()
        skipped = ds.provenance["nonfinite_rows_skipped"]
        assert 10 < skipped < 100  # about 1% of the rows drawn
        assert ds.provenance["config"]["on_nonfinite"] == "skip"


def test_generate_nonfinite_in_a_shard_names_shard_and_row(tmp_path: Path) -> None:
    """NaN only in rows the trial batch never draws: the worker finds them, names the row."""
    gen = tmp_path / "gen.py"
    gen.write_text(
        "import numpy as np\n"
        "def generate(rng, n, params):\n"
        "    x = np.ones((n, 4))\n"
        "    if n == 700:\n"
        "        x[5, 2] = np.inf\n"
        "    return x, np.zeros(n, int)\n"
    )
    out = tmp_path / "inf.h5"
    args = ["--generator", gen, "--shape", 4, "--n", 1700, "--shard-rows", 1000, "--events", "-"]
    r = guiapp("generate", out, *args)
    line = one_error_line(r, "1 NaN/Inf value(s) in 700 rows", "row 1005 (shard 1)")
    failed = json.loads(r.stdout.splitlines()[-1])
    assert failed["event"] == "failed" and failed["message"] in line
    with Dataset(out) as ds:  # what was committed stays valid and resumable
        assert not ds.complete and len(ds) >= 1000


def test_nonfinite_without_nonfinite_values_keeps_bytes(tmp_path: Path) -> None:
    """``--on-nonfinite skip`` changes nothing for a generator that makes no NaN/Inf."""
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    base = ["--n", 3000, "--shard-rows", 1024, "--seed", 5]
    assert guiapp("generate", a, *base).returncode == 0
    assert guiapp("generate", b, *base, "--on-nonfinite", "skip").returncode == 0
    with Dataset(a) as da, Dataset(b) as db:
        assert [s.content_hash for s in da.shards] == [s.content_hash for s in db.shards]
        assert db.provenance["nonfinite_rows_skipped"] == 0


def _nan_dataset(tmp_path: Path, all_nan: bool = False) -> Path:
    path = tmp_path / "nan.h5"
    x = np.random.default_rng(0).standard_normal((1200, 25, 25)).astype(np.float32)
    if all_nan:
        x[:] = np.nan
    else:
        x[17, 3, 3] = np.inf
    with DatasetWriter(path, sample_shape=(25, 25), dtype="float32", class_names=CLASSES) as w:
        w.append(x, np.arange(1200) % 5)
    return path


def test_train_refuses_a_dataset_with_nonfinite_values(tmp_path: Path) -> None:
    data = _nan_dataset(tmp_path)
    r = guiapp("train", "--data", data, *TRAIN, "--out", tmp_path / "run")
    one_error_line(r, str(data), "1 NaN/Inf", "shard")
    assert not (tmp_path / "run").exists()


def test_info_json_is_standard_json(tmp_path: Path) -> None:
    data = _nan_dataset(tmp_path, all_nan=True)

    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON token {token}")

    r = guiapp("info", data, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout, parse_constant=refuse)
    assert info["values"]["min"] is None and info["values"]["nonfinite"] == 1200 * 625


# -- item 3: a dataset still being written --------------------------------------------------------
def test_train_refuses_a_dataset_being_written(tmp_path: Path, images: Path) -> None:
    with DatasetLock(images, shared=False):
        r = guiapp("train", "--data", images, *TRAIN, "--out", tmp_path / "run")
    one_error_line(r, str(images), "being written", "Wait")
    assert not (tmp_path / "run").exists()
    assert not lock_path(images).exists(), "the lock file goes with the job that held it"


def test_train_refuses_an_unfinished_dataset(tmp_path: Path) -> None:
    out = tmp_path / "part.h5"
    proc = subprocess.Popen(
        [sys.executable, "-m", "guiapp", "generate", str(out), "--n", "40000"]
        + ["--shard-rows", "4096", "--events", "-"],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "progress" and e["shards_sealed"] >= 1:
            proc.send_signal(signal.SIGTERM)
            break
    proc.communicate(timeout=60)
    r = guiapp("train", "--data", out, *TRAIN, "--out", tmp_path / "run")
    one_error_line(r, str(out), "unfinished", "--resume")
    assert not (tmp_path / "run").exists()


# -- item 5: damaged files ----------------------------------------------------------------------------
def _zero_header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(b"\0" * 512)


def _shard_version(path: Path) -> None:
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = np.int64(7)


@pytest.mark.parametrize(
    ("damage", "expected"),
    [(_zero_header, "cannot be opened as HDF5"), (_shard_version, "format_version 7")],
    ids=["zeroed-header", "shard-format-version"],
)
def test_check_full_opens_every_shard(
    make_dataset: MakeDataset, damage: Callable[[Path], None], expected: str
) -> None:
    path = make_dataset(rows=3000)
    shard = path.with_name("data.shards") / "00000.h5"
    damage(shard)
    assert guiapp("check", path).returncode == 0  # metadata alone cannot see it
    r = guiapp("check", path, "--full")
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "00000.h5" in err[0] and expected in err[0], r.stderr
    assert "FAIL  2 shard file(s) opened as HDF5" in r.stdout
    assert "ok    2 shard file(s)" not in r.stdout and "OK," not in r.stdout


def test_manifest_committing_more_than_a_shard_holds(make_dataset: MakeDataset) -> None:
    path = make_dataset(rows=3000)
    with h5py.File(path, "r+") as f:  # the index's manifest table (format_version 2)
        rec = f["manifest"][0]
        rec["committed"] = 5000
        f["manifest"][0] = rec
    for command in ("check", "info"):
        r = guiapp(command, path)
        one_error_line(r, "00000.h5", "5000 rows are committed", "holds only 2048")
        assert "5,000" not in r.stdout and "7,952" not in r.stdout


def test_damaged_checkpoint_then_restart(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "run"
    r = guiapp("train", "--data", images, *TRAIN, "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    ckpt = out / "checkpoints" / "last.h5"
    data = bytearray(ckpt.read_bytes())
    data[len(data) - 4096] ^= 0xFF  # one byte inside a variable's values
    ckpt.write_bytes(bytes(data))
    before = fingerprint(out)
    r = guiapp("train", "--data", images, *TRAIN, "--out", out, "--resume")
    one_error_line(r, "last.h5", "checkpoint is damaged", "content hash", "--restart")
    r = guiapp("train", "--data", images, *TRAIN, "--out", out, "--seed", 9, "--resume")
    one_error_line(r, "other data, model or settings", "--seed: the run has 0, now 9")
    assert fingerprint(out) == before
    r = guiapp("train", "--data", images, *TRAIN, "--out", out)
    one_error_line(r, "a run already exists", "--restart")
    r = guiapp("train", "--data", images, *TRAIN, "--out", out, "--restart")  # the way out
    assert r.returncode == 0, r.stderr[-2000:]
    assert "checkpoint is damaged" not in r.stderr and (out / "report.json").exists()


# -- item 6: nothing half-written stays behind -------------------------------------------------------
def test_generate_removes_what_dead_jobs_left(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    out = tmp_path / "g.h5"
    stale = tmp_path / f".g.h5.tmp-{dead.pid}"
    stale.write_bytes(b"\0" * 1000)
    mine = tmp_path / ".other.h5.tmp-1"  # another file's temporary: not ours to remove
    mine.write_bytes(b"")
    r = guiapp("generate", out, "--n", 1000)
    assert r.returncode == 0, r.stderr
    assert not stale.exists() and mine.exists()
    assert not lock_path(out).exists(), "lock files must not accumulate"


# -- item 7: a full disk ------------------------------------------------------------------------------
def _limit_file_size(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_train_on_a_full_disk_then_resume(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "run"
    logs = {"GUIAPP_LOG_DIR": str(tmp_path / "logs")}
    # No file may grow past 200 kB: config.json fits, the first checkpoint (~1 MB) does not.
    r = guiapp(
        "train", "--data", images, *TRAIN, "--out", out, "--events", "-", "--checkpoint-every", 1, env=logs,
        preexec_fn=_limit_file_size(200_000),
    )  # fmt: skip
    line = one_error_line(r, "last.h5", "file too large", "free", "--resume")
    failed = json.loads(r.stdout.splitlines()[-1])
    assert failed["event"] == "failed" and failed["reason"] in line
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "failed" and "file too large" in events[-1]["reason"]
    assert not list((out / "checkpoints").glob(".*tmp*")), "no half-written checkpoint"
    with Dataset(images) as ds:  # the dataset is untouched and valid
        assert len(ds) == 1200
    r = guiapp("train", "--data", images, *TRAIN, "--out", out, "--resume", env=logs)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "report.json").exists()
