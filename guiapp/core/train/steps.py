"""The compiled training and prediction steps shared by the runner and ``guiapp bench train``.

``Steps.train(iterator, n)`` runs ``n`` training steps in one ``tf.function`` call (a
``tf.while_loop`` over the iterator, so one trace serves every ``n``; a call of one step,
the default, runs a graph of its own without the loop: the same ops, half the functions
to trace and instantiate in a run's first call, the same run bit for bit), and never
returns a value to Python: each step adds its numbers to :class:`DeviceTotals`, a few
variables on the device that the runner reads once per logging window
(:meth:`DeviceTotals.read`). So the loop synchronises with the device once per
``--log-every`` steps, not per step.

The steps also time their wait for input. Under TensorFlow's default strategy (one
device: the batches come straight from the training dataset's iterator) tf.data times it
itself (:class:`NativeWait`): a ``LatencyStatsDataset`` stage at the end of the batches
times every ``get_next`` in C++, the epoch's first fetch is start-up, and the graphs carry
no clock. The in-graph clock below cost a light model's steps 0.1-0.4 ms each (its
``numpy_function`` reads wait for the GIL, which the reader's threads hold): at 51,200 25x25
rows, batch 512, a steady epoch took 0.144-0.147 s with it and 0.131-0.136 s with tf.data's
timing, and its first call (``guiapp bench first-call``, light-2d) 0.131 s against 0.121 s
(docs/BENCHMARKS.md, "tf.data times the input wait").

Under a mirrored or multi-worker strategy the steps keep the in-graph clock: there the
iterators buffer batches per device in threads of their own, whose waits are not the
step's. The clock is read just before the iterator's ``get_next`` and just after the
batch is there (ordered by control dependencies), so the input wait is the absolute time a
step waited for its batch. The clock is
``time.perf_counter`` through ``tf.numpy_function``: ``tf.timestamp`` refuses to run under
``enable_op_determinism``, which exact resume needs. A numpy_function call needs the GIL
(10-250 us, more when the reader threads hold it), and a clock read per step cost a
multi-step call a fifth to a third of its speed and slowed the input it measured (issue
#13). A call of one step (``--steps-per-call 1``) times its step, with three
clock reads (the call's start, the clock's own cost, the batch there): one more than the
two reads (start, end) its sampled plan made even for an untimed step, no slower in
``guiapp bench baselines``' steady epochs, and its graph needs none of the plan below. In a
call of several steps not every step is timed (:func:`make_steps`' ``schedule``): the first
batch of each of the reader's segments for itself (when input is slow, it is the one that
waits), one in ``rate`` of the others, picked by a hash of the step's number, for ``rate``
steps, and every step after a call that waited more than :data:`DENSE_AFTER_S` a step. The
rate is what the clock can afford: each call reads the clock at its start and end, and the
next call's rate is the least that keeps a timed step's clock reads (:data:`CLOCK_COST_S`)
under :data:`CLOCK_BUDGET` of the step time (1, every step, for a step of 10 ms or more; at
most :data:`MAX_SAMPLE`; :data:`WAIT_SAMPLE` for the first call). A fixed one in 8 (one in
32 after a calm call) let one sample stand for 32 steps of a model that could afford more,
and under load one preempted clock read made a whole window read input-bound (issue #30).
Each choice depends only on waits and times already seen, so the weighted sum is an
unbiased estimate of the wait. Workers of a cluster make one choice together (any waited:
dense; the rate: their mean), or they would fetch through different ops and wait for each
other forever. The per-call plan makes the loop fetch through one ``cond`` a step and time
it in another: with nothing timed it runs as fast as the untimed loop.

What the clock counts (issue #30): the epoch's first batch (or a resumed epoch's) waits for
the reader to start; that wait is start-up (:data:`STARTUP_S`), reported apart from the
input wait, so a short epoch never reads input-bound from its one slow first batch. A timed
step reads the clock a second time right after its first read and subtracts that pair's
interval (the clock's own cost: a ``numpy_function`` call and the GIL, 0.1-0.3 ms, more
under load) from the interval around ``get_next``, so a weight of 8 or 32 no longer
multiplies the clock's own cost into a wait the step never had. ``GUIAPP_WAIT_EVERY_STEP=1``
(a test and bench aid, read at :func:`make_steps`) times every step and adds each step's
wait, unweighted, to :data:`WAIT_ALL_S` beside the sampled estimate, so one run gives both.

On a machine without GPUs the integer-label cross-entropy is TensorFlow's fused kernel
under op determinism too (:class:`fused_cross_entropy`): its deterministic composite, built
for the GPU, was 138 more ops a step and 0.09 s of a light model's first call.

The sums also hold each extra metric's hits (top-k accuracy, :mod:`.metrics`), one slot
each from :data:`METRIC0` on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .metrics import extra_metrics, top_k

#: Slots of :class:`DeviceTotals` (one float64 vector variable: one ``assign_add`` per
#: step, one read per window). Counts are exact in float64 up to 2**53. ``WAIT_S``: the
#: sampled input wait (weighted), start-up excluded; ``STARTUP_S``: the wait of the epoch's
#: first batch; ``WAIT_ALL_S``: every step's wait, unweighted (only with
#: ``GUIAPP_WAIT_EVERY_STEP``); from ``METRIC0`` on: each extra metric's hits.
LOSS, CORRECT, STEPS, WAIT_S, FINITE, STARTUP_S, WAIT_ALL_S = range(7)
METRIC0 = 7
#: The sums a checkpoint keeps by name (``EpochMeters.position``), where a resumed epoch
#: starts them again (:meth:`DeviceTotals.initial`); its steps are the checkpoint's step.
KEPT_SUMS = {
    "loss": LOSS,
    "correct": CORRECT,
    "wait_s": WAIT_S,
    "startup_s": STARTUP_S,
    "wait_all_s": WAIT_ALL_S,
}


def every_step_timed() -> bool:
    """``GUIAPP_WAIT_EVERY_STEP=1``: time every step's input wait too (a test and bench aid)."""
    return os.environ.get("GUIAPP_WAIT_EVERY_STEP", "") not in ("", "0")


#: The first call's rate: one step in this many has its input wait timed and counts for
#: this many (the clock's reads need the GIL, which the reader threads may hold).
WAIT_SAMPLE = 8
#: The sparsest rate: the clock's reads were what kept a 0.4 ms step below Keras ``fit``
#: (``guiapp bench train``), and no sample stands for more steps than this.
MAX_SAMPLE = 32
#: What a timed step's clock reads cost (three ``numpy_function`` calls, ~0.1 ms each), and
#: the share of the step time they may take: the next call's rate is
#: ``CLOCK_COST_S / (CLOCK_BUDGET * step time)``, between 1 and MAX_SAMPLE.
CLOCK_COST_S = 3e-4
CLOCK_BUDGET = 0.03
#: A call whose steps waited longer than this each (by the estimate) has the next call time
#: every step (the input is slow: timing them all costs nothing then, the steps wait anyway).
DENSE_AFTER_S = 1e-3


class NativeWait:
    """The input wait as tf.data records it: a ``LatencyStatsDataset`` stage at the end of
    the training batches (:meth:`stage`) times each ``get_next`` in C++ (two clock reads,
    no GIL, allowed under op determinism where ``tf.timestamp`` is not), into a stats
    aggregator that :meth:`total_s` reads once per logging window.

    Used where the step takes its batches straight from that dataset's iterator: under
    TensorFlow's default strategy (one device). A mirrored strategy's iterator buffers
    batches per device in a thread of its own, whose waits are not the step's; there the
    steps keep their in-graph clock."""

    TAG = "guiapp"
    NAME = "input"

    def __init__(self) -> None:
        import tensorflow as tf

        self._tf = tf
        self.handle = tf.raw_ops.StatsAggregatorHandle(shared_name="", container="")

    def stage(self, dataset: Any) -> Any:
        """``dataset`` with each of its elements' fetch timed into this aggregator."""
        tf = self._tf
        specs = tf.nest.flatten(dataset.element_spec)
        types = [sp.dtype for sp in specs]
        shapes = [sp.shape for sp in specs]
        v = tf.raw_ops.LatencyStatsDataset(
            input_dataset=tf.data.experimental.to_variant(dataset),
            tag=self.NAME,
            output_types=types,
            output_shapes=shapes,
        )
        v = tf.raw_ops.SetStatsAggregatorDataset(
            input_dataset=v,
            stats_aggregator=self.handle,
            tag=self.TAG,
            counter_prefix=self.TAG,
            output_types=types,
            output_shapes=shapes,
        )
        return tf.data.experimental.from_variant(v, dataset.element_spec).with_options(
            dataset.options()
        )

    def total_s(self) -> float:
        """Seconds every fetch through :meth:`stage` has taken so far."""
        from tensorflow.core.framework import summary_pb2

        raw = self._tf.raw_ops.StatsAggregatorSummary(iterator=self.handle).numpy()
        want = f"{self.TAG}::{self.NAME}"
        for value in summary_pb2.Summary.FromString(raw).value:
            if value.tag == want:
                return float(value.histo.sum) / 1e6
        return 0.0


class DeviceTotals:
    """The epoch's running sums, held on the device: loss sum, correct predictions, steps
    done in the epoch, seconds waited for input, steps whose loss was finite, the start-up
    wait, every step's wait (when all are timed) and each extra metric's hits.

    A NaN or infinite loss makes the loss sum NaN or infinite for the rest of the epoch,
    so one look at it per read finds it; the steps counted finite before it say where it
    happened (the first such step once the weights are NaN, as they then stay)."""

    def __init__(self, extra: int = 0) -> None:
        import tensorflow as tf

        self.extra = extra
        self.var = tf.Variable(self.initial(), trainable=False, dtype=tf.float64)
        # The epoch's first step here (0, or where a resumed epoch starts): where the
        # reader's segments start (the wait clock times their first batches).
        self.origin = tf.Variable(0, trainable=False, dtype=tf.int64)
        # One step in this many has its wait timed in the next call (1: every step); the
        # steps set it, the meters report it with each window.
        self.rate = tf.Variable(WAIT_SAMPLE, trainable=False, dtype=tf.int64)
        # With a NativeWait, the input wait is tf.data's (added at :meth:`read`): what it
        # had recorded when the epoch started here, and the epoch's first fetch (start-up).
        self.native: NativeWait | None = None
        self.every = every_step_timed()
        self.first = True
        self._base = 0.0
        self._startup: float | None = None

    def initial(
        self, steps: int = 0, kept: Mapping[str, float] | None = None, hits: Sequence[float] = ()
    ) -> list[float]:
        """The sums an epoch starts at: zero, or a resumed epoch's at step ``steps``, with
        a checkpoint's ``kept`` sums (:data:`KEPT_SUMS`) and the extra metrics' ``hits``."""
        sums = [0.0] * (METRIC0 + self.extra)
        for name, slot in KEPT_SUMS.items():
            sums[slot] = float((kept or {}).get(name, 0.0))
        sums[STEPS] = sums[FINITE] = float(steps)
        for i, h in enumerate(list(hits)[: self.extra]):
            sums[METRIC0 + i] = float(h)
        return sums

    def reset(self, sums: Sequence[float] | None = None, origin: int | None = None) -> None:
        """Start an epoch at these sums (:meth:`initial`'s: zero, or a checkpoint's for a
        resumed epoch); ``origin``: the step the iterator's first segment starts at
        (default: the sums' steps)."""
        sums = self.initial() if sums is None else list(sums)
        self.var.assign(sums)
        at = int(sums[STEPS] if origin is None else origin)
        self.origin.assign(at)
        self.first = int(sums[STEPS]) == at  # the next step is the epoch's first here
        if self.native is not None:
            self._base = self.native.total_s()
            self._startup = None if self.first else 0.0

    def started(self) -> None:
        """After the epoch's first step here: what its fetch took is start-up."""
        if self.native is not None and self._startup is None:
            self._startup = self.native.total_s() - self._base
        self.first = False

    def read(self) -> list[float]:
        """The sums now: one device-to-host copy (the loop's only synchronisation), and
        with a :class:`NativeWait`, one read of its aggregator."""
        sums = [float(v) for v in self.var.numpy()]
        if self.native is not None:
            waited = self.native.total_s() - self._base
            startup = waited if self._startup is None else self._startup
            sums[STARTUP_S] += startup
            sums[WAIT_S] += waited - startup
            if self.every:
                sums[WAIT_ALL_S] += waited - startup
        return sums


class fused_cross_entropy:  # noqa: N801 - a context manager, used like a function
    """Within it (when ``on``), the cross-entropy of integer labels that Keras's loss builds
    is TensorFlow's fused kernel even under op determinism, as it is without it.

    Op determinism (exact resume) makes TensorFlow build that loss from a log-softmax, a
    gather and a NaN gate instead (``nn_ops._sparse_softmax_cross_entropy_with_rank_2_logits``),
    because the fused kernel's GPU version is not deterministic; the CPU kernel is (a fixed
    reduction per row). On a machine without GPUs that composite is 138 more ops a step to
    trace and run: 0.09 s of a light model's first call and ~0.1 ms of each step. (Labels
    out of range, which the store refuses, raise in the fused kernel where the composite
    gave NaN.)
    Only the tracing of the loss on the calling thread sees the fused function (TensorFlow's
    own, with determinism off); the GPU case is TensorFlow's as it is."""

    NAME = "_sparse_softmax_cross_entropy_with_rank_2_logits"

    def __init__(self, on: bool) -> None:
        from tensorflow.python.ops import gen_nn_ops, nn_ops

        self._module = nn_ops
        self._original = getattr(nn_ops, self.NAME, None)
        self.on = on and self._original is not None

        def fused(logits: Any, labels: Any, name: Any) -> Any:
            cost, _ = gen_nn_ops.sparse_softmax_cross_entropy_with_logits(logits, labels, name=name)
            return cost

        self._fused = fused

    def __enter__(self) -> None:
        if self.on:
            setattr(self._module, self.NAME, self._fused)

    def __exit__(self, *exc: object) -> None:
        if self.on:
            setattr(self._module, self.NAME, self._original)


def _perf_counter() -> np.float64:
    return np.float64(time.perf_counter())


#: ``--steps-per-call 0`` (auto, the default): the steps of a call are sized to take about
#: this long, so the fixed cost of a call (its Python round trip, ~0.25-0.5 ms here) is ~1%
#: of it while a cancel is still seen within a call's time.
AUTO_CALL_S = 0.05
#: The most steps an automatic call runs (calls also end at every log and checkpoint).
AUTO_CALL_MAX = 32
#: Auto sizes the calls of epochs of at least this many steps; shorter epochs run one step
#: a call. Calls of several steps run the loop's graph, whose first call cost 0.05 s (light
#: models) to 0.1 s (cnn2d-small) more than the one-step graph's, and a call saves
#: 0.25-0.5 ms: a shorter epoch would not win it back (``guiapp bench first-call``).
AUTO_MIN_STEPS = 200


class CallSizer:
    """The steps of the next call: ``per_call``, or with 0 (auto) as many as take about
    :data:`AUTO_CALL_S` by the calls so far.

    Auto sizes calls only where ``adaptive`` (one device, tf.data timing the input wait,
    which needs no plan per call, and epochs of at least :data:`AUTO_MIN_STEPS` steps);
    elsewhere 0 means calls of one step, as before auto (the replicas of a multi-worker run
    keep calls of one size). A run's first call has 2 steps, so it traces the loop's graph
    (which takes any number of steps) and no other. Results do not depend on the sizes:
    calls end at every log, checkpoint and epoch boundary
    (``tests/test_train_loop.py::test_steps_per_call_gives_the_same_run``).
    """

    def __init__(self, per_call: int, adaptive: bool) -> None:
        self.fixed = per_call if per_call > 0 else (0 if adaptive else 1)
        self.size = 2
        self.step_s: float | None = None

    @property
    def per_call(self) -> int:
        return self.fixed or self.size

    def took(self, steps: int, seconds: float) -> None:
        """A call of ``steps`` steps took ``seconds`` (not an epoch's first call, which
        also waits for the epoch's first batch, and traces in a run's first epoch)."""
        if self.fixed:
            return
        s = seconds / steps
        self.step_s = s if self.step_s is None else (self.step_s + s) / 2
        self.size = max(1, min(AUTO_CALL_MAX, int(AUTO_CALL_S / max(self.step_s, 1e-6))))


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
    #: ``evaluate(x, y)``: the outputs and the batch's loss sum, in one compiled call
    evaluate: Callable[..., Any]
    #: what goes on the training batches' dataset (a :class:`NativeWait`'s stage, or nothing)
    input_stage: Callable[[Any], Any] = lambda d: d


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
    metrics: Sequence[str] = (),
    native_wait: bool = False,
) -> Steps:
    """``train(iterator, n)`` under ``strategy.run``, ``predict(x)`` and the per-example loss.

    The per-replica loss is the sum of per-example losses over the GLOBAL batch, so the
    Keras optimizer's all-reduce (a sum over replicas) yields the mean gradient.
    ``timed=False`` leaves the input-wait clock out (``guiapp bench train`` measures its cost).
    ``segment_batches``: the reader's batches per segment (``BatchPipeline.segment_batches``;
    0 if unknown), whose first batches the clock always times. ``metrics``: the run's
    metric names (:func:`.metrics.run_metrics`); each one besides ``accuracy`` gets its
    hits counted in a slot of its own. ``native_wait``: time the input wait in tf.data
    (:class:`NativeWait`; its ``stage`` goes on the training batches, ``Steps.input_stage``)
    where the strategy is TensorFlow's default, instead of the in-graph clock.
    """
    import tensorflow as tf

    loss_obj.reduction = None  # per-example losses
    replicas = int(strategy.num_replicas_in_sync)
    binary = int(model.outputs[0].shape[-1]) == 1
    extras = tuple(top_k(m) for m in extra_metrics(metrics))
    totals = DeviceTotals(len(extras))
    default = type(strategy).__name__ == "_DefaultDistributionStrategy"
    if native_wait and timed and default:
        totals.native = NativeWait()
        totals.rate.assign(1)  # (the meters report it: tf.data times every step's wait)
    every = every_step_timed()

    def correct_count(y: Any, out: Any) -> Any:
        if binary:
            pred = tf.cast(
                tf.reshape(out, [-1]) > (0.0 if getattr(loss_obj, "from_logits", False) else 0.5),
                tf.int32,
            )
        else:
            pred = tf.argmax(out, -1, output_type=tf.int32)
        return tf.reduce_sum(tf.cast(tf.equal(pred, tf.cast(y, tf.int32)), tf.float32))

    def hits(y: Any, out: Any) -> list[Any]:
        """Rows whose label is among the k highest outputs, for each extra metric's k."""
        scores = tf.cast(out, tf.float32)
        labels = tf.cast(tf.reshape(y, [-1]), tf.int32)
        return [
            tf.reduce_sum(tf.cast(tf.math.in_top_k(labels, scores, k), tf.float32)) for k in extras
        ]

    fused = fused_cross_entropy(not tf.config.list_logical_devices("GPU"))

    def per_example_loss(y: Any, out: Any) -> Any:
        if binary:
            y = tf.reshape(tf.cast(y, out.dtype), [-1, 1])
        with fused:
            return tf.reshape(loss_obj(y, out), [-1])

    def step_fn(*batch: Any) -> tuple[Any, ...]:
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
        return (tf.reduce_sum(per_example), correct_count(y, out), *hits(y, out))

    total = tf.distribute.ReduceOp.SUM
    one = tf.constant(1.0, tf.float64)

    zero = tf.constant(0.0, tf.float64)
    no_wait = tf.zeros([3], tf.float64)
    # (with tf.data timing the input, the graphs carry no clock)
    sample = WAIT_SAMPLE if timed and totals.native is None else 0

    def clock(*after: Any) -> Any:
        """``time.perf_counter()`` once every tensor of ``after`` is there."""
        with tf.control_dependencies(tf.nest.flatten(after, expand_composites=True)):
            return tf.reshape(tf.numpy_function(_perf_counter, [], tf.float64, stateful=True), [])

    def step(batch: Any, wait: Any) -> Any:
        """Train on ``batch`` and count it (``wait``: seconds the step waited for it, as
        [weighted sample, start-up, unweighted]); the step's results (what a clock read
        after the step waits for)."""
        results = strategy.run(step_fn, args=tuple(batch))
        sums = [tf.cast(strategy.reduce(total, r, axis=None), tf.float64) for r in results]
        loss_sum = sums[0]
        finite = tf.cast(tf.math.is_finite(loss_sum), tf.float64)
        totals.var.assign_add(
            tf.stack([loss_sum, sums[1], one, wait[0], finite, wait[1], wait[2], *sums[2:]])
        )
        return sums[0], sums[1]

    # Whether the last call waited more than DENSE_AFTER_S a step: the next one then
    # times every step (and each stands for itself); and the rate the clock can afford.
    dense_var = tf.Variable(False, trainable=False, dtype=tf.bool)
    rate_var = totals.rate

    def schedule(first: Any, n: Any) -> tuple[Any, Any]:
        """For batches 0..n of a call starting at step ``first`` of the epoch: how to fetch
        each (0 not at all: the call's end; 1 untimed; 2 timed) and what a timed wait
        counts for in each of the three wait slots (the sampled estimate, start-up, every
        step). Made once per call: each op in the loop costs every step a few us.

        The epoch's first batch here (``totals.origin``) is start-up, timed for itself into
        its own slot. The first batch of each of the reader's segments is timed for
        itself: when the input is slow, it is the one that waits (the others are slices of
        it, already there). Of the others one in ``rate_var``, picked by a hash of the step's
        number (out of step with any cycle of the input), counts for ``rate_var`` (what
        the clock can afford, from the last call's step time); or all of them, each
        for itself, after a call that waited (``dense_var``). Each choice depends only on
        waits already seen, so the sum of the weighted waits is an unbiased estimate. With
        ``every`` all steps are timed, and each also counts once in the third slot."""
        key = first + tf.range(0, n + 1, dtype=tf.int64)
        seg = key - totals.origin
        startup = seg == 0
        if segment_batches:
            seg = seg % segment_batches
        alone = (seg == 0) | dense_var
        rate = tf.maximum(rate_var, 1)
        picked = alone | ((key * 2654435761 % 2**32) // 2**16 % rate == 0)
        timed_now = tf.fill(tf.shape(picked), True) if every else picked
        plan = tf.where(key < first + tf.cast(n, tf.int64), tf.where(timed_now, 2, 1), 0)
        sampled = tf.where(picked, tf.where(alone, one, tf.cast(rate, tf.float64)), zero)
        counts = tf.stack(
            [
                tf.where(startup, zero, sampled),
                tf.where(startup, one, zero),
                tf.where(startup, zero, one if every else zero),
            ],
            axis=1,
        )
        return plan, counts

    def timed_next(iterator: Any, done: Any) -> tuple[Any, Any]:
        """The iterator's next batch and how long it was waited for: ``done`` is a clock
        read; the clock is read again at once (the interval is the clock's own cost),
        then ``get_next``, then once the batch is there."""
        ref = clock(done)
        with tf.control_dependencies([ref]):
            nxt = iterator.get_next()
        return nxt, (clock(nxt, ref) - ref) - (ref - done)

    def fetch(iterator: Any, j: Any, sched: Any, after: Any, last: Any) -> Any:
        """Batch ``j`` of the call (``last`` again past its end) and its waits (zeros if
        not timed).

        The next batch is fetched by one ``get_next`` whether the step is timed or not,
        issued while the step before runs (it depends on nothing of that step). A timed
        step reads the clock once the step before is done, again at once (the interval
        between the two is the clock's own cost, under the same load), and once the batch
        is there: the wait is the last interval less the clock's cost. (Inside a branch of
        its own, a timed ``get_next`` was issued only after the step: under load, each
        timed step then counted the iterator's hand-off, ~1-4 ms, as waiting for a batch
        that was already in the prefetch buffer.)"""
        plan, counts = sched

        def timed_first() -> tuple[Any, Any]:
            nxt, waited = timed_next(iterator, clock())  # (from the call's start)
            return nxt, waited * counts[j]

        if last is None:
            return tf.cond(plan[j] > 1, timed_first, lambda: (iterator.get_next(), no_wait))
        nxt = tf.cond(plan[j] > 0, iterator.get_next, lambda: last)

        def timed() -> Any:
            done = clock(*after)  # the step before was done
            ref = clock(done)
            waited = (clock(nxt, ref) - ref) - (ref - done)
            return waited * counts[j]

        return nxt, tf.cond(plan[j] > 1, timed, lambda: no_wait)

    def end_call(start: Any, t_start: Any, after: Any, n: Any) -> None:
        """After a call's steps: whether the next call times every step, and its rate."""
        now = totals.var.value()
        steps_n = tf.cast(n, tf.float64)
        waited = now[WAIT_S] - start[WAIT_S]
        dense = waited > DENSE_AFTER_S * steps_n
        # The step time without waiting (start-up and waits out): what the clock may cost.
        busy = clock(now, after) - t_start - waited - (now[STARTUP_S] - start[STARTUP_S])
        per_step = tf.maximum(busy / steps_n, 1e-6)
        rate = tf.math.ceil(CLOCK_COST_S / (CLOCK_BUDGET * per_step))
        rate = tf.clip_by_value(rate, 1.0, float(MAX_SAMPLE))
        if workers:
            dense, rate = agree(dense, rate)
        dense_var.assign(dense)
        rate_var.assign(tf.cast(rate, tf.int64))

    # No AutoGraph: every branch and loop here is already a tf.cond/tf.while_loop or a test
    # of a Python value, and Keras's own layers run without it (its ``fit`` marks its step
    # so). Converting this module's functions' source was 60-70% of the first call's
    # 1.1-1.9 s (``guiapp bench baselines``, docs/BENCHMARKS.md); the graph is the same.
    @tf.function(autograph=False)
    def train_steps(iterator: Any, n: Any) -> None:
        if not sample:
            return _untimed(iterator, n)
        start = totals.var.value()
        t_start = clock(start)
        sched = schedule(tf.cast(start[STEPS], tf.int64), n)
        batch, wait0 = fetch(iterator, 0, sched, (), None)

        def body(i: Any, batch: Any, wait: Any) -> tuple[Any, ...]:
            # The next batch is fetched while this step runs; the step waited for it only
            # if it came after the step was done.
            done_with = step(batch, wait)
            return (i + 1, *fetch(iterator, i + 1, sched, done_with, batch))

        out = tf.while_loop(lambda i, *_: i < n, body, [tf.constant(0, tf.int32), batch, wait0])
        end_call(start, t_start, out[0], n)
        return None

    # A call of one step (``--steps-per-call 1``) runs a graph without the
    # ``while_loop``, the body's fetch of a next batch it would never take, the sampling
    # plan and its branches: a fifth of the functions, so its first call (trace and
    # instantiation, in every run's first epoch) costs less (``guiapp bench first-call``).
    startup_counts = tf.constant([0.0, 1.0, 0.0], tf.float64)
    step_counts = tf.constant([1.0, 0.0, 1.0 if every else 0.0], tf.float64)

    @tf.function(autograph=False)
    def train_one(iterator: Any) -> None:
        if not sample:
            step(iterator.get_next(), no_wait)
            return None
        # Every step of a one-step call is timed, for itself: its call already reads the
        # clock at its start, which serves as the first read, so it costs one read more
        # than an untimed call, and none of the sampling plan's ops and branches (each a
        # function to trace and instantiate in the run's first call).
        start = totals.var.value()
        batch, waited = timed_next(iterator, clock(start))
        first = tf.equal(tf.cast(start[STEPS], tf.int64), totals.origin)
        step(batch, waited * tf.where(first, startup_counts, step_counts))
        rate_var.assign(1)  # (the meters report it: every step timed)
        return None

    # Several workers must make the same plan: a call's first batch is fetched by a timed
    # or an untimed get_next op, each with its own all-reduce across the workers (whether
    # any has data), so a worker fetching one while another fetches the other waits
    # forever. The next call times every step if any worker waited, and samples at the
    # workers' mean rate.
    workers = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)

    def agree(dense: Any, rate: Any) -> tuple[Any, Any]:
        flags = tf.stack([tf.cast(dense, tf.float64), tf.cast(rate, tf.float64)])
        out = strategy.reduce(total, strategy.run(tf.identity, args=(flags,)), axis=None)
        return out[0] > 0.0, tf.round(out[1] / float(replicas))

    def _untimed(iterator: Any, n: Any) -> None:
        def body(i: Any) -> Any:
            step(iterator.get_next(), no_wait)
            return i + 1

        tf.while_loop(lambda i: i < n, body, [tf.constant(0, tf.int32)])

    # Which graph a call of one step takes: the one-step graph unless the loop's came
    # first (a run whose calls are longer traces one graph, not both).
    looped = [False]

    def train(iterator: Any, n: int) -> None:
        if totals.native is not None and totals.first and n > 1:
            # The epoch's first fetch alone (its wait is start-up), by the loop's graph
            # (which takes any n): a run of longer calls still traces one graph.
            looped[0] = True
            train_steps(iterator, tf.constant(1, tf.int32))
            totals.started()
            n -= 1
        if n == 1 and not looped[0]:
            train_one(iterator)
        else:
            looped[0] = True
            train_steps(iterator, tf.constant(n, tf.int32))
        if totals.first:
            totals.started()

    @tf.function(autograph=False)
    def predict(x: Any) -> Any:
        return model(x, training=False)

    @tf.function(autograph=False)
    def evaluate(x: Any, y: Any) -> tuple[Any, Any]:
        # The loss in the same compiled call as the outputs: computed eagerly per batch, it
        # cost more than the prediction (~2 ms a batch, a fifth of a short epoch's evaluation).
        out = model(x, training=False)
        return out, tf.reduce_sum(tf.cast(per_example_loss(y, out), tf.float32))

    native = totals.native
    stage = native.stage if native is not None else (lambda d: d)
    return Steps(train, predict, per_example_loss, totals, evaluate, stage)
