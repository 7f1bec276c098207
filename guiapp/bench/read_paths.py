"""The paths ``guiapp bench read`` times, and the one consumer they all feed.

The consumer (``checksum_np`` / ``checksum_tf``) reads every byte of every batch once: the
sum, wrapping modulo 2**32, of the batch's bytes taken as 32-bit words (16- or 8-bit words
when a row is not a whole number of them), plus the sum of its labels. A row holds whole
words, so the sum does not depend on the order of the rows: every path that reads the same
rows gives the same checksum, which the bench reports (a path that skipped bytes would
show). Both are the fastest whole-batch reduction of their framework measured here, so
neither side is handed a slow consumer.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core.pipeline.reader import ALIGN
from ..core.store import Dataset
from ..core.store.format import LABEL_DTYPE

MASK = (1 << 32) - 1
_WORD = {4: np.int32, 2: np.int16, 1: np.int8}


def word_bytes(row_nbytes: int) -> int:
    """The widest word (4, 2 or 1 bytes) a row holds a whole number of."""
    return next(w for w in (4, 2, 1) if row_nbytes % w == 0)


def checksum_np(x: np.ndarray, y: np.ndarray, word: int) -> int:
    """The consumer, in numpy: every byte of ``x`` and ``y`` read once."""
    flat = np.ascontiguousarray(x).reshape(-1).view(np.uint8).view(_WORD[word])
    sx = int(np.add.reduce(flat, dtype=np.int32 if word == 4 else np.int64))
    return (sx + int(np.add.reduce(y, dtype=np.int64))) & MASK


def checksum_tf(x: Any, y: Any, word: int) -> Any:
    """The consumer, as TensorFlow ops (inside a ``tf.function``): the same sum as
    ``checksum_np``, as an int32 (wrapping; ``& MASK`` gives ``checksum_np``'s value). As
    few ops as it can be: each op in a loop body costs a fixed few microseconds."""
    import tensorflow as tf

    size = x.dtype.size
    flat = tf.reshape(x, [-1])
    wdt = {4: tf.int32, 2: tf.int16, 1: tf.int8}[word]
    if size < word:
        words = tf.bitcast(tf.reshape(flat, [-1, word // size]), wdt)
    else:
        words = tf.reshape(tf.bitcast(flat, wdt), [-1])
    if word != 4:
        words = tf.cast(words, tf.int32)
    return tf.reduce_sum(words) + tf.reduce_sum(y)


def tf_consumer(word: int) -> Callable[[Any], tuple[int, int]]:
    """A ``tf.function`` looping over a dataset of ``(x, y, ...)`` batches in the graph (as a
    training step loop does): returns ``(rows, checksum)``."""
    import tensorflow as tf

    @tf.function
    def consume(d: Any) -> Any:
        n = tf.constant(0, tf.int64)
        c = tf.constant(0, tf.int32)
        for b in d:
            n += tf.cast(tf.size(b[1]), tf.int64)
            c += checksum_tf(b[0], b[1], word)
        return n, c

    def run(d: Any) -> tuple[int, int]:
        n, c = consume(d)
        return int(n), int(c) & MASK

    return run


def evict(paths: list[Path]) -> None:
    """Ask the kernel to drop these files from the page cache (written back first)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            if hasattr(os, "posix_fadvise"):
                os.fsync(fd)  # dirty pages (a file just written) would stay cached
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(paths: list[Path]) -> None:
    """Read every file once so the page cache holds it."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            while os.read(fd, 16 << 20):
                pass
        finally:
            os.close(fd)


def dataset_files(ds: Dataset) -> list[Path]:
    return sorted({ds.path, *(sh.path for sh in ds.shards)})


def naive_h5py(ds: Dataset, rows: int, word: int, seed: int = 0) -> tuple[int, int]:
    """``x[i], y[i]`` per sample in a random order (no row twice), straight from the shard
    files (the index's virtual datasets would be slower still); each sample consumed."""
    import h5py

    order = np.random.default_rng(seed).permutation(len(ds))[:rows]
    files = [h5py.File(sh.path, "r", locking=False) for sh in ds.shards]
    c = 0
    try:
        xs = [f["x"] for f in files]
        ys = [f["y"] for f in files]
        for i in order.tolist():
            k, j = ds.locate(i)
            c += checksum_np(xs[k][j], np.asarray(ys[k][j]).reshape(1), word)
    finally:
        for f in files:
            f.close()
    return len(order), c & MASK


def _aligned(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + ALIGN, np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off : off + nbytes]


def raw_limit(
    ds: Dataset, rows: int, threads: int, word: int, block_rows: int = 1024, seed: int = 0
) -> tuple[int, int]:
    """The store's own best single copy: whole blocks, in a random block order, each read by
    one ``preadv`` of its x bytes and one of its labels into a reused aligned buffer per
    thread, then consumed. A block cut short by its shard's end counts its own rows.

    Returns ``(rows read, checksum)``; ``rows >= len(ds)`` reads every row once.
    """
    blocks: list[tuple[int, int, int]] = []  # (shard, first local row, rows)
    for k, sh in enumerate(ds.shards):
        if sh.committed and (sh.x_offset is None or sh.y_offset is None):
            raise ValueError(f"{sh.path}: compressed shards have no raw limit")
        blocks += [
            (k, a, min(block_rows, sh.committed - a)) for a in range(0, sh.committed, block_rows)
        ]
    order = np.random.default_rng(seed).permutation(len(blocks)).tolist()
    want, total = [], 0
    for i in order:
        if total >= rows:
            break
        want.append(blocks[i])
        total += blocks[i][2]
    metas = list(ds.shards)  # each ``ds.shards[k]`` builds its ShardMeta anew: once here
    offsets = [(sh.x_offset or 0, sh.y_offset or 0) for sh in metas]
    fds = [os.open(sh.path, os.O_RDONLY) for sh in metas]
    rb = ds.row_nbytes
    sums = [0] * threads

    def work(t: int) -> None:
        xb = _aligned(block_rows * rb)
        yb = _aligned(block_rows * LABEL_DTYPE.itemsize)
        xmv, ymv = xb.data, yb.data
        c = 0
        for k, a, n in want[t::threads]:
            xo, yo = offsets[k]
            _pread_all(fds[k], xmv[: n * rb], xo + a * rb)
            _pread_all(fds[k], ymv[: n * 4], yo + a * 4)
            c += checksum_np(xb[: n * rb], yb[: n * 4].view(LABEL_DTYPE), word)
        sums[t] = c

    try:
        if threads == 1:
            work(0)
        else:
            ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
            for th in ts:
                th.start()
            for th in ts:
                th.join()
    finally:
        for fd in fds:
            os.close(fd)
    return total, sum(sums) & MASK


def _pread_all(fd: int, view: memoryview, pos: int) -> None:
    while len(view):
        got = os.preadv(fd, [view], pos)
        if got <= 0:
            raise OSError(f"unexpected end of file (fd {fd}, offset {pos})")
        view, pos = view[got:], pos + got


def write_tfrecords(ds: Dataset, rows: int, path: Path, batch: int, start: int = 0) -> int:
    """The same rows (``rows`` from row ``start`` on) as a TFRecord file, one record per
    batch (the fast TFRecord layout); returns the rows written."""
    import tensorflow as tf

    n = min(start + rows, len(ds))
    with tf.io.TFRecordWriter(str(path)) as w:
        for a in range(start, n, batch):
            x, y = ds.read_range(a, min(n, a + batch))
            feat = {
                "x": tf.train.Feature(bytes_list=tf.train.BytesList(value=[x.tobytes()])),
                "y": tf.train.Feature(bytes_list=tf.train.BytesList(value=[y.tobytes()])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=feat)).SerializeToString())
    return max(0, n - start)


#: TFRecord settings: the default is the tf.data guide's (AUTOTUNE everywhere); the tuned
#: candidates set every stage by hand with the autotuner off, as the reader does. The bench
#: times each candidate (the default too) once and reports the best with its settings.
TFRECORD_DEFAULT: dict[str, Any] = {"autotune": True}


def tfrecord_candidates(threads: int) -> list[dict[str, Any]]:
    """The settings ``tfrecord_tuned`` chooses from (the default among them)."""
    out = [TFRECORD_DEFAULT]
    for calls in sorted({1, threads}):
        for buffer_mb in (1, 16):
            out.append(
                {"autotune": False, "parallel_calls": calls, "prefetch": 4, "buffer_mb": buffer_mb}
            )
    return out


def tfrecord_dataset(path: Path, ds: Dataset, settings: dict[str, Any], shuffle: int = 64) -> Any:
    import tensorflow as tf

    shape = (-1, *ds.sample_shape)
    ds_dt = tf.as_dtype(ds.dtype)
    desc = {
        "x": tf.io.FixedLenFeature([], tf.string),
        "y": tf.io.FixedLenFeature([], tf.string),
    }

    def parse(r: Any) -> Any:
        e = tf.io.parse_single_example(r, desc)
        x = tf.reshape(tf.io.decode_raw(e["x"], ds_dt), shape)
        return x, tf.io.decode_raw(e["y"], tf.int32)

    if settings.get("autotune", True):
        d = tf.data.TFRecordDataset(str(path)).shuffle(shuffle, seed=0)
        return d.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    d = tf.data.TFRecordDataset(str(path), buffer_size=settings["buffer_mb"] << 20)
    d = d.shuffle(shuffle, seed=0).map(parse, num_parallel_calls=settings["parallel_calls"])
    options = tf.data.Options()
    options.autotune.enabled = False
    return d.prefetch(settings["prefetch"]).with_options(options)
