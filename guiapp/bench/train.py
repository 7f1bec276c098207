"""``guiapp bench train``: training fed by the reader from disk vs from in-memory tensors.

For each template (cnn2d-small on patterns2d rows, kmer-conv1d on kmer1d rows), one model
and one compiled step; the same batches, in the same order, are fed once through
``BatchPipeline.tf_dataset`` (from the HDF5 shards) and once from tensors already in memory.
The ratio of the two times is the cost of reading from disk (target <= 1.1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GENERATORS = {"cnn2d-small": "patterns2d", "kmer-conv1d": "kmer1d"}


def _dataset(folder: Path, generator: str, rows: int) -> Path:
    path = folder / f"{generator}.h5"
    cmd = [
        sys.executable,
        "-m",
        "guiapp",
        "generate",
        str(path),
        "--generator",
        generator,
        "--n",
        str(rows),
        "--seed",
        "1",
        "--workers",
        "1",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"generating {generator} failed: {r.stderr.strip()}")
    return path


def bench_template(
    template: str, data: Path, steps: int, batch: int, repeats: int
) -> dict[str, Any]:
    import keras
    import tensorflow as tf

    from ..core.model import build_model, compile_parts, fit_template
    from ..core.pipeline import BatchPipeline
    from ..core.store import Dataset
    from ..core.train.steps import make_steps

    ds = Dataset(data)
    spec = fit_template(template, ds.sample_shape, ds.num_classes)
    keras.utils.set_random_seed(0)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = build_model(spec)
        loss, optimizer, _ = compile_parts(spec)
        optimizer.build(model.trainable_variables)
    step, _predict, _loss = make_steps(model, optimizer, loss, strategy, batch, weighted=False)
    in_dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
    pipe = BatchPipeline(ds, batch_size=batch, drop_remainder=True, dtype=in_dtype)
    x_shape = tuple(spec["input"]["shape"])
    warm = 3
    need = steps + warm
    if pipe.batches_per_epoch < need:
        raise RuntimeError(f"{data}: {pipe.batches_per_epoch} batches, the bench needs {need}")
    memory = [
        (tf.constant(x.reshape((len(x), *x_shape))), tf.constant(y))
        for x, y in (b[:2] for _, b in zip(range(need), pipe.numpy_batches(0), strict=False))
    ]

    def from_memory() -> tuple[float, float]:
        for b in memory[:warm]:
            step(b)
        t = time.perf_counter()
        for b in memory[warm:]:
            float(step(b)[0])
        return time.perf_counter() - t, 0.0

    def from_disk() -> tuple[float, float]:
        it = iter(pipe.tf_dataset(range(1), x_shape=x_shape).take(need))
        for _ in range(warm):
            step(next(it))
        fastest, waited = float("inf"), []
        t = time.perf_counter()
        for _ in range(steps):
            t0 = time.perf_counter()
            b = next(it)
            dt = time.perf_counter() - t0
            fastest = min(fastest, dt)
            waited.append(dt)
            float(step(b)[0])
        total = time.perf_counter() - t
        return total, sum(w - fastest for w in waited) / total

    disk, mem, waits = [], [], []
    for _ in range(repeats):
        d, w = from_disk()
        m, _ = from_memory()
        disk.append(d)
        mem.append(m)
        waits.append(w)
    d, m = statistics.median(disk), statistics.median(mem)
    pipe.close()
    return {
        "template": template,
        "dataset": data.name,
        "sample_shape": list(ds.sample_shape),
        "dtype": ds.dtype.name,
        "batch": batch,
        "steps": steps,
        "disk_s": round(d, 3),
        "memory_s": round(m, 3),
        "ratio_disk_vs_memory": round(d / m, 3),
        "rows_per_s_disk": round(steps * batch / d),
        "rows_per_s_memory": round(steps * batch / m),
        "input_wait_fraction": round(statistics.median(waits), 4),
    }


def run_bench(rows: int, steps: int, batch: int, repeats: int) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    results = []
    with tempfile.TemporaryDirectory(prefix="guiapp-bench-train-") as tmp:
        for template, generator in GENERATORS.items():
            data = _dataset(Path(tmp), generator, rows)
            results.append(bench_template(template, data, steps, batch, repeats))
    return {"rows": rows, "cpu_count": os.cpu_count(), "results": results}


def cmd_bench_train(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()
    res = run_bench(args.rows, args.steps, args.batch, args.repeats)
    if args.json:
        sys.stdout.write(json.dumps(res, indent=2) + "\n")
        return 0
    for r in res["results"]:
        sys.stdout.write(
            f"{r['template']:<12} batch {r['batch']}, {r['steps']} steps: disk {r['disk_s']:.2f} s, memory {r['memory_s']:.2f} s, "
            f"ratio {r['ratio_disk_vs_memory']:.3f}; {r['rows_per_s_disk']:,} rows/s from disk, input wait {r['input_wait_fraction']:.1%}\n"
        )
    return 0


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "train", help="training epoch time fed from disk vs from memory, both templates"
    )
    s.add_argument("--rows", type=int, default=40_000, help="rows of each generated dataset")
    s.add_argument("--steps", type=int, default=60)
    s.add_argument("--batch", type=int, default=256)
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_bench_train)
