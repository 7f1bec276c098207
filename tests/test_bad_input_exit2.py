"""Issue 35.10: every bad input the second fault battery found is exit 2 with one line on
stderr, no traceback, and nothing half-written. Each case is a real ``guiapp`` process;
all but two stop before TensorFlow is imported (about a second each)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import fingerprint, guiapp
from test_bad_input import one_error_line, read_only
from test_disk_full import small_disk  # noqa: F401 - the fixture

from guiapp.core.store import DatasetWriter
from guiapp.core.store.lock import lock_path

MODEL = {
    "name": "dense",
    "input": {"shape": [8], "dtype": "float32"},
    "layers": [{"type": "Dense", "units": 5, "activation": "softmax"}],
    "loss": "sparse_categorical_crossentropy",
    "optimizer": {"type": "adam"},
    "metrics": ["accuracy"],
}
TRAIN = ["--batch", "32", "--max-steps", "2", "--val", "0.2"]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(dataset, run folder): 1,200 rows of 8 floats, a Dense model trained two steps."""
    where = tmp_path_factory.mktemp("trained")
    data = where / "d.h5"
    rng = np.random.default_rng(0)
    with DatasetWriter(data, sample_shape=(8,), dtype="float32",
                       class_names=[f"c{i}" for i in range(5)]) as w:  # fmt: skip
        w.append(rng.normal(size=(1200, 8)), rng.integers(0, 5, 1200))
    (where / "m.json").write_text(json.dumps(MODEL))
    run = where / "run"
    r = guiapp("train", "--data", data, "--model", where / "m.json", "--out", run, *TRAIN)
    assert r.returncode == 0, r.stderr[-2000:]
    return data, run


def _spec(t: Path, layers: list[dict[str, object]]) -> Path:
    spec = {**MODEL, "input": {"shape": [8], "dtype": "float32"}, "layers": layers}
    (t / "spec.json").write_text(json.dumps(spec))
    return t / "spec.json"


def _keras_with(run: Path, t: Path, change: Callable[[dict[str, object]], None]) -> Path:
    """A copy of the run's best.keras whose config.json ``change`` edited."""
    with zipfile.ZipFile(run / "best.keras") as z:
        items = {n: z.read(n) for n in z.namelist()}
    config = json.loads(items["config.json"])
    change(config)
    items["config.json"] = json.dumps(config).encode()
    out = t / "model.keras"
    with zipfile.ZipFile(out, "w") as z:
        for name, blob in items.items():
            z.writestr(name, blob)
    return out


def _add_lambda(config: dict[str, object]) -> None:
    layers = config["config"]["layers"]  # type: ignore[index]
    layers.append({"module": "keras.layers", "class_name": "Lambda", "registered_name": None,
                   "config": {"name": "code", "function": {"class_name": "__lambda__",
                              "config": {"code": "4wEAAAAAAAAA"}}, "function_type": "lambda"}})  # fmt: skip


def _module_ref(config: dict[str, object]) -> None:
    config["config"]["layers"][-1]["module"] = "os"  # type: ignore[index]


def _damage(path: Path) -> None:
    """64 bytes flipped in the middle of the file (inside the weights)."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    path.write_bytes(bytes(data))


# -- cases that need no trained model ----------------------------------------------------------
def case_deep_spec(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    (t / "deep.json").write_text('{"name": "x", "layers": ' + DEEP + "}")
    return ["train", "--data", data, "--model", t / "deep.json", "--out", t / "run"], (
        "deep.json",
        "nested too deeply",
    )


def case_deep_project(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    (t / "p.gproj").write_text('{"schema_version": 1, "datasets": ' + DEEP + "}")
    return ["train", "--project", t / "p.gproj", "--config", "c"], ("p.gproj", "nested too deeply")


def case_deep_json_line(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    (t / "rows.jsonl").write_text('{"data": [1, 2], "label": "a"}\n{"data": ' + DEEP + "}\n")
    return ["import", t / "rows.jsonl", t / "i.h5", "--format", "jsonl"], (
        "rows.jsonl:2",
        "nested too deeply",
        "--on-error skip",
    )


def case_deep_options(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    deep = "[" * 50_000 + "]" * 50_000
    return ["train", "--data", data, "--model", "cnn2d-small", "--out", t / "run",
            "--augment", deep], ("--augment [[[", "...", "nested too deeply")  # fmt: skip


def case_deep_generator_params(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    deep = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    return ["generate", t / "g.h5", "--n", "10", "--params", deep], ("--params", "too deeply")


def case_deep_space(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    (t / "space.json").write_text(DEEP)
    return ["train", "--data", data, "--model", "cnn2d-small", "--out", t / "run",
            "--random", "2", "--space", t / "space.json"], ("--space", "space.json")  # fmt: skip


def case_10000_layers(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    layers = [{"type": "Dense", "units": 4}] * 10_000 + [MODEL["layers"][0]]  # type: ignore[index]
    spec = _spec(t, layers)  # type: ignore[arg-type]
    return ["train", "--data", data, "--model", spec, "--out", t / "run"], ("10,001 layers", "500")


def case_2e9_units(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    spec = _spec(t, [{"type": "Dense", "units": 2_000_000_000}, MODEL["layers"][0]])  # type: ignore[index]
    return ["train", "--data", data, "--model", spec, "--out", t / "run"], (
        "28,000,000,005 parameters need about",
        "of memory",
    )


def case_truncated_gz(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    rows = "".join(
        json.dumps({"data": [i, i + 1], "label": "ab"[i % 2]}) + "\n" for i in range(20000)
    )
    blob = gzip.compress(rows.encode())
    (t / "rows.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    return ["import", t / "rows.jsonl.gz", t / "i.h5", "--format", "jsonl"], (
        "rows.jsonl.gz",
        "truncated gzip",
    )


def case_dangling_folder(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    (t / "out").symlink_to(t / "nowhere")
    return ["generate", t / "out" / "g.h5", "--n", "100"], ("out", "symbolic link", "not exist")


EXIT3 = "import os\ndef generate(rng, n, params):\n    os._exit(3)\n"


def case_generator_exit3(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    (t / "gen.py").write_text(EXIT3)
    return ["generate", t / "g.h5", "--generator", t / "gen.py", "--shape", "4", "--n", "3000"], (
        "gen.py",
        "os._exit(3)",
    )


def case_import_of_a_fifo(t: Path, data: Path) -> tuple[list[object], tuple[str, ...]]:
    """Issue 35.7: a FIFO nobody writes to held the import in open() for 485 s, deaf to
    SIGTERM; it is refused before it is opened (the test's timeout catches a hang)."""
    os.mkfifo(t / "pipe")
    return ["import", t / "pipe", t / "i.h5", "--format", "jsonl"], ("pipe", "FIFO", "file first")


CASES = {name[5:]: fn for name, fn in list(globals().items()) if name.startswith("case_")}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_exit_2(tmp_path: Path, case: str) -> None:
    data = tmp_path / "in" / "d.h5"
    data.parent.mkdir()
    rng = np.random.default_rng(0)
    names = [f"c{i}" for i in range(5)]
    with DatasetWriter(data, sample_shape=(8,), dtype="float32", class_names=names) as w:
        w.append(rng.normal(size=(200, 8)), rng.integers(0, 5, 200))
    t = tmp_path / "work"
    t.mkdir()
    args, expected = CASES[case](t, data)
    before = fingerprint(t)
    r = guiapp(*args, timeout=60)
    one_error_line(r, *expected)
    assert fingerprint(t) == before, "nothing may be written"
    assert not list(t.glob("*.lock")) and not lock_path(t / "g.h5").exists()


def test_a_bad_json_line_is_skipped_with_on_error_skip(tmp_path: Path) -> None:
    """With ``--on-error skip`` a line nested too deeply is a bad row like any other."""
    rows = "".join(json.dumps({"data": [i, i + 1], "label": "ab"[i % 2]}) + "\n" for i in range(50))
    (tmp_path / "rows.jsonl").write_text(rows + '{"data": ' + DEEP + "}\n")
    r = guiapp("import", tmp_path / "rows.jsonl", tmp_path / "i.h5", "--format", "jsonl",
               "--on-error", "skip")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "rows.jsonl:51: is nested too deeply" in r.stderr and "Traceback" not in r.stderr


# -- model files: damaged or holding code, refused before TensorFlow ----------------------------
KERAS_CASES = {
    "damaged-last": ("last", None, ("last.keras", "damaged", "checksum")),
    "damaged-best": ("best", None, ("best.keras", "damaged", "checksum")),
    "lambda": ("file", _add_lambda, ("refused: the model file contains code", "Lambda")),
    "module-reference": ("file", _module_ref, ("refused: the model file contains code", "'os'")),
}


# predict reads every case; export (the same check, check_keras_file) one of each kind
KERAS_RUNS = [("predict", case) for case in KERAS_CASES] + [
    ("export", "damaged-best"),
    ("export", "lambda"),
]


@pytest.mark.parametrize(("command", "case"), KERAS_RUNS)
def test_a_model_file_that_is_damaged_or_holds_code(
    tmp_path: Path, trained: tuple[Path, Path], case: str, command: str
) -> None:
    data, run = trained
    which, change, expected = KERAS_CASES[case]
    if change is None:
        model = tmp_path / "run"
        shutil.copytree(run, model)
        _damage(model / f"{which}.keras")
        pick = ["--which", which]
    else:
        model = _keras_with(run, tmp_path, change)
        pick = []
    out = tmp_path / "out"
    if command == "predict":
        args = ["predict", "--model", model, "--data", data, "--out", out / "p.h5", *pick]
    else:
        args = ["export", model, "--format", "keras", "--out", out / "m.keras", *pick]
    one_error_line(guiapp(*args), *expected)
    assert not out.exists()


def test_export_to_a_read_only_folder(tmp_path: Path, trained: tuple[Path, Path]) -> None:
    _, run = trained
    ro = tmp_path / "ro"
    with read_only(ro):
        for fmt, name in (("keras", "m.keras"), ("tflite", "m.tflite")):
            r = guiapp("export", run, "--format", fmt, "--out", ro / name)
            one_error_line(r, str(ro / name), "cannot be written", "--out")
        assert list(ro.iterdir()) == []


@pytest.mark.parametrize("command", ["generate", "import", "export"])
def test_a_read_only_file_system(
    tmp_path: Path,
    small_disk: Path,  # noqa: F811
    trained: tuple[Path, Path],
    command: str,
) -> None:
    """A file system mounted read-only (EROFS, not a folder's permissions)."""
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"data": [i, 1], "label": i % 2}) + "\n" for i in range(20)))
    args = {
        "generate": ["generate", small_disk / "g.h5", "--n", "100"],
        "import": ["import", src, small_disk / "g.h5", "--format", "jsonl"],
        "export": ["export", trained[1], "--format", "keras", "--out", small_disk / "m.keras"],
    }[command]
    one_error_line(guiapp(*args), str(small_disk), "read-only")
    assert list(small_disk.iterdir()) == []


def test_predict_to_a_read_only_folder(tmp_path: Path, trained: tuple[Path, Path]) -> None:
    """Refused before TensorFlow is imported (it was found at the first write)."""
    data, run = trained
    ro = tmp_path / "ro"
    with read_only(ro):
        r = guiapp("predict", "--model", run, "--data", data, "--out", ro / "p.h5")
        one_error_line(r, str(ro / "p.h5"), "cannot be written", "--out")
        assert list(ro.iterdir()) == []


def test_a_damaged_line_in_events_jsonl_is_skipped(tmp_path: Path) -> None:
    """``events.jsonl`` is the run's log, not its state: bytes that are not UTF-8 in it
    (a torn write, a disk error) lose that line when it is read, never the run."""
    from guiapp.core.events import read_events
    from guiapp.core.train.experiment_summary import trial_status
    from guiapp.core.train.runfolder import RunFolder

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    with open(run / "events.jsonl", "wb") as fh:
        fh.write(b'{"event": "started"}\n{"event": "note", "text": "\xff\xfe"}\n')
        fh.write(b'{"event": "finished"}\n')
    assert [e["event"] for e in read_events(run / "events.jsonl")] == ["started", "finished"]
    assert trial_status(RunFolder(run)) == "finished"


@pytest.mark.slow
def test_a_damaged_line_in_events_jsonl_does_not_stop_a_resume(
    tmp_path: Path, trained: tuple[Path, Path]
) -> None:
    """``events.jsonl`` is the run's log, not its state: bytes that are not UTF-8 in it
    (a torn write, a disk error) lose that line, never the run."""
    data, run = trained
    mine = tmp_path / "run"
    shutil.copytree(run, mine)
    with open(mine / "events.jsonl", "ab") as fh:
        fh.write(b'{"event": "note", "text": "\xff\xfe"}\n')
    model = run.parent / "m.json"
    r = guiapp("train", "--data", data, "--model", model, "--out", mine, *TRAIN, "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    from guiapp.core.events import read_events

    assert read_events(mine / "events.jsonl")[-1]["event"] == "finished"
    assert os.path.getsize(mine / "best.keras") > 0


@pytest.mark.slow
def test_resume_with_a_damaged_best_keras(tmp_path: Path, trained: tuple[Path, Path]) -> None:
    """Early stopping restores best.keras at the end of a (resumed) run: damaged, one line."""
    data, _ = trained
    model = tmp_path.parent / "m.json"
    model.write_text(json.dumps(MODEL))
    run = tmp_path / "run"
    args = ["train", "--data", data, "--model", model, "--out", run, *TRAIN, "--early-stopping", 1]
    assert guiapp(*args).returncode == 0
    _damage(run / "best.keras")
    r = guiapp(*args, "--resume", "--events", "-")
    one_error_line(r, "best.keras", "damaged", "--restart")
    assert json.loads(r.stdout.splitlines()[-1])["event"] == "failed"
