"""The input wait timed by tf.data itself (``steps.NativeWait``) under the default strategy.

The steps' graphs then carry no clock (no ``numpy_function``, whose GIL hand-offs cost a
light model's steps ~10%); a ``LatencyStatsDataset`` stage at the end of the batches times
each fetch in C++. Checked in a process of its own with op determinism on (as a run sets
it): a source whose first element takes 0.3 s and the others 0.04 s each, fetched
without read-ahead, so every step waits that long. The epoch's first fetch is start-up,
the others are input wait, in calls of one step and of several; the same steps on a batch
source without the stage record no wait at all.
"""

from __future__ import annotations

import json
import subprocess
import sys

from test_train import ENV

SCRIPT = r"""
import json, time
import numpy as np
import tensorflow as tf

tf.config.experimental.enable_op_determinism()
import keras

from guiapp.bench.train import TINY
from guiapp.core.model import build_model, compile_parts
from guiapp.core.train.steps import STARTUP_S, STEPS, WAIT_S, make_steps

keras.utils.set_random_seed(0)
model = build_model(TINY)
loss_obj, optimizer, _ = compile_parts(TINY)
optimizer.build(model.trainable_variables)
steps = make_steps(
    model, optimizer, loss_obj, tf.distribute.get_strategy(), 16, False, native_wait=True
)
shape = tuple(TINY["input"]["shape"])
rng = np.random.default_rng(0)
x = rng.normal(size=(16, *shape)).astype(np.float32)
y = rng.integers(0, TINY["layers"][-1]["units"], 16).astype(np.int32)


def slow(i):
    time.sleep(0.3 if i == 0 else 0.04)
    return i


def batches():
    d = tf.data.Dataset.range(7).map(lambda i: tf.numpy_function(slow, [i], tf.int64))
    return d.map(lambda i: (tf.constant(x), tf.constant(y)))


out = {}
for per_call in (1, 3):
    it = iter(steps.input_stage(batches()))
    steps.totals.reset()
    done = 0
    while done < 7:  # the epoch's first call: its first fetch is start-up
        k = min(per_call, 7 - done)
        steps.train(it, k)
        done += k
    sums = steps.totals.read()
    out[per_call] = [sums[STEPS], sums[STARTUP_S], sums[WAIT_S]]
it = iter(tf.data.Dataset.from_tensors((x, y)).repeat(7))
steps.totals.reset()
for _ in range(7):
    steps.train(it, 1)
sums = steps.totals.read()
out["unstaged"] = [sums[STEPS], sums[STARTUP_S], sums[WAIT_S]]
print(json.dumps(out))
"""


def test_tf_data_times_the_wait_and_the_steps_carry_no_clock() -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for per_call in ("1", "3"):
        steps_done, startup, waited = out[per_call]
        assert steps_done == 7, out
        assert 0.29 <= startup < 1.0, (per_call, out)  # the first fetch alone
        assert 6 * 0.04 * 0.95 <= waited < 2.0, (per_call, out)  # the six others
    # without the stage nothing times the fetches: the graphs hold no clock
    assert out["unstaged"] == [7.0, 0.0, 0.0], out
