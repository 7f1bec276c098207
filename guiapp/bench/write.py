"""`guiapp bench write`: generation + write speed, write path vs numpy.tofile, peak RSS.

Measures, in one run on this machine:
- generate + write rows/s and MB/s for patterns2d and kmer1d with 1 and 2 workers;
- the store's write path alone (ShardWriter appends of pre-made arrays, commits every
  65,536 rows) against ``numpy.tofile`` of the same bytes (ratio; target >= 0.7);
- peak RSS of the whole process tree while generating ``--rows`` and 10x ``--rows``
  patterns2d rows with 2 workers (it must not grow with the row count).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from .command import json_option, print_result


class PeakRSS:
    """Samples the resident memory of this process and all its children.

    ``peak`` is the total RSS; ``peak_private`` leaves out shared file-backed pages
    (``rss - shared``: e.g. a shard mapped while its content hash is computed), which
    the kernel can drop at any time.
    """

    def __init__(self, every_s: float = 0.05) -> None:
        self.every_s = every_s
        self.peak = 0
        self.peak_private = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            total = private = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    m = p.memory_info()
                except psutil.Error:
                    continue
                total += m.rss
                private += m.rss - getattr(m, "shared", 0)
            self.peak = max(self.peak, total)
            self.peak_private = max(self.peak_private, private)
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_generate(folder: Path, generator: str, rows: int, workers: int) -> dict[str, Any]:
    from ..core.generate import generate, resolve_config

    # 8+ shards, so both generators can use every worker (kmer1d's default shard is 2M rows).
    cfg = resolve_config(generator, n=rows, seed=1, shard_rows=min(max(1024, rows // 8), 1 << 17))
    out = folder / f"{generator}-{workers}.h5"
    with PeakRSS() as rss:
        t = time.perf_counter()
        generate(cfg, out, workers=workers, overwrite=True)
        dt = time.perf_counter() - t
    row_bytes = int(np.prod(cfg.sample_shape)) * np.dtype(cfg.dtype).itemsize + 4
    from ..core.store import remove_dataset

    remove_dataset(out)
    return {
        "generator": generator,
        "workers": workers,
        "rows": rows,
        "seconds": round(dt, 2),
        "rows_per_s": round(rows / dt),
        "mb_per_s": round(rows * row_bytes / dt / 1e6, 1),
        "peak_rss_mib": round(rss.peak / 2**20, 1),
        "peak_private_rss_mib": round(rss.peak_private / 2**20, 1),
    }


def bench_write_path(folder: Path, rows: int, repeats: int = 3) -> dict[str, Any]:
    """ShardWriter appends of pre-made arrays vs ``tofile`` of the same bytes."""
    from ..core.store import ShardWriter
    from ..core.store.format import COMMIT_ROWS

    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, 25, 25), dtype=np.float32)
    y = rng.integers(0, 5, rows).astype(np.int32)
    chunk = 6710
    best_w = best_f = best_h = best_c = float("inf")
    for r in range(repeats):
        # Counts only (no running value statistics): the write path itself.
        path = folder / f"c{r}.h5"
        t = time.perf_counter()
        w = ShardWriter.create(
            path,
            number=0,
            capacity=rows,
            sample_shape=(25, 25),
            dtype="float32",
            num_classes=5,
            value_stats=False,
        )
        for a in range(0, rows, chunk):
            w.append(x[a : a + chunk], y[a : a + chunk])
            if (a // chunk) % 10 == 9:
                w.commit()
        w.finish()
        best_c = min(best_c, time.perf_counter() - t)
        path.unlink()
        path = folder / f"w{r}.h5"
        t = time.perf_counter()
        w = ShardWriter.create(
            path, number=0, capacity=rows, sample_shape=(25, 25), dtype="float32", num_classes=5
        )
        since = 0
        for a in range(0, rows, chunk):
            w.append(x[a : a + chunk], y[a : a + chunk])
            since += min(chunk, rows - a)
            if since >= COMMIT_ROWS:
                w.commit()
                since = 0
        w.commit()
        best_w = min(best_w, time.perf_counter() - t)
        w.finish()
        best_h = min(best_h, time.perf_counter() - t)
        path.unlink()
        raw = folder / f"raw{r}.bin"
        t = time.perf_counter()
        with open(raw, "wb") as fh:
            x.tofile(fh)
            y.tofile(fh)
        best_f = min(best_f, time.perf_counter() - t)
        raw.unlink()
    nbytes = x.nbytes + y.nbytes
    return {
        "rows": rows,
        "bytes": nbytes,
        "store_mb_per_s": round(nbytes / best_w / 1e6),
        "store_with_hash_mb_per_s": round(nbytes / best_h / 1e6),
        "tofile_mb_per_s": round(nbytes / best_f / 1e6),
        "ratio": round(best_f / best_w, 3),
        "ratio_with_hash": round(best_f / best_h, 3),
        "store_without_value_stats_mb_per_s": round(nbytes / best_c / 1e6),
        "ratio_without_value_stats": round(best_f / best_c, 3),
    }


def run_bench(rows: int, rss_factor: int, folder: str | None) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="guiapp-bench-", dir=folder))
    try:
        results: dict[str, Any] = {"cpus": os.cpu_count(), "generate": []}
        for gen in ("patterns2d", "kmer1d"):
            for w in (1, 2):
                results["generate"].append(bench_generate(base, gen, rows, w))
                sys.stderr.write(f"bench write: {results['generate'][-1]}\n")
        results["write_path"] = bench_write_path(base, min(rows, 100_000))
        sys.stderr.write(f"bench write: {results['write_path']}\n")
        small = next(
            r for r in results["generate"] if r["generator"] == "patterns2d" and r["workers"] == 2
        )
        big = bench_generate(base, "patterns2d", rows * rss_factor, 2)
        results["rss"] = {
            "rows_small": small["rows"],
            "peak_rss_mib_small": small["peak_rss_mib"],
            "rows_big": big["rows"],
            "peak_rss_mib_big": big["peak_rss_mib"],
            "peak_private_rss_mib_small": small["peak_private_rss_mib"],
            "peak_private_rss_mib_big": big["peak_private_rss_mib"],
            "big_rows_per_s": big["rows_per_s"],
        }
        return results
    finally:
        shutil.rmtree(base, ignore_errors=True)


def format_text(r: dict[str, Any]) -> str:
    lines = [f"generation + write ({r['cpus']} CPUs)"]
    for g in r["generate"]:
        lines.append(
            f"  {g['generator']:<11} workers {g['workers']}  {g['rows']:>10,} rows  "
            f"{g['rows_per_s']:>9,} rows/s  {g['mb_per_s']:>7,.1f} MB/s  peak RSS {g['peak_rss_mib']:,.0f} MiB"
        )
    w = r["write_path"]
    lines.append(
        f"write path ({w['bytes'] / 1e6:,.0f} MB): store {w['store_mb_per_s']:,} MB/s, "
        f"numpy.tofile {w['tofile_mb_per_s']:,} MB/s, ratio {w['ratio']:.2f} "
        f"(with sealing hash {w['ratio_with_hash']:.2f}; "
        f"writes + commits + hash without running value statistics {w['ratio_without_value_stats']:.2f})"
    )
    s = r["rss"]
    lines.append(
        f"peak RSS, patterns2d, 2 workers: {s['rows_small']:,} rows {s['peak_rss_mib_small']:,.0f} MiB, "
        f"{s['rows_big']:,} rows {s['peak_rss_mib_big']:,.0f} MiB; without shared file pages "
        f"{s['peak_private_rss_mib_small']:,.0f} and {s['peak_private_rss_mib_big']:,.0f} MiB"
    )
    return "\n".join(lines)


def cmd_bench_write(args: argparse.Namespace) -> int:
    r = run_bench(args.rows, args.rss_factor, args.dir)
    return print_result(r, args.json, format_text)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser("write", help="generation + write speed, write path vs tofile, RSS")
    s.add_argument("--rows", type=int, default=250_000, help="rows per generator run")
    s.add_argument(
        "--rss-factor", type=int, default=20, help="the RSS run generates this many times --rows"
    )
    s.add_argument("--dir", default=None, help="folder for the temporary files")
    json_option(s, cmd_bench_write, "print one JSON object")
