"""``guiapp bench read PATH``: the reader against its references, on the same file, in one run.

Every path is consumed by the same consumer, which reads every byte of every batch once
(``read_paths.checksum_np`` / ``checksum_tf``), and counts the rows it was handed. Measured
(rows/s, each the median of ``--repeats`` passes over ``--rows`` rows):
- ``naive_h5py``: one ``dataset[i]`` per sample in a random order (the Keras Sequence way);
- ``tfrecord``: a TFRecord file of the same rows written by the bench, one record per batch,
  read with ``TFRecordDataset`` + parse + prefetch with AUTOTUNE (the tf.data guide's way);
  ``tfrecord_tuned``: the best of a few hand-set configurations, the autotuner off;
- ``raw_limit_1t``: the store's own best single copy, one ``preadv`` per whole block into a
  reused aligned buffer, in a random block order, one thread; ``raw_limit``: the same on
  as many threads as the reader has;
- ``numpy_iter``: ``BatchPipeline.numpy_batches``;
- ``tfdata``: ``BatchPipeline.tf_dataset``, consumed in a ``tf.function`` loop.
``--threads 1,2,4`` also reports the reader and the limit at each thread count
(``scaling``). ``--cold`` drops every file any path reads from the page cache before every
pass. Also peak RSS and the mixing score (1 = each batch's class histogram equals the
dataset's). Definitions: docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core.pipeline import BatchPipeline
from ..core.pipeline.batches import default_reader_threads
from ..core.store import Dataset
from . import read_paths as rp
from .command import int_list, json_option, print_result

Pass = Callable[[], tuple[int, int]]


class Timer:
    """Times passes; calls ``before`` (the cache eviction) ahead of each, outside the clock."""

    def __init__(self, repeats: int, before: Callable[[], None] | None = None) -> None:
        self.repeats = repeats
        self.before = before
        self.checksums: dict[str, int] = {}

    def rate(self, name: str, fn: Pass, repeats: int | None = None) -> float:
        rates = []
        for _ in range(repeats or self.repeats):
            if self.before:
                self.before()
            t = time.perf_counter()
            n, c = fn()
            rates.append(n / (time.perf_counter() - t))
            self.checksums[name] = c
        return float(statistics.median(rates))


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except ImportError:  # pragma: no cover - Windows
        import psutil

        return float(psutil.Process().memory_info().peak_wset) / 2**20


class RssSampler:
    """The peak resident memory of this process per phase of the bench, sampled every
    ``every_s`` by a thread (``ru_maxrss`` only rises, so it cannot tell a later phase's
    peak from an earlier one's; each phase here has its own)."""

    def __init__(self, every_s: float = 0.02) -> None:
        import threading

        self.every_s = every_s
        self.current = "start"
        self.peaks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    @staticmethod
    def rss_mb() -> float:
        try:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError, IndexError):  # not Linux: the process's peak so far
            return _peak_rss_mb()

    def _sample(self) -> None:
        now = self.rss_mb()
        self.peaks[self.current] = max(self.peaks.get(self.current, 0.0), now)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._sample()

    def phase(self, name: str) -> None:
        self._sample()
        self.current = name
        self._sample()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self._sample()
        return {k: round(v, 1) for k, v in self.peaks.items()}


def mixing_score(p: BatchPipeline, max_batches: int = 200) -> float:
    counts = p.ds.class_counts.astype(np.float64)
    dist = counts / counts.sum()
    tv = []
    for i, b in enumerate(p.numpy_batches(0)):
        h = np.bincount(b[1], minlength=len(dist)) / len(b[1])
        tv.append(0.5 * np.abs(h - dist).sum())
        if i + 1 >= max_batches:
            break
    return float(1.0 - np.mean(tv))


parse_threads = int_list("--threads", "thread counts", "2 or 1,2,4")


def _pipeline_passes(
    ds: Dataset, rows: int, batch: int, threads: int, word: int
) -> tuple[BatchPipeline, Pass, Pass]:
    p = BatchPipeline(ds, batch_size=batch, threads=threads)
    consume = rp.tf_consumer(word)
    steps = -(-rows // batch)

    def numpy_pass() -> tuple[int, int]:
        n = c = 0
        for b in p.numpy_batches(0):
            n += len(b[1])
            c += rp.checksum_np(b[0], b[1], word)
            if n >= rows:
                break
        return n, c & rp.MASK

    consume(p.tf_dataset(1).take(2))  # trace the consumer outside the clock
    return p, numpy_pass, lambda: consume(p.tf_dataset(1).take(steps))


def run_bench(
    path: str,
    rows: int,
    batch: int,
    repeats: int,
    naive_rows: int,
    threads: list[int] | int | None = None,
    cold: bool = False,
) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    ds = Dataset(path)
    rows = min(rows, len(ds))
    counts = [threads] if isinstance(threads, int) else (threads or [default_reader_threads()])
    top = max(counts)
    word = rp.word_bytes(ds.row_nbytes)
    files = rp.dataset_files(ds)  # the TFRecord file joins once written
    timer = Timer(repeats, (lambda: rp.evict(files)) if cold else None)
    if not cold:
        rp.warm(files)
    rss_base = _peak_rss_mb()
    sampler = RssSampler()
    out: dict[str, Any] = {
        "path": str(ds.path),
        "dataset_rows": len(ds),
        "rows_per_pass": rows,
        "sample_shape": list(ds.sample_shape),
        "dtype": ds.dtype.name,
        "batch_size": batch,
        "repeats": repeats,
        "threads": top,
        "cpu_count": os.cpu_count(),
        "cache": "cold" if cold else "warm",
    }
    rate: dict[str, float] = {}
    sampler.phase("naive_h5py")
    rate["naive_h5py"] = timer.rate("naive_h5py", lambda: rp.naive_h5py(ds, naive_rows, word))
    sampler.phase("guiapp")
    p, numpy_pass, tf_pass = _pipeline_passes(ds, rows, batch, top, word)
    rate["numpy_iter"] = timer.rate("numpy_iter", numpy_pass)
    rate["tfdata"] = timer.rate("tfdata", tf_pass)
    out["rss_after_tf_import_mb"] = round(rss_base, 1)
    out["pipeline_buffers_mb"] = round(
        (p.reader.pool.allocated_bytes + p.prefetch * p.plan.batch_size * (ds.row_nbytes + 4))
        / 2**20,
        1,
    )
    out["mixing_score"] = round(mixing_score(p), 4)
    p.close()
    sampler.phase("raw_limit")
    rate["raw_limit_1t"] = timer.rate("raw_limit_1t", lambda: rp.raw_limit(ds, rows, 1, word))
    rate["raw_limit"] = timer.rate("raw_limit", lambda: rp.raw_limit(ds, rows, top, word))
    sampler.phase("tfrecord")
    with tempfile.TemporaryDirectory(dir=ds.path.parent) as tmp:
        rec = Path(tmp) / "bench.tfrecord"
        out["tfrecord_rows"] = rp.write_tfrecords(ds, rows, rec, batch)
        files.append(rec)
        if not cold:
            rp.warm([rec])
        consume = rp.tf_consumer(word)
        consume(rp.tfrecord_dataset(rec, ds, rp.TFRECORD_DEFAULT).take(2))  # trace it

        def tfrecord(settings: dict[str, Any]) -> Pass:
            return lambda: consume(rp.tfrecord_dataset(rec, ds, settings))

        rate["tfrecord"] = timer.rate("tfrecord", tfrecord(rp.TFRECORD_DEFAULT))
        tried = {
            json.dumps(s): timer.rate("tfrecord_tuned", tfrecord(s), repeats=1)
            for s in rp.tfrecord_candidates(top)
        }
        best = json.loads(max(tried, key=lambda k: tried[k]))
        out["tfrecord_tuned_settings"] = best
        rate["tfrecord_tuned"] = timer.rate("tfrecord_tuned", tfrecord(best))
        files.remove(rec)
    if len(counts) > 1:
        sampler.phase("guiapp")
        out["scaling"] = [_scaling_row(ds, rows, batch, t, word, timer) for t in counts]
    # The true peaks, sampled across the whole run: ours (the reader and its tf.data
    # passes) and each reference path's, and the run's (previously the peak was read
    # before the TFRecord passes ran, and missed them).
    out["peak_rss_by_phase_mb"] = sampler.stop()
    out["peak_rss_guiapp_mb"] = out["peak_rss_by_phase_mb"].get("guiapp")
    out["peak_rss_mb"] = round(max(_peak_rss_mb(), *out["peak_rss_by_phase_mb"].values()), 1)
    out["rows_per_s"] = {k: round(v) for k, v in rate.items()}
    out["mb_per_s"] = {k: round(v * (ds.row_nbytes + 4) / 1e6, 1) for k, v in rate.items()}
    out["ratios"] = {
        "tfdata_vs_raw_limit": round(rate["tfdata"] / rate["raw_limit"], 3),
        "tfdata_vs_raw_limit_1t": round(rate["tfdata"] / rate["raw_limit_1t"], 3),
        "numpy_iter_vs_raw_limit": round(rate["numpy_iter"] / rate["raw_limit"], 3),
        "tfdata_vs_tfrecord": round(rate["tfdata"] / rate["tfrecord"], 3),
        "tfdata_vs_tfrecord_tuned": round(rate["tfdata"] / rate["tfrecord_tuned"], 3),
        "tfdata_vs_naive": round(rate["tfdata"] / rate["naive_h5py"], 2),
    }
    out["checksums"] = dict(timer.checksums)
    return out


def _scaling_row(
    ds: Dataset, rows: int, batch: int, threads: int, word: int, timer: Timer
) -> dict[str, Any]:
    p, numpy_pass, tf_pass = _pipeline_passes(ds, rows, batch, threads, word)
    try:
        r = {
            "threads": threads,
            "tfdata": timer.rate(f"tfdata_{threads}t", tf_pass),
            "numpy_iter": timer.rate(f"numpy_iter_{threads}t", numpy_pass),
            "raw_limit": timer.rate(
                f"raw_limit_{threads}t", lambda: rp.raw_limit(ds, rows, threads, word)
            ),
        }
    finally:
        p.close()
    r["tfdata_vs_raw_limit"] = round(r["tfdata"] / r["raw_limit"], 3)
    return {
        k: round(v) if isinstance(v, float) and k != "tfdata_vs_raw_limit" else v
        for k, v in r.items()
    }


NAMES = (
    "naive_h5py",
    "tfrecord",
    "tfrecord_tuned",
    "raw_limit_1t",
    "raw_limit",
    "numpy_iter",
    "tfdata",
)


def cmd_bench_read(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()
    res = run_bench(
        args.path, args.rows, args.batch, args.repeats, args.naive_rows, args.threads, args.cold
    )
    return print_result(res, args.json, format_text)


def format_text(res: dict[str, Any]) -> str:
    r, m = res["rows_per_s"], res["mb_per_s"]
    lines = [
        f"bench read {res['path']}: {res['rows_per_pass']:,} rows/pass, batch {res['batch_size']}, "
        f"{res['threads']} thread(s), {res['cache']} cache, median of {res['repeats']}"
    ]
    lines += [f"  {k:<16} {r[k]:>12,} rows/s  {m[k]:>9,.1f} MB/s" for k in NAMES]
    lines += [f"  {k:<26} {v}" for k, v in res["ratios"].items()]
    for row in res.get("scaling", []):
        lines.append(
            f"  {row['threads']:>2} thread(s): tfdata {row['tfdata']:,}  numpy_iter "
            f"{row['numpy_iter']:,}  raw_limit {row['raw_limit']:,}  ({row['tfdata_vs_raw_limit']})"
        )
    lines.append(
        f"  tfrecord_tuned settings {json.dumps(res['tfrecord_tuned_settings'])}; mixing score "
        f"{res['mixing_score']}, pipeline buffers {res['pipeline_buffers_mb']} MiB, "
        f"RSS after importing TensorFlow {res['rss_after_tf_import_mb']} MiB, peak RSS "
        f"{res['peak_rss_mb']} MiB (sampled by phase: "
        + ", ".join(f"{k} {v}" for k, v in res["peak_rss_by_phase_mb"].items())
        + ")"
    )
    return "\n".join(lines)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "read", help="reader speed vs h5py, TFRecord and the raw preadv limit (same consumer)"
    )
    s.add_argument("path", help="dataset NAME.h5 (e.g. made by 'guiapp generate')")
    s.add_argument("--rows", type=int, default=2_000_000, help="rows per pass (default: 2,000,000)")
    s.add_argument("--batch", type=int, default=512)
    s.add_argument(
        "--repeats",
        "--repeat",
        type=int,
        default=3,
        help="passes per measurement; the median counts (default 3)",
    )
    s.add_argument(
        "--naive-rows",
        type=int,
        default=50_000,
        help="rows per pass of the per-sample h5py reference",
    )
    s.add_argument(
        "--threads",
        type=parse_threads,
        default=None,
        help="reader threads (default: the cores, at most 8); a list such as 1,2,4 also "
        "measures the reader and the raw limit at each count",
    )
    s.add_argument(
        "--cold",
        action="store_true",
        help="drop every file any path reads from the page cache before every pass",
    )
    json_option(s, cmd_bench_read)
