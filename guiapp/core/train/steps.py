"""The compiled training and prediction steps shared by the runner and ``guiapp bench train``.

``Steps.train(iterator, n)`` runs ``n`` training steps in one ``tf.function`` call (a
``tf.while_loop`` over the iterator, so one trace serves every ``n``), and never returns a
value to Python: each step adds its numbers to :class:`DeviceTotals`, a few variables on
the device that the runner reads once per logging window (:meth:`DeviceTotals.read`).
So the loop synchronises with the device once per ``--log-every`` steps, not per step.

The steps also time their wait for input: the clock is read just before the iterator's
``get_next`` and just after the batch is there (ordered by control dependencies), so the
input wait is the absolute time a step waited for its batch. The clock is
``time.perf_counter`` through ``tf.numpy_function``: ``tf.timestamp`` refuses to run under
``enable_op_determinism``, which exact resume needs. A numpy_function call needs the GIL
(10-250 us, more when the reader threads hold it), and a clock read per step cost a
multi-step call a fifth to a third of its speed and slowed the input it measured (issue
#13). So not every step is timed (:func:`make_steps`' ``schedule``): the first batch of each
of the reader's segments for itself (when input is slow, it is the one that waits), one in
:data:`WAIT_SAMPLE` of the others, picked by a hash of the step's number, for
``WAIT_SAMPLE`` steps (one in :data:`CALM_SAMPLE` after a call that hardly waited), and
every step after a call that waited more than :data:`DENSE_AFTER_S` a step. Each choice depends only on waits already seen, so the
weighted sum is an unbiased estimate of the wait. Workers of a cluster make one choice
together (any waited: dense; all calm: calm), or they would fetch through different ops
and wait for each other forever. The per-call plan makes the loop fetch
through one ``switch_case`` a step: with nothing timed it runs as fast as the untimed loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

#: Slots of :class:`DeviceTotals` (one float64 vector variable: one ``assign_add`` per
#: step, one read per window). Counts are exact in float64 up to 2**53.
LOSS, CORRECT, STEPS, WAIT_S, FINITE = range(5)

#: While the steps do not wait, one in this many has its input wait timed and counts for
#: this many: an estimate of the wait at an eighth of the clock reads (each needs the GIL,
#: which the reader threads may hold).
WAIT_SAMPLE = 8
#: After a call whose timed steps each waited under :data:`CALM_BELOW_S` (the input keeps up),
#: one in this many: the clock's reads were what kept a 0.4 ms step below Keras ``fit``
#: (``guiapp bench train``); a call that waits brings the rate back to WAIT_SAMPLE or dense.
CALM_SAMPLE = 32
CALM_BELOW_S = 5e-4  # a step's own clock reads measure ~0.1-0.3 ms; any choice stays unbiased
#: A call whose steps waited longer than this each (by the estimate) has the next call time
#: every step (the input is slow: timing them all costs nothing then, the steps wait anyway).
DENSE_AFTER_S = 1e-3


class DeviceTotals:
    """The epoch's running sums, held on the device: loss sum, correct predictions, steps
    done in the epoch, seconds waited for input, and steps whose loss was finite.

    A NaN or infinite loss makes the loss sum NaN or infinite for the rest of the epoch,
    so one look at it per read finds it; the steps counted finite before it say where it
    happened (the first such step once the weights are NaN, as they then stay)."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.var = tf.Variable(self.initial(), trainable=False, dtype=tf.float64)
        # The epoch's first step here (0, or where a resumed epoch starts): where the
        # reader's segments start (the wait clock times their first batches).
        self.origin = tf.Variable(0, trainable=False, dtype=tf.int64)

    @staticmethod
    def initial(
        loss: float = 0.0, correct: float = 0.0, steps: int = 0, wait_s: float = 0.0
    ) -> list[float]:
        return [float(loss), float(correct), float(steps), float(wait_s), float(steps)]

    def reset(
        self,
        loss: float = 0.0,
        correct: float = 0.0,
        steps: int = 0,
        wait_s: float = 0.0,
        origin: int | None = None,
    ) -> None:
        """Start an epoch at these sums (zero, or a checkpoint's for a resumed epoch);
        ``origin``: the step the iterator's first segment starts at (default ``steps``)."""
        self.var.assign(self.initial(loss, correct, steps, wait_s))
        self.origin.assign(int(steps if origin is None else origin))

    def read(self) -> list[float]:
        """The sums now: one device-to-host copy (the loop's only synchronisation)."""
        return [float(v) for v in self.var.numpy()]


def _perf_counter() -> np.float64:
    return np.float64(time.perf_counter())


def call_size(step: int, steps: int, per_call: int, *every: int) -> int:
    """Steps in the call starting at ``step`` (of ``steps``): ``per_call``, fewer where the
    epoch's end or the next multiple of one of ``every`` (log, checkpoint) comes sooner."""
    end = min(steps, *(step + e - step % e for e in every))
    return max(1, min(per_call, end - step))


class Steps(NamedTuple):
    train: Callable[[Any, int], None]
    predict: Callable[..., Any]
    per_example_loss: Callable[..., Any]
    totals: DeviceTotals


def make_steps(
    model: Any,
    optimizer: Any,
    loss_obj: Any,
    strategy: Any,
    global_batch: int,
    weighted: bool,
    *,
    timed: bool = True,
    segment_batches: int = 0,
) -> Steps:
    """``train(iterator, n)`` under ``strategy.run``, ``predict(x)`` and the per-example loss.

    The per-replica loss is the sum of per-example losses over the GLOBAL batch, so the
    Keras optimizer's all-reduce (a sum over replicas) yields the mean gradient.
    ``timed=False`` leaves the input-wait clock out (``guiapp bench train`` measures its cost).
    ``segment_batches``: the reader's batches per segment (``BatchPipeline.segment_batches``;
    0 if unknown), whose first batches the clock always times.
    """
    import tensorflow as tf

    loss_obj.reduction = None  # per-example losses
    replicas = int(strategy.num_replicas_in_sync)
    binary = int(model.outputs[0].shape[-1]) == 1
    totals = DeviceTotals()

    def correct_count(y: Any, out: Any) -> Any:
        if binary:
            pred = tf.cast(
                tf.reshape(out, [-1]) > (0.0 if getattr(loss_obj, "from_logits", False) else 0.5),
                tf.int32,
            )
        else:
            pred = tf.argmax(out, -1, output_type=tf.int32)
        return tf.reduce_sum(tf.cast(tf.equal(pred, tf.cast(y, tf.int32)), tf.float32))

    def per_example_loss(y: Any, out: Any) -> Any:
        if binary:
            y = tf.reshape(tf.cast(y, out.dtype), [-1, 1])
        return tf.reshape(loss_obj(y, out), [-1])

    def step_fn(*batch: Any) -> tuple[Any, Any]:
        x, y = batch[0], batch[1]
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            per_example = tf.cast(per_example_loss(y, out), tf.float32)
            if weighted:
                per_example = per_example * tf.cast(batch[2], tf.float32)
            loss = tf.reduce_sum(per_example) / global_batch
            if model.losses:
                loss += tf.add_n(model.losses) / replicas
            scaled = optimizer.scale_loss(loss) if hasattr(optimizer, "scale_loss") else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return tf.reduce_sum(per_example), correct_count(y, out)

    total = tf.distribute.ReduceOp.SUM
    one = tf.constant(1.0, tf.float64)

    zero = tf.constant(0.0, tf.float64)
    sample = WAIT_SAMPLE if timed else 0

    def clock(*after: Any) -> Any:
        """``time.perf_counter()`` once every tensor of ``after`` is there."""
        with tf.control_dependencies(tf.nest.flatten(after, expand_composites=True)):
            return tf.reshape(tf.numpy_function(_perf_counter, [], tf.float64, stateful=True), [])

    def step(batch: Any, wait: Any) -> Any:
        """Train on ``batch`` and count it (``wait``: seconds, weighted, the step waited for
        it); the step's results (what a clock read after the step waits for)."""
        loss_sum, correct = strategy.run(step_fn, args=tuple(batch))
        loss_sum = tf.cast(strategy.reduce(total, loss_sum, axis=None), tf.float64)
        correct = tf.cast(strategy.reduce(total, correct, axis=None), tf.float64)
        finite = tf.cast(tf.math.is_finite(loss_sum), tf.float64)
        totals.var.assign_add(tf.stack([loss_sum, correct, one, wait, finite]))
        return loss_sum, correct

    # Whether the last call waited more than DENSE_AFTER_S a step: the next one then
    # times every step (and each stands for itself); or each timed step under CALM_BELOW_S:
    # the next one samples one in CALM_SAMPLE.
    dense_var = tf.Variable(False, trainable=False, dtype=tf.bool)
    calm_var = tf.Variable(False, trainable=False, dtype=tf.bool)
    # The longest single timed wait of the call, unweighted (-1: none timed): calm is judged
    # on it, not on the weighted sum, where one clock read's own ~0.1-0.3 ms times the rate
    # looked like waiting and flipped the rate back every few calls.
    longest_var = tf.Variable(-1.0, trainable=False, dtype=tf.float64)
    rates = tf.constant([sample, CALM_SAMPLE if sample else 0], tf.int64)

    def schedule(first: Any, n: Any) -> tuple[Any, Any]:
        """For batches 0..n of a call starting at step ``first`` of the epoch: how to fetch
        each (0 not at all: the call's end; 1 untimed; 2 timed) and what a timed wait
        stands for. Made once per call: each op in the loop costs every step a few us.

        The first batch of each of the reader's segments is timed for itself: when the
        input is slow, it is the one that waits (the others are slices of it, already
        there). Of the others one in ``sample``, picked by a hash of the step's number (out
        of step with any cycle of the input), counts for ``sample`` (``CALM_SAMPLE`` after
        a call that hardly waited, ``calm_var``); or all of them, each for itself, after a
        call that waited (``dense_var``). Each choice depends only on
        waits already seen, so the sum of the weighted waits is an unbiased estimate."""
        key = first + tf.range(0, n + 1, dtype=tf.int64)
        seg = key - totals.origin
        if segment_batches:
            seg = seg % segment_batches
        alone = (seg == 0) | dense_var
        rate = rates[tf.cast(calm_var, tf.int32)]
        picked = alone | ((key * 2654435761 % 2**32) // 2**16 % rate == 0)
        plan = tf.where(key < first + tf.cast(n, tf.int64), tf.where(picked, 2, 1), 0)
        return plan, tf.where(alone, one, tf.cast(rate, tf.float64))

    def fetch(iterator: Any, j: Any, sched: Any, after: Any, last: Any) -> Any:
        """Batch ``j`` of the call (``last`` again past its end) and its weighted wait (0
        if not timed)."""
        plan, weights = sched

        def timed() -> tuple[Any, Any]:
            done = clock(*after)  # the step before was done (the call's start for batch 0)
            with tf.control_dependencies([] if after else [done]):
                nxt = iterator.get_next()
            waited = tf.maximum(clock(nxt) - done, 0.0)
            longest_var.assign(tf.maximum(longest_var, waited))
            return nxt, waited * weights[j]

        def untimed() -> tuple[Any, Any]:
            return iterator.get_next(), zero

        if last is None:
            return tf.cond(plan[j] > 1, timed, untimed)
        return tf.switch_case(plan[j], [lambda: (last, zero), untimed, timed])

    @tf.function
    def train_steps(iterator: Any, n: Any) -> None:
        if not sample:
            return _untimed(iterator, n)
        start = totals.var.value()
        longest_var.assign(-1.0)
        sched = schedule(tf.cast(start[STEPS], tf.int64), n)
        batch, wait0 = fetch(iterator, 0, sched, (), None)

        def body(i: Any, batch: Any, wait: Any) -> tuple[Any, ...]:
            # The next batch is fetched while this step runs; the step waited for it only
            # if it came after the step was done.
            done_with = step(batch, wait)
            return (i + 1, *fetch(iterator, i + 1, sched, done_with, batch))

        tf.while_loop(lambda i, *_: i < n, body, [tf.constant(0, tf.int32), batch, wait0])
        waited = totals.var[WAIT_S] - start[WAIT_S]
        dense = waited > DENSE_AFTER_S * tf.cast(n, tf.float64)
        timed_any = longest_var >= 0.0  # a call with no timed step leaves the rate as it was
        calm = tf.where(timed_any, longest_var < CALM_BELOW_S, calm_var)
        if workers:
            dense, calm = agree(dense, calm)
        dense_var.assign(dense)
        calm_var.assign(calm)
        return None

    # Several workers must make the same plan: a timed and an untimed fetch are two
    # get_next ops, each with its own all-reduce across the workers (whether any has data),
    # so a worker fetching one while another fetches the other waits forever. The next
    # call times every step if any worker waited, samples calmly only if all were calm.
    workers = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)

    def agree(dense: Any, calm: Any) -> tuple[Any, Any]:
        flags = tf.cast(tf.stack([dense, calm]), tf.float32)
        out = strategy.reduce(total, strategy.run(tf.identity, args=(flags,)), axis=None)
        return out[0] > 0.0, out[1] >= float(replicas)

    def _untimed(iterator: Any, n: Any) -> None:
        def body(i: Any, batch: Any) -> tuple[Any, Any]:
            step(batch, zero)
            j = i + 1
            return j, tf.cond(j < n, iterator.get_next, lambda: batch)

        tf.while_loop(lambda i, *_: i < n, body, [tf.constant(0, tf.int32), iterator.get_next()])

    def train(iterator: Any, n: int) -> None:
        train_steps(iterator, tf.constant(n, tf.int32))

    @tf.function
    def predict(x: Any) -> Any:
        return model(x, training=False)

    return Steps(train, predict, per_example_loss, totals)
