"""`guiapp import` at scale: the fast parser agrees with the exact one line by line (and its
block checks with a string-by-string parse), the integer shard statistics with the float
ones bit for bit, any worker count gives the same dataset, a killed import resumes to the
same shards, stale staging folders are cleaned up (live ones never), and NaN/Inf rows are
refused or counted."""

# JSON lines read best as %-templates.
# ruff: noqa: UP031

from __future__ import annotations

import json
import os
import platform
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from guiapp.core import jit as core_jit
from guiapp.core.errors import UserError
from guiapp.core.events import EventSink
from guiapp.core.importers import ImportConfig, jitparse, run_import
from guiapp.core.importers.fastparse import fast_values
from guiapp.core.importers.labels import normalize
from guiapp.core.importers.pieces import ParseSpec, PieceParser, plan_pieces
from guiapp.core.importers.shuffle import read_ahead
from guiapp.core.store import Dataset, jitsums, shard_stats, stats
from guiapp.core.store.shard_stats import ShardStats

L = 126
R = random.Random(7)


def _row(k: int = L, hi: int = 65535) -> list[int]:
    return [R.randint(0, hi) for _ in range(k)]


def _s(v: list[int]) -> str:
    return ",".join(map(str, v))


OID = '"_id":{"$oid":"5f1d7a3b9c8e4a0012345678"}'
V = _row()
# The parse study's cases: every shape the fast path must take or leave to the exact path.
CASES = [
    '{%s,"label":{"$numberInt":"3"},"data":"%s"}' % (OID, _s(V)),
    '{"label":3,"data":"%s"}' % _s(V),
    '{"label": 3, "accession": "GM_1", "data": "%s", "name": "Example_1"}' % _s(V),
    '{"label":"3","data":"%s"}' % _s(V),
    '{"label":"name_x","data":"%s"}' % _s(V),
    '{"label":" spaced ","data":"%s"}' % _s(V),
    '{"label":"ñame","data":"%s"}' % _s(V),
    '{"label":{"$numberLong":"7"},"data":[%s]}' % _s(V),
    '{"label":{"$numberDouble":"3.0"},"data":"%s"}' % _s(V),
    '{"label":{"$numberDouble":"3.5"},"data":"%s"}' % _s(V),
    '{"label":-1,"data":"%s"}' % _s(V),
    '{"label":true,"data":"%s"}' % _s(V),
    '{"label":null,"data":"%s"}' % _s(V),
    '{"data":"%s","label":5}' % _s(V),
    '{ "label" : 5 , "data" : "%s" }' % _s(V),
    '{"meta":{"label":4},"data":"%s"}' % _s(V),
    '{"label":1,"data":"%s","label":2}' % _s(V),
    '{"label":1,"data":"%s","data":"1,2"}' % _s(V),
    '{"label":1,"data":"%s","x":"9"}' % _s(V),
    '{"label":1,"data":"%s"}' % _s(V[:-1]),
    '{"label":1,"data":"%s"}' % _s([*V, 1]),
    '{"label":1,"data":"%s"}' % _s([*V[:-1], 65536]),
    '{"label":1,"data":"%s"}' % _s([*V[:-1], 10**30]),
    '{"label":1,"data":"%s,0000012"}' % _s(V[:-1]),
    '{"label":1,"data":"%s"}' % _s(V).replace(",", ", ", 3),
    '{"label":1,"data":"%s,"}' % _s(V),
    '{"label":1,"data":"%s"}' % _s(V).replace(",", ",,", 1),
    '{"label":1,"data":"%s,x"}' % _s(V[:-1]),
    '{"label":1,"data":"%s,1_0"}' % _s(V[:-1]),
    '{"label":1,"data":"%s,+5"}' % _s(V[:-1]),
    '{"label":1,"data":[%s,07]}' % _s(V[:-1]),
    '{"label":1,"data":[%s,3.5]}' % _s(V[:-1]),
    '{"label":1,"data":null}',
    '{"label":1,"data":""}',
    '{"label":1,"data":5}',
    '{"label":1}',
    "[1,2,3]",
    '{"label":1,"data":"1,2',
    "",
    "   ",
    '{"label":1,"data":"%s"}\r' % _s(V),
    '{"label":01,"data":"%s"}' % _s(V),
    '{"label":1,"data":"%s"} x' % _s(V),
    '{"label":1,"data":"%s"}}' % _s(V),
    '{"label":1,"data":"%s\\u0031"}' % _s([*V[:-1], 2]),
]


def _parse_all(path: Path, fmt: str, fast: bool, **kw: object) -> list[object]:
    jit = kw.pop("jit", None)
    spec = ParseSpec(
        format=fmt, files=[str(path)], names=[path.name], label_field="label",
        data_field="data", delimiter=kw.pop("delimiter", ""), dtype="uint16",  # type: ignore[arg-type]
        length=kw.pop("length", L), pad="post", truncate="pre", pad_value=0,  # type: ignore[arg-type]
        sample_shape=None, class_names=None, csv_layouts=kw.pop("layouts", {}),  # type: ignore[arg-type]
    )  # fmt: skip
    parser = PieceParser(spec, fast=fast, jit=jit)  # type: ignore[arg-type]
    out: list[object] = []
    for piece in plan_pieces([path], 4096):
        r = parser.parse(piece)
        # the fast path hands on typed numbers ({"$numberInt": "3"}) as the int they stand
        # for; the label map takes both to the same class
        labels = [_same_class(v) for v in r.labels]
        out.append((r.line.tolist(), r.kind.tolist(), labels, r.problems, r.x.tolist(), r.fatal))
    return out


def _same_class(v: object) -> object:
    if isinstance(v, dict):
        try:
            return normalize(v)
        except ValueError:
            return v
    return v


def _mutate(line: str) -> str:
    b = list(line)
    for _ in range(R.randint(1, 3)):
        i = R.randrange(len(b) + 1)
        ch = R.choice('0123456789,"{}[]: -.eE\\x\t$nul')
        op = R.random()
        if op < 0.4 and i < len(b):
            b[i] = ch
        elif op < 0.7:
            b.insert(i, ch)
        elif i < len(b):
            del b[i]
    return "".join(b).replace("\n", "")


def test_fast_path_equals_the_exact_path_line_by_line(tmp_path: Path) -> None:
    lines = CASES * 3 + [_mutate(R.choice(CASES[:9])) for _ in range(600)]
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8"))
    assert _parse_all(path, "jsonl", True) == _parse_all(path, "jsonl", False)
    # and the fast path took the common shapes
    good = _parse_all(path, "jsonl", True)
    assert sum(k == 0 for part in good for k in part[1]) > 50  # type: ignore[index]


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
def test_compiled_scan_equals_the_numpy_path_and_takes_the_common_shapes(tmp_path: Path) -> None:
    lines = CASES * 3 + [_mutate(R.choice(CASES[:9])) for _ in range(600)]
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8"))
    assert _parse_all(path, "jsonl", True, jit=True) == _parse_all(path, "jsonl", True, jit=False)
    rows = ['%d,"%s"' % (i % 3, _s(_row())) for i in range(50)]
    rows += ['1,"%s"' % _s(V[:-1]), '2,"1,,2"', "3,1,2,3", "", " , ", '"4","%s"' % _s(V)]
    rows += ['03,"%s"' % _s(V), '5,"%s"\r' % _s(V), '6,"%s",' % _s(V)]
    rows += [_mutate(R.choice(rows[:5])) for _ in range(200)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    kw = {"delimiter": ",", "layouts": {"0": [0, 1, None, 0]}}
    assert _parse_all(path, "csv", True, jit=True, **dict(kw)) == _parse_all(
        path, "csv", True, jit=False, **dict(kw)
    )
    # the scan itself takes the mongoexport and the CSV shapes, and leaves the others
    good = '{%s,"label":{"$numberInt":"3"},"data":"%s"}' % (OID, _s(V))
    buf = "\n".join([good, '{"label": 3, "data": "%s"}' % _s(V), CASES[14], ""]).encode()
    sc = jitparse.scan(buf, jitparse.JSONL, L, np.dtype(np.uint16), "label", "data")
    assert sc.status.tolist() == [jitparse.OK, jitparse.OK, jitparse.OTHER]
    assert sc.labels.tolist() == [3, 3] and sc.x.tolist() == [V, V]
    buf = ('7,"%s"\n07,"%s"\n' % (_s(V), _s(V))).encode()
    sc = jitparse.scan(buf, jitparse.CSV, L, np.dtype(np.uint16), delimiter=",")
    assert sc.status.tolist() == [jitparse.OK, jitparse.OTHER] and sc.labels.tolist() == [7]


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
def test_compiled_tokens_of_every_length_and_neighbour_equal_the_numpy_path(
    tmp_path: Path,
) -> None:
    """Tokens of 0-20 digits (leading zeros, values at and past the dtype's maximum),
    followed by each byte around the digits' range, by non-ASCII and by an escape, first,
    inside and last in the row: the compiled scan gives what the numpy path gives."""
    tokens = ["0", "00", "007", "65535", "065535", "65536", "99999", "1234567", "12345678"]
    tokens += ["123456789", "1" * 18, "0" * 17 + "1", "1" * 19, "9" * 20, ""]
    after = [",", ",,", '"', "/", ":", "x", " ", "\u00e9", "\ufffd", "\\u00e9", '"x']
    lines = []
    for t in tokens:
        for a in after:
            for k in (0, 1, 3, 7, L - 1):  # where in the row the token stands
                row = [str(v) for v in _row(L)]
                row[k] = t
                lines.append('{"label":2,"data":"%s"}' % ",".join(row))
                row[k] = t + a
                lines.append('{"label":2,"data":"%s"}' % ",".join(row))
                lines.append('3,"%s"' % ",".join(row))
        lines.append('{"label":2,"data":"%s,%s"}' % (_s(V[:-1]), t))  # the last token
        lines.append('%d,"%s,%s"' % (1, _s(V[:-1]), t))
    path = tmp_path / "tokens.jsonl"
    path.write_text("\n".join(x for x in lines if x.startswith("{")) + "\n", encoding="utf-8")
    fast = _parse_all(path, "jsonl", True, jit=True)
    assert fast == _parse_all(path, "jsonl", True, jit=False)
    assert sum(k == 0 for part in fast for k in part[1]) > 300  # type: ignore[index]
    path = tmp_path / "tokens.csv"
    path.write_text("\n".join(x for x in lines if not x.startswith("{")) + "\n", "utf-8")
    kw = {"delimiter": ",", "layouts": {"0": [0, 1, None, 0]}}
    assert _parse_all(path, "csv", True, jit=True, **dict(kw)) == _parse_all(
        path, "csv", True, jit=False, **dict(kw)
    )


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
def test_compiled_records_before_every_line_end_equal_the_numpy_path(tmp_path: Path) -> None:
    """The scan reads a record to its closing brace (or quote) before it looks for the
    line's end: followed by a newline, "\r\n", "\r" at the end of the input, the end
    itself or anything else, each line gives what the numpy path gives."""
    tails = ["", "\r", " ", "\r\r", "\rx", "}", ",", "x", '"', "\t", "\x00", "\u00e9", '"}']
    csv_kw = {"delimiter": ",", "layouts": {"0": [0, 1, None, 0]}}
    for good, fmt, kw in (
        ('{"label":2,"data":"%s"}' % _s(V), "jsonl", {}),
        ('3,"%s"' % _s(V), "csv", csv_kw),
    ):
        for last in tails:  # after the input's last record, no newline
            path = tmp_path / f"ends.{fmt}"
            path.write_bytes(("\n".join(good + t for t in tails) + "\n" + good + last).encode())
            fast = _parse_all(path, fmt, True, jit=True, **dict(kw))
            assert fast == _parse_all(path, fmt, True, jit=False, **dict(kw)), (fmt, last)
    good = '{"label":2,"data":"%s"}' % _s(V)
    buf = (good + "\r\n" + good + "\rx\n\n" + good + "}\n" + good + "\r").encode()
    sc = jitparse.scan(buf, jitparse.JSONL, L, np.dtype(np.uint16), "label", "data")
    ok, other, blank = jitparse.OK, jitparse.OTHER, jitparse.BLANK
    assert sc.status.tolist() == [ok, other, blank, other, ok]
    assert sc.stops.tolist()[:3] == [len(good) + 1, 2 * len(good) + 4, 2 * len(good) + 5]
    assert sc.labels.tolist() == [2, 2] and sc.x.tolist() == [V, V]


def _write_csv(path: Path, n: int) -> None:
    rng = np.random.default_rng(4)
    with open(path, "w") as f:
        f.write("label,data\n")
        for i in range(n):
            if i % 331 == 7:
                f.write('%d,"1,2,x"\n' % (i % 4))
                continue
            f.write('%d,"%s"\n' % (i % 4, ",".join(map(str, rng.integers(0, 65536, L).tolist()))))


@pytest.mark.skipif(not core_jit.available(), reason="numba is not installed")
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_without_numba_the_same_dataset_and_the_same_error_report(
    fmt: str, jsonl: Path, tmp_path: Path
) -> None:
    """The numpy path (GUIAPP_NO_NUMBA=1) and the compiled scan: the same shards, statistics
    and row errors, over many pieces (a CSV header only in the first: every row counted)."""
    src = jsonl
    if fmt == "csv":
        src = tmp_path / "k.csv"
        _write_csv(src, 3000)
    extra = ["--format", fmt, "--workers", "2", "--piece-mb", "0.2"]
    outs = {}
    for env in ("0", "1"):
        out = tmp_path / f"n{env}.h5"
        r = subprocess.run(
            [sys.executable, "-m", "guiapp", "import", str(src), str(out), *ARGS, *extra],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "GUIAPP_NO_NUMBA": env},
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs[env] = out
    with Dataset(outs["0"]) as a, Dataset(outs["1"]) as b:
        assert [s.content_hash for s in a.shards] == [s.content_hash for s in b.shards]
        assert a.statistics == b.statistics and a.class_names == b.class_names
        assert a.provenance["row_errors"] == b.provenance["row_errors"] != []
        if fmt == "csv":
            bad = len(range(7, 3000, 331))
            assert len(a) == 3000 - bad and a.provenance["rows_read"] == 3000


def test_fast_csv_equals_the_exact_path(tmp_path: Path) -> None:
    rows = ['%d,"%s"' % (i % 3, _s(_row())) for i in range(50)]
    rows += ['1,"%s"' % _s(V[:-1]), '2,"1,,2"', "3,1,2,3", "", " , ", '"4","%s"' % _s(V)]
    rows += [_mutate(R.choice(rows[:5])) for _ in range(200)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    kw = {"delimiter": ",", "layouts": {"0": [0, 1, None, 0]}}
    assert _parse_all(path, "csv", True, **dict(kw)) == _parse_all(path, "csv", False, **dict(kw))


def _block_reference(datas: list[bytes], length: int) -> list[list[int] | None]:
    """Per string: its values if it is exactly ``length`` uint16 integers, else None."""
    out: list[list[int] | None] = []
    for d in datas:
        toks = d.split(b",")
        good = len(toks) == length and all(t.isascii() and t.isdigit() for t in toks)
        vals = [int(t) for t in toks] if good else []
        out.append(vals if good and max(vals) < 65536 else None)
    return out


def test_block_values_equal_a_string_by_string_reference() -> None:
    """The block checks (one comma scan of the joined strings) pick exactly the strings a
    string-by-string parse accepts: wrong counts, stray, doubled, leading or trailing
    commas, signs, spaces, empty strings and values out of range go to the exact path."""
    rng = random.Random(3)
    odd = [
        lambda d: "," + d, lambda d: d + ",", lambda d: d.replace(",", ",,", 1),
        lambda d: d.replace("1", " 1", 1), lambda d: "", lambda d: d.replace("2", "-2", 1),
    ]  # fmt: skip
    for _ in range(600):
        length = rng.choice([1, 2, 3, 5])
        datas = []
        for _ in range(rng.randint(1, 6)):
            k = length + rng.choice([0, 0, 0, 0, -1, 1])
            d = _s([rng.randint(0, 70000 if rng.random() < 0.1 else 65535) for _ in range(k)])
            if rng.random() < 0.25:
                d = rng.choice(odd)(d)
            datas.append(d.encode())
        vals, ok = fast_values(datas, length, np.dtype(np.uint16))
        want = _block_reference(datas, length)
        assert ok.tolist() == [w is not None for w in want], datas
        assert vals.tolist() == [w for w in want if w is not None], datas


@pytest.mark.parametrize("compiled", [False, True])
def test_shard_statistics_of_small_integers_equal_the_float_path(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8/16-bit integers are summed in integer arithmetic (numpy, or the compiled pass of
    ``jitsums.shard_sums``): the stored sums must be the float64 path's bit for bit
    (65,536-value chunks, accumulated in order)."""
    if compiled and not jitsums.available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(shard_stats, "small_int_kernel", jitsums.shard_sums if compiled else None)
    rng = np.random.default_rng(5)
    for dt in (np.uint8, np.int8, np.uint16, np.int16):
        info = np.iinfo(dt)
        st, ref_sum, ref_sq = ShardStats.empty(2), 0.0, 0.0
        for n in (1, 65_535, 65_536, 65_537, 300_001):
            x = rng.integers(info.min, int(info.max) + 1, size=n).astype(dt)
            st.update(x, np.zeros(1, np.int64))
            ref_sum += float(x.sum(dtype=np.float64))
            for a in range(0, n, 1 << 16):
                part = x[a : a + (1 << 16)].astype(np.float64)
                ref_sq += float(np.dot(part, part))
            assert (st.value_sum, st.value_sumsq) == (ref_sum, ref_sq), dt
        assert (st.value_min, st.value_max) == (float(info.min), float(info.max))


def _gen_stats_reference(chunks: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """``GenStats.update``'s numpy formula before the compiled sums: per chunk a float64
    sum, an einsum of float64 squares and the histogram's bin arithmetic."""
    dt = chunks[0].dtype
    lo, hi = stats.hist_range(dt)
    pos_sum = np.zeros(chunks[0].shape[1], np.float64)
    pos_sumsq = np.zeros_like(pos_sum)
    hist = np.zeros(stats.HIST_BINS + 2, np.int64)
    for x in chunks:
        pos_sum += x.sum(axis=0, dtype=np.float64)
        work = x.astype(np.float64)
        pos_sumsq += np.einsum("ij,ij->j", work, work)
        v = x.reshape(-1)
        idx = (v.astype(np.int64) - int(lo)) * stats.HIST_BINS // int(hi - lo) + 1
        hist += np.bincount(idx, minlength=stats.HIST_BINS + 2)[: stats.HIST_BINS + 2]
    return pos_sum, pos_sumsq, hist


def test_compiled_position_statistics_equal_the_float_formula() -> None:
    """Pass 1's per-position sums by the compiled integer kernel: the same float64 bits
    as the float formula, chunk by chunk, for every 8/16-bit dtype (extremes included)."""
    if not jitsums.available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(11)
    for dt in (np.uint8, np.int8, np.uint16, np.int16):
        info = np.iinfo(dt)
        chunks = [
            rng.integers(info.min, int(info.max) + 1, size=(n, 126)).astype(dt)
            for n in (1, 4096, 4095, 3000, 4096)
        ]
        chunks.append(np.full((4096, 126), info.max, dt))
        chunks.append(np.full((7, 126), info.min, dt))
        got = jitsums.gen_stats((126,), dt)
        assert got.int_sums is not None
        for x in chunks:
            got.update(x)
        ref = _gen_stats_reference(chunks)
        for a, b in zip((got.pos_sum, got.pos_sumsq, got.hist), ref, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), dt
        assert got.rows == sum(len(x) for x in chunks)
        wide = jitsums.gen_stats((2000,), dt)  # over MAX_POSITIONS: the histogram only
        x = rng.integers(info.min, int(info.max) + 1, size=(50, 2000)).astype(dt)
        wide.update(x)
        assert wide.pos_sum.size == 0
        assert wide.hist.tolist() == _gen_stats_reference([x])[2].tolist()


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="the allocator settings are glibc's",
)
def test_the_import_process_keeps_freed_memory_where_glibc_takes_the_settings() -> None:
    """glibc accepts both settings (a threshold above its ceiling would be refused), and
    ``GUIAPP_KEEP_FREED=0`` leaves its defaults; each in a process of its own."""
    code = "from guiapp.core.malloc import keep_freed_memory as k; print(k())"
    for env, want in (({}, "True"), ({"GUIAPP_KEEP_FREED": "0"}, "False")):
        r = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True, text=True, env={**os.environ, **env}, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0 and r.stdout.strip() == want, r.stderr


def test_the_import_process_asks_numpy_for_small_pages() -> None:
    """``small_pages`` turns numpy's huge-page advice off (the setter returns the setting it
    replaces), ``GUIAPP_HUGEPAGES=1`` leaves it; each in a process of its own."""
    code = (
        "import numpy as np; from guiapp.core.malloc import small_pages as s; r = s(); "
        "print(r, np._core.multiarray._set_madvise_hugepage(True))"
    )
    for env, want in (({}, "True False"), ({"GUIAPP_HUGEPAGES": "1"}, "False ")):
        r = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True, text=True, env={**os.environ, **env}, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0 and r.stdout.strip().startswith(want.strip()), r.stderr
        if not env:
            assert r.stdout.split() == want.split()


def test_read_ahead_keeps_order_and_raises_in_place() -> None:
    items = [(np.arange(i, i + 3), np.arange(i)) for i in range(6)]
    got = list(read_ahead(iter(items)))
    assert [(a.tolist(), b.tolist()) for a, b in got] == [
        (a.tolist(), b.tolist()) for a, b in items
    ]

    def failing() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        yield items[0]
        raise ValueError("bucket 1")

    it = read_ahead(failing())
    assert next(it)[0].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="bucket 1"):
        next(it)
    it = read_ahead(iter(items))  # closed early: the thread stops
    next(it)
    it.close()


# -- one dataset whatever the worker count; resume after SIGKILL -------------------------
def _write_jsonl(path: Path, n: int) -> None:
    rng = np.random.default_rng(3)
    with open(path, "w") as f:
        for i in range(n):
            if i % 997 == 5:
                f.write('{"label": 2, "data": "1,2,x"}\n')
                continue
            v = ",".join(map(str, rng.integers(0, 65536, L).tolist()))
            f.write(
                '{"_id":{"$oid":"%024x"},"label":{"$numberInt":"%d"},"data":"%s"}\n' % (i, i % 5, v)
            )


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("in") / "k.jsonl"
    _write_jsonl(p, 30_000)  # (enough checkpoints for the kills below to land between)
    return p


SHARD_ROWS = 512
ARGS = ["--format", "jsonl", "--on-error", "skip", "--memory-mb", "1"]
ARGS += ["--shard-rows", str(SHARD_ROWS)]
ARGS += ["--piece-mb", "0.5", "--events", "-"]


def _hashes(path: Path) -> tuple[list[str], list[str]]:
    with Dataset(path) as ds:
        return [s.content_hash for s in ds.shards], ds.class_names


def _cli(src: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "guiapp", "import", str(src), str(out), *ARGS, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def uninterrupted(jsonl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("full") / "full.h5"
    r = _cli(jsonl, out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    return out


def test_two_workers_give_the_same_dataset(
    jsonl: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    r = _cli(jsonl, tmp_path / "w2.h5", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert _hashes(tmp_path / "w2.h5") == _hashes(uninterrupted)
    with Dataset(tmp_path / "w2.h5") as a, Dataset(uninterrupted) as b:
        assert a.statistics == b.statistics
        assert a.provenance["row_errors"] == b.provenance["row_errors"] != []


def _kill_at(
    src: Path,
    out: Path,
    phase: str,
    sealed: int,
    mid_shard: bool = False,
    extra: tuple[str, ...] = (),
) -> None:
    """Start an import and SIGKILL it once its checkpoint reaches ``phase`` (and ``sealed``;
    ``mid_shard``: and its rows end inside a shard). ``extra``: more options."""
    cmd = [sys.executable, "-m", "guiapp", "import", str(src), str(out), *ARGS, "--workers", "2"]
    cmd += extra
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and p.poll() is None:
            for cp in out.parent.glob(f".{out.name}.import-*/checkpoint.json"):
                try:
                    state = json.loads(cp.read_text())
                except (OSError, ValueError):
                    continue
                inside = state.get("rows", 0) % SHARD_ROWS != 0
                if (
                    state["phase"] == phase
                    and state.get("sealed", 0) >= sealed
                    and (inside or not mid_shard)
                ):
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()
                    return
            time.sleep(0.01)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    pytest.fail(f"the import never reached {phase}")


@pytest.mark.parametrize(("phase", "sealed"), [("pass1", 0), ("pass2", 3)], ids=["pass1", "pass2"])
def test_sigkill_then_resume_equals_uninterrupted(
    jsonl: Path, uninterrupted: Path, tmp_path: Path, phase: str, sealed: int
) -> None:
    out = tmp_path / "k.h5"
    _kill_at(jsonl, out, phase, sealed)
    assert not out.exists()
    (stage,) = tmp_path.glob(".k.h5.import-*")
    r = _cli(jsonl, out, "--workers", "2", "--resume")
    assert r.returncode == 0, r.stderr
    assert _hashes(out) == _hashes(uninterrupted)
    assert not stage.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["k.h5", "k.shards"]


def test_pass2_deletes_buckets_as_their_rows_commit_and_resumes_inside_a_shard(
    jsonl: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    out = tmp_path / "k.h5"
    _kill_at(jsonl, out, "pass2", 6, mid_shard=True)
    (stage,) = tmp_path.glob(".k.h5.import-*")
    state = json.loads((stage / "checkpoint.json").read_text())
    rows = state["rows"]
    assert rows % SHARD_ROWS and state["shard_stats"]["class_counts"]
    counts = state["pass1"]["scatter"]["rows"]
    ends = np.cumsum(counts)
    gone = [k for k in range(len(counts)) if counts[k] and ends[k] <= rows]
    left = [k for k in range(len(counts)) if counts[k] and ends[k] > rows]
    assert len(gone) >= 3 and left
    # Deleted once a checkpoint counts their rows (the kill may land before the last one
    # or two are): the files of rows not yet committed are all there.
    deleted = [k for k in gone if not (stage / "buckets" / f"{k:05d}.x").exists()]
    assert len(deleted) >= len(gone) - 2
    assert all((stage / "buckets" / f"{k:05d}.x").exists() for k in left)
    r = _cli(jsonl, out, "--workers", "2", "--resume")
    assert r.returncode == 0, r.stderr
    assert _hashes(out) == _hashes(uninterrupted)
    with Dataset(out) as a, Dataset(uninterrupted) as b:
        assert [s.stats.to_json() for s in a.shards] == [s.stats.to_json() for s in b.shards]


def test_resume_refuses_buckets_shorter_than_the_checkpoint(jsonl: Path, tmp_path: Path) -> None:
    """The checkpoint is not fsynced (nor are the buckets): after a power cut a bucket may
    hold less than it counts, and the resume says so instead of padding it."""
    out = tmp_path / "k.h5"
    _kill_at(jsonl, out, "pass1", 0)
    (stage,) = tmp_path.glob(".k.h5.import-*")
    state = json.loads((stage / "checkpoint.json").read_text())
    k = next(i for i, r in enumerate(state["pass1"]["scatter"]["rows"]) if r > 0)
    bucket = stage / "buckets" / f"{k:05d}.x"
    with open(bucket, "r+b") as fh:
        fh.truncate(state["pass1"]["scatter"]["rows"][k] * L * 2 - 1)
    r = _cli(jsonl, out, "--workers", "2", "--resume")
    assert r.returncode == 2, r.stderr
    assert f"{k:05d}.x: the stopped import's bucket holds" in r.stderr
    assert "without --resume" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_stale_staging_removed_live_one_kept(jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.h5"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".o.h5.import-{dead.pid}"
    (stale / "buckets").mkdir(parents=True)
    (stale / "buckets" / "00000.x").write_bytes(b"\0" * 100_000)
    live = tmp_path / f".o.h5.import-{os.getpid()}0"  # a folder whose lock a live job holds
    live.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,os,sys,time; fd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT);"
         "fcntl.flock(fd,fcntl.LOCK_EX); print('held',flush=True); time.sleep(60)", str(live / "lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        r = _cli(jsonl, out)
        assert r.returncode == 2 and "another import into it is running" in r.stderr
        assert live.exists()
    finally:
        holder.kill()
        holder.wait()
    os.rename(live, tmp_path / "elsewhere")  # the live job is gone now
    r = _cli(jsonl, out)
    assert r.returncode == 0, r.stderr
    assert "left by a stopped import" in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "o.h5", "o.shards"]


# -- NaN / Inf ------------------------------------------------------------------------
def test_nonfinite_rows_refused_with_where_and_count_or_skipped(tmp_path: Path) -> None:
    src = tmp_path / "f.jsonl"
    lines = ['{"label": %d, "data": [1.5, 2.0, 3.0]}' % (i % 2) for i in range(40)]
    lines[7] = '{"label": 1, "data": [NaN, 2.0, 3.0]}'
    lines[20] = '{"label": 0, "data": [Infinity, -Infinity, 3.0]}'
    src.write_text("\n".join(lines) + "\n")
    cfg = {"src": src, "format": "jsonl", "dtype": "float32"}
    with pytest.raises(UserError) as e:
        run_import(ImportConfig(out=tmp_path / "a.h5", **cfg), EventSink())  # type: ignore[arg-type]
    msg = str(e.value)
    assert "f.jsonl:8" in msg and "f.jsonl:21" in msg and "3 NaN/Inf value(s) in 2 row(s)" in msg
    assert "--on-nonfinite skip" in msg and not (tmp_path / "a.h5").exists()
    s = run_import(ImportConfig(out=tmp_path / "b.h5", on_nonfinite="skip", **cfg), EventSink())  # type: ignore[arg-type]
    assert s["rows"] == 38
    with Dataset(tmp_path / "b.h5") as ds:
        assert ds.provenance["nonfinite_rows"] == 2 and ds.info()["values"]["nonfinite"] == 0


def test_bench_import_prints_the_issue_s_figures(tmp_path: Path) -> None:
    """``guiapp bench import --json`` on a few generated lines: one object with the rates,
    the ratios made from them, and the datasets of 1 and 2 workers identical."""
    cmd = [sys.executable, "-m", "guiapp", "bench", "import", "--rows", "3000", "--workers", "2"]
    cmd += ["--repeat", "1", "--dir", str(tmp_path), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    for fig in (res, res["csv"]):
        rps, ratios = fig["rows_per_s"], fig["ratios"]
        assert fig["rows"] == 3000 and fig["identical_for_1_and_all_workers"] is True
        assert min(rps[k] for k in ("naive", "one_worker", "all_workers")) > 0
        assert ratios["all_vs_naive"] == pytest.approx(rps["all_workers"] / rps["naive"], abs=0.006)
        assert ratios["all_vs_one"] == pytest.approx(
            rps["all_workers"] / rps["one_worker"], abs=0.006
        )
    g = res["groups"]  # the import with --group-field/--keep-fields against the same without
    assert g["rows"] == 3000 and g["groups"] == 60 and g["same_rows_as_plain"] is True
    assert g["kept_fields"] == ["_id", "name"]
    for k in ("group", "group_kept"):
        assert g["ratios"][f"{k}_vs_plain"] == pytest.approx(
            g["rows_per_s"][k] / g["rows_per_s"]["plain"], abs=0.006
        )
    assert list(tmp_path.iterdir()) == []  # the bench's files are gone
