"""`guiapp bench import`: import speed of mongoexport JSON lines and CSV against a naive parser.

Measures, in one run on this machine, for ``--rows`` generated lines of 126 uint16 k-mer
values (the genomics user's documents, ``{"_id":{"$oid":...},"label":{"$numberInt":"3"},
"kmers":"12,65520,..."}``, and the same rows as ``label,"v1,...,v126"`` CSV):

- ``naive``: ``json.loads`` + ``str.split`` + ``int`` per token into numpy, one process
  (parse only: it writes nothing, so every ratio against it flatters it). It and the
  reference below are timed before the imports and again after them, and the mean of the
  two is used: the machine's speed drifts within a run (one run on 2026-12-04 ran its
  imports about 1.5x slower than the two before it, after its naive parse had run at
  full speed);
- ``reference``: the parse of the importer issue #14 measured (``guiapp`` before the fast
  path): a ``JSONDecoder`` (CSV: ``csv.reader``) per line, then each 4096-line chunk's data
  strings joined and parsed by one ``np.fromstring``; parse only, no checks, one process.
  It is 3-4x the naive parse: the honest "today's single-process rows/s" of the issue;
- ``one_worker`` and ``all_workers``: the whole ``guiapp import`` (parse, checks, the
  two-pass shuffle, the shards written), end to end; the median of ``--repeat`` runs of
  each, interleaved (this machine's speed moves by up to 2x within an hour);
- that the datasets of 1 and of all workers are identical (shard content hashes);
- peak RSS of the whole process tree for each import;
- ``groups``: the import with ``--group-field accession`` and with ``--group-field
  accession --keep-fields _id,name`` against the same import without them (all workers,
  the same file: the documents above with an ``accession`` shared by 50 consecutive lines
  and a ``name``), the median of ``--repeat`` interleaved runs of each;
  ``ratios.group_vs_plain`` is the rows/s with the group over the rows/s without
  (``--no-groups`` leaves it out).

Before each timed step the page cache is written back (``settle``, outside the clock), so
that no step pays for the writes of the one before.

Figures go in docs/BENCHMARKS.md with the command that made them.
"""

# ruff: noqa: UP031

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .command import json_option, print_result
from .write import PeakRSS

L = 126


def write_inputs(folder: Path, rows: int, seed: int = 12345) -> tuple[Path, Path]:
    """``rows`` mongoexport-style JSON lines and the same rows as CSV."""
    rng = np.random.default_rng(seed)
    jp, cp = folder / "kmers.jsonl", folder / "kmers.csv"
    with open(jp, "w") as fj, open(cp, "w") as fc:
        fc.write("label,kmers\n")
        for b0 in range(0, rows, 10_000):
            m = min(10_000, rows - b0)
            x = rng.integers(0, 65536, size=(m, L))
            small = rng.random((m, L)) < 0.3  # a realistic share of small counts
            x[small] = rng.integers(0, 100, size=int(small.sum()))
            labels = rng.integers(0, 10, size=m).tolist()
            oids = rng.integers(0, 2**62, size=m).tolist()
            js, cs = [], []
            for i, row in enumerate(x.tolist()):
                s = ",".join(map(str, row))
                js.append(
                    '{"_id":{"$oid":"%024x"},"label":{"$numberInt":"%d"},"kmers":"%s"}\n'
                    % (oids[i], labels[i], s)
                )
                cs.append('%d,"%s"\n' % (labels[i], s))
            fj.write("".join(js))
            fc.write("".join(cs))
    return jp, cp


GROUP_ROWS = 50  # consecutive lines sharing an accession in the lineage bench's file


def write_group_input(folder: Path, rows: int, seed: int = 12345) -> Path:
    """``rows`` mongoexport-style JSON lines with an ``accession`` and a ``name``."""
    rng = np.random.default_rng(seed)
    path = folder / "kmers_groups.jsonl"
    with open(path, "w") as fj:
        for b0 in range(0, rows, 10_000):
            m = min(10_000, rows - b0)
            x = rng.integers(0, 65536, size=(m, L))
            labels = rng.integers(0, 10, size=m).tolist()
            oids = rng.integers(0, 2**62, size=m).tolist()
            js = []
            for i, row in enumerate(x.tolist()):
                n = b0 + i
                js.append(
                    '{"_id":{"$oid":"%024x"},"accession":"GM_%07d","name":"Example_%d",'
                    '"label":{"$numberInt":"%d"},"kmers":"%s"}\n'
                    % (oids[i], n // GROUP_ROWS, n, labels[i], ",".join(map(str, row)))
                )
            fj.write("".join(js))
    return path


def _naive_blocks(rows: Iterable[list[int]]) -> int:
    """The naive parse's second half: rows of ints into 4096-row uint16 blocks; the count."""
    blocks: list[np.ndarray] = []
    block: list[list[int]] = []
    n = 0
    for row in rows:
        block.append(row)
        if len(block) == 4096:
            blocks.append(np.array(block, dtype=np.uint16))
            n += len(block)
            block = []
    if block:
        blocks.append(np.array(block, dtype=np.uint16))
        n += len(block)
    return n


def naive_jsonl(path: Path) -> tuple[int, float]:
    """The reference: json.loads + str.split + int per token into numpy (rows, CPU-free s)."""
    t = time.perf_counter()
    with open(path, "rb") as f:
        n = _naive_blocks([int(v) for v in json.loads(line)["kmers"].split(",")] for line in f)
    return n, time.perf_counter() - t


def naive_csv(path: Path) -> tuple[int, float]:
    import csv

    t = time.perf_counter()
    with open(path, newline="") as f:
        r = csv.reader(f)
        next(r)
        n = _naive_blocks([int(v) for v in row[1].split(",")] for row in r)
    return n, time.perf_counter() - t


def _reference(chunks: Any, fields: Any) -> tuple[int, float]:
    """Each chunk of lines -> (labels, data strings) by ``fields``; the data strings joined
    and parsed by one ``np.fromstring`` (rows, seconds)."""
    t = time.perf_counter()
    blocks, n = [], 0
    for lines in chunks:
        _labels, texts = fields(lines)
        flat = np.fromstring(",".join(texts), dtype=np.int64, sep=",")
        blocks.append(flat.reshape(len(texts), -1).astype(np.uint16))
        n += len(texts)
    return n, time.perf_counter() - t


def _chunks(lines: Any, size: int = 4096) -> Any:
    return iter(lambda: list(itertools.islice(lines, size)), [])


def reference_jsonl(path: Path) -> tuple[int, float]:
    """The importer of issue #14: a JSONDecoder per line, one fromstring per chunk."""
    decode = json.JSONDecoder().decode

    def fields(lines: list[bytes]) -> tuple[list[Any], list[str]]:
        labels, texts = [], []
        for line in lines:  # (a list of the decoded objects would keep the GC busy)
            obj = decode(line.decode("utf-8"))
            labels.append(obj["label"])
            texts.append(obj["kmers"])
        return labels, texts

    with open(path, "rb") as f:
        return _reference(_chunks(f), fields)


def reference_csv(path: Path) -> tuple[int, float]:
    """The importer of issue #14 on CSV: ``csv.reader`` rows, one fromstring per chunk."""
    import csv

    def fields(rows: list[list[str]]) -> tuple[list[str], list[str]]:
        return [r[0] for r in rows], [r[1] for r in rows]

    with open(path, newline="") as f:
        r = csv.reader(f)
        next(r)
        return _reference(_chunks(r), fields)


def settle() -> None:
    """Write back what earlier steps left dirty (the inputs, the last run's dataset) before
    a timed step, outside its clock: else the kernel writes it back 30 s after it was
    written, i.e. in the middle of whichever step runs then (here the first imports of
    each format, 0.3-0.7 s slower than the next ones)."""
    if hasattr(os, "sync"):
        os.sync()


def run_import_cli(
    src: Path, out: Path, fmt: str, workers: int, more: tuple[str, ...] = ()
) -> tuple[float, int]:
    """``guiapp import`` as the user runs it (a child process); (seconds, peak RSS bytes)."""
    import subprocess

    settle()
    extra = ["--label-field", "label", "--data-field", "kmers", *more]
    cmd = [sys.executable, "-m", "guiapp", "import", str(src), str(out), "--format", fmt]
    cmd += [*extra, "--workers", str(workers), "--events", "-", "--overwrite"]
    with PeakRSS() as rss:
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        el = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"import failed: {r.stderr.strip()[-500:]}")
    return el, rss.peak


def shard_hashes(path: Path) -> list[str]:
    from ..core.store import Dataset

    with Dataset(path) as ds:
        return [s.content_hash for s in ds.shards]


def bench_format(
    folder: Path, src: Path, fmt: str, rows: int, workers: int, repeat: int = 3
) -> dict[str, Any]:
    """One format's figures; the imports are the medians of ``repeat`` interleaved runs."""
    naive = naive_jsonl if fmt == "jsonl" else naive_csv
    reference = reference_jsonl if fmt == "jsonl" else reference_csv
    parse_runs: dict[str, list[float]] = {"naive": [], "reference": []}

    def parses() -> None:  # before the imports and after them: the mean of the two
        for name, parse in (("naive", naive), ("reference", reference)):
            settle()
            n, t = parse(src)
            assert n == rows
            parse_runs[name].append(t)

    parses()
    runs: dict[str, list[float]] = {"one_worker": [], "all_workers": []}
    rss1 = rssw = 0
    for _ in range(max(1, repeat)):  # interleaved: a change of the machine's speed hits both
        t, r = run_import_cli(src, folder / f"{fmt}1.h5", fmt, 1)
        runs["one_worker"].append(t)
        rss1 = max(rss1, r)
        t, r = run_import_cli(src, folder / f"{fmt}w.h5", fmt, workers)
        runs["all_workers"].append(t)
        rssw = max(rssw, r)
    parses()
    t_naive, t_ref = (float(np.mean(parse_runs[k])) for k in ("naive", "reference"))
    t1, tw = (float(np.median(runs[k])) for k in ("one_worker", "all_workers"))
    same = shard_hashes(folder / f"{fmt}1.h5") == shard_hashes(folder / f"{fmt}w.h5")
    mb = src.stat().st_size / 2**20
    rps = {
        "naive": rows / t_naive,
        "reference": rows / t_ref,
        "one_worker": rows / t1,
        "all_workers": rows / tw,
    }
    return {
        "rows": rows,
        "input_mb": round(mb, 1),
        "workers": workers,
        "seconds": {
            "naive": round(t_naive, 2),
            "reference": round(t_ref, 2),
            "one_worker": round(t1, 2),
            "all_workers": round(tw, 2),
        },
        "repeat": max(1, repeat),
        "import_runs_s": {k: [round(t, 2) for t in v] for k, v in runs.items()},
        "parse_runs_s": {k: [round(t, 2) for t in v] for k, v in parse_runs.items()},
        "rows_per_s": {k: round(v) for k, v in rps.items()},
        "mb_per_s": {k: round(v * mb / rows, 1) for k, v in rps.items()},
        "ratios": {
            "all_vs_reference": round(rps["all_workers"] / rps["reference"], 2),
            "all_vs_naive": round(rps["all_workers"] / rps["naive"], 2),
            "all_vs_one": round(rps["all_workers"] / rps["one_worker"], 2),
            "one_vs_naive": round(rps["one_worker"] / rps["naive"], 2),
        },
        "peak_rss_mb": {"one_worker": round(rss1 / 2**20), "all_workers": round(rssw / 2**20)},
        "identical_for_1_and_all_workers": same,
    }


#: The lineage bench's imports: without lineage fields, with the group, and with the group
#: and two kept strings.
LINEAGE = {
    "plain": (),
    "group": ("--group-field", "accession"),
    "group_kept": ("--group-field", "accession", "--keep-fields", "_id,name"),
}


def bench_groups(folder: Path, rows: int, workers: int, repeat: int = 3) -> dict[str, Any]:
    """The imports of ``LINEAGE`` of one file (``workers``), interleaved, each order in turn."""
    from ..core.store import Dataset
    from ..core.store.columns import group_summary

    src = write_group_input(folder, rows)
    runs: dict[str, list[float]] = {k: [] for k in LINEAGE}
    outs = {k: folder / f"{k}.h5" for k in LINEAGE}
    names = list(LINEAGE)
    for i in range(max(1, repeat)):
        for k in names[i % 3 :] + names[: i % 3]:
            t, _ = run_import_cli(src, outs[k], "jsonl", workers, LINEAGE[k])
            runs[k].append(t)
    hashes = {k: shard_hashes(outs[k]) for k in LINEAGE}
    with Dataset(outs["group_kept"]) as ds:
        summary = group_summary(ds)
    sec = {k: float(np.median(v)) for k, v in runs.items()}
    src.unlink()
    return {
        "rows": rows,
        "workers": workers,
        "options": {k: " ".join(v) for k, v in LINEAGE.items()},
        "seconds": {k: round(v, 2) for k, v in sec.items()},
        "import_runs_s": {k: [round(t, 2) for t in v] for k, v in runs.items()},
        "rows_per_s": {k: round(rows / v) for k, v in sec.items()},
        "ratios": {
            "group_vs_plain": round(sec["plain"] / sec["group"], 3),
            "group_kept_vs_plain": round(sec["plain"] / sec["group_kept"], 3),
        },
        "groups": summary["groups"],
        "kept_fields": summary["kept_fields"],
        "same_rows_as_plain": hashes["plain"] == hashes["group"] == hashes["group_kept"],
    }


def run_import_bench(
    rows: int, workers: int | None, folder: str | None, repeat: int = 3, groups: bool = True
) -> dict[str, Any]:
    from ..core.importers.parallel import default_workers

    w = workers or default_workers()
    tmp = Path(tempfile.mkdtemp(prefix="guiapp-bench-import-", dir=folder))
    try:
        jp, cp = write_inputs(tmp, rows)
        res = bench_format(tmp, jp, "jsonl", rows, w, repeat)
        res["csv"] = bench_format(tmp, cp, "csv", rows, w, repeat)
        if groups:
            for p in (jp, cp):
                p.unlink()
            res["groups"] = bench_groups(tmp, rows, w, repeat)
        res["cores"] = os.cpu_count()
        res["load_average"] = [round(v, 2) for v in os.getloadavg()]
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cmd_bench_import(args: argparse.Namespace) -> int:
    res = run_import_bench(args.rows, args.workers, args.dir, args.repeat, not args.no_groups)
    return print_result(res, args.json, format_text, indent=None)


def format_text(res: dict[str, Any]) -> str:
    out = []
    for name, r in (("jsonl", res), ("csv", res["csv"])):
        rp, mp = r["rows_per_s"], r["mb_per_s"]
        out.append(
            f"{name}: {r['rows']:,} rows ({r['input_mb']} MB), {r['workers']} workers\n"
            f"  naive        {rp['naive']:>10,} rows/s {mp['naive']:>7} MB/s (parse only)\n"
            f"  reference    {rp['reference']:>10,} rows/s {mp['reference']:>7} MB/s "
            "(issue #14's importer, parse only)\n"
            f"  1 worker     {rp['one_worker']:>10,} rows/s {mp['one_worker']:>7} MB/s "
            f"(peak RSS {r['peak_rss_mb']['one_worker']} MB)\n"
            f"  all workers  {rp['all_workers']:>10,} rows/s {mp['all_workers']:>7} MB/s "
            f"(peak RSS {r['peak_rss_mb']['all_workers']} MB)\n"
            f"  ratios       all/reference {r['ratios']['all_vs_reference']}, "
            f"all/naive {r['ratios']['all_vs_naive']}, all/one "
            f"{r['ratios']['all_vs_one']}; identical: {r['identical_for_1_and_all_workers']}\n"
        )
    g = res.get("groups")
    if g:
        rp, r = g["rows_per_s"], g["ratios"]
        out.append(
            f"lineage: {g['rows']:,} JSON lines, {g['workers']} workers ({g['groups']:,} groups)\n"
            f"  {'without':<34} {rp['plain']:>10,} rows/s\n"
            f"  {g['options']['group']:<34} {rp['group']:>10,} rows/s (x{r['group_vs_plain']})\n"
            f"  {'  and --keep-fields _id,name':<34} {rp['group_kept']:>10,} rows/s "
            f"(x{r['group_kept_vs_plain']}); same rows: {g['same_rows_as_plain']}\n"
        )
    return "".join(out).removesuffix("\n")


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "import", help="import speed (JSONL, CSV) at 1 and all workers vs a naive parser"
    )
    s.add_argument("--rows", type=int, default=1_000_000, help="generated lines (default 1e6)")
    s.add_argument("--workers", type=int, default=None, help="'all workers' (default: cores)")
    s.add_argument("--dir", default=None, help="folder for the temporary files")
    s.add_argument(
        "--repeat", type=int, default=3, help="interleaved runs of each import, median (default 3)"
    )
    s.add_argument(
        "--no-groups",
        action="store_true",
        help="leave out the import with --group-field/--keep-fields against the same without",
    )
    json_option(s, cmd_bench_import, "print one JSON object")
