"""The tf.data face of ``BatchPipeline`` (imported only by processes that train or bench).

Per epoch: the segments (runs of whole batches, at least one and 8 MiB each) ->
``numpy_function(read_segment)`` in parallel (each call fills one 64-byte-aligned pooled
buffer with ``preadv``; TensorFlow adopts it without a copy) -> prefetch of segments, as
far as ``READ_AHEAD_BYTES`` allows (so a batch copied is still in cache when read) ->
``rebatch(batch_size)`` (a segment holds whole batches, so each batch is an aligned slice
of it: no copy either) -> cast, augmentation, class weights only when asked for, then a
prefetch of batches (only then, or across the epochs of a dataset made per epoch; training's
epochs of whole batches without augmentation are one stream of segments, read ahead across
an epoch's end by the segments' own map). The bytes are copied once, from the page
cache into the segment buffer. A numpy_function call costs ~0.1-0.4 ms here and every
stage between the reader and the consumer costs a fixed time per element, so those costs
are paid per segment of thousands of rows, never per batch or row where it can be helped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from ..augment.online import augment_tf

if TYPE_CHECKING:
    from .batches import BatchPipeline

Fn = TypeVar("Fn", bound=Callable[..., Any])


def build_tf_dataset(
    p: BatchPipeline,
    epochs: range,
    start_batch: int,
    x_shape: tuple[int, ...] | None,
    end_batch: int | None = None,
) -> Any:
    import tensorflow as tf

    ds_dtype = tf.as_dtype(p.ds.dtype)
    sample_shape = tuple(x_shape) if x_shape else p.ds.sample_shape
    if int(np.prod(sample_shape)) != int(np.prod(p.ds.sample_shape)):
        raise ValueError(
            f"x_shape {sample_shape} does not hold samples of shape {p.ds.sample_shape}"
        )
    bs = p.plan.batch_size
    out_dtype = tf.as_dtype(p.out_dtype)
    weights = tf.constant(p.weights) if p.weights is not None else None
    spec = p.augment
    seed = p.plan.seed
    # Segments read ahead besides the reader threads' own (``segment_prefetch``: as many as
    # hold ``p.prefetch`` batches within ``READ_AHEAD_BYTES``; often none).
    segment_prefetch = p.segment_prefetch

    def segments_of(epoch: Any) -> np.ndarray:
        e = int(epoch)
        start = start_batch if e == epochs.start else 0
        return np.array(p.segments(e, start, end_batch), dtype=np.int64).reshape(-1, 2)

    def read(epoch: Any, b0: Any, b1: Any) -> tuple[np.ndarray, np.ndarray]:
        x, y = p.read_segment(int(epoch), int(b0), int(b1))
        return x.reshape((len(x), *sample_shape)), y

    # tf.data converts its functions' Python source with AutoGraph unless told not to; these
    # hold no Python control flow on tensors (their ``if``s test Python values), and the
    # conversions cost ~0.3 s of a run's start (``bench baselines``' phases).
    def plain(f: Fn) -> Fn:
        return cast(Fn, tf.autograph.experimental.do_not_convert(f))

    @plain
    def epoch_segments(epoch: Any) -> Any:
        """The epoch's segments as ``(epoch, first, end)`` elements."""
        segs = tf.numpy_function(segments_of, [epoch], tf.int64, stateful=False)
        segs.set_shape((None, 2))

        @plain
        def at(seg: Any) -> tuple[Any, Any, Any]:
            return epoch, seg[0], seg[1]

        return tf.data.Dataset.from_tensor_slices(segs).map(at)

    @plain
    def read_at(epoch: Any, b0: Any, b1: Any) -> tuple[Any, Any]:
        x, y = tf.numpy_function(read, [epoch, b0, b1], [ds_dtype, tf.int32], stateful=False)
        x.set_shape((None, *sample_shape))
        y.set_shape((None,))
        return x, y

    def batches_of(segments: Any) -> Any:
        """The batches of a dataset of ``(epoch, first, end)`` segments."""
        d = segments.map(read_at, num_parallel_calls=p.threads, deterministic=True)
        # The read-ahead holds segments (groups of batches), so its cost is paid per segment;
        # where a segment is large, the parallel map's own segments are all there is.
        if segment_prefetch:
            d = d.prefetch(segment_prefetch)
        # Segments hold whole batches, so every batch is one aligned slice: no copy.
        return d.rebatch(bs, drop_remainder=p.plan.drop_remainder)

    @plain
    def one_epoch(epoch: Any) -> Any:
        """The epoch's batches; ``epoch`` a tf.int64 scalar (one traced function serves
        every epoch of a multi-epoch dataset, ``flat_map`` below)."""
        d = batches_of(epoch_segments(epoch))
        if not spec.active:
            return d

        @plain
        def aug(i: Any, xy: tuple[Any, Any]) -> tuple[Any, Any]:
            s = tf.stack([tf.constant(seed * 1_000_003, tf.int64) + epoch, i])
            return augment_tf(xy[0], spec, s), xy[1]

        first = tf.where(
            tf.equal(epoch, epochs.start),
            tf.constant(start_batch, tf.int64),
            tf.constant(0, tf.int64),
        )
        return d.enumerate(start=first).map(aug, num_parallel_calls=p.threads, deterministic=True)

    if not len(epochs):
        raise ValueError("no epochs to read")
    # Several epochs, every batch whole and no augmentation (which numbers the batches of
    # each epoch): one stream of the epochs' segments, read by one parallel map whose
    # read-ahead runs on across an epoch's end and its validation. Segments hold whole
    # batches, so ``rebatch`` never joins two epochs' rows. (A dataset made per epoch by
    # ``flat_map`` needs a prefetch of batches after it to read across an epoch's end: a
    # thread hand-off per batch, and the first call paid ~0.1 s more for it at 1 M rows.)
    across = len(epochs) > 1 and p.plan.drop_remainder and not spec.active
    if across:
        d = batches_of(tf.data.Dataset.range(epochs.start, epochs.stop).flat_map(epoch_segments))
    elif len(epochs) == 1:
        d = one_epoch(tf.constant(epochs.start, tf.int64))
    else:
        # One dataset over the epochs, each built when the one before ends: a training
        # run keeps one iterator, so the reader and its read-ahead run on across an epoch's
        # end (and its validation) instead of being built again for every epoch.
        d = tf.data.Dataset.range(epochs.start, epochs.stop).flat_map(one_epoch)

    per_batch_maps = spec.active or out_dtype != ds_dtype or weights is not None
    if out_dtype != ds_dtype or weights is not None:

        @plain
        def finish(x: Any, y: Any) -> Any:
            x = tf.cast(x, out_dtype)
            if weights is not None:
                return x, y, tf.gather(weights, y)
            return x, y

        d = d.map(finish, num_parallel_calls=p.threads, deterministic=True)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    # Every stage's parallelism and buffer is set explicitly; the autotuner's own thread and
    # its resizing cost 10-20% here and made whole passes run at half speed on 2 cores.
    options.autotune.enabled = False
    # Order is fixed by the parallel map's own deterministic=True; the global
    # Options.deterministic flag costs a third of the throughput here, so it stays unset.
    d = d.with_options(options)
    # A prefetch of single batches costs a thread hand-off per batch (the reader's wall for
    # short rows): it is there only to run per-batch maps ahead, or across the epochs of a
    # dataset made per epoch.
    return d.prefetch(p.prefetch) if per_batch_maps or (len(epochs) > 1 and not across) else d
