"""``guiapp bench first-call``: what the first call of the compiled training steps costs,
by what the runner's steps carry, against Keras's own ``train_function``.

A run's first epoch holds one fixed cost the steady epochs do not: the first call of the
compiled steps (its trace, the graph's instantiation and the first step). Each variant
below runs in a fresh process (TensorFlow's own caches cold, as in a run), on the same
in-memory rows (a ``tf.data`` dataset of random rows, so no reader is in it), and times
the first call and the second:

- ``runner``: what ``guiapp train`` runs by default: op determinism on (exact resume),
  the input-wait meter on (under the default strategy: tf.data's timing stage on the
  batches, the graphs without a clock), calls sized by their time, of which a run's first
  has 2 steps (the ``while_loop`` graph, the epoch's first fetch alone);
- ``one_step``: the same, with one step per call (``--steps-per-call 1``: the one-step
  graph);
- ``no_meter``: the runner's steps without the input-wait meter (``make_steps(timed=False)``,
  not a runner option: no timing stage either);
- ``no_determinism``: the runner's steps without op determinism (not a runner option);
- ``keras``: Keras's own ``train_function`` for the same model (``model.compile`` with the
  spec's loss, Adam and accuracy, ``jit_compile=False``, which Keras's ``"auto"`` is on a
  CPU-only machine), no determinism, as the careful user's scripts run it.

The variants are interleaved within each repeat; medians and ranges of the repeats.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from .command import json_option, print_result

#: variant -> (op determinism, input-wait meter, steps per call); ``keras``: Keras's own.
VARIANTS: dict[str, tuple[bool, bool, int]] = {
    "runner": (True, True, 2),
    "one_step": (True, True, 1),
    "no_meter": (True, False, 1),
    "no_determinism": (False, True, 1),
    "keras": (False, False, 1),
}
MODELS = ("light-kmer", "light-2d", "cnn2d-small")


def _spec(model: str) -> dict[str, Any]:
    from ..core.model import fit_template
    from .baselines import light_spec

    if model == "light-kmer":
        return light_spec((126,), 5)
    if model == "light-2d":
        return light_spec((25, 25), 5)
    return fit_template("cnn2d-small", (25, 25), 5)


def child(argv: list[str]) -> None:
    """One variant in this process: prints ``{"first_s":, "second_s":}``."""
    a = json.loads(argv[0])
    import numpy as np
    import tensorflow as tf

    determinism, meter, per_call = VARIANTS[a["variant"]]
    if determinism:
        tf.config.experimental.enable_op_determinism()
    spec = _spec(a["model"])
    shape, batch = tuple(spec["input"]["shape"]), a["batch"]
    rng = np.random.default_rng(0)
    x = rng.random((batch * 4, *shape), np.float32)
    y = rng.integers(0, 5, batch * 4).astype(np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch, drop_remainder=True).repeat()
    if a["variant"] == "keras":
        import keras

        from ..core.model import build_model

        keras.utils.set_random_seed(0)
        model = build_model(spec)
        model.compile(
            optimizer=keras.optimizers.Adam(0.001),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=False,
        )
        model.make_train_function()
        it = iter(ds)

        def call() -> None:
            model.train_function(it)

    else:
        from .train import _parts

        _strategy, _model, steps = _parts(spec, batch, timed=meter, native_wait=True)
        it = iter(steps.input_stage(ds))

        def call() -> None:
            steps.train(it, per_call)

    t0 = time.perf_counter()
    call()
    t1 = time.perf_counter()
    call()
    t2 = time.perf_counter()
    print(json.dumps({"first_s": t1 - t0, "second_s": t2 - t1}))


def _one(variant: str, model: str, batch: int) -> dict[str, float]:
    code = "import sys; from guiapp.bench.first_call import child; child(sys.argv[1:])"
    arg = json.dumps({"variant": variant, "model": model, "batch": batch})
    r = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True)
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"variant {variant} exited {r.returncode}: {tail}")
    out: dict[str, float] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def run_bench(model: str, batch: int, repeats: int, variants: list[str]) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for rep in range(repeats):
        order = variants[rep % len(variants) :] + variants[: rep % len(variants)]
        for v in order:
            runs[v].append(_one(v, model, batch))

    def stat(vals: list[float]) -> dict[str, float]:
        return {"median": round(statistics.median(vals), 3), "min": round(min(vals), 3),
                "max": round(max(vals), 3)}  # fmt: skip

    res: dict[str, Any] = {"model": model, "batch": batch, "repeats": repeats, "variants": {}}
    for v, rs in runs.items():
        res["variants"][v] = {
            "first_s": stat([r["first_s"] for r in rs]),
            "second_s": stat([r["second_s"] for r in rs]),
        }
    return res


def text(res: dict[str, Any]) -> str:
    lines = [f"{res['model']}, batch {res['batch']}, {res['repeats']} repeats (median, range):"]
    for v, s in res["variants"].items():
        f, c = s["first_s"], s["second_s"]
        lines.append(
            f"  {v:15s} first call {f['median']:.3f} s ({f['min']:.3f}-{f['max']:.3f}), "
            f"second {c['median'] * 1000:.1f} ms"
        )
    return "\n".join(lines)


def cmd_bench_first_call(args: argparse.Namespace) -> int:
    return print_result(
        run_bench(args.model, args.batch, args.repeats, args.variants), args.json, text
    )


def _variants(value: str) -> list[str]:
    out = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in out if v not in VARIANTS]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"--variants {value!r}: give some of {', '.join(VARIANTS)}, comma-separated"
        )
    return out


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "first-call",
        help="the first call of the compiled steps, by what they carry, against Keras's",
        description=__doc__.split("\n\n")[0],
    )
    s.add_argument("--model", default="light-kmer", choices=MODELS, help="(light-kmer)")
    s.add_argument("--batch", type=int, default=4096, help="rows a step (4096)")
    s.add_argument("--repeats", type=int, default=5, help="interleaved repeats (5)")
    s.add_argument(
        "--variants",
        type=_variants,
        default=list(VARIANTS),
        help=f"comma-separated, of {', '.join(VARIANTS)} (all)",
    )
    json_option(s, cmd_bench_first_call)
