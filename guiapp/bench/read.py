"""``guiapp bench read PATH``: the reader against its references, on the same file, in one run.

Measured (rows/s, each the median of ``--repeats`` passes over ``--rows`` rows):
- ``naive_h5py``: one ``dataset[i]`` per sample in a random order (the Keras Sequence way);
- ``tfrecord``: a TFRecord file of the same rows written by the bench, one record per batch
  of 512 rows (the fast TFRecord layout), read with ``TFRecordDataset`` + ``parse`` + prefetch;
- ``memmap_limit``: one thread copying whole blocks, in a random block order, from
  memmaps opened for the pass into one reused buffer (the raw limit: mapping the pages is
  part of reading them); ``memmap_all_threads``: the same on every core;
- ``memcpy_mapped``: the same through memmaps kept open across passes, so that after the
  first pass the pages are already mapped: a plain memory copy, for reference;
- ``numpy_iter``: ``BatchPipeline.numpy_batches`` consumed by a no-op loop;
- ``tfdata``: ``BatchPipeline.tf_dataset`` consumed by a no-op loop inside a ``tf.function``.
Also peak RSS and the mixing score (how close each batch's class histogram is to the
dataset's: 1 = identical).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core.pipeline import BatchPipeline
from ..core.store import Dataset


def _files(ds: Dataset) -> list[Path]:
    return sorted({ds.path, *(sh.path for sh in ds.shards)})


def set_cache(ds: Dataset, warm: bool) -> None:
    """Warm: read every file once so the page cache holds it. Cold: ask the kernel to drop it."""
    for path in _files(ds):
        fd = os.open(path, os.O_RDONLY)
        try:
            if warm:
                while os.read(fd, 16 << 20):
                    pass
            elif hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


_BEFORE_PASS: list[Callable[[], None]] = []


def _median_rate(fn: Callable[[], int], repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        for hook in _BEFORE_PASS:
            hook()
        t = time.perf_counter()
        n = fn()
        rates.append(n / (time.perf_counter() - t))
    return float(statistics.median(rates))


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except ImportError:  # pragma: no cover - Windows
        import psutil

        return float(psutil.Process().memory_info().peak_wset) / 2**20


def naive_h5py(ds: Dataset, rows: int, seed: int = 0) -> int:
    """``x[i], y[i]`` per sample in random order, straight from the shard files (reading
    through the index's virtual datasets would be slower still)."""
    import h5py

    order = np.random.default_rng(seed).integers(0, len(ds), rows)
    files = [h5py.File(sh.path, "r", locking=False) for sh in ds.shards]
    try:
        xs = [f["x"] for f in files]
        ys = [f["y"] for f in files]
        for i in order.tolist():
            k, j = ds.locate(i)
            xs[k][j]
            ys[k][j]
    finally:
        for f in files:
            f.close()
    return rows


def memmap_blocks(
    ds: Dataset,
    rows: int,
    threads: int,
    block_rows: int = 1024,
    seed: int = 0,
    fresh: bool = True,
) -> int:
    """Copy whole blocks, in a random block order, from memmaps into one reused buffer per thread.

    ``fresh`` (the limit): the shards are mapped anew for the pass, so the pass pays for
    mapping the pages it reads, as every epoch of a dataset larger than memory must.
    ``fresh=False`` keeps the dataset's own memmaps: after the first pass the pages are
    already mapped and the pass is a plain memory copy.
    """
    from ..core.store.shard import raw_arrays

    nblocks = max(1, len(ds) // block_rows)
    want = max(1, rows // block_rows)
    order = np.random.default_rng(seed).permutation(nblocks)[:want]
    arrays = []
    for k, sh in enumerate(ds.shards):
        if fresh and sh.x_offset is not None and sh.y_offset is not None:
            arrays.append(
                raw_arrays(
                    sh.path, sh.x_offset, sh.y_offset, sh.committed, ds.sample_shape, ds.dtype
                )
            )
        else:
            arrays.append(ds.shard_arrays(k))

    def work(blocks: np.ndarray) -> None:
        buf = np.empty((block_rows, *ds.sample_shape), ds.dtype)
        ybuf = np.empty(block_rows, np.int32)
        for b in blocks.tolist():
            k, j = ds.locate(b * block_rows)
            n = min(block_rows, ds.shards[k].committed - j)
            buf[:n] = arrays[k][0][j : j + n]
            ybuf[:n] = arrays[k][1][j : j + n]

    parts = [order[i::threads] for i in range(threads)]
    if threads == 1:
        work(parts[0])
    else:
        ts = [threading.Thread(target=work, args=(p,)) for p in parts]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    arrays.clear()  # unmap: the next pass maps the files afresh
    return len(order) * block_rows


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


def write_tfrecords(ds: Dataset, rows: int, path: Path, batch: int = 512) -> int:
    import tensorflow as tf

    n = min(rows, len(ds))
    with tf.io.TFRecordWriter(str(path)) as w:
        for a in range(0, n, batch):
            x, y = ds.read_range(a, min(n, a + batch))
            feat = {
                "x": tf.train.Feature(bytes_list=tf.train.BytesList(value=[x.tobytes()])),
                "y": tf.train.Feature(bytes_list=tf.train.BytesList(value=[y.tobytes()])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=feat)).SerializeToString())
    return n


def run_bench(
    path: str,
    rows: int,
    batch: int,
    repeats: int,
    naive_rows: int,
    threads: int,
    cold: bool = False,
) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    ds = Dataset(path)
    rows = min(rows, len(ds))
    _BEFORE_PASS.clear()
    if cold:
        _BEFORE_PASS.append(lambda: set_cache(ds, warm=False))
    else:
        set_cache(ds, warm=True)
    rss_base = _peak_rss_mb()
    out: dict[str, Any] = {
        "path": str(ds.path),
        "dataset_rows": len(ds),
        "rows_per_pass": rows,
        "sample_shape": list(ds.sample_shape),
        "dtype": ds.dtype.name,
        "batch_size": batch,
        "repeats": repeats,
        "cpu_count": os.cpu_count(),
        "cache": "cold" if cold else "warm",
    }
    rate: dict[str, float] = {}
    rate["naive_h5py"] = _median_rate(lambda: naive_h5py(ds, naive_rows), repeats)

    p = BatchPipeline(ds, batch_size=batch, threads=threads)

    def numpy_pass() -> int:
        n = 0
        for b in p.numpy_batches(0):
            n += len(b[1])
            if n >= rows:
                break
        return n

    rate["numpy_iter"] = _median_rate(numpy_pass, repeats)

    @tf.function
    def consume(d: Any) -> Any:
        n = tf.constant(0, tf.int64)
        for x, _y in d:
            n += tf.cast(tf.shape(x)[0], tf.int64)
        return n

    steps = -(-rows // batch)
    rate["tfdata"] = _median_rate(lambda: int(consume(p.tf_dataset(1).take(steps))), repeats)

    # Peak RSS up to here: TensorFlow and the pipeline. The TFRecord reference and the memmap
    # passes come after (a memmap counts the file's pages as this process's RSS).
    out["rss_after_tf_import_mb"] = round(rss_base, 1)
    out["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    out["pipeline_buffers_mb"] = round(
        (p.reader.pool.allocated_bytes + p.prefetch * p.plan.batch_size * (ds.row_nbytes + 4))
        / 2**20,
        1,
    )
    with tempfile.TemporaryDirectory(dir=ds.path.parent) as tmp:
        rec = Path(tmp) / "bench.tfrecord"
        n_rec = write_tfrecords(ds, rows, rec, batch)
        shape = (-1, *ds.sample_shape)
        ds_dt = tf.as_dtype(ds.dtype)
        desc = {
            "x": tf.io.FixedLenFeature([], tf.string),
            "y": tf.io.FixedLenFeature([], tf.string),
        }

        def parse(r: Any) -> Any:
            e = tf.io.parse_single_example(r, desc)
            return tf.reshape(tf.io.decode_raw(e["x"], ds_dt), shape), tf.io.decode_raw(
                e["y"], tf.int32
            )

        def tfrecord_pass() -> int:
            d = tf.data.TFRecordDataset(str(rec), buffer_size=8 << 20).shuffle(64, seed=0)
            d = d.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
            return int(consume(d))

        rate["tfrecord"] = _median_rate(tfrecord_pass, repeats)
        out["tfrecord_rows"] = n_rec
    rate["memmap_limit"] = _median_rate(lambda: memmap_blocks(ds, rows, 1), repeats)
    rate["memmap_all_threads"] = _median_rate(
        lambda: memmap_blocks(ds, rows, os.cpu_count() or 1), repeats
    )
    rate["memcpy_mapped"] = _median_rate(lambda: memmap_blocks(ds, rows, 1, fresh=False), repeats)
    out["rows_per_s"] = {k: round(v) for k, v in rate.items()}
    out["mb_per_s"] = {k: round(v * (ds.row_nbytes + 4) / 1e6, 1) for k, v in rate.items()}
    out["ratios"] = {
        "tfdata_vs_memmap": round(rate["tfdata"] / rate["memmap_limit"], 3),
        "tfdata_vs_memmap_all_threads": round(rate["tfdata"] / rate["memmap_all_threads"], 3),
        "tfdata_vs_tfrecord": round(rate["tfdata"] / rate["tfrecord"], 3),
        "tfdata_vs_naive": round(rate["tfdata"] / rate["naive_h5py"], 2),
        "numpy_iter_vs_memmap": round(rate["numpy_iter"] / rate["memmap_limit"], 3),
        "tfdata_vs_memcpy_mapped": round(rate["tfdata"] / rate["memcpy_mapped"], 3),
    }
    out["mixing_score"] = round(mixing_score(p), 4)
    p.close()
    return out


def cmd_bench_read(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()
    res = run_bench(
        args.path, args.rows, args.batch, args.repeats, args.naive_rows, args.threads, args.cold
    )
    if args.json:
        sys.stdout.write(json.dumps(res, indent=2) + "\n")
        return 0
    r, m = res["rows_per_s"], res["mb_per_s"]
    lines = [
        f"bench read {res['path']}: {res['rows_per_pass']:,} rows/pass, batch {res['batch_size']}, median of {res['repeats']}"
    ]
    for k in (
        "naive_h5py",
        "tfrecord",
        "memmap_limit",
        "memmap_all_threads",
        "numpy_iter",
        "tfdata",
        "memcpy_mapped",
    ):
        lines.append(f"  {k:<20} {r[k]:>12,} rows/s  {m[k]:>9,.1f} MB/s")
    for k, v in res["ratios"].items():
        lines.append(f"  {k:<30} {v}")
    lines.append(
        f"  mixing score {res['mixing_score']}, pipeline buffers {res['pipeline_buffers_mb']} MiB, "
        f"RSS after importing TensorFlow {res['rss_after_tf_import_mb']} MiB, peak RSS {res['peak_rss_mb']} MiB"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser("read", help="reader speed vs h5py, TFRecord and the raw memmap limit")
    s.add_argument("path", help="dataset NAME.h5 (e.g. made by 'guiapp generate')")
    s.add_argument("--rows", type=int, default=2_000_000, help="rows per pass (default: 2,000,000)")
    s.add_argument("--batch", type=int, default=512)
    s.add_argument(
        "--repeats", type=int, default=3, help="passes per measurement; the median counts"
    )
    s.add_argument(
        "--naive-rows",
        type=int,
        default=50_000,
        help="rows per pass of the per-sample h5py reference",
    )
    s.add_argument("--threads", type=int, default=2, help="reader threads of the pipeline")
    s.add_argument(
        "--cold", action="store_true", help="drop the files from the page cache before every pass"
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_bench_read)
