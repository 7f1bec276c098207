"""``BatchPipeline``: shuffled batches of one dataset split, as numpy (here) or tf.data.

>>> p = BatchPipeline("cells.h5", batch_size=512, split="train", splits=SplitSpec(val=0.1))
>>> for x, y in p.numpy_batches(epoch=0):   # no TensorFlow needed
...     ...
>>> ds = p.tf_dataset(epochs=range(0, 10))   # for Keras (see tfdata.py)
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..augment.online import AugmentSpec, augment_numpy
from ..store import Dataset
from .cache import RowCache
from .read_plan import EpochPlan, ReadPlan, SplitSpec
from .reader import WindowReader

#: Reader threads by default: the cores this process may use, at most this many (each
#: thread reads with preadv and releases the GIL; beyond ~8 the page cache or the disk is
#: the limit, not the threads). Issue #14, docs/SCALING.md ("The reader as cores grow").
MAX_DEFAULT_READER_THREADS = 8


#: The least a segment (one hand-off to tf.data) holds, see ``BatchPipeline.segment_batches``.
SEGMENT_MIN_BYTES = 8 << 20
#: The bytes of the segments being read and read ahead, together (at least the segments
#: being read, one a reader thread): a batch is copied into a buffer the steps then read,
#: and when few buffers are in flight it is still in the processor's cache when they do.
#: With 25x25 float32 rows at batch 4096 (10 MB a batch), one batch a segment and nothing
#: read ahead but the readers' own segments took steady epochs from 1.21 s to 0.94-0.98 s,
#: against 16 MiB segments (two batches) and four more read ahead (docs/BENCHMARKS.md,
#: "Few buffers in flight").
READ_AHEAD_BYTES = 24 << 20


def _read_delay_s() -> float:
    try:
        return max(0.0, float(os.environ.get("GUIAPP_READ_DELAY_MS", "0") or 0)) / 1000
    except ValueError:
        return 0.0


#: A test and bench aid, not a setting: ``GUIAPP_READ_DELAY_MS`` (read once, at import)
#: makes each segment read first wait that long per batch it holds, one read at a time
#: across the reader threads (a disk that serves one request at a time), so a test can have
#: input that is genuinely slower than the model on any machine, whatever the segment size.
#: Unset, empty or not a number: no delay.
READ_DELAY_S = _read_delay_s()
_READ_DELAY_LOCK = threading.Lock()


def default_reader_threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_READER_THREADS, cores))


class BatchPipeline:
    """Reads one dataset as batches following a ``ReadPlan``."""

    def __init__(
        self,
        dataset: str | os.PathLike[str] | Dataset,
        *,
        batch_size: int = 512,
        split: str = "all",
        splits: SplitSpec | None = None,
        seed: int = 0,
        block_rows: int = 1024,
        window_blocks: int = 8,
        chunk_rows: int = 64,
        worker: int = 0,
        workers: int = 1,
        shuffle: bool = True,
        drop_remainder: bool = False,
        fraction: float = 1.0,
        dtype: Any = None,
        augment: AugmentSpec | None = None,
        class_weights: str | list[float] | None = None,
        threads: int | None = None,
        prefetch: int = 8,
        use_pread: bool | None = None,
        row_mask: np.ndarray | None = None,
        cache: RowCache | None = None,
        segment_bytes: int = SEGMENT_MIN_BYTES,
    ) -> None:
        self.ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        self.plan = ReadPlan(
            rows=len(self.ds),
            batch_size=batch_size,
            block_rows=block_rows,
            window_blocks=window_blocks,
            chunk_rows=chunk_rows,
            seed=seed,
            split=split,
            splits=splits or SplitSpec(seed=seed),
            worker=worker,
            workers=workers,
            shuffle=shuffle,
            drop_remainder=drop_remainder,
            fraction=fraction,
            row_mask=row_mask,
        )
        self.out_dtype = np.dtype(dtype) if dtype is not None else self.ds.dtype
        self.augment = augment or AugmentSpec()
        self.threads = default_reader_threads() if threads is None else max(1, threads)
        self.prefetch = max(1, prefetch)  # batches tf.data keeps ready
        self.segment_bytes = segment_bytes
        self.reader = WindowReader(
            self.ds, use_pread=use_pread, pool_buffers=6 + 2 * self.threads, cache=cache
        )
        if not self.plan.whole_blocks:  # a grouped split's plan is compiled: not on the first batch
            from .. import jit

            if jit.available():
                from .jitruns import warm

                warm()
        self.weights = self._class_weights(class_weights)
        self._epochs: OrderedDict[int, EpochPlan] = OrderedDict()
        self._whole: dict[tuple[int, ...] | None, Any] = {}
        self._lock = threading.Lock()
        # segments read ahead of tf.data's first call (``start_reading``), by (epoch, b0, b1)
        self._early: dict[tuple[int, int, int], Future[tuple[np.ndarray, np.ndarray]]] = {}

    # -- plan ---------------------------------------------------------------------------
    def epoch_plan(self, epoch: int) -> EpochPlan:
        with self._lock:
            ep = self._epochs.get(epoch)
            if ep is None:
                ep = self.plan.epoch(epoch)
                self._epochs[epoch] = ep
                while len(self._epochs) > 2:
                    self._epochs.popitem(last=False)
            return ep

    @property
    def batches_per_epoch(self) -> int:
        return self.epoch_plan(0).num_batches

    @property
    def rows_per_epoch(self) -> int:
        return self.epoch_plan(0).rows_used

    def _class_weights(self, spec: str | list[float] | None) -> np.ndarray | None:
        if spec is None:
            return None
        if isinstance(spec, str):
            if spec != "balanced":
                raise ValueError(f"class_weights {spec!r}: use 'balanced' or a list of numbers")
            counts = self.ds.class_counts.astype(np.float64)
            w = np.where(counts > 0, counts.sum() / (len(counts) * np.maximum(counts, 1)), 0.0)
            return w.astype(np.float32)
        w = np.asarray(spec, dtype=np.float32)
        if w.shape != (self.ds.num_classes,):
            raise ValueError(
                f"class_weights has {w.size} values; the dataset has {self.ds.num_classes} classes"
            )
        return w

    # -- segments -------------------------------------------------------------------------
    @property
    def segment_batches(self) -> int:
        """Batches read by one call (one hand-off to tf.data): at least one, and at least
        ``segment_bytes`` (``SEGMENT_MIN_BYTES`` unless the pipeline was given less; a
        hand-off costs a fixed ~0.1-0.4 ms, so short rows get more batches per hand-off).
        A segment may hold part of a window, or several. Which rows each batch holds does
        not depend on it; docs/BENCHMARKS.md ("The reader's hand-off", "Few buffers in
        flight")."""
        return max(1, -(-self.segment_bytes // self.batch_bytes))

    @property
    def batch_bytes(self) -> int:
        return self.plan.batch_size * (self.ds.row_nbytes + 4)

    @property
    def segment_prefetch(self) -> int:
        """Segments tf.data reads ahead besides those its reader threads are reading:
        enough to hold ``prefetch`` batches, as far as ``READ_AHEAD_BYTES`` allows (0: the
        readers' own segments are the read-ahead)."""
        seg = self.segment_batches * self.batch_bytes
        room = max(0, READ_AHEAD_BYTES // seg - self.threads)
        return min(room, -(-self.prefetch // self.segment_batches))

    def read_segment(self, epoch: int, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray]:
        """Batches ``[b0, b1)`` of ``epoch``, back to back in one pooled buffer.

        Batch ``b0 + j`` is rows ``[j*B, (j+1)*B)`` of the result (the last may be shorter).
        """
        early = self._early.pop((epoch, b0, b1), None)
        if early is not None:
            return early.result()
        return self._read_segment(epoch, b0, b1)

    def _read_segment(self, epoch: int, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray]:
        if READ_DELAY_S:
            with _READ_DELAY_LOCK:
                time.sleep(READ_DELAY_S * (b1 - b0))
        src, dest, length = self.epoch_plan(epoch).segment_runs(b0, b1)
        x, y = self.reader.buffers(int(length.sum()))
        self.reader.read_runs(src, dest, length, x, y)
        return x, y

    def start_reading(self, epoch: int, start_batch: int = 0, end_batch: int | None = None) -> None:
        """Read the first segments of ``epoch`` from ``start_batch`` (``threads`` of them)
        now, in threads of their own, where ``read_segment`` will find them, and touch the
        pages of the other buffers the read-ahead will hold.

        tf.data starts its reader at the iterator's first ``get_next``, which a run's first
        call of the compiled steps makes only once it has traced them (0.2 s and more): read
        from the files here, the first segments and the fresh buffers' pages come in during
        the trace, on the other core (the compiled reads and the touching hold no GIL). A
        pipeline reading from its memory cache copies its first segment at once anyway; it
        does nothing here. ``close`` drops what was never asked for."""
        if self.reader.cache is not None:
            return
        segs = self.segments(epoch, start_batch, end_batch)[: self.threads]
        if not segs:
            return
        pool = ThreadPoolExecutor(len(segs), thread_name_prefix="guiapp-first-read")
        for b0, b1 in segs:
            self._early[(epoch, b0, b1)] = pool.submit(self._read_segment, epoch, b0, b1)
        # the buffers the read-ahead holds besides (its segments, those being read and the
        # one the steps slice)
        rows = self.segment_batches * self.plan.batch_size
        busy = self.segment_prefetch + self.threads + 1
        pool.submit(self.reader.pool.touch, rows * self.reader.row_bytes, busy)
        pool.shutdown(wait=False)

    def segments(
        self, epoch: int, start_batch: int = 0, end_batch: int | None = None
    ) -> list[tuple[int, int]]:
        """``(first, end)`` batch numbers of each read of ``epoch`` from ``start_batch`` on
        (up to ``end_batch`` when given: an epoch capped at a number of steps)."""
        n = self.epoch_plan(epoch).num_batches
        if end_batch is not None:
            n = min(n, end_batch)
        g = self.segment_batches
        return [(b, min(b + g, n)) for b in range(start_batch, n, g)]

    # -- numpy batches ------------------------------------------------------------------
    def numpy_batches(
        self, epoch: int = 0, start_batch: int = 0, prefetch: int = 2
    ) -> Iterator[tuple[np.ndarray, ...]]:
        """Yield ``(x, y)`` (or ``(x, y, weight)``) batches of one epoch, without TensorFlow.

        Segments of batches are read ahead by a thread pool; a yielded batch is a view of a
        pooled buffer, valid while it is referenced (copy it to keep it across epochs).
        """
        bs = self.plan.batch_size
        segs = self.segments(epoch, start_batch)
        with ThreadPoolExecutor(self.threads, thread_name_prefix="guiapp-read") as pool:
            pending: deque[Future[tuple[np.ndarray, np.ndarray]]] = deque()
            nxt = 0
            try:
                for b0, b1 in segs:
                    while nxt < len(segs) and len(pending) < prefetch + self.threads:
                        pending.append(pool.submit(self.read_segment, epoch, *segs[nxt]))
                        nxt += 1
                    x, y = pending.popleft().result()
                    for j in range(b1 - b0):
                        sl = slice(j * bs, (j + 1) * bs)
                        yield self._finish(x[sl], y[sl], epoch, b0 + j)
                    del x, y
            finally:
                for f in pending:
                    f.cancel()

    def _finish(
        self, x: np.ndarray, y: np.ndarray, epoch: int, batch: int
    ) -> tuple[np.ndarray, ...]:
        if x.dtype != self.out_dtype:
            x = x.astype(self.out_dtype)
        if self.augment.active:
            x = augment_numpy(
                x, self.augment, np.random.default_rng([self.plan.seed, epoch, batch, 0xA6])
            )
        if self.weights is not None:
            return x, y, self.weights[y]
        return x, y

    # -- tf.data ----------------------------------------------------------------------------
    def tf_dataset(
        self,
        epochs: range | int = 1,
        start_batch: int = 0,
        x_shape: tuple[int, ...] | None = None,
        end_batch: int | None = None,
    ) -> Any:
        """A ``tf.data.Dataset`` of batches for these epochs (imports TensorFlow): the first
        from ``start_batch`` on, each up to ``end_batch`` batches when given."""
        from .tfdata import build_tf_dataset

        if isinstance(epochs, int):
            epochs = range(epochs)
        return build_tf_dataset(self, epochs, start_batch, x_shape, end_batch)

    def whole_split_dataset(self, x_shape: tuple[int, ...] | None = None) -> Any:
        """``tf_dataset`` of epoch 0, built once and iterated again at every call (a
        validation split read whole after each epoch: building it cost ~30 ms a time)."""
        key = tuple(x_shape) if x_shape else None
        got = self._whole.get(key)
        if got is None:
            got = self._whole[key] = self.tf_dataset(range(1), x_shape=x_shape)
        return got

    def close(self) -> None:
        for early in self._early.values():
            early.cancel()
        self._early.clear()
        self._whole.clear()
        self.reader.close()
        self.ds.close()


class WaitMeter:
    """Measures how long the consumer waits for the next batch (the input-bound fraction)."""

    def __init__(self) -> None:
        self.wait_s = 0.0
        self.start = time.perf_counter()
        self.batches = 0

    def wrap(self, it: Iterator[Any]) -> Iterator[Any]:
        while True:
            t = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            self.wait_s += time.perf_counter() - t
            self.batches += 1
            yield item

    def fraction(self) -> float:
        total = time.perf_counter() - self.start
        return self.wait_s / total if total > 0 else 0.0

    def reset(self) -> None:
        self.wait_s = 0.0
        self.batches = 0
        self.start = time.perf_counter()
