"""`guiapp import`: every format round-trips, bad rows are reported by file:line, the output
is shuffled with bounded memory, a failed import leaves nothing behind, and a stopped one
leaves only its hidden staging folder, for --resume."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import guiapp, imported
from hypothesis import given, settings
from hypothesis import strategies as st

from guiapp.core.errors import UserError
from guiapp.core.events import CancelToken, EventSink
from guiapp.core.importers import ImportConfig, run_import
from guiapp.core.importers.labels import LabelMap
from guiapp.core.importers.parse import Fit, Shaper, clean_text, parse_text_rows
from guiapp.core.importers.shuffle import Scatter, shuffled
from guiapp.core.store import Dataset

LENGTH = 126
MALFORMED = {
    # 1-based line number -> what is wrong with it
    7: "invalid JSON",
    40_001: "no 'data' field",
    99_990: "token 'x12' (item 3) is not an integer",
}


def import_jsonl_command(src: Path, out: Path) -> list[str]:
    """``guiapp import`` of a JSONL file, skipping bad rows, with events on stdout."""
    return [sys.executable, "-m", "guiapp", "import", str(src), str(out), "--format", "jsonl"] + [
        "--length",
        str(LENGTH),
        "--on-error",
        "skip",
        "--events",
        "-",
    ]


def keras_pad(
    rows: list[list[int]], maxlen: int, padding: str, truncating: str, value: int
) -> np.ndarray:
    """Keras' own ``pad_sequences`` where Keras is installed (loaded without its backend)."""
    spec = importlib.util.find_spec("keras")
    src = None
    if spec and spec.submodule_search_locations:
        cand = Path(next(iter(spec.submodule_search_locations))) / "src/utils/sequence_utils.py"
        src = cand if cand.exists() else None
    if src is None:
        return reference_pad(rows, maxlen, padding, truncating, value)
    text = src.read_text().replace("from keras.src.api_export import keras_export", "")
    text = text.replace("@keras_export(", "@(lambda *a, **k: (lambda f: f))(")
    ns: dict[str, Any] = {}
    exec(compile(text, str(src), "exec"), ns)  # noqa: S102 - Keras' own source, no backend
    return np.asarray(
        ns["pad_sequences"](
            rows, maxlen=maxlen, dtype="int64", padding=padding, truncating=truncating, value=value
        )
    )


def reference_pad(
    rows: list[list[int]], maxlen: int, padding: str, truncating: str, value: int
) -> np.ndarray:
    out = np.full((len(rows), maxlen), value, dtype=np.int64)
    for i, r in enumerate(rows):
        r = r[:maxlen] if truncating == "post" else r[-maxlen:] if r else r
        if not r:
            continue
        if padding == "post":
            out[i, : len(r)] = r
        else:
            out[i, maxlen - len(r) :] = r
    return out


def row_set(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows with their labels as one sortable byte string each: a multiset fingerprint."""
    x = np.ascontiguousarray(x.reshape(len(x), -1))
    both = np.concatenate(
        [x.view(np.uint8).reshape(len(x), -1), y.astype("<i4").view(np.uint8).reshape(len(y), -1)],
        axis=1,
    )
    return np.sort(np.ascontiguousarray(both).view(np.dtype((np.void, both.shape[1]))).reshape(-1))


def read_all(path: Path) -> tuple[np.ndarray, np.ndarray, Dataset]:
    ds = Dataset(path)
    x, y = ds.read_range(0, len(ds))
    ds.close()
    return x, y, ds


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- the acceptance file ---------------------------------------------------------------
def make_mongo_jsonl(path: Path, n: int, seed: int = 0) -> list[tuple[int, list[int]]]:
    """A mongoexport-style file sorted by label (5 classes) with messy data strings.

    Returns the expected (label, values) of every good line, in file order.
    """
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 65521, size=(n, LENGTH + 10)).tolist()
    lengths = np.full(n, LENGTH)
    odd = rng.random(n)
    lengths[odd < 0.05] = rng.integers(90, LENGTH, size=int((odd < 0.05).sum()))
    lengths[odd > 0.95] = rng.integers(LENGTH + 1, LENGTH + 10, size=int((odd > 0.95).sum()))
    expected: list[tuple[int, list[int]]] = []
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            no = i + 1
            label = i * 5 // n
            row = values[i][: lengths[i]]
            text = ",".join(map(str, row))
            if i % 50 == 3:
                text = text.replace(",", ",,", 2) + ","  # stray commas
            if i % 97 == 5:
                text = " " + text.replace(",", ", ", 5)
            lab: Any = label if i % 3 else {"$numberInt": str(label)}
            doc: dict[str, Any] = {
                "_id": {"$oid": f"{i:024x}"},
                "label": lab,
                "accession": f"GM_{i:06d}",
                "data": text if i % 41 else row,  # some documents hold a JSON list
                "name": f"Example_{i}",
            }
            line = json.dumps(doc, separators=(",", ":"))
            if no in MALFORMED:
                if no == 7:
                    line = line[:-9]
                elif no == 40_001:
                    del doc["data"]
                    line = json.dumps(doc)
                else:
                    parts = text.split(",")
                    parts[2] = "x12"
                    doc["data"] = ",".join(parts)
                    line = json.dumps(doc)
            else:
                expected.append((label, row))
            fh.write(line + "\n")
    return expected


@pytest.fixture(scope="module")
def big_jsonl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, list[int]]]]:
    path = tmp_path_factory.mktemp("src") / "genomes.jsonl"
    return path, make_mongo_jsonl(path, 100_000)


def test_jsonl_acceptance(
    big_jsonl: tuple[Path, list[tuple[int, list[int]]]], tmp_path: Path
) -> None:
    """100,000 sorted lines, 3 malformed: 99,997 shuffled rows, the 3 lines reported."""
    src, expected = big_jsonl
    out = tmp_path / "kmers.h5"
    t0 = time.perf_counter()
    r = guiapp("import", src, out, "--format", "jsonl", "--on-error", "skip", "--length", LENGTH)
    wall = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    print(f"\n100k-line JSONL import: {wall:.2f} s wall, {100_000 / wall:,.0f} rows/s")
    for no, problem in MALFORMED.items():
        assert f"genomes.jsonl:{no}: " in r.stdout, r.stdout
        assert problem in r.stdout
        assert f"genomes.jsonl:{no}: " in r.stderr  # reported as it happened, too
    assert "skipped     3 bad row(s)" in r.stdout

    x, y, ds = read_all(out)
    assert len(x) == 99_997 == len(expected)
    assert ds.class_names == ["0", "1", "2", "3", "4"]
    assert x.dtype == np.uint16 and x.shape[1:] == (LENGTH,)
    # Interleaved: no 512-row block holds a single class.
    blocks = y[: len(y) // 512 * 512].reshape(-1, 512)
    assert all(len(np.unique(b)) > 1 for b in blocks)
    assert (np.bincount(y) == np.bincount([lab for lab, _ in expected])).all()
    # Every row exactly as the input after padding/truncating (Keras defaults: post/pre).
    want_x = keras_pad([v for _, v in expected], LENGTH, "post", "pre", 0)
    want_y = np.array([lab for lab, _ in expected], np.int32)
    assert (row_set(x, y) == row_set(want_x.astype(np.uint16), want_y)).all()
    # One sample row, looked up by content.
    i = next(k for k, (_, v) in enumerate(expected) if len(v) < LENGTH)
    hit = np.flatnonzero((x == want_x[i]).all(axis=1))
    assert len(hit) == 1 and y[hit[0]] == expected[i][0]
    assert list(x[hit[0], : len(expected[i][1])]) == expected[i][1]
    assert not x[hit[0], len(expected[i][1]) :].any()
    prov = ds.provenance
    assert prov["importer"] == "jsonl" and prov["skipped_rows"] == 3
    assert [e.split(": ")[0] for e in prov["row_errors"]] == [
        f"genomes.jsonl:{no}" for no in MALFORMED
    ]
    lens = [len(v) for _, v in expected]
    assert prov["padded_rows"] == sum(k < LENGTH for k in lens)
    assert prov["truncated_rows"] == sum(k > LENGTH for k in lens)
    assert prov["rows"] == 99_997 and prov["rows_read"] == 100_000
    assert leftovers(tmp_path) == []
    assert ds.statistics["rows"] == 99_997


def test_abort_is_default_and_leaves_nothing(
    big_jsonl: tuple[Path, list[tuple[int, list[int]]]], tmp_path: Path
) -> None:
    src, _ = big_jsonl
    out = tmp_path / "kmers.h5"
    r = guiapp("import", src, out, "--format", "jsonl", "--length", LENGTH)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "genomes.jsonl:7: invalid JSON" in lines[0]
    assert "--on-error skip" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _only_staging(folder: Path, out: Path) -> None:
    """No dataset, nothing but the stopped import's hidden staging folder."""
    names = [p.name for p in folder.iterdir()]
    assert all(n.startswith(f".{out.name}.import-") for n in names), names


def test_stop_on_stdin_leaves_no_dataset_and_resumes(
    big_jsonl: tuple[Path, list[tuple[int, list[int]]]], tmp_path: Path
) -> None:
    src, _ = big_jsonl
    out = tmp_path / "kmers.h5"
    p = subprocess.Popen(
        import_jsonl_command(src, out),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdin is not None and p.stdout is not None
    events = []
    for line in p.stdout:
        events.append(json.loads(line))
        if events[-1]["event"] == "progress":
            p.stdin.write("stop\n")
            p.stdin.flush()
            break
    rest, err = p.communicate(timeout=60)
    events += [json.loads(line) for line in rest.splitlines()]
    assert p.returncode == 0, err
    kinds = [e["event"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "stopped", kinds
    assert "finished" not in kinds
    _only_staging(tmp_path, out)
    r = subprocess.run(
        [*import_jsonl_command(src, out), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["event"] == "finished"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kmers.h5", "kmers.shards"]


# -- determinism and the memory bound ----------------------------------------------------
@pytest.fixture(scope="module")
def sorted_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("small") / "sorted.jsonl"
    rng = np.random.default_rng(3)
    with open(path, "w") as fh:
        for i in range(20_000):
            row = rng.integers(0, 65521, LENGTH)
            fh.write(
                json.dumps({"label": f"class_{i * 4 // 20_000}", "data": ",".join(map(str, row))})
                + "\n"
            )
    return path


def _import(src: Path, out: Path, **kw: Any) -> dict[str, Any]:
    cfg = ImportConfig(src=src, out=out, format=kw.pop("format", "jsonl"), **kw)
    return run_import(cfg, EventSink(), CancelToken())


def test_seed_and_memory_bound(sorted_jsonl: Path, tmp_path: Path) -> None:
    a = _import(sorted_jsonl, tmp_path / "a.h5", seed=5)
    _import(sorted_jsonl, tmp_path / "b.h5", seed=5)
    _import(sorted_jsonl, tmp_path / "c.h5", seed=6)
    small = _import(sorted_jsonl, tmp_path / "small.h5", seed=5, memory_mb=0.25, shard_rows=4096)
    assert a["buckets"] == 1 and small["buckets"] > 50
    xa, ya, da = read_all(tmp_path / "a.h5")
    xb, yb, _ = read_all(tmp_path / "b.h5")
    xc, yc, _ = read_all(tmp_path / "c.h5")
    xs, ys, ds = read_all(tmp_path / "small.h5")
    assert da.class_names == ["class_0", "class_1", "class_2", "class_3"]
    assert (xa == xb).all() and (ya == yb).all()  # same seed: same order
    assert not (xa == xc).all()  # another seed: another order
    assert len(ds.shards) == 5 and ds.provenance["shuffle"]["buckets"] == small["buckets"]
    ref = row_set(xa, ya)
    for x, y in ((xc, yc), (xs, ys)):
        assert (row_set(x, y) == ref).all()
    blocks = ys[: len(ys) // 512 * 512].reshape(-1, 512)
    assert all(len(np.unique(blk)) > 1 for blk in blocks)
    small2 = _import(sorted_jsonl, tmp_path / "small2.h5", seed=5, memory_mb=0.25)
    assert small2["buckets"] == small["buckets"]
    assert (read_all(tmp_path / "small2.h5")[0] == xs).all()


def test_oversized_bucket_is_split_again(tmp_path: Path) -> None:
    """A bucket larger than the budget (a low size estimate) is re-scattered, not loaded."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1000, size=(30_000, 8)).astype(np.int32)
    y = (np.arange(30_000) // 10_000).astype(np.int32)
    sc = Scatter(tmp_path / "b", 1, (8,), np.dtype(np.int32), rng, flush_bytes=50_000)
    for a in range(0, 30_000, 7000):
        sc.add(x[a : a + 7000], y[a : a + 7000])
    cap = 100_000  # bytes: the 1.08 MB bucket must be split
    seen = []
    for xs, ys in shuffled(sc, 1, cap):
        assert xs.nbytes + ys.nbytes <= cap
        seen.append((xs, ys))
    gx = np.concatenate([s[0] for s in seen])
    gy = np.concatenate([s[1] for s in seen])
    assert (row_set(gx, gy) == row_set(x, y)).all()
    assert len(np.unique(gy[:512])) == 3
    assert [p for p in (tmp_path / "b").rglob("*") if p.is_file()] == []


# -- the other formats -------------------------------------------------------------------
def _check_roundtrip(out: Path, x: np.ndarray, labels: np.ndarray, names: list[str]) -> None:
    gx, gy, ds = read_all(out)
    assert ds.class_names == names
    assert gx.dtype == x.dtype and gx.shape == x.shape
    assert (row_set(gx, gy) == row_set(x, labels)).all()


def test_npy_dir_subfolders_and_stacks(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    src = tmp_path / "images"
    xs: list[np.ndarray] = []
    names: list[str] = []
    for name in ["blob", "ring", "edge"]:
        (src / name).mkdir(parents=True)
        for k in range(20):
            a = rng.standard_normal((25, 25)).astype(np.float32)
            np.save(src / name / f"{k:03d}.npy", a)
            xs.append(a)
            names.append(name)
    stack = rng.standard_normal((300, 25, 25)).astype(np.float32)
    np.save(src / "ring" / "many.npy", stack)  # a stack among single samples
    xs += list(stack)
    names += ["ring"] * 300
    order = ["blob", "edge", "ring"]  # class names are the sorted folder names
    ys = [order.index(n) for n in names]
    out = tmp_path / "cells.h5"
    imported(src, out, "--format", "npy-dir")
    _check_roundtrip(out, np.stack(xs), np.array(ys, np.int32), ["blob", "edge", "ring"])


def test_npy_dir_labels_csv(tmp_path: Path) -> None:
    src = tmp_path / "flat"
    src.mkdir()
    x = np.arange(40 * 6, dtype=np.int16).reshape(40, 6)
    with open(tmp_path / "labels.csv", "w") as fh:
        fh.write("file,label\n")
        for i in range(40):
            np.save(src / f"s{i:02d}.npy", x[i])
            fh.write(f"s{i:02d}.npy,{i % 4}\n")
    out = tmp_path / "flat.h5"
    imported(src, out, "--format", "npy-dir", "--labels", tmp_path / "labels.csv",
             "--class-names", "a,b,c,d")  # fmt: skip
    _check_roundtrip(out, x, np.arange(40, dtype=np.int32) % 4, ["a", "b", "c", "d"])


def test_npy_with_string_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5000, 25, 25)).astype(np.float32)
    labels = np.array(["stripe", "blob", "ring"])[rng.integers(0, 3, 5000)]
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", labels)
    out = tmp_path / "out.h5"
    r = guiapp("import", tmp_path / "x.npy", out, "--format", "npy", "--labels", tmp_path / "y.npy")
    assert r.returncode == 0, r.stderr
    idx = {"blob": 0, "ring": 1, "stripe": 2}
    _check_roundtrip(
        out, x, np.array([idx[s] for s in labels], np.int32), ["blob", "ring", "stripe"]
    )
    assert "stripe" in r.stdout and "5,000" in r.stdout


def test_npz_compressed_with_keys_and_range_check(tmp_path: Path) -> None:
    x = np.arange(3000 * 10, dtype=np.int64).reshape(3000, 10) % 60000
    y = np.arange(3000) % 3
    np.savez_compressed(tmp_path / "d.npz", images=x, classes=y)
    out = tmp_path / "d.h5"
    imported(tmp_path / "d.npz", out, "--format", "npz", "--x-key", "images", "--y-key",
             "classes", "--dtype", "uint16")  # fmt: skip
    _check_roundtrip(out, x.astype(np.uint16), y.astype(np.int32), ["0", "1", "2"])
    # The int64 default narrows to int32 with a range check: a too-large value is a row error.
    x[17, 3] = 2**40
    np.savez(tmp_path / "e.npz", x=x, y=y)
    r = guiapp("import", tmp_path / "e.npz", tmp_path / "e.h5", "--format", "npz")
    assert r.returncode == 2
    assert (
        "e.npz[x]:row 17: value 1099511627776 (item 4 of 10) is out of range for int32" in r.stderr
    )
    assert not (tmp_path / "e.h5").exists()
    r = guiapp("import", tmp_path / "d.npz", tmp_path / "f.h5", "--format", "npz")
    assert r.returncode == 2 and "has no array 'x' (it holds: images, classes)" in r.stderr


def test_csv_header_names_and_tsv_indices(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(0, 65521, size=(1000, 30))
    y = rng.integers(0, 3, 1000)
    with open(tmp_path / "t.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "kmers", "class"])
        for i in range(1000):
            w.writerow([f"GM_{i}", ",".join(map(str, x[i])), ["cat", "dog", "eel"][y[i]]])
    out = tmp_path / "c.h5"
    imported(tmp_path / "t.csv", out, "--format", "csv", "--label-field", "class",
             "--data-field", "kmers")  # fmt: skip
    _check_roundtrip(out, x.astype(np.uint16), y.astype(np.int32), ["cat", "dog", "eel"])
    with open(tmp_path / "t.tsv", "w") as fh:
        for i in range(1000):
            fh.write(f"{y[i]}\t{' '.join(map(str, x[i]))}\n")  # space-separated data, no header
    out = tmp_path / "t.h5"
    imported(tmp_path / "t.tsv", out, "--format", "tsv", "--label-field", "0", "--data-field",
             "1", "--dtype", "int32")  # fmt: skip
    _check_roundtrip(out, x.astype(np.int32), y.astype(np.int32), ["0", "1", "2"])


def test_out_of_range_and_other_row_errors(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    lines = [
        {"label": 0, "data": "1,2,3"},
        {"label": 1, "data": "1,70000,3"},  # too big for uint16
        {"label": 1, "data": "1,-1,3"},  # negative
        {"label": 0, "data": "1,2.5,3"},  # not an integer
        {"label": 0, "data": "1,2"},  # wrong length (no --length)
        {"label": -2, "data": "1,2,3"},  # negative label
        {"label": None, "data": "4,5,6"},
        {"label": 1, "data": {"$binary": "AAA"}},
        {"label": 1, "data": "7,8,9"},
    ]
    src.write_text("\n".join(json.dumps(d) for d in lines) + "\n\n")
    r = guiapp("import", src, tmp_path / "r.h5", "--format", "jsonl", "--events", "-")
    assert r.returncode == 2
    assert "r.jsonl:2: value 70000 (item 2 of 3) is out of range for uint16 (0..65535)" in r.stderr
    assert not (tmp_path / "r.h5").exists()
    failed = json.loads(r.stdout.splitlines()[-1])  # the raise site names the option to change
    assert failed["event"] == "failed" and r.stderr == f"guiapp: error: {failed['message']}\n"
    assert (failed["option"], failed["value"]) == ("--on-error", "abort")
    assert failed["fix"] == "Fix the row, or pass --on-error skip to leave bad rows out"
    wrong = tmp_path / "w.jsonl"  # the first bad row's problem names its own option
    wrong.write_text("\n".join(json.dumps(d) for d in (lines[0], lines[4], lines[1])) + "\n")
    with pytest.raises(UserError, match=r"^w\.jsonl:2: has 2 values") as exc:
        _import(wrong, tmp_path / "w.h5")
    assert (exc.value.option, exc.value.fields()["option"]) == ("--length", "--length")
    s = _import(src, tmp_path / "s.h5", on_error="skip")
    assert s["rows"] == 2 and s["skipped"] == 7
    errs = dict(e.split(": ", 1) for e in s["row_errors"])
    assert "out of range for uint16" in errs["r.jsonl:3"]
    assert errs["r.jsonl:4"] == "token '2.5' (item 2) is not an integer"
    assert (
        errs["r.jsonl:5"]
        == "has 2 values, but the first row has 3 (pass --length 3 to pad or truncate)"
    )
    assert errs["r.jsonl:6"] == "label -2 is negative"
    assert errs["r.jsonl:7"] == "label is null"
    assert "'data' is a dict" in errs["r.jsonl:8"]
    x, y, _ = read_all(tmp_path / "s.h5")
    assert sorted(map(tuple, x.tolist())) == [(1, 2, 3), (7, 8, 9)]


def test_refuses_existing_output_and_bad_usage(sorted_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.h5"
    out.write_text("precious")
    r = guiapp("import", sorted_jsonl, out, "--format", "jsonl")
    assert r.returncode == 2 and "already exists" in r.stderr and "--overwrite" in r.stderr
    assert out.read_text() == "precious"
    r = guiapp("import", tmp_path / "missing.jsonl", tmp_path / "m.h5", "--format", "jsonl")
    assert r.returncode == 2 and "missing.jsonl: does not exist" in r.stderr
    arr = tmp_path / "arr.json"
    arr.write_text('[{"label": 0, "data": "1,2"}]\n')
    r = guiapp("import", arr, tmp_path / "a.h5", "--format", "jsonl")
    assert r.returncode == 2 and "--jsonArray" in r.stderr
    r = guiapp(
        "import", sorted_jsonl, tmp_path / "p.h5", "--format", "jsonl", "--pad-value", "70000"
    )
    assert r.returncode == 2 and "--pad-value 70000" in r.stderr
    r = guiapp("import", sorted_jsonl, out, "--format", "jsonl", "--overwrite", "--events", "-")
    assert r.returncode == 0, r.stderr
    kinds = [json.loads(line)["event"] for line in r.stdout.splitlines()]
    assert kinds[0] == "started" and kinds[-1] == "finished" and "progress" in kinds
    assert len(Dataset(out)) == 20_000


# -- parsing and labels, in-process --------------------------------------------------------
def test_clean_text() -> None:
    assert clean_text("1,2,3") == "1,2,3"
    assert clean_text(",1,,2, 3 ,\n") == "1,2,3"
    assert clean_text("1 2\t3") == "1,2,3"
    assert clean_text("[1, 2]") == "1,2"
    rows = parse_text_rows(["1,2", "", "3,x", "4,,5,"], np.dtype("uint16"))
    assert [r.tolist() if isinstance(r, np.ndarray) else r for r in rows] == [
        [1, 2],
        [],
        "token 'x' (item 2) is not an integer",
        [4, 5],
    ]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(0, 65535), max_size=12), min_size=1, max_size=20),
    maxlen=st.integers(1, 10),
    padding=st.sampled_from(["post", "pre"]),
    truncating=st.sampled_from(["post", "pre"]),
    value=st.integers(0, 9),
)
def test_padding_matches_keras(
    rows: list[list[int]], maxlen: int, padding: str, truncating: str, value: int
) -> None:
    fit = Fit(
        dtype=np.dtype("uint16"), length=maxlen, pad=padding, truncate=truncating, pad_value=value
    )
    texts = [",".join(map(str, r)) for r in rows]
    parsed = Shaper(fit).shape_rows(parse_text_rows(texts, fit.dtype))
    assert parsed.errors == [] and parsed.x.dtype == np.uint16
    want = keras_pad(rows, maxlen, padding, truncating, value)
    assert (parsed.x == want).all()
    assert parsed.padded == sum(len(r) < maxlen for r in rows)
    assert parsed.truncated == sum(len(r) > maxlen for r in rows)


def test_labels() -> None:
    m = LabelMap()
    ids, errs = m.ids([2, {"$numberInt": "0"}, "2", {"$numberLong": "5"}, True, 1.5])
    assert [e[0] for e in errs] == [4, 5]
    names, remap = m.finish()
    assert names == ["0", "1", "2", "3", "4", "5"]
    assert remap[ids[:4]].tolist() == [2, 0, 2, 5]
    m = LabelMap()
    ids, _ = m.ids(np.array(["b", "a", "c", "a"]))
    names, remap = m.finish()
    assert names == ["a", "b", "c"] and remap[ids].tolist() == [1, 0, 2, 0]
    m = LabelMap(["x", "y"])
    ids, errs = m.ids(["y", 0, "z", 2])
    assert ids[:2].tolist() == [1, 0]
    assert [p for _, p in errs] == [
        "label 'z' is not one of --class-names (x, y)",
        "label 2 is out of range for 2 --class-names",
    ]
    with pytest.raises(UserError):
        LabelMap(["a", "a"])


def test_cancel_in_process_leaves_nothing(sorted_jsonl: Path, tmp_path: Path) -> None:
    cancel = CancelToken()
    sink = EventSink()
    seen: list[str] = []

    def on(e: dict[str, Any]) -> None:
        seen.append(e["event"])
        if e["event"] == "started":
            cancel.cancel("test")

    sink.listeners.append(on)
    from guiapp.core.errors import Cancelled

    with pytest.raises(Cancelled):
        run_import(
            ImportConfig(src=sorted_jsonl, out=tmp_path / "c.h5", format="jsonl"), sink, cancel
        )
    assert seen[-1] == "stopped"
    _only_staging(tmp_path, tmp_path / "c.h5")


def test_folder_of_files_gzip_and_line_numbers(tmp_path: Path) -> None:
    import gzip

    src = tmp_path / "export"
    src.mkdir()
    (src / "a.jsonl").write_text('{"label": "x", "data": "1,2"}\n\n{"label": "y", "data": "3,4"}\n')
    with gzip.open(src / "b.jsonl.gz", "wt") as fh:
        fh.write('{"label": "y", "data": "5,6"}\n{"label": "x", "data": "7,oops"}\n')
    s = _import(src, tmp_path / "f.h5", on_error="skip")
    assert s["rows"] == 3 and s["row_errors"] == [
        "b.jsonl.gz:2: token 'oops' (item 2) is not an integer"
    ]
    x, y, ds = read_all(tmp_path / "f.h5")
    assert ds.provenance["source_files"] == 2
    assert sorted(zip(map(tuple, x.tolist()), y.tolist(), strict=True)) == [
        ((1, 2), 0),
        ((3, 4), 1),
        ((5, 6), 1),
    ]


def test_sigint_stops_cleanly(
    big_jsonl: tuple[Path, list[tuple[int, list[int]]]], tmp_path: Path
) -> None:
    import signal

    src, _ = big_jsonl
    p = subprocess.Popen(
        import_jsonl_command(src, tmp_path / "k.h5"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    for line in p.stdout:
        if json.loads(line)["event"] == "progress":
            p.send_signal(signal.SIGINT)
            break
    rest, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert json.loads(rest.splitlines()[-1])["event"] == "stopped"
    _only_staging(tmp_path, tmp_path / "k.h5")
