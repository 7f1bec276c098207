"""``guiapp bench train``: the training loop fed from disk vs from memory, and vs Keras.

For each template (cnn2d-small on patterns2d rows, kmer-conv1d on kmer1d rows), one model
and the runner's own compiled steps (``make_steps``, ``--steps-per-call`` per call, the
device's sums read every 20 steps): the same batches, in the same order, are fed once
through ``BatchPipeline.tf_dataset`` (from the HDF5 shards) and once from tensors already
in memory. The ratio of the two times is the cost of reading from disk (target <= 1.1).
The disk run reports what the runner's events report: the absolute input wait, the rows/s
the input supplied while the step waited and the rows/s the model consumed; the pipeline
is also drained alone (no model) for the rows/s it can deliver.

Then the loop itself: a near-zero-compute model (Flatten + Dense) trained by our loop and by
Keras ``model.fit(steps_per_execution=N)`` on the same in-memory ``tf.data`` dataset object,
for each N of ``--loop-steps-per-call``; steps/s of each and their ratio (target >= 1.0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .command import int_list, json_option, print_result
from .specs import classifier

GENERATORS = {"cnn2d-small": "patterns2d", "kmer-conv1d": "kmer1d"}
READ_EVERY = 20  # the runner's default --log-every: one read of the device's sums


def _dataset(folder: Path, generator: str, rows: int) -> Path:
    path = folder / f"{generator}.h5"
    cmd = [sys.executable, "-m", "guiapp", "generate", str(path), "--generator", generator]
    cmd += ["--n", str(rows), "--seed", "1", "--workers", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"generating {generator} failed: {r.stderr.strip()}")
    return path


def _parts(
    spec: dict[str, Any],
    batch: int,
    timed: bool = True,
    segment_batches: int = 0,
    native_wait: bool = False,
) -> tuple[Any, Any, Any]:
    """(strategy, model, steps) as the runner builds them for the CPU (``native_wait``:
    the input wait timed by tf.data, as the runner's is under the default strategy; its
    stage then goes on the batches, ``steps.input_stage``)."""
    import keras
    import tensorflow as tf

    from ..core.model import build_model, compile_parts
    from ..core.train.devices import one_device
    from ..core.train.steps import make_steps

    keras.utils.set_random_seed(0)
    strategy = one_device(tf, "/cpu:0")
    with strategy.scope():
        model = build_model(spec)
        loss, optimizer, _ = compile_parts(spec)
        optimizer.build(model.trainable_variables)
    steps = make_steps(
        model,
        optimizer,
        loss,
        strategy,
        batch,
        False,
        timed=timed,
        segment_batches=segment_batches,
        native_wait=native_wait,
    )
    return strategy, model, steps


def run_loop(
    steps: Any, iterator: Any, n: int, per_call: int, origin: int = 0
) -> tuple[float, list[float]]:
    """``n`` steps as the runner takes them; (seconds, the device's sums at the end).
    ``origin``: the step the iterator's first segment started at (-3 after 3 warm steps)."""
    from ..core.train.steps import call_size

    steps.totals.reset(origin=origin)
    done = 0
    t = time.perf_counter()
    while done < n:
        k = call_size(done, n, per_call, READ_EVERY)
        steps.train(iterator, k)
        done += k
        if done % READ_EVERY == 0:
            steps.totals.read()
    sums = steps.totals.read()
    return time.perf_counter() - t, sums


def _segments(data: Path, batch: int) -> int:
    from ..core.pipeline import BatchPipeline

    pipe = BatchPipeline(data, batch_size=batch, drop_remainder=True)
    try:
        return pipe.segment_batches
    finally:
        pipe.close()


def bench_template(
    template: str, data: Path, steps: int, batch: int, repeats: int, per_call: int
) -> dict[str, Any]:
    import tensorflow as tf

    from ..core.model import fit_template
    from ..core.pipeline import BatchPipeline
    from ..core.store import Dataset
    from ..core.train.meters import rates
    from ..core.train.steps import STEPS, WAIT_S

    ds = Dataset(data)
    spec = fit_template(template, ds.sample_shape, ds.num_classes)
    strategy, model, compiled = _parts(spec, batch, segment_batches=_segments(data, batch))
    in_dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
    pipe = BatchPipeline(ds, batch_size=batch, drop_remainder=True, dtype=in_dtype)
    x_shape = tuple(spec["input"]["shape"])
    warm = 3
    need = steps + warm
    if pipe.batches_per_epoch < need:
        raise RuntimeError(f"{data}: {pipe.batches_per_epoch} batches, the bench needs {need}")
    batches = [b[:2] for _, b in zip(range(need), pipe.numpy_batches(0), strict=False)]
    xs = tf.constant(
        [x.reshape((len(x), *x_shape)) for x, _ in batches], dtype=tf.as_dtype(in_dtype)
    )
    memory = tf.data.Dataset.from_tensor_slices((xs, tf.constant([y for _, y in batches])))

    def timed(source: Any) -> tuple[float, list[float]]:
        it = iter(strategy.experimental_distribute_dataset(source.take(need)))
        compiled.train(it, warm)  # compiled once, and the pipeline started
        return run_loop(compiled, it, steps, per_call, origin=-warm)

    def alone() -> float:
        it = iter(pipe.tf_dataset(range(1), x_shape=x_shape).take(need))
        for _ in range(warm):
            next(it)
        t = time.perf_counter()
        for _ in range(steps):
            next(it)
        return time.perf_counter() - t

    disk, mem, waits, drain = [], [], [], []
    for _ in range(repeats):
        d, sums = timed(pipe.tf_dataset(range(1), x_shape=x_shape))
        m, _ = timed(memory)
        disk.append(d)
        mem.append(m)
        waits.append(sums[WAIT_S])
        drain.append(alone())
        assert int(sums[STEPS]) == steps
    d, m, w = statistics.median(disk), statistics.median(mem), statistics.median(waits)
    pipe.close()
    r = rates(0.0, 0.0, steps * batch, w, d)
    return {
        "template": template,
        "dataset": data.name,
        "sample_shape": list(ds.sample_shape),
        "dtype": ds.dtype.name,
        "batch": batch,
        "steps": steps,
        "steps_per_call": per_call,
        "disk_s": round(d, 3),
        "memory_s": round(m, 3),
        "ratio_disk_vs_memory": round(d / m, 3),
        "rows_per_s_disk": round(steps * batch / d),
        "rows_per_s_memory": round(steps * batch / m),
        "input_wait_fraction": round(r["input_wait"], 4),
        "supply_rows_per_s": round(r["supply_rows_per_s"]),
        "consume_rows_per_s": round(r["consume_rows_per_s"]),
        "pipeline_alone_rows_per_s": round(steps * batch / statistics.median(drain)),
    }


#: A model with next to no compute: what is left is the loop's own cost per step.
TINY = classifier(
    "tiny",
    [25, 25, 1],
    [{"type": "Flatten"}, {"type": "Dense", "units": 5, "activation": "softmax"}],
)


def bench_loop_vs_keras(
    data: Path, per_call: list[int], steps: int, batch: int, repeats: int
) -> list[dict[str, Any]]:
    """Steps/s of our loop (with and without the input-wait clock) and of Keras ``fit`` with
    ``steps_per_execution`` = each N, the tiny model, the same in-memory dataset object."""
    import tensorflow as tf

    from ..core.model import build_model, compile_parts
    from ..core.pipeline import BatchPipeline

    pipe = BatchPipeline(data, batch_size=batch, drop_remainder=True)
    xy = [b[:2] for _, b in zip(range(32), pipe.numpy_batches(0), strict=False)]
    pipe.close()
    x = tf.constant([b[0].reshape((batch, 25, 25, 1)) for b in xy])
    y = tf.constant([b[1] for b in xy])
    source = tf.data.Dataset.from_tensor_slices((x, y)).repeat().prefetch(8)
    out = []
    for n in per_call:
        ours = {}
        for clocked in (True, False):
            strategy, _model, compiled = _parts(TINY, batch, timed=clocked)
            it = iter(strategy.experimental_distribute_dataset(source))
            compiled.train(it, n)
            ours[clocked] = (compiled, it)
        kl, ko, km_metrics = compile_parts(TINY)
        kmodel = build_model(TINY)
        kmodel.compile(
            optimizer=ko, loss=kl, metrics=km_metrics, steps_per_execution=n, jit_compile=False
        )
        kmodel.fit(source, steps_per_epoch=2 * n, epochs=1, verbose=0, shuffle=False)
        times: dict[str, list[float]] = {"ours": [], "ours_no_wait_clock": [], "keras_fit": []}
        for _ in range(repeats):  # interleaved, so load on the machine hits all three alike
            times["ours"].append(run_loop(*ours[True], steps, n)[0])
            times["ours_no_wait_clock"].append(run_loop(*ours[False], steps, n)[0])
            t = time.perf_counter()
            kmodel.fit(source, steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False)
            times["keras_fit"].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        row: dict[str, Any] = {"steps_per_call": n, "steps": steps, "batch": batch}
        row.update({f"steps_per_s_{k}": round(steps / v) for k, v in med.items()})
        row["ratio_ours_vs_keras"] = round(med["keras_fit"] / med["ours"], 3)
        out.append(row)
    return out


def run_bench(
    rows: int, steps: int, batch: int, repeats: int, per_call: int, loop_per_call: list[int]
) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()  # as the runner trains
    results = []
    with tempfile.TemporaryDirectory(prefix="guiapp-bench-train-") as tmp:
        for template, generator in GENERATORS.items():
            data = _dataset(Path(tmp), generator, rows)
            results.append(bench_template(template, data, steps, batch, repeats, per_call))
        loop = bench_loop_vs_keras(
            Path(tmp) / "patterns2d.h5", loop_per_call, 10 * steps, 64, repeats
        )
    return {"rows": rows, "cpu_count": os.cpu_count(), "results": results, "loop": loop}


def cmd_bench_train(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()
    res = run_bench(
        args.rows,
        args.steps,
        args.batch,
        args.repeats,
        args.steps_per_call,
        args.loop_steps_per_call,
    )
    return print_result(res, args.json, format_text)


def format_text(res: dict[str, Any]) -> str:
    lines = [
        f"{r['template']:<12} batch {r['batch']}, {r['steps']} steps: disk {r['disk_s']:.2f} s, "
        f"memory {r['memory_s']:.2f} s, ratio {r['ratio_disk_vs_memory']:.3f}; "
        f"{r['rows_per_s_disk']:,} rows/s from disk, input wait {r['input_wait_fraction']:.1%}, "
        f"input supplied {r['supply_rows_per_s']:,} rows/s, model consumed "
        f"{r['consume_rows_per_s']:,} rows/s, pipeline alone {r['pipeline_alone_rows_per_s']:,} rows/s"
        for r in res["results"]
    ]
    lines += [
        f"loop, tiny model, {r['steps_per_call']} steps per call: ours {r['steps_per_s_ours']:,} "
        f"steps/s ({r['steps_per_s_ours_no_wait_clock']:,} without the wait clock), Keras fit "
        f"{r['steps_per_s_keras_fit']:,} steps/s, ratio {r['ratio_ours_vs_keras']:.2f}x"
        for r in res["loop"]
    ]
    return "\n".join(lines)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "train",
        help="training fed from disk vs from memory (both templates); our loop vs Keras fit",
    )
    s.add_argument("--rows", type=int, default=40_000, help="rows of each generated dataset")
    s.add_argument("--steps", type=int, default=60)
    s.add_argument("--batch", type=int, default=256)
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--steps-per-call", type=int, default=1, help="for the disk/memory runs")
    s.add_argument(
        "--loop-steps-per-call",
        type=int_list("--loop-steps-per-call", "steps per call", "1,8,32"),
        default="1,8,32",
        help="N of the loop-vs-Keras runs (steps_per_execution), comma-separated",
    )
    json_option(s, cmd_bench_train)
