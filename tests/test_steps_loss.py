"""The training steps' cross-entropy under op determinism, on a machine without GPUs.

Op determinism (which exact resume needs) makes TensorFlow build the integer-label
cross-entropy from a log-softmax, a gather and a NaN gate, for the GPU's sake; on the CPU
its fused kernel is deterministic, and the steps use it (``steps.fused_cross_entropy``).
Checked in a process of its own, as a run sets determinism for its whole process.
"""

from __future__ import annotations

import json
import subprocess
import sys

from test_train import ENV

SCRIPT = r"""
import json
import numpy as np
import tensorflow as tf
from tensorflow.python.ops import nn_ops

tf.config.experimental.enable_op_determinism()
import keras

from guiapp.bench.train import TINY
from guiapp.core.model import build_model, compile_parts
from guiapp.core.train.steps import make_steps

keras.utils.set_random_seed(0)
original = nn_ops._sparse_softmax_cross_entropy_with_rank_2_logits
model = build_model(TINY)
loss_obj, optimizer, _ = compile_parts(TINY)
optimizer.build(model.trainable_variables)
steps = make_steps(model, optimizer, loss_obj, tf.distribute.get_strategy(), 16, False)
rng = np.random.default_rng(0)
shape = tuple(TINY["input"]["shape"])
x = rng.normal(size=(16, *shape)).astype(np.float32)
y = rng.integers(0, TINY["layers"][-1]["units"], 16).astype(np.int32)


@tf.function
def loss_and_grads(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(steps.per_example_loss(y, model(x, training=True)))
    return loss, tape.gradient(loss, model.trainable_variables)


graph = loss_and_grads.get_concrete_function(x, y).graph
ops = sorted({op.type for op in graph.get_operations()})
probs = model(x).numpy().astype(np.float64)
print(json.dumps({
    "ops": ops,
    "loss": steps.per_example_loss(y, model(x)).numpy().tolist(),
    "expected": (-np.log(probs[np.arange(16), y])).tolist(),
    "restored": nn_ops._sparse_softmax_cross_entropy_with_rank_2_logits is original,
}))
"""


def test_cpu_steps_use_the_fused_cross_entropy_under_determinism() -> None:
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "SparseSoftmaxCrossEntropyWithLogits" in out["ops"], out["ops"]
    # the composite's gather (and its gradient's segment sum) are not built
    assert "GatherV2" not in out["ops"] and "UnsortedSegmentSum" not in out["ops"], out["ops"]
    assert out["restored"]  # TensorFlow's own function is back once the loss is built
    assert len(out["loss"]) == 16
    for got, want in zip(out["loss"], out["expected"], strict=True):
        assert abs(got - want) <= 1e-5 * max(1.0, want), (got, want)
