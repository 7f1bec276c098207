"""The compiled training and prediction steps shared by the runner and ``guiapp bench train``.

``Steps.train(iterator, n)`` runs ``n`` training steps in one ``tf.function`` call (a
``tf.while_loop`` over the iterator, so one trace serves every ``n``), and never returns a
value to Python: each step adds its numbers to :class:`DeviceTotals`, a few variables on
the device that the runner reads once per logging window (:meth:`DeviceTotals.read`).
So the loop synchronises with the device once per ``--log-every`` steps, not per step.

Each step also times its own wait for input: the clock is read just before the
iterator's ``get_next`` and just after the batch is there (ordered by control
dependencies), so the input wait is the absolute time the step waited for its batch.
The clock is ``time.perf_counter`` through ``tf.numpy_function`` (about 10 us a call):
``tf.timestamp`` refuses to run under ``enable_op_determinism``, which exact resume needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

#: Slots of :class:`DeviceTotals` (one float64 vector variable: one ``assign_add`` per
#: step, one read per window). Counts are exact in float64 up to 2**53.
LOSS, CORRECT, STEPS, WAIT_S, FINITE = range(5)


class DeviceTotals:
    """The epoch's running sums, held on the device: loss sum, correct predictions, steps
    done in the epoch, seconds waited for input, and steps whose loss was finite.

    A NaN or infinite loss makes the loss sum NaN or infinite for the rest of the epoch,
    so one look at it per read finds it; the steps counted finite before it say where it
    happened (the first such step once the weights are NaN, as they then stay)."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.var = tf.Variable(self.initial(), trainable=False, dtype=tf.float64)

    @staticmethod
    def initial(
        loss: float = 0.0, correct: float = 0.0, steps: int = 0, wait_s: float = 0.0
    ) -> list[float]:
        return [float(loss), float(correct), float(steps), float(wait_s), float(steps)]

    def reset(
        self, loss: float = 0.0, correct: float = 0.0, steps: int = 0, wait_s: float = 0.0
    ) -> None:
        """Start an epoch at these sums (zero, or a checkpoint's for a resumed epoch)."""
        self.var.assign(self.initial(loss, correct, steps, wait_s))

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
) -> Steps:
    """``train(iterator, n)`` under ``strategy.run``, ``predict(x)`` and the per-example loss.

    The per-replica loss is the sum of per-example losses over the GLOBAL batch, so the
    Keras optimizer's all-reduce (a sum over replicas) yields the mean gradient.
    ``timed=False`` leaves the input-wait clock out (``guiapp bench train`` measures its cost).
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

    def clock() -> Any:
        if not timed:
            return tf.constant(0.0, tf.float64)
        return tf.reshape(tf.numpy_function(_perf_counter, [], tf.float64, stateful=True), [])

    def fetch(iterator: Any) -> tuple[Any, Any]:
        """The next batch and the time it was there."""
        batch = iterator.get_next()
        with tf.control_dependencies(tf.nest.flatten(batch, expand_composites=True)):
            return batch, clock()

    def step(batch: Any, wait: Any) -> Any:
        """Train on ``batch`` and count it (``wait``: seconds the step waited for it); the
        time the step was done."""
        loss_sum, correct = strategy.run(step_fn, args=tuple(batch))
        loss_sum = tf.cast(strategy.reduce(total, loss_sum, axis=None), tf.float64)
        correct = tf.cast(strategy.reduce(total, correct, axis=None), tf.float64)
        with tf.control_dependencies([loss_sum, correct]):
            done = clock()
        finite = tf.cast(tf.math.is_finite(loss_sum), tf.float64)
        totals.var.assign_add(tf.stack([loss_sum, correct, one, wait, finite]))
        return done

    @tf.function
    def train_steps(iterator: Any, n: Any) -> None:
        t0 = clock()
        with tf.control_dependencies([t0]):
            batch, t1 = fetch(iterator)

        def body(i: Any, batch: Any, wait: Any) -> tuple[Any, Any, Any]:
            # The next batch is fetched while this step runs; the step waited for it only
            # if it came after the step was done.
            done = step(batch, wait)
            nxt, came = tf.cond(
                i + 1 < n,
                lambda: fetch(iterator),
                lambda: (batch, tf.constant(0.0, tf.float64)),
            )
            return i + 1, nxt, tf.maximum(came - done, 0.0)

        tf.while_loop(lambda i, *_: i < n, body, [tf.constant(0, tf.int32), batch, t1 - t0])

    def train(iterator: Any, n: int) -> None:
        train_steps(iterator, tf.constant(n, tf.int32))

    @tf.function
    def predict(x: Any) -> Any:
        return model(x, training=False)

    return Steps(train, predict, per_example_loss, totals)
