"""`guiapp import --group-field F --keep-fields A,B`: each row keeps its lineage (its group,
by name, through the index's table) and the fields the user named, in every format, through
the shuffle, the workers, a SIGKILL and --resume; bad group values follow --on-error."""

# JSON lines read best as %-templates.
# ruff: noqa: UP031

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_import_scale import ARGS, _kill_at

from guiapp.core import jit as core_jit
from guiapp.core.importers import jitfields, lineage_piece
from guiapp.core.importers.jitfields import INT, MISSING, NULL, OTHER, STR, SURE
from guiapp.core.importers.piece_result import PieceResult
from guiapp.core.importers.pieces import ParseSpec, PieceParser, plan_pieces
from guiapp.core.importers.rowcols import unpack_texts
from guiapp.core.store import Dataset
from guiapp.core.store import columns as C

L = 126
LINEAGE = ("--group-field", "accession", "--keep-fields", "_id,name")


def _cli(src: Path, out: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    cmd = [sys.executable, "-m", "guiapp", "import", str(src), str(out), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def _doc(i: int, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    """Line ``i`` of a mongoexport file (in the shapes real exports take) and what it holds."""
    values = rng.integers(0, 65536, L).tolist()
    label = i % 4
    acc: Any = f"GM_{i // 9:05d}"
    name = f"Example_{i}"
    if i % 11 == 2:
        name = f"Exámple_{i}_é"  # non-ASCII: the exact path
    if i % 13 == 3:
        name = f'Ex"ample\\{i}'  # escapes
    if i % 23 == 6:
        acc = 70_000 + i // 9  # an integer group: its decimal text is the name
    doc: dict[str, Any] = {
        "_id": {"$oid": "%024x" % (i * 7919)},
        "accession": acc,
        "name": name,
        "label": {"$numberLong": str(label)} if i % 17 == 4 else label,
        "data": values if i % 19 == 5 else ",".join(map(str, values)),
    }
    seps = (", ", ": ") if i % 7 == 1 else (",", ":")
    want = {"oid": doc["_id"]["$oid"], "acc": str(acc), "name": name, "label": label}
    return json.dumps(doc, separators=seps, ensure_ascii=i % 5 == 0), {**want, "x": values}


def _write(path: Path, n: int, seed: int = 1) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    want = {}
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            line, w = _doc(i, rng)
            fh.write(line + "\n")
            want[w["oid"]] = w
    return want


def _state(path: Path) -> dict[str, Any]:
    """Everything a dataset holds: rows (shard hashes), labels, every column, group names."""
    with Dataset(path) as ds:
        return {
            "hashes": [s.content_hash for s in ds.shards],
            "class_names": ds.class_names,
            "columns": {k: str(v) for k, v in ds.columns.items()},
            "values": {k: C.read_column(ds, k).tolist() for k in ds.columns},
            "names": (lambda t: None if t is None else (t[0].tolist(), t[1]))(C.group_names(ds)),
        }


# -- the acceptance file: every row's _id and accession against its source line ------------
@pytest.fixture(scope="module")
def mongo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    path = tmp_path_factory.mktemp("mongo") / "genomes.jsonl"
    return path, _write(path, 6000)


def test_mongoexport_rows_keep_their_id_accession_and_name(
    mongo: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    src, want = mongo
    out = tmp_path / "k.h5"
    r = _cli(src, out, "--format", "jsonl", *LINEAGE, "--piece-mb", "0.25", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert "groups      " in r.stdout and "kept        _id (S24), name (S" in r.stdout
    with Dataset(out) as ds:
        assert set(ds.columns) == {"group", "_id", "name"} and ds.columns["_id"] == "S24"
        x, y = ds.read_range(0, len(ds))
        ids = C.decode(C.read_column(ds, "_id"))
        names = C.decode(C.read_column(ds, "name"))
        groups = C.read_column(ds, "group")
        table = C.group_names(ds)
        classes = ds.class_names
    assert len(ids) == len(set(ids)) == len(want) == 6000  # every line once
    assert table is not None
    accessions = C.name_groups(groups, table)
    assert sorted(table[1]) == sorted({w["acc"] for w in want.values()})
    assert np.array_equal(table[0], np.sort(table[0]))
    assert np.array_equal(C.group_id(table[1]), table[0])  # each name's id is its hash
    assert list(want)[:200] != ids[:200]  # (the rows were shuffled: the join is by _id)
    for i, oid in enumerate(ids):
        w = want[oid]
        assert accessions[i] == w["acc"] and names[i] == w["name"], (i, oid)
        assert int(classes[y[i]]) == w["label"] and x[i].tolist() == w["x"], (i, oid)
    info = subprocess.run([sys.executable, "-m", "guiapp", "info", str(out)], capture_output=True)
    info.stdout = info.stdout.decode()
    assert f"groups      {len(table[1]):,} (rows per group " in info.stdout
    assert "kept fields: _id, name" in info.stdout


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
def test_without_numba_the_same_dataset_and_columns(
    mongo: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    """The exact rules (json, per line) give every column the compiled scans give."""
    src, _ = mongo
    args = ("--format", "jsonl", "--group-field", "accession", "--keep-fields", "_id,name,label")
    args += ("--piece-mb", "0.25")
    a = _cli(src, tmp_path / "a.h5", *args)
    b = _cli(src, tmp_path / "b.h5", *args, env={**os.environ, "GUIAPP_NO_NUMBA": "1"})
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    sa, sb = _state(tmp_path / "a.h5"), _state(tmp_path / "b.h5")
    assert sa == sb
    assert sa["columns"]["label"] == "int64"  # ({"$numberLong": "3"} is the integer 3)


# -- the value rules: compiled scans and the exact rules agree -------------------------
FIELDS = ["a", "b", "c"]
SHAPES = [
    '{"a": "x", "b": 3, "c": null}',
    '{"a":"x","b":-12,"c":{"$oid":"5f1d7a3b9c8e4a0012345678"}}',
    '{"a": "\u00e9t\u00e9", "b": "-0", "c": {"$numberLong": "007"}}',
    '{"a": "q\\"uote", "b": -0, "c": {"$numberInt": "42"}}',
    '{"a": 1.5, "b": true, "c": [1, 2]}',
    '{"a": {"x": 1}, "b": 123456789012345678901, "c": {"$date": {"$numberLong": "15778"}}}',
    '{ "b" : 7 , "a" : "sp" }',
    '{"a": "first", "b": 1, "a": "last"}',
    '{"c": {"$date": "2020-01-01T00:00:00Z"}, "z": {"deep": [{"a": "no"}, "}"]}}',
    '{"a":"","b":0,"c":{"$numberDouble":"1.5"}}',
    '{"\\u0061": "escaped key", "b": false}',
    '{"a": "x", "b": 9223372036854775807, "c": {"$numberLong": "-5"}}',
    '{"b": [], "c": {}}',
]
EXPECTED = [  # (kind, text) of a, b, c by the rules of docs/IMPORT.md
    [(STR, "x"), (INT, "3"), (NULL, "")],
    [(STR, "x"), (INT, "-12"), (STR, "5f1d7a3b9c8e4a0012345678")],
    [(STR, "\u00e9t\u00e9"), (STR, "-0"), (STR, "007")],
    [(STR, 'q"uote'), (INT, "0"), (INT, "42")],
    [(OTHER, "1.5"), (OTHER, "true"), (OTHER, "[1,2]")],
    [(OTHER, '{"x":1}'), (STR, "123456789012345678901"), (STR, "15778")],
    [(STR, "sp"), (INT, "7"), (MISSING, "")],
    [(STR, "last"), (INT, "1"), (MISSING, "")],
    [(MISSING, ""), (MISSING, ""), (STR, "2020-01-01T00:00:00Z")],
    [(STR, ""), (INT, "0"), (STR, "1.5")],
    [(STR, "escaped key"), (OTHER, "false"), (MISSING, "")],
    [(STR, "x"), (INT, "9223372036854775807"), (INT, "-5")],
    [(MISSING, ""), (OTHER, "[]"), (OTHER, "{}")],
]


def test_exact_rules_of_every_value_shape() -> None:
    for line, want in zip(SHAPES, EXPECTED, strict=True):
        assert lineage_piece.exact_values(line.encode(), FIELDS, None, "") == want, line


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
def test_compiled_field_scan_equals_the_exact_rules() -> None:
    buf = "\n".join(SHAPES).encode()
    stops = np.array([i for i, c in enumerate(buf) if c == 10] + [len(buf)], np.int64)
    starts, ends = lineage_piece.record_spans(buf, stops, np.arange(len(SHAPES)), -1)
    kind, a, b, status = jitfields.spans(buf, starts, ends, FIELDS, None, "", least=0)
    assert status.tolist().count(SURE) >= 6  # (the plain shapes are the kernel's)
    for i in np.flatnonzero(status == SURE).tolist():
        got = [(int(kind[i, f]), buf[a[i, f] : b[i, f]].decode()) for f in range(3)]
        assert got == EXPECTED[i], SHAPES[i]
    # and the whole extraction, kernel or exact per line, gives the rules' values
    lin = lineage_piece.extract(
        buf, len(SHAPES), lambda r: (starts[r], ends[r]), FIELDS, False, None, ""
    )
    for f in range(3):
        assert [v.decode() for v in unpack_texts(lin.cols.lens[f], lin.cols.data[f])] == [
            e[f][1] if e[f][0] in (STR, INT, OTHER) else "" for e in EXPECTED
        ]
        assert lin.cols.ints[f].tolist() == [e[f][0] == INT for e in EXPECTED]


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
def test_parse_scan_reads_the_fields_as_the_exact_path(tmp_path: Path) -> None:
    """Lines the compiled parse takes carry their fields from it; the same file parsed by
    the exact path alone gives the same values, groups and row errors."""
    rng = np.random.default_rng(5)
    lines = [_doc(i, rng)[0] for i in range(300)]
    lines[40] = '{"label": 1, "data": "%s"}' % ",".join(["1"] * L)  # no accession
    lines[41] = '{"label": 1, "accession": null, "data": "%s"}' % ",".join(["1"] * L)
    lines[42] = '{"label": 1, "accession": ["a"], "data": "%s"}' % ",".join(["1"] * L)
    lines[43] = '{"label":1,"accession":"","data":"%s"}' % ",".join(["1"] * L)
    lines[44] = '{"label":1,"accession":true,"data":"%s"}' % ",".join(["1"] * L)
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = ParseSpec(
        format="jsonl", files=[str(path)], names=["f.jsonl"], label_field="label",
        data_field="data", delimiter="", dtype="uint16", length=L, pad="post",
        truncate="pre", pad_value=0, sample_shape=None, class_names=None,
        fields=["accession", "_id", "name"], group=True,
    )  # fmt: skip
    out = []
    for fast in (True, False):
        parser = PieceParser(spec, fast=fast)
        res = [parser.parse(p) for p in plan_pieces([path], 8192)]
        cols = [[c.tolist() for c in r.lineage.arrays()] for r in res if r.lineage is not None]
        out.append(([r.kind.tolist() for r in res], [r.problems for r in res], cols))
    assert out[0] == out[1]
    problems = [p for ps in out[0][1] for p in ps]
    back = [p for r in res for p in PieceResult.from_bytes(r.to_bytes()).problems]
    assert back == problems and {p.option for p in back} == {"--group-field"}  # (the workers')
    assert "has no 'accession' field (see --group-field)" in problems
    for what in ("is null", "is a list", "is empty", "is true (true/false)"):
        assert f"field 'accession' {what}, not a group name (see --group-field)" in problems
    for r in res:  # the workers' ids are the store's
        assert r.lineage is not None and r.lineage.ids is not None
        ids = r.lineage.ids.tolist()
        assert ids == C.group_id(r.lineage.name_of(ids)).tolist() and ids


# -- CSV / TSV ---------------------------------------------------------------------------------
def test_csv_group_column_and_kept_cells(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    src = tmp_path / "t.csv"
    want = {}
    with open(src, "w", encoding="utf-8") as fh:
        fh.write("id,label,organism,kmers,note\n")
        for i in range(2500):
            v = rng.integers(0, 65536, 20).tolist()
            org = f"org {i // 100}, strain {i % 3}"  # a comma: a quoted cell
            note = 'say ""hi""' if i % 10 == 0 else ("ñ" if i % 10 == 1 else f"n{i}")
            fh.write(f'{i},{i % 3},"{org}","{",".join(map(str, v))}","{note}"\n')
            want[str(i)] = (f"org {i // 100}, strain {i % 3}", note.replace('""', '"'), v)
        fh.write('2500,1,,"%s",empty group\n' % ",".join(["7"] * 20))
    args = ["--format", "csv", "--label-field", "label", "--data-field", "kmers"]
    args += ["--group-field", "organism", "--keep-fields", "id,note"]
    r = _cli(src, tmp_path / "a.h5", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "t.csv:2502: field 'organism' is empty, not a group name (see --group-field)" in r.stderr
    assert "--on-error skip" in r.stderr and not (tmp_path / "a.h5").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # nothing half-written
    r = _cli(src, tmp_path / "a.h5", *args, "--on-error", "skip")
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "a.h5") as ds:
        assert ds.columns["id"] == "S4"  # CSV cells are text
        x, _ = ds.read_range(0, len(ds))
        ids = C.decode(C.read_column(ds, "id"))
        notes = C.decode(C.read_column(ds, "note"))
        orgs = C.name_groups(C.read_column(ds, "group"), C.group_names(ds))
        assert ds.provenance["skipped_rows"] == 1 and len(ds) == 2500
    for i, k in enumerate(ids):
        assert (orgs[i], notes[i], x[i].tolist()) == want[k]
    tsv = tmp_path / "h.tsv"  # no header: columns by number
    tsv.write_text("".join(f"{i % 2}\t{','.join(['3'] * 5)}\tg{i % 4}\n" for i in range(50)))
    r = _cli(tsv, tmp_path / "h.h5", "--format", "tsv", "--label-field", "0", "--data-field", "1",
             "--group-field", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "h.h5") as ds:
        assert C.group_summary(ds)["groups"] == 4
    r = _cli(src, tmp_path / "c.h5", *args[:6], "--group-field", "strain", "--events", "-")
    assert r.returncode == 2 and "t.csv:1: has no column 'strain'" in r.stderr
    assert "--group-field" in r.stderr
    failed = json.loads(r.stdout.splitlines()[-1])
    assert (failed["option"], failed["value"]) == ("--group-field", "strain")


# -- npz and a folder of .npy -------------------------------------------------------------------
def test_npz_groups_right_and_wrong_length(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.random((300, 5, 5)).astype(np.float32)
    y = rng.integers(0, 3, 300)
    patients = np.array([f"p{i // 20}" for i in range(300)])
    serial = np.arange(300, dtype=np.int64) * 3
    np.savez_compressed(tmp_path / "ok.npz", x=x, y=y, patient=patients, serial=serial)
    r = _cli(tmp_path / "ok.npz", tmp_path / "ok.h5", "--format", "npz",
             "--group-field", "patient", "--keep-fields", "serial")  # fmt: skip
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "ok.h5") as ds:
        assert ds.columns["serial"] == "int64"
        xs, _ = ds.read_range(0, len(ds))
        ser = C.read_column(ds, "serial")
        pat = C.name_groups(C.read_column(ds, "group"), C.group_names(ds))
    for i, s in enumerate(ser.tolist()):  # joined on the serial
        assert np.array_equal(xs[i], x[s // 3]) and pat[i] == patients[s // 3]
    np.savez(tmp_path / "bad.npz", x=x, y=y, groups=np.arange(299))
    r = _cli(
        tmp_path / "bad.npz", tmp_path / "bad.h5", "--format", "npz", "--group-field", "groups"
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    for part in ("bad.npz", "'groups'", "299 values", "'x' has 300 rows", "one value per sample"):
        assert part in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if "bad" in p.name) == ["bad.npz"]
    r = _cli(tmp_path / "ok.npz", tmp_path / "n.h5", "--format", "npz", "--group-field", "nope")
    assert r.returncode == 2 and "has no array 'nope'" in r.stderr and "--group-field" in r.stderr


def test_npy_folder_groups_by_file_or_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for cls in ("ring", "dot"):
        for k in range(3):
            (tmp_path / "in" / cls).mkdir(parents=True, exist_ok=True)
            np.save(tmp_path / "in" / cls / f"{k}.npy", rng.random((4, 6, 6)).astype(np.float32))
    r = _cli(tmp_path / "in", tmp_path / "f.h5", "--format", "npy-dir", "--per-file", "stack",
             "--group-field", "file", "--keep-fields", "folder")  # fmt: skip
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "f.h5") as ds:
        files = C.name_groups(C.read_column(ds, "group"), C.group_names(ds))
        folders = C.decode(C.read_column(ds, "folder"))
        _, y = ds.read_range(0, len(ds))
        assert C.group_summary(ds)["rows_per_group"] == {"min": 4, "median": 4.0, "max": 4}
        for i, f in enumerate(files):
            assert f.split("/")[0] == folders[i] == ds.class_names[y[i]]
    r = _cli(tmp_path / "in", tmp_path / "g.h5", "--format", "npy-dir", "--group-field", "folder")
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "g.h5") as ds:
        assert sorted(C.group_names(ds)[1]) == ["dot", "ring"]  # type: ignore[index]
    r = _cli(tmp_path / "in", tmp_path / "h.h5", "--format", "npy-dir", "--group-field", "name")
    assert r.returncode == 2 and "--group-field name" in r.stderr and "'file'" in r.stderr


# -- bad group values follow --on-error ---------------------------------------------------------
BAD = {  # 1-based line -> the group value written there, and the problem reported
    3: (None, "has no 'accession' field"),
    5: ("null", "field 'accession' is null, not a group name"),
    8: ('["a", "b"]', "field 'accession' is a list, not a group name"),
    9: ('{"id": 1}', "field 'accession' is an object, not a group name"),
    12: ('""', "field 'accession' is empty, not a group name"),
}


def test_bad_group_values_follow_on_error(tmp_path: Path) -> None:
    src = tmp_path / "b.jsonl"
    data = ",".join(["5"] * 10)
    lines = []
    for no in range(1, 41):
        value, _ = BAD.get(no, ('"G%d"' % (no % 4), ""))
        acc = "" if value is None else '"accession": %s, ' % value
        lines.append('{"_id": "r%d", %s"label": %d, "data": "%s"}' % (no, acc, no % 2, data))
    src.write_text("\n".join(lines) + "\n")
    args = ["--format", "jsonl", "--group-field", "accession", "--keep-fields", "_id"]
    r = _cli(src, tmp_path / "o.h5", *args, "--events", "-")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "b.jsonl:3: has no 'accession' field (see --group-field)" in r.stderr
    assert "--on-error skip" in r.stderr
    failed = json.loads(r.stdout.splitlines()[-1])  # the row's problem names its option
    assert (failed["event"], failed["option"], failed["value"]) == (
        "failed", "--group-field", "accession",
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.jsonl"]  # nothing half-written
    r = _cli(src, tmp_path / "o.h5", *args, "--on-error", "skip", "--events", "-")
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "o.h5") as ds:
        prov = ds.provenance
        ids = sorted(C.decode(C.read_column(ds, "_id")))
        assert C.group_summary(ds)["groups"] == 4
    assert prov["skipped_rows"] == len(BAD) and len(ids) == 40 - len(BAD)
    assert ids == sorted(f"r{no}" for no in range(1, 41) if no not in BAD)
    for no, (_, problem) in BAD.items():
        assert any(e.startswith(f"b.jsonl:{no}: {problem}") for e in prov["row_errors"]), no
    r = _cli(src, tmp_path / "p.h5", "--format", "jsonl", "--keep-fields", "group")
    assert r.returncode == 2 and "--keep-fields group" in r.stderr
    assert "--group-field group" in r.stderr


# -- workers and resume: the same dataset, columns included -------------------------------------
@pytest.fixture(scope="module")
def resumable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("res") / "k.jsonl"
    rng = np.random.default_rng(3)
    with open(path, "w") as f:
        for i in range(30_000):  # (enough checkpoints for the kills to land between)
            if i % 997 == 5:
                f.write('{"label": 2, "accession": "x", "data": "1,2,x"}\n')
                continue
            v = ",".join(map(str, rng.integers(0, 65536, L).tolist()))
            f.write(
                '{"_id":{"$oid":"%024x"},"accession":"GM_%04d","name":"n%d","label":%d,"data":"%s"}\n'
                % (i, i // 40, i, i % 5, v)
            )
    return path


@pytest.fixture(scope="module")
def uninterrupted(resumable: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("full") / "full.h5"
    r = _cli(resumable, out, *ARGS, *LINEAGE, "--workers", "1")
    assert r.returncode == 0, r.stderr
    return _state(out)


def test_workers_1_and_2_give_the_same_dataset_with_columns(
    resumable: Path, uninterrupted: dict[str, Any], tmp_path: Path
) -> None:
    r = _cli(resumable, tmp_path / "w2.h5", *ARGS, *LINEAGE, "--workers", "2")
    assert r.returncode == 0, r.stderr
    got = _state(tmp_path / "w2.h5")
    assert got == uninterrupted
    assert len(got["hashes"]) > 3 and len(got["names"][1]) == 750
    plain = _cli(resumable, tmp_path / "p.h5", *ARGS, "--workers", "2")
    assert plain.returncode == 0, plain.stderr
    assert _state(tmp_path / "p.h5")["hashes"] == got["hashes"]  # the same rows, same order


@pytest.mark.parametrize(("phase", "sealed"), [("pass1", 0), ("pass2", 3)], ids=["pass1", "pass2"])
def test_sigkill_then_resume_gives_the_same_columns(
    resumable: Path, uninterrupted: dict[str, Any], tmp_path: Path, phase: str, sealed: int
) -> None:
    out = tmp_path / "k.h5"
    _kill_at(resumable, out, phase, sealed, mid_shard=phase == "pass2", extra=LINEAGE)
    assert not out.exists()
    (stage,) = tmp_path.glob(".k.h5.import-*")
    if phase == "pass1":
        assert (stage / "groups.bin").exists()
    r = _cli(resumable, out, *ARGS, *LINEAGE, "--workers", "2", "--resume")
    assert r.returncode == 0, r.stderr
    assert _state(out) == uninterrupted
    assert not stage.exists()


def test_group_only_resumes_inside_pass_2(resumable: Path, tmp_path: Path) -> None:
    """An int64 group column alone: a pass 2 killed inside a shard continues its dataset
    (``DatasetWriter.reopen`` keeps the columns) to the same dataset."""
    group = ("--group-field", "accession")
    r = _cli(resumable, tmp_path / "full.h5", *ARGS, *group, "--workers", "1")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "k.h5"
    _kill_at(resumable, out, "pass2", 3, mid_shard=True, extra=group)
    (stage,) = tmp_path.glob(".k.h5.import-*")
    state = json.loads((stage / "checkpoint.json").read_text())
    filled = [k for k, n in enumerate(state["pass1"]["scatter"]["rows"]) if n]
    assert state["rows"] % 512 and len(filled) > 3
    r = _cli(resumable, out, *ARGS, *group, "--workers", "2", "--resume")
    assert r.returncode == 0, r.stderr
    assert _state(out) == _state(tmp_path / "full.h5")
