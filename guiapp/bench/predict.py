"""``guiapp bench predict``: our prediction loop against Keras ``model.predict`` on rows
already in memory, same model and batch, in one run.

For each template (cnn2d-small on patterns2d rows, kmer-conv1d on kmer1d rows), one model
(untrained weights: speed does not depend on them) and three passes over the same rows:
- ``keras``: ``model.predict(x, batch_size=B)`` with ``x`` already a numpy array in memory;
- ``ours, no writing``: the reader from the HDF5 shards in dataset order -> the compiled
  step (probabilities and top-k) -> numpy, discarded;
- ``ours, writing``: the same into a predictions table, committed as ``guiapp predict``
  does. The two ratios against Keras are the figures (target >= 0.9x: the reader must never
  be what bounds prediction); their difference is the cost of writing;
- ``same step from memory``: our compiled step over batches already in memory as tensors,
  the bound of the model itself, so ``ours / memory`` is what reading from disk costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .command import json_option, print_result
from .train import GENERATORS, _dataset


def bench_template(
    template: str, data: Path, batch: int, repeats: int, tmp: Path
) -> dict[str, Any]:
    import keras
    import tensorflow as tf

    from ..core.model import build_model, fit_template
    from ..core.predict.engine import make_heads, pipeline_for, predict_into
    from ..core.predict.source import ModelSource, plan_rows, split_plan
    from ..core.predict.table import TableSpec, TableWriter, create_table
    from ..core.store import Dataset

    ds = Dataset(data)
    spec = fit_template(template, ds.sample_shape, ds.num_classes)
    keras.utils.set_random_seed(0)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = build_model(spec)
    x_shape = tuple(int(s) for s in model.input_shape[1:])
    in_dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
    x, _y = ds.read_range(0, len(ds))
    x = x.reshape((len(x), *x_shape)).astype(in_dtype)
    k = min(5, ds.num_classes)
    plan = split_plan(ds, ModelSource(Path(data)), "all", batch)
    rows = plan_rows(plan)
    heads = make_heads(model, strategy, k)

    batches = [
        (tf.constant(x[a : a + batch]), tf.constant(_y[a : a + batch]))
        for a in range(0, len(x), batch)
    ]

    def from_memory() -> float:
        t = time.perf_counter()
        for xb, yb in batches:
            heads(xb, yb)
        return time.perf_counter() - t

    def keras_predict() -> float:
        t = time.perf_counter()
        model.predict(x, batch_size=batch, verbose=0)
        return time.perf_counter() - t

    def ours(write: bool) -> float:
        pipe = pipeline_for(ds, plan, dtype=in_dtype)
        t = time.perf_counter()
        if write:
            path = tmp / f"{template}.h5"
            table = TableSpec(len(rows), ds.num_classes, k, tuple(ds.class_names), True, False,
                              "bench", "bench", "bench", str(data), "all", batch)  # fmt: skip
            create_table(path, table, rows)
            predict_into(TableWriter(path), pipe, heads, x_shape=x_shape)
        else:
            for xb, yb in pipe.tf_dataset(range(1), x_shape=x_shape):
                heads(xb, yb)
        dt = time.perf_counter() - t
        pipe.close()
        return dt

    model.predict(x[: batch * 2], batch_size=batch, verbose=0)  # compile both paths first
    ours(False)
    from_memory()
    times: dict[str, list[float]] = {"keras": [], "ours": [], "ours_write": [], "memory": []}
    for _ in range(repeats):
        times["keras"].append(keras_predict())
        times["memory"].append(from_memory())
        times["ours"].append(ours(False))
        times["ours_write"].append(ours(True))
    med = {k: statistics.median(v) for k, v in times.items()}
    n = len(x)
    ds.close()
    return {
        "template": template,
        "rows": n,
        "batch": batch,
        "rows_per_s_keras_in_memory": round(n / med["keras"]),
        "rows_per_s_ours_no_write": round(n / med["ours"]),
        "rows_per_s_ours_write": round(n / med["ours_write"]),
        "rows_per_s_same_step_in_memory": round(n / med["memory"]),
        "ratio_ours_no_write_vs_same_step_in_memory": round(med["memory"] / med["ours"], 3),
        "ratio_ours_no_write_vs_keras": round(med["keras"] / med["ours"], 3),
        "ratio_ours_write_vs_keras": round(med["keras"] / med["ours_write"], 3),
        "write_cost_fraction": round(1 - med["ours"] / med["ours_write"], 3),
    }


def run_bench(rows: int, batch: int, repeats: int) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    results = []
    with tempfile.TemporaryDirectory(prefix="guiapp-bench-predict-") as tmp:
        for template, generator in GENERATORS.items():
            data = _dataset(Path(tmp), generator, rows)
            results.append(bench_template(template, data, batch, repeats, Path(tmp)))
    return {"rows": rows, "cpu_count": os.cpu_count(), "results": results}


def cmd_bench_predict(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()
    res = run_bench(args.rows, args.batch, args.repeats)
    return print_result(res, args.json, format_text)


def format_text(res: dict[str, Any]) -> str:
    return "\n".join(
        f"{r['template']:<12} {r['rows']:,} rows, batch {r['batch']}: keras in memory "
        f"{r['rows_per_s_keras_in_memory']:,} rows/s; ours {r['rows_per_s_ours_no_write']:,} "
        f"({r['ratio_ours_no_write_vs_keras']:.2f}x), writing {r['rows_per_s_ours_write']:,} "
        f"({r['ratio_ours_write_vs_keras']:.2f}x, writing costs {r['write_cost_fraction']:.1%}); "
        f"same step from memory {r['rows_per_s_same_step_in_memory']:,} rows/s "
        f"(ours {r['ratio_ours_no_write_vs_same_step_in_memory']:.2f}x of it)"
        for r in res["results"]
    )


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "predict", help="guiapp predict's rows/s vs Keras model.predict on in-memory rows"
    )
    s.add_argument("--rows", type=int, default=50_000, help="rows of each generated dataset")
    s.add_argument("--batch", type=int, default=512)
    s.add_argument("--repeats", type=int, default=3)
    json_option(s, cmd_bench_predict)
