"""The headless CLI as a user runs it: real subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import CLASSES, MakeDataset, fingerprint, guiapp

from guiapp.core.store import Dataset, DatasetWriter


def test_info_human_and_json(make_dataset: MakeDataset) -> None:
    path = make_dataset(rows=5000)
    r = guiapp("info", path)
    assert r.returncode == 0, r.stderr
    assert "5,000" in r.stdout and "25x25 float32" in r.stdout and "stripe" in r.stdout
    r = guiapp("info", path, "--json")
    info = json.loads(r.stdout)
    assert info["rows"] == 5000 and info["shards"] == 3 and info["sealed_shards"] == 2
    assert [c["name"] for c in info["classes"]] == CLASSES
    assert sum(c["count"] for c in info["classes"]) == 5000
    assert info["provenance"] == {"generator": "reference_rows", "seed": 0}
    assert info["size_on_disk"] > 5000 * 2500


def test_check_ok_and_full(make_dataset: MakeDataset) -> None:
    path = make_dataset(rows=5000)
    r = guiapp("check", path, "--full")
    assert r.returncode == 0, r.stderr
    assert "content hashes of 3 shard(s)" in r.stdout and "OK, 5,000 rows" in r.stdout


def test_info_and_check_do_not_read_sealed_rows(make_dataset: MakeDataset) -> None:
    """info and a default check answer from metadata: garbage in a sealed shard's rows is
    invisible to them, and only --full finds it."""
    path = make_dataset(rows=5000)
    with Dataset(path) as ds:
        shard = ds.shards[0]
        assert shard.x_offset is not None
        xoff = shard.x_offset
    with open(shard.path, "r+b") as fh:
        fh.seek(xoff + 1000)
        fh.write(b"\x7f" * 64)
    assert guiapp("info", path).returncode == 0
    assert guiapp("check", path).returncode == 0
    r = guiapp("check", path, "--full")
    assert r.returncode == 2
    assert "00000.h5" in r.stderr and "content hash" in r.stderr


def _nonexistent(tmp: Path) -> Path:
    return tmp / "nope.h5"


def _not_hdf5(tmp: Path) -> Path:
    p = tmp / "notes.h5"
    p.write_text("label,data\n0,1,2,3\n")
    return p


def _foreign_hdf5(tmp: Path) -> Path:
    p = tmp / "foreign.h5"
    with h5py.File(p, "w") as f:
        f["x"] = np.zeros((10, 25, 25), np.float32)
        f["y"] = np.zeros(10, np.int32)
    return p


def _written(tmp: Path, rows: int = 3000) -> Path:
    p = tmp / "data.h5"
    rng = np.random.default_rng(0)
    with DatasetWriter(
        p, sample_shape=(25, 25), dtype="float32", class_names=CLASSES, shard_capacity=1024
    ) as w:
        if rows:
            w.append(rng.standard_normal((rows, 25, 25)), rng.integers(0, 5, rows))
    return p


def _truncated_shard(tmp: Path) -> Path:
    p = _written(tmp)
    shard = p.with_name("data.shards") / "00001.h5"
    size = shard.stat().st_size
    with open(shard, "r+b") as fh:
        fh.truncate(size // 2)
    return p


def _missing_shard(tmp: Path) -> Path:
    p = _written(tmp)
    (p.with_name("data.shards") / "00002.h5").unlink()
    return p


def _newer_version(tmp: Path) -> Path:
    p = _written(tmp)
    with h5py.File(p, "r+") as f:
        f.attrs["format_version"] = np.int64(99)
    return p


def _labels_out_of_range(tmp: Path) -> Path:
    p = _written(tmp)
    with Dataset(p) as ds:
        s = ds.shards[1]
        assert s.y_offset is not None
        yoff = s.y_offset
    with open(s.path, "r+b") as fh:
        fh.seek(yoff + 4 * 17)
        fh.write(np.int32(9).tobytes())
    return p


def _zero_rows(tmp: Path) -> Path:
    return _written(tmp, rows=0)


BAD_INPUTS = {
    "nonexistent": (_nonexistent, "does not exist"),
    "not-hdf5": (_not_hdf5, "is not an HDF5 file"),
    "hdf5-without-schema": (_foreign_hdf5, "guiapp import"),
    "truncated-shard": (_truncated_shard, "truncated"),
    "missing-shard": (_missing_shard, "is missing"),
    "newer-format-version": (_newer_version, "format_version 99"),
    "labels-out-of-range": (_labels_out_of_range, "out of range 0..4"),
    "zero-rows": (_zero_rows, "no committed rows"),
}


# info reads no labels, so only check is asked about labels out of range.
CASES = [
    (c, cmd)
    for c in BAD_INPUTS
    for cmd in ("check", "info")
    if (c, cmd) != ("labels-out-of-range", "info")
]


@pytest.mark.parametrize(("case", "command"), CASES, ids=[f"{c}-{cmd}" for c, cmd in CASES])
def test_bad_input_is_one_clear_line(tmp_path: Path, case: str, command: str) -> None:
    make, expected = BAD_INPUTS[case]
    path = make(tmp_path)
    before = fingerprint(tmp_path, mtimes=True)
    r = guiapp(command, path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert expected in lines[0]
    named = path.name if case not in ("truncated-shard", "missing-shard") else ".h5"
    assert named in lines[0]
    assert fingerprint(tmp_path, mtimes=True) == before, "a failed check must not modify anything"


def test_usage_errors_and_help() -> None:
    r = guiapp("info")
    assert r.returncode == 2 and "required" in r.stderr and "Traceback" not in r.stderr
    r = guiapp("--help")
    assert r.returncode == 0 and "info" in r.stdout and "check" in r.stdout
    r = guiapp("check", "--bogus", "x.h5")
    assert r.returncode == 2


def test_no_display_says_so_in_one_line() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    r = subprocess.run(
        [sys.executable, "-m", "guiapp"], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "no display" in r.stderr and "guiapp info" in r.stderr


def test_internal_error_goes_to_log(tmp_path: Path, make_dataset: MakeDataset) -> None:
    """An unexpected exception in a command: exit 1, a short line, the traceback in a log."""
    code = (
        "import sys, types, guiapp.cli as c\n"
        "def register(sub):\n"
        "    s = sub.add_parser('explode')\n"
        "    s.set_defaults(func=lambda args: 1 // 0)\n"
        "m = types.ModuleType('guiapp.cli.explode')\n"
        "m.register = register\n"
        "sys.modules[m.__name__] = m\n"
        "c.COMMAND_MODULES['explode'] = 'explode'\n"
        "sys.exit(c.main(['explode']))\n"
    )
    env = {**os.environ, "GUIAPP_LOG_DIR": str(tmp_path / "logs")}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == 1
    assert "internal error: ZeroDivisionError" in r.stderr and "Traceback" not in r.stderr
    logs = list((tmp_path / "logs").glob("guiapp-*.log"))
    assert len(logs) == 1 and "Traceback" in logs[0].read_text()


def test_each_command_parses_alone_and_the_table_names_them_all() -> None:
    """A command builds only its own parser (an import does not load the benches), and the
    table of commands says what the whole parser holds."""
    whole = (
        "import guiapp.cli as c\n"
        "assert c.parsed_names(c.build_parser()) == c.command_names() == set(c.COMMAND_MODULES)\n"
        "import sys\n"
        "print(any(m.startswith('guiapp.bench.') for m in sys.modules))\n"
    )
    alone = (
        "import sys, guiapp.cli as c\n"
        "args = c.build_parser('import').parse_args(['import', 'a.jsonl', 'b.h5', '--format', "
        "'jsonl'])\n"
        "assert args.command == 'import' and args.src == 'a.jsonl'\n"
        "print(any(m.startswith('guiapp.bench.') for m in sys.modules))\n"
    )
    for code, loads_benches in ((whole, "True"), (alone, "False")):
        r = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip() == loads_benches
