"""``guiapp bench genomes``: the tokenizer against its numpy reference, and genomes in,
organisms out side by side with Kraken 2 on the same held-out reads.

1. **Tokenizer.** The same reads (``--reads`` x 137 random bases with a few N, k=12,
   canonical, hashed into 65521) through :func:`tokenize` (numba, one pass of rolling
   codes) and :func:`tokenize_numpy` (the straightforward numpy form: k shifted passes
   per strand), one thread each, best of ``--repeats``; the outputs must be equal. Target:
   numba >= 5x numpy per core.
2. **Classification** (unless ``--tokenizer-only``). Simulated genomes
   (``core/genomes/simulate.py``: a random root, each species its mutated copy, each genome
   a mutated copy of its species with indels, N runs and contigs; no real sequence), the
   last genome of each species held out whole. guiapp: the training genomes through the
   genomes source (random reads), a small Embedding + Conv1D model trained with
   ``--augment '{"reverse": true}'``, then ``guiapp predict --rc-average`` on the held-out
   reads (one FASTQ per held-out genome, a manifest of them). Kraken 2: a database built
   from the same training genomes (``kraken2-build`` with a hand-written two-level
   taxonomy: root -> one taxid per species; headers tagged ``kraken:taxid``), then
   ``kraken2`` on the same FASTQ files. Per tool: per-read species accuracy (over every
   read: an unclassified read is not correct), unclassified share, per-genome accuracy
   (the majority call of each held-out genome's classified reads; guiapp: its per-genome
   table's class by mean probability), reads/s of classification alone and of the whole
   command (guiapp: tokenising and TensorFlow's start included; Kraken 2: loading its
   database included).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .command import json_option, print_result
from .specs import classifier

MODEL = classifier(
    "kmer-bench",
    [126],
    [
        {"type": "Embedding", "input_dim": 65521, "output_dim": 32},
        {"type": "Conv1D", "filters": 64, "kernel_size": 3, "activation": "relu"},
        {"type": "GlobalMaxPooling1D"},
        {"type": "Dense", "units": 64, "activation": "relu"},
        {"type": "Dense", "units": 5, "activation": "softmax"},
    ],
    dtype="uint16",
    learning_rate=0.005,
)
NOT_INSTALLED = (
    "kraken2 is not installed (kraken2 and kraken2-build not on PATH): "
    "only guiapp's side is measured. Install it (Debian/Ubuntu: apt-get install kraken2)"
)


def _single_thread() -> None:
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def bench_tokenizer(reads: int, repeats: int) -> dict[str, Any]:
    from ..core.genomes.tokenizer import Tokenizer, tokenize, tokenize_numpy

    rng = np.random.default_rng(0)
    bases = rng.integers(0, 4, (reads, 137), dtype=np.uint8)
    bases[rng.random(bases.shape) < 0.001] = 4
    tok = Tokenizer(12, True, "auto", 65521)
    fast = tokenize(bases[:8], tok)  # compiles (or loads the cache) outside the timing
    times: dict[str, list[float]] = {"numba": [], "numpy": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        fast = tokenize(bases, tok)
        times["numba"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref = tokenize_numpy(bases, tok)
        times["numpy"].append(time.perf_counter() - t0)
    if not np.array_equal(fast, ref):
        raise AssertionError("the compiled tokenizer disagrees with the numpy reference")
    kmers = reads * 126
    best = {k: min(v) for k, v in times.items()}
    return {
        "reads": reads,
        "k": 12,
        "numba_kmers_per_s": round(kmers / best["numba"]),
        "numpy_kmers_per_s": round(kmers / best["numpy"]),
        "ratio": round(best["numpy"] / best["numba"], 2),
    }


def _run(cmd: list[str], **kw: Any) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed: {r.stderr.strip()[-2000:]}")
    return r, elapsed


def held_out_reads(test: Path, folder: Path, reads: int, errors: float) -> Path:
    """One FASTQ of random reads (both strands, ``errors`` substitutions) per held-out
    genome, named by genome, and a manifest of them with each genome's species."""
    from ..core.genomes.source import read_windows, resolve_params
    from ..core.genomes.tokenizer import as_bases

    params = {"manifest": str(test), "reads_per_genome": reads, "errors": errors}
    p = resolve_params(params, 1, None, 126)
    bases, genome, _rec, _pos, _strand = read_windows(
        p, 1, 0, int(p["rows"]), np.random.default_rng(1)
    )
    lines = ["file\tclass\tgroup"]
    for g, f in enumerate(p["files"]):
        name = Path(f["file"]).name.split(".")[0]
        out = folder / f"{name}.reads.fq"
        with open(out, "w") as fh:
            for i in np.flatnonzero(genome == g):
                seq = as_bases(bases[i])
                fh.write(f"@{name}_r{i}\n{seq}\n+\n{'I' * len(seq)}\n")
        lines.append(f"{out.name}\t{f['class']}\t{f['group']}")
    manifest = folder / "reads.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def _entries(manifest: Path) -> list[dict[str, str]]:
    with open(manifest) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def run_guiapp(
    folder: Path, train: Path, reads: Path, classes: int, epochs: int, train_reads: int
) -> dict[str, Any]:
    gui = [sys.executable, "-m", "guiapp"]
    data = folder / "train.h5"
    params = {"manifest": str(train), "reads_per_genome": train_reads, "errors": 0.005}
    _run([*gui, "generate", str(data), "--generator", "genomes", "--params", json.dumps(params)])
    spec = json.loads(json.dumps(MODEL))
    spec["layers"][-1]["units"] = classes
    (folder / "model.json").write_text(json.dumps(spec))
    run = folder / "run"
    _run(
        [*gui, "train", "--data", str(data), "--model", str(folder / "model.json"),
         "--out", str(run), "--epochs", str(epochs), "--batch", "128", "--val", "0.05",
         "--no-tensorboard", "--augment", '{"reverse": true}']
    )  # fmt: skip
    out = folder / "pred.csv"
    r, wall = _run(
        [*gui, "predict", "--model", str(run), "--data", str(reads), "--out", str(out),
         "--rc-average", "--events", "-"]
    )  # fmt: skip
    finished = next(json.loads(x) for x in r.stdout.splitlines() if '"event": "finished"' in x)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    with open(folder / "pred.groups.csv") as f:
        groups = list(csv.DictReader(f))
    correct = sum(r["pred"] == r["label"] for r in rows)
    return {
        "reads": len(rows),
        "read_accuracy": correct / len(rows),
        "unclassified": 0.0,
        "genome_accuracy": sum(g["mean_class"] == g["true_class"] for g in groups) / len(groups),
        "genomes": len(groups),
        "classify_reads_per_s": finished.get("rows_per_s"),
        "command_reads_per_s": round(len(rows) / wall, 1),
    }


def kraken_db(folder: Path, train: Path, names: list[str], threads: int) -> Path:
    """A Kraken 2 database of the training genomes under a hand-written taxonomy."""
    db = folder / "kdb"
    tax = db / "taxonomy"
    tax.mkdir(parents=True)
    nodes = ["1\t|\t1\t|\tno rank\t|"]
    dmp = ["1\t|\troot\t|\t\t|\tscientific name\t|"]
    for c, name in enumerate(names):
        nodes.append(f"{100 + c}\t|\t1\t|\tspecies\t|")
        dmp.append(f"{100 + c}\t|\t{name}\t|\t\t|\tscientific name\t|")
    (tax / "nodes.dmp").write_text("\n".join(nodes) + "\n")
    (tax / "names.dmp").write_text("\n".join(dmp) + "\n")
    from ..core.genomes.seqfile import read_sequences
    from ..core.genomes.tokenizer import as_bases

    lib = folder / "kraken_lib.fa"
    with open(lib, "w") as fh:
        for e in _entries(train):
            taxid = 100 + names.index(e["class"])
            seqs = read_sequences(train.parent / e["file"])
            for i, n in enumerate(seqs.names):
                fh.write(f">{n}|kraken:taxid|{taxid}\n{as_bases(seqs.record(i))}\n")
    build = ["kraken2-build", "--db", str(db)]
    _run([*build, "--add-to-library", str(lib), "--no-masking"])
    _run([*build, "--build", "--threads", str(threads)])
    return db


def run_kraken(
    folder: Path, db: Path, reads: Path, names: list[str], threads: int
) -> dict[str, Any]:
    entries = _entries(reads)
    files = [str(reads.parent / e["file"]) for e in entries]
    out = folder / "kraken.out"
    cmd = ["kraken2", "--db", str(db), "--threads", str(threads), "--output", str(out)]
    r, wall = _run([*cmd, *files])
    m = re.search(r"processed in ([0-9.]+)s \(([0-9.]+) Kseq/m", r.stderr)
    truth = {e["file"].split(".")[0]: 100 + names.index(e["class"]) for e in entries}
    calls: dict[str, list[int]] = {g: [] for g in truth}
    for line in out.read_text().splitlines():
        status, rid, taxid = line.split("\t")[:3]
        genome = rid.rsplit("_r", 1)[0]
        calls[genome].append(int(taxid) if status == "C" else 0)
    n = sum(len(v) for v in calls.values())
    right = sum(sum(t == truth[g] for t in v) for g, v in calls.items())
    unclassified = sum(sum(t == 0 for t in v) for v in calls.values())
    genome_right = 0
    for g, v in calls.items():
        got = [t for t in v if t]
        genome_right += bool(got) and max(set(got), key=got.count) == truth[g]
    return {
        "reads": n,
        "read_accuracy": right / n,
        "unclassified": unclassified / n,
        "genome_accuracy": genome_right / len(calls),
        "genomes": len(calls),
        "classify_reads_per_s": round(float(m.group(2)) * 1000 / 60, 1) if m else None,
        "command_reads_per_s": round(n / wall, 1),
    }


def bench_classify(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from ..core.genomes.simulate import simulate_genomes, split_manifest

    manifest = simulate_genomes(
        tmp / "genomes",
        classes=args.species,
        genomes_per_class=args.genomes,
        length=args.length,
        seed=args.seed,
    )
    train, test = split_manifest(manifest)
    reads = held_out_reads(test, tmp / "genomes", args.test_reads, args.errors)
    names = [f"species_{c}" for c in range(args.species)]
    out: dict[str, Any] = {
        "data": {
            "species": args.species,
            "genomes_per_species": args.genomes,
            "held_out_genomes": args.species,
            "genome_length": args.length,
            "read_length": 137,
            "held_out_reads_per_genome": args.test_reads,
            "read_errors": args.errors,
        }
    }
    out["guiapp"] = run_guiapp(tmp, train, reads, args.species, args.epochs, args.train_reads)
    if shutil.which("kraken2") is None or shutil.which("kraken2-build") is None:
        out["kraken2"] = None
        out["note"] = NOT_INSTALLED
        return out
    db = kraken_db(tmp, train, names, args.threads)
    out["kraken2"] = run_kraken(tmp, db, reads, names, args.threads)
    return out


def _table(res: dict[str, Any]) -> str:
    rows = [
        ("per-read species accuracy", "read_accuracy", "{:.3f}"),
        ("unclassified share", "unclassified", "{:.3f}"),
        ("per-genome accuracy", "genome_accuracy", "{:.3f}"),
        ("reads/s, classification", "classify_reads_per_s", "{:,.0f}"),
        ("reads/s, whole command", "command_reads_per_s", "{:,.0f}"),
    ]
    g, k = res["guiapp"], res.get("kraken2")
    lines = [f"{'held-out reads':28s} {'guiapp':>12s} {'Kraken 2':>12s}"]
    for label, key, fmt in rows:
        a = fmt.format(g[key]) if g.get(key) is not None else "-"
        b = fmt.format(k[key]) if k and k.get(key) is not None else "-"
        lines.append(f"{label:28s} {a:>12s} {b:>12s}")
    return "\n".join(lines)


def cmd_bench_genomes(args: argparse.Namespace) -> int:
    _single_thread()
    res: dict[str, Any] = {"tokenizer": bench_tokenizer(args.reads, args.repeats)}
    t = res["tokenizer"]
    if not args.json:
        sys.stdout.write(
            f"tokenizer (k=12, canonical, hashed; one core): numba {t['numba_kmers_per_s']:,} "
            f"k-mers/s, numpy {t['numpy_kmers_per_s']:,} k-mers/s: {t['ratio']}x\n"
        )
        sys.stdout.flush()
    if not args.tokenizer_only:
        if shutil.which("kraken2") is None and not args.json:
            sys.stdout.write(NOT_INSTALLED + "\n")
        with tempfile.TemporaryDirectory(prefix="guiapp-bench-genomes-") as tmp:
            res.update(bench_classify(args, Path(tmp)))
    elif not args.json:
        return 0  # the tokenizer's line is all
    return print_result(res, args.json, _table)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "genomes", help="the k-mer tokenizer vs numpy, and guiapp vs Kraken 2 on held-out genomes"
    )
    s.add_argument("--reads", type=int, default=100_000, help="reads for the tokenizer bench")
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--species", type=int, default=5)
    s.add_argument("--genomes", type=int, default=4, help="genomes per species (1 held out)")
    s.add_argument("--length", type=int, default=100_000, help="bases per genome")
    s.add_argument("--train-reads", type=int, default=4000, help="training reads per genome")
    s.add_argument("--test-reads", type=int, default=2000, help="held-out reads per genome")
    s.add_argument("--errors", type=float, default=0.01, help="substitutions per read base")
    s.add_argument("--epochs", type=int, default=3)
    s.add_argument("--threads", type=int, default=1, help="Kraken 2's threads")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--tokenizer-only", action="store_true", help="skip the classification")
    json_option(s, cmd_bench_genomes)
