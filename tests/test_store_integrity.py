"""The damage matrix of the store (issue 35 points 5, 6 and 12): a foreign, truncated or
deleted shard and a bit-flipped manifest offset are refused when the dataset is opened
(``info``, ``check``, ``train``, ``predict``: exit 2, one line naming the damaged part and
the fix, before TensorFlow); a compressed dataset whose last shard is partial passes
``check --full``; the zeroed tail of an open shard (a power cut) is found by its commit
checksums, ``check --full`` names its rows and ``--resume`` rolls it back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import CLASSES, ENV, MakeDataset, guiapp

from guiapp.core.errors import DatasetError
from guiapp.core.store import Dataset, DatasetWriter, shard_dir
from guiapp.core.store.check import check_dataset
from guiapp.core.store.commit_sums import verified_rows


def _one_line(r, *needles: str) -> str:
    """The run failed with exit 2 and exactly one stderr line holding every needle."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def _refused_everywhere(path: Path, tmp_path: Path, *needles: str) -> None:
    """info, check, train and predict each refuse ``path`` in one line; nothing is written."""
    model = tmp_path / "m.keras"
    with zipfile.ZipFile(model, "w") as z:  # (never loaded: the data is refused first)
        z.writestr("config.json", "{}")
    for args in (
        ("info", path),
        ("check", path),
        ("train", "--data", path, "--model", "cnn2d-small", "--out", tmp_path / "run"),
        ("predict", "--model", model, "--data", path, "--out", tmp_path / "p.h5"),
    ):
        _one_line(guiapp(*args, timeout=120), *needles)
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "p.h5").exists()


def test_a_shard_of_another_dataset_is_refused(make_dataset: MakeDataset, tmp_path: Path) -> None:
    a = make_dataset("a.h5", rows=5000)
    b = make_dataset("b.h5", rows=5000)  # same schema and rows: only its uuid differs
    with Dataset(a) as ds:  # vouched for, and remembered by this process
        assert len(ds) == 5000
    shutil.copyfile(tmp_path / "b.shards/00001.h5", tmp_path / "a.shards/00001.h5")
    with pytest.raises(DatasetError, match="another dataset"):  # (same inode and size)
        Dataset(a)
    _refused_everywhere(a, tmp_path, "a.shards/00001.h5", "another dataset", "back")
    with Dataset(b) as ds:  # the other one is untouched
        assert len(ds) == 5000


def test_a_shard_copied_over_another_of_the_same_dataset_is_refused(
    make_dataset: MakeDataset, tmp_path: Path
) -> None:
    path = make_dataset(rows=5000)  # shards 0 and 1 full: same uuid, size and offsets
    shutil.copyfile(tmp_path / "data.shards/00000.h5", tmp_path / "data.shards/00001.h5")
    for cmd in ("info", "check"):
        _one_line(guiapp(cmd, path), "data.shards/00001.h5", "rows of shard 0, not of shard 1")


def test_a_truncated_shard_is_refused(make_dataset: MakeDataset, tmp_path: Path) -> None:
    path = make_dataset(rows=5000)
    shard = tmp_path / "data.shards/00000.h5"
    os.truncate(shard, shard.stat().st_size - 4096)
    _refused_everywhere(path, tmp_path, "00000.h5", "truncated")


def test_a_deleted_shard_is_refused(make_dataset: MakeDataset, tmp_path: Path) -> None:
    path = make_dataset(rows=5000)
    (tmp_path / "data.shards/00001.h5").unlink()
    _refused_everywhere(path, tmp_path, "00001.h5", "missing", "Restore")


def _flip_x_offset(index: Path, k: int, bit: int) -> int:
    with h5py.File(index, "r") as f:
        at = f["manifest"].id.get_offset() + k * 128 + 24  # the record's x_offset
    with open(index, "r+b") as fh:
        fh.seek(at)
        (value,) = struct.unpack("<q", fh.read(8))
        fh.seek(at)
        fh.write(struct.pack("<q", value ^ (1 << bit)))
    return value


def test_a_bit_flip_of_a_manifest_offset_blames_the_index(
    make_dataset: MakeDataset, tmp_path: Path
) -> None:
    path = make_dataset(rows=5000)
    before = (tmp_path / "data.shards/00001.h5").read_bytes()
    _flip_x_offset(path, 1, 3)  # 8 bytes off: still inside the file, read silently before
    _refused_everywhere(path, tmp_path, "data.h5:", "manifest", "shard 1", "x_offset")
    r = guiapp("check", path, "--full")
    line = _one_line(r, "manifest", "shard 1")
    assert "00001.h5:" not in line  # the intact shard is not blamed
    assert (tmp_path / "data.shards/00001.h5").read_bytes() == before


def test_compressed_imports_with_a_partial_last_shard_pass_check_full(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    np.save(tmp_path / "x.npy", rng.integers(0, 4, (2500, 126), dtype=np.uint16))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 2500))
    common = ("--format", "npy", "--labels", tmp_path / "y.npy", "--shard-rows", 1024)
    outs = {}
    for c in ("none", "lzf", "gzip"):
        outs[c] = tmp_path / f"{c}.h5"
        extra = () if c == "none" else ("--compression", c)
        r = guiapp("import", tmp_path / "x.npy", outs[c], *common, *extra)
        assert r.returncode == 0, r.stderr
    for c in ("lzf", "gzip"):
        r = guiapp("check", outs[c], "--full")
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        with Dataset(outs["none"]) as plain, Dataset(outs[c]) as packed:
            assert packed.compression == c
            assert packed.shards[-1].committed == 2500 - 2 * 1024  # the partial last shard
            assert [s.content_hash for s in packed.shards] == [s.content_hash for s in plain.shards]
            xa, ya = plain.read_range(0, 2500)
            xb, yb = packed.read_range(0, 2500)
            assert np.array_equal(xa, xb) and np.array_equal(ya, yb)


def test_check_full_still_finds_changed_rows_of_a_sealed_shard(
    make_dataset: MakeDataset, tmp_path: Path
) -> None:
    path = make_dataset(rows=5000)
    shard = tmp_path / "data.shards/00000.h5"
    with Dataset(path) as ds:
        at = ds.shards[0].x_offset + 100 * ds.row_nbytes
    with open(shard, "r+b") as fh:
        fh.seek(at)
        fh.write(b"\x01\x02\x03\x04")
    assert guiapp("check", path).returncode == 0  # (the default check reads no samples)
    _one_line(guiapp("check", path, "--full"), "00000.h5:", "content hash", "changed")


# One open shard of N rows: the kill below comes at the first progress event past 8,192
# rows (16,384 here), and the rest of the shard must take longer than the kill takes to
# land under load (with 24,000 rows the job once finished first: 60 ms were left).
N = 120_000
GEN = ["--n", str(N), "--shard-rows", str(N), "--shape", "16x16", "--seed", "3"]


def _zero_rows(path: Path, a: int, b: int) -> None:
    """What a power cut can do to rows whose pages were never written out: zeros."""
    shard = path.with_name(path.stem + ".shards") / "00000.h5"
    with h5py.File(shard, "r", locking=False) as f:
        x_off, y_off = f["x"].id.get_offset(), f["y"].id.get_offset()
        row = int(np.prod(f["x"].shape[1:])) * f["x"].dtype.itemsize
    with open(shard, "r+b") as fh:
        fh.seek(x_off + a * row)
        fh.write(b"\0" * (b - a) * row)
        fh.seek(y_off + a * 4)
        fh.write(b"\0" * (b - a) * 4)


def test_a_power_cut_zeroing_an_open_shard_s_tail_is_rolled_back(tmp_path: Path) -> None:
    ref = tmp_path / "ref.h5"
    assert guiapp("generate", ref, *GEN).returncode == 0
    out = tmp_path / "cut.h5"
    cmd = [sys.executable, "-m", "guiapp", "generate", str(out), *GEN, "--events", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "progress" and e["rows_done"] >= 8192:
            os.killpg(proc.pid, signal.SIGKILL)  # the job and its workers, as a power cut
            break
    proc.wait(60)
    with Dataset(out) as ds:
        committed = len(ds)
        assert 8192 <= committed < N and not ds.complete
    _zero_rows(out, committed - 100, committed)
    with Dataset(out) as ds:  # the counter still vouches for the zeros
        assert len(ds) == committed
    line = _one_line(guiapp("check", out, "--full"), "00000.h5:", "checksums", "--resume")
    assert f"to {committed:,}" in line
    r = guiapp("generate", out, *GEN, "--resume", "--events", "-")
    assert r.returncode == 0, r.stderr
    said = [json.loads(x) for x in r.stdout.splitlines() if '"log"' in x]
    assert len(said) == 1 and "first row" in said[0]["message"], r.stdout
    assert "Traceback" not in r.stderr
    with Dataset(out) as a, Dataset(ref) as b:  # nothing kept that the disk lost
        assert [s.content_hash for s in a.shards] == [s.content_hash for s in b.shards]
        assert a.read_range(0, N)[0].tobytes() == b.read_range(0, N)[0].tobytes()
    assert guiapp("check", out, "--full").returncode == 0


def test_a_resumed_writer_refuses_an_open_shard_whose_committed_rows_were_lost(
    tmp_path: Path,
) -> None:
    """An import's resume (``DatasetWriter.reopen``) cannot make the lost rows again (their
    buckets are gone): it says which rows and to start over, and keeps everything."""
    path = tmp_path / "d.h5"
    rng = np.random.default_rng(0)
    w = DatasetWriter(
        path, sample_shape=(126,), dtype="uint16", class_names=CLASSES, shard_capacity=16384
    )
    for _ in range(4):
        w.append(rng.integers(0, 4, (2500, 126), dtype=np.uint16), rng.integers(0, 5, 2500))
        w.commit()
    at = w.position()  # what the import's checkpoint keeps
    w.close(complete=False)
    shard = shard_dir(path) / "00000.h5"
    assert verified_rows(shard) == (10000, 10000)
    # Undamaged, it continues (its commit records go on from the rows read back)...
    w = DatasetWriter.reopen(path, keep_rows=at["rows"], shard_stats=at["shard_stats"])
    w.append(rng.integers(0, 4, (100, 126), dtype=np.uint16), rng.integers(0, 5, 100))
    w.close(complete=False)
    assert verified_rows(shard) == (10100, 10100)
    # ... and rows zeroed after their commit (at 5,000) are refused from the last commit
    # that still matches; nothing is touched.
    _zero_rows(path, 5000, 5050)
    before = shard.read_bytes()
    with pytest.raises(DatasetError, match="rows 5,000 to 10,000 no longer match"):
        DatasetWriter.reopen(path, keep_rows=at["rows"], shard_stats=at["shard_stats"])
    assert shard.read_bytes() == before
    assert not check_dataset(path, full=True).ok


def test_an_import_rolls_a_power_cut_back_to_its_last_vouched_commit(tmp_path: Path) -> None:
    """Issue 35.12 for import: committed rows of the open shard that the disk lost (zeroed
    after the kill) are found on --resume and written again from the last commit whose
    record still matches (their buckets are kept until the shard is sealed); the result is
    the uninterrupted import, byte for byte. It refused ("start over") before."""
    n, cap = 1_500_000, 16384
    rng = np.random.default_rng(1)
    np.save(tmp_path / "x.npy", rng.random((n, 16), dtype=np.float32))
    np.save(tmp_path / "y.npy", np.arange(n) % 4)
    args = [tmp_path / "x.npy", "--format", "npy", "--labels", tmp_path / "y.npy",
            "--shard-rows", cap, "--memory-mb", 1]  # fmt: skip
    ref = tmp_path / "ref.h5"
    assert guiapp("import", args[0], ref, *args[1:]).returncode == 0
    out = tmp_path / "cut.h5"
    cmd = [sys.executable, "-m", "guiapp", "import", str(args[0]), str(out), *map(str, args[1:])]
    proc = subprocess.Popen([*cmd, "--events", "-"], stdout=subprocess.PIPE, text=True,
                            env=ENV, start_new_session=True)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        e = json.loads(line)
        if e["event"] == "progress" and e.get("phase") == "write":
            os.killpg(proc.pid, signal.SIGKILL)  # the job and its threads, as a power cut
            break
    assert proc.wait(60) == -signal.SIGKILL  # (killed mid pass 2, not finished)
    staged = next(tmp_path.glob(".cut.h5.import-*")) / "cut.h5"
    with Dataset(staged) as ds:
        committed = len(ds)
    shard, part = shard_dir(staged) / f"{committed // cap:05d}.h5", committed % cap
    assert part > 0, committed  # (the kill lands inside a shard)
    with h5py.File(shard, "r", locking=False) as f:
        x_off, row = f["x"].id.get_offset(), 16 * 4
    lost = min(100, part)
    with open(shard, "r+b") as fh:  # the last committed rows never reached the disk
        fh.seek(x_off + (part - lost) * row)
        fh.write(b"\0" * lost * row)
    r = guiapp("import", args[0], out, *args[1:], "--resume", "--events", "-")
    assert r.returncode == 0, r.stderr
    said = [json.loads(x)["message"] for x in r.stdout.splitlines() if '"log"' in x]
    assert any("no longer match" in m and "goes back to row" in m for m in said), said
    with Dataset(out) as a, Dataset(ref) as b:
        assert len(a) == len(b) == n
        assert [s.content_hash for s in a.shards] == [s.content_hash for s in b.shards]
        assert a.read_range(0, n)[1].tobytes() == b.read_range(0, n)[1].tobytes()
