"""The compiled training and prediction steps shared by the runner and ``guiapp bench train``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Steps(NamedTuple):
    train: Callable[..., Any]
    predict: Callable[..., Any]
    per_example_loss: Callable[..., Any]


def make_steps(
    model: Any, optimizer: Any, loss_obj: Any, strategy: Any, global_batch: int, weighted: bool
) -> Steps:
    """``train_step(batch) -> (loss_sum, correct)`` under ``strategy.run`` and ``predict(x)``.

    The per-replica loss is the sum of per-example losses over the GLOBAL batch, so the
    Keras optimizer's all-reduce (a sum over replicas) yields the mean gradient.
    """
    import tensorflow as tf

    loss_obj.reduction = None  # per-example losses
    replicas = int(strategy.num_replicas_in_sync)
    binary = int(model.outputs[0].shape[-1]) == 1

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

    @tf.function
    def train_step(batch: Any) -> tuple[Any, Any]:
        loss_sum, correct = strategy.run(step_fn, args=tuple(batch))
        total = tf.distribute.ReduceOp.SUM
        return strategy.reduce(total, loss_sum, axis=None), strategy.reduce(
            total, correct, axis=None
        )

    @tf.function
    def predict(x: Any) -> Any:
        return model(x, training=False)

    return Steps(train_step, predict, per_example_loss)
