"""`guiapp bench scale`: a simulated 10^10-row store of 80,000 shards against one of 10.

Each simulated shard is a real, sealed shard file of tiny capacity (``--capacity`` rows of
126 uint16 values): one is written by the store, the others are hard links to it (or to a
copy, every 50,000) under their own names, so 80,000 shards cost two shards' disk space and the file system still
sees 80,000 directory entries to open and ``stat``. The index is built through the real
seal path: one ``IndexFile.put`` per shard, the in-place record write every seal does
(and the whole rewrites when the slots double). Then, at both sizes, it measures:

- seal: one ``put`` (median of the last ones) and the amortized rewrites per shard;
- open (``Dataset``), ``info`` and ``check`` (default checks): total and per shard;
- jump to the last row (the browser's "last row": a ``Dataset.read`` of it);
- the read plan of an epoch and worker sharding for 64 workers, for 10^10 rows and for
  the simulated dataset's rows (pure arithmetic on block ids: rows, not shards, set it);
- the Python memory a reader allocates to open the dataset (tracemalloc).

Figures go in docs/SCALING.md with the command that made them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from .command import json_option, print_result

L = 126
LINKS_PER_FILE = 50_000


def build(folder: Path, shards: int, capacity: int) -> tuple[Path, dict[str, float]]:
    """A sealed dataset of ``shards`` shards; the seal costs measured while building it."""
    from ..core.store import Dataset, DatasetWriter
    from ..core.store.format import shard_dir, shard_relpath
    from ..core.store.index import IndexFile

    tmpl = folder / "template.h5"
    rng = np.random.default_rng(0)
    with DatasetWriter(
        tmpl, sample_shape=(L,), dtype="uint16", class_names=[str(i) for i in range(10)],
        shard_capacity=capacity,
    ) as w:  # fmt: skip
        w.append(
            rng.integers(0, 65536, (capacity, L), dtype=np.uint16), rng.integers(0, 10, capacity)
        )
    with Dataset(tmpl) as made:
        meta = made.shards[0]
        header = w.header
    path = folder / f"sim{shards}.h5"
    shard_dir(path).mkdir()
    src = meta.path
    for k in range(shards):
        if k and k % LINKS_PER_FILE == 0:  # a file system allows ~65,000 links to a file
            src = folder / f"template-{k}.h5"
            shutil.copyfile(meta.path, src)
        os.link(src, path.parent / shard_relpath(path, k))
    idx = IndexFile(path, header, slots=64)
    idx.rewrite(complete=False)
    put_s: list[float] = []
    rewrite_s = 0.0
    t_all = time.perf_counter()
    for k in range(shards):
        meta.number = k
        meta.path = path.parent / shard_relpath(path, k)
        before = IndexFile.rewrites
        t = time.perf_counter()
        idx.put(meta)
        dt = time.perf_counter() - t
        if IndexFile.rewrites != before:
            rewrite_s += dt
        else:
            put_s.append(dt)
    t = time.perf_counter()
    idx.rewrite(complete=True)  # the writer's close
    close_s = time.perf_counter() - t
    total = time.perf_counter() - t_all
    return path, {
        "seal_put_s": statistics.median(put_s[-min(len(put_s), 200) :]),
        "rewrites_per_shard_s": (rewrite_s + close_s) / shards,
        "close_rewrite_s": close_s,
        "build_index_s": total,
    }


def _median(fn: Any, reps: int) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def measure(path: Path, shards: int, reps: int) -> dict[str, Any]:
    from ..core.pipeline.read_plan import ReadPlan
    from ..core.store import Dataset
    from ..core.store.check import check_dataset

    def open_() -> None:
        Dataset(path).close()

    def info() -> None:
        with Dataset(path) as ds:
            ds.info()

    def check() -> None:
        assert check_dataset(path).ok

    def last_row() -> None:
        with Dataset(path) as ds:
            ds.read(len(ds) - 1)

    tracemalloc.start()
    ds = Dataset(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows = len(ds)
    t_jump = _median(lambda: ds.read(rows - 1), reps)  # an open dataset: the browser's case
    ds.close()
    res: dict[str, Any] = {"shards": shards, "rows": rows}
    for name, fn, r in (
        ("open", open_, reps),
        ("info", info, reps),
        ("check", check, max(1, reps // 2)),
        ("open_and_last_row", last_row, reps),
    ):
        t = _median(fn, r)
        res[name + "_s"] = t
        res[name + "_per_shard_us"] = t / shards * 1e6
    res["last_row_of_open_dataset_s"] = t_jump
    res["reader_open_python_bytes"] = peak
    res["reader_bytes_per_shard"] = peak / shards

    def plan(rows_: int) -> None:
        ReadPlan(rows=rows_, batch_size=512, block_rows=1024).epoch(0)

    def sharding(rows_: int) -> None:
        for w in range(0, 64, 21):  # 4 of the 64 workers; each worker computes only its own
            ReadPlan(rows=rows_, batch_size=512, block_rows=1024, worker=w, workers=64).epoch(0)

    res["epoch_plan_s"] = _median(lambda: plan(rows), reps)
    res["worker_plan_64_s"] = _median(lambda: sharding(rows), reps) / 4
    return res


def run_scale_bench(shards: int, small: int, capacity: int, folder: str | None) -> dict[str, Any]:
    from ..core.pipeline.read_plan import ReadPlan

    tmp = Path(tempfile.mkdtemp(prefix="guiapp-bench-scale-", dir=folder))
    try:
        out: dict[str, Any] = {"capacity": capacity}
        for n in (small, shards):
            d = tmp / f"n{n}"
            d.mkdir()
            path, seal = build(d, n, capacity)
            out[str(n)] = {**seal, **measure(path, n, 5 if n <= 1000 else 3)}
        a, b = out[str(small)], out[str(shards)]
        out["factors"] = {  # large / small: per shard for what visits every shard
            "seal_put": b["seal_put_s"] / a["seal_put_s"],
            "seal_amortized_rewrites_per_shard": b["rewrites_per_shard_s"]
            / a["rewrites_per_shard_s"],
            "open_per_shard": b["open_per_shard_us"] / a["open_per_shard_us"],
            "info_per_shard": b["info_per_shard_us"] / a["info_per_shard_us"],
            "check_per_shard": b["check_per_shard_us"] / a["check_per_shard_us"],
            "last_row_of_open_dataset": b["last_row_of_open_dataset_s"]
            / a["last_row_of_open_dataset_s"],
            "reader_bytes_per_shard": b["reader_bytes_per_shard"] / a["reader_bytes_per_shard"],
        }
        rows = 10**10
        t = time.perf_counter()
        ReadPlan(rows=rows, batch_size=512, block_rows=1024).epoch(0)
        t_all = time.perf_counter() - t
        tracemalloc.start()
        t = time.perf_counter()
        ReadPlan(rows=rows, batch_size=512, block_rows=1024, worker=5, workers=64).epoch(0)
        t_w = time.perf_counter() - t
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out["1e10_rows"] = {
            "epoch_plan_one_worker_s": t_all,
            "epoch_plan_worker_of_64_s": t_w,
            "epoch_plan_worker_of_64_peak_bytes": peak,
        }
        out["load_average"] = [round(v, 2) for v in os.getloadavg()]
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cmd_bench_scale(args: argparse.Namespace) -> int:
    res = run_scale_bench(args.shards, args.small, args.capacity, args.dir)
    return print_result(res, args.json, lambda r: format_text(r, args.small, args.shards), None)


def format_text(res: dict[str, Any], small: int, shards: int) -> str:
    a, b = res[str(small)], res[str(shards)]
    lines = [f"{'':34}{small:>12,} shards{shards:>14,} shards   factor"]

    def row(label: str, ka: float, kb: float, unit: str, factor: float | None = None) -> None:
        f = kb / ka if factor is None else factor
        lines.append(f"{label:34}{ka:>12.3g} {unit:<5}{kb:>14.3g} {unit:<5}{f:>7.2f}")

    row("seal: one record in place", a["seal_put_s"] * 1e3, b["seal_put_s"] * 1e3, "ms")
    row(
        "seal: rewrites, per shard",
        a["rewrites_per_shard_s"] * 1e3,
        b["rewrites_per_shard_s"] * 1e3,
        "ms",
    )
    for op in ("open", "info", "check"):
        row(f"{op}: per shard", a[f"{op}_per_shard_us"], b[f"{op}_per_shard_us"], "us")
    row("open: total", a["open_s"], b["open_s"], "s")
    row(
        "last row of an open dataset",
        a["last_row_of_open_dataset_s"] * 1e3,
        b["last_row_of_open_dataset_s"] * 1e3,
        "ms",
    )
    row("reader memory per shard", a["reader_bytes_per_shard"], b["reader_bytes_per_shard"], "B")
    e = res["1e10_rows"]
    lines.append(
        f"10^10 rows: epoch plan {e['epoch_plan_one_worker_s']:.2f} s (one worker), "
        f"{e['epoch_plan_worker_of_64_s']:.2f} s for a worker of 64 "
        f"({e['epoch_plan_worker_of_64_peak_bytes'] / 2**20:.0f} MB peak)"
    )
    return "\n".join(lines)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "scale", help="a simulated 80,000-shard store vs 10 shards: seal, open, info, check, plans"
    )
    s.add_argument("--shards", type=int, default=80_000, help="shards of the large store")
    s.add_argument("--small", type=int, default=10, help="shards of the small store")
    s.add_argument("--capacity", type=int, default=16, help="rows per simulated shard")
    s.add_argument("--dir", default=None, help="folder for the temporary files")
    json_option(s, cmd_bench_scale, "print one JSON object")
