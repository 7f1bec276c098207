"""The prediction loop: batches from the reader, in dataset order, through a model, into a
table, committed in whole batches so that a stopped or killed job resumes where it stopped.

``predict_into`` is shared by ``guiapp predict`` (``job.py``) and the evaluation at the end
of a training run (``train/evaluate.py``); ``make_heads`` builds the compiled step that turns
a batch into (probabilities, top-k classes, top-k probabilities, labels) on one device or,
under a ``MirroredStrategy``, split across several and gathered back in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..events import CancelToken
from ..pipeline import BatchPipeline
from ..pipeline.cache import RowCache
from ..pipeline.read_plan import ReadPlan
from ..store import Dataset
from .table import TableWriter

#: ``heads(x, y) -> (probs, topk_class, topk_prob, y)`` as numpy arrays.
Heads = Callable[[Any, Any], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
COMMIT_ROWS = 1 << 16
COMMIT_EVERY_S = 2.0
#: The reader's segments for a prediction: half the training reader's. The pool of segment
#: buffers in flight (read, read ahead, being sliced into batches) is what a prediction's
#: memory grows by once a dataset holds a few segments; at 16 MiB it took peak RSS from 671
#: MB at 1 M rows to 765 MB at 20 M (+14%), docs/BENCHMARKS.md (issue 33.4).
PREDICT_SEGMENT_BYTES = 8 << 20


def pipeline_for(
    ds: Dataset, plan: ReadPlan, dtype: Any = None, cache: RowCache | None = None
) -> BatchPipeline:
    """The reader over ``plan``'s rows in dataset order (no shuffle, no augmentation);
    ``cache``: a training run's rows in memory (its predictions at its end)."""
    return BatchPipeline(
        ds,
        batch_size=plan.batch_size,
        split=plan.split,
        splits=plan.splits,
        seed=plan.seed,
        block_rows=plan.block_rows,
        window_blocks=plan.window_blocks,
        chunk_rows=plan.chunk_rows,
        shuffle=False,
        dtype=dtype,
        row_mask=plan.row_mask,  # a split by groups selects rows, not whole blocks
        segment_bytes=PREDICT_SEGMENT_BYTES,
        cache=cache,
    )


def make_heads(model: Any, strategy: Any, top_k: int, rc_average: bool = False) -> Heads:
    """The compiled prediction step under ``strategy``; returns numpy arrays in batch order.
    ``rc_average``: the mean of the probabilities of each 1-D row and of its reverse (with
    canonical k-mers, the read's reverse complement: ``predict --rc-average``)."""
    import tensorflow as tf

    binary = int(model.outputs[0].shape[-1]) == 1

    def heads(x: Any, y: Any) -> tuple[Any, Any, Any, Any]:
        p = tf.cast(model(x, training=False), tf.float32)
        if rc_average:
            p = 0.5 * (p + tf.cast(model(tf.reverse(x, [1]), training=False), tf.float32))
        if binary:
            p = tf.concat([1.0 - p, p], axis=-1)
        top_p, top_c = tf.math.top_k(p, k=top_k, sorted=True)
        return p, top_c, top_p, y

    if int(strategy.num_replicas_in_sync) == 1:
        with strategy.scope():
            step = tf.function(heads, reduce_retracing=True, autograph=False)
    else:

        def gathered(x: Any, y: Any) -> Any:
            out = strategy.run(heads, args=(x, y))
            return tuple(strategy.gather(o, axis=0) for o in out)

        step = tf.function(gathered, reduce_retracing=True, autograph=False)

    def call(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        p, c, v, yy = step(x, y)
        return p.numpy(), c.numpy(), v.numpy(), yy.numpy()

    return call


def heads_from_predict(predict: Any, top_k: int) -> Heads:
    """Heads around a compiled forward pass ``predict(x, y)`` (the training runner's: its
    validation's, already traced for these batches)."""
    import tensorflow as tf

    def heads(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        p = tf.cast(predict(x, y), tf.float32)
        if int(p.shape[-1]) == 1:
            p = tf.concat([1.0 - p, p], axis=-1)
        top_p, top_c = tf.math.top_k(p, k=top_k, sorted=True)
        return p.numpy(), top_c.numpy(), top_p.numpy(), np.asarray(y)

    return heads


def predict_into(
    table: TableWriter,
    pipe: BatchPipeline,
    heads: Heads,
    *,
    x_shape: tuple[int, ...] | None = None,
    strategy: Any = None,
    cancel: CancelToken | None = None,
    on_commit: Callable[[int], None] | None = None,
    commit_rows: int = COMMIT_ROWS,
    label_map: np.ndarray | None = None,
) -> bool:
    """Predict from the table's committed rows on; True when the table is complete.
    ``label_map`` renumbers the dataset's labels into the model's classes.

    A commit holds whole batches (``committed`` stays a multiple of the batch size until the
    last one), so a resumed job starts at batch ``committed // batch`` and writes the very
    bytes an uninterrupted job writes.
    """
    bs = pipe.plan.batch_size
    if table.committed >= table.rows:
        return True
    if table.committed % bs:
        raise ValueError(f"{table.path}: {table.committed} committed rows is not whole batches")
    d = pipe.tf_dataset(range(1), start_batch=table.committed // bs, x_shape=x_shape)
    if strategy is not None and int(strategy.num_replicas_in_sync) > 1:
        d = strategy.experimental_distribute_dataset(d)
    commit_rows = max(bs, commit_rows // bs * bs)
    parts: list[tuple[np.ndarray, ...]] = []
    pending = 0
    last = time.monotonic()

    def flush() -> None:
        nonlocal parts, pending, last
        if not parts:
            return
        probs, top_c, top_p, y = (np.concatenate(a) for a in zip(*parts, strict=True))
        table.commit(
            pred=top_c[:, 0],
            prob=top_p[:, 0],
            topk_class=top_c,
            topk_prob=top_p,
            label=(y.astype(np.int32) if label_map is None else label_map[y]),
            probs=probs,
        )
        parts, pending, last = [], 0, time.monotonic()
        if on_commit is not None:
            on_commit(table.committed)

    for x, y in d:
        out = heads(x, y)
        parts.append(out)
        pending += len(out[0])
        stop = cancel is not None and cancel.cancelled
        if stop or pending >= commit_rows or time.monotonic() - last >= COMMIT_EVERY_S:
            flush()
        if stop:
            break
    flush()
    return table.committed >= table.rows
