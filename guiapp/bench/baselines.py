"""``guiapp bench baselines``: guiapp's training against the careful user's scripts.

The same rows (generated once by guiapp's own generator: 25x25 float32 ``patterns2d`` and
126-long uint16 ``kmer1d`` rows, 5 classes), the same model (one spec for every path),
the same batch and epochs, ``rows // batch`` whole batches an epoch, each run a process of
its own timed from exec to exit:

- ``guiapp``: ``guiapp train --val 0`` (every row trained, as the scripts do; its other
  options at their defaults: checkpoint and best model every epoch, TensorBoard files);
- ``npy``, ``tfrecord``, ``numpy``, ``sqlite``: the scripts of ``baselines_scripts``.
  ``npy`` is the careful user's best: its ``PyDataset`` settings (``NPY_SETTINGS``) are all
  run in the first repeat and the fastest in the steady state is kept for the others.
- ``guiapp_val``: ``guiapp train`` with its default validation split (0.1), not run unless
  asked: the cost of validating every epoch.

Per path and case (model x batch): rows/s of the first epoch, of the steady epochs (their
median) and of the whole process (rows trained over exec-to-exit), each the median and
range over ``--repeats`` repeats; the paths are interleaved within a repeat (their order
rotated each repeat); ratios guiapp / each path. Times of the parts: exec to the first
epoch's begin (start-up), the first and the steady epoch, the last epoch's end to exit, and
exec to the first step's end. An epoch of guiapp runs from its start to the end of its
checkpoint (validation, history, best model included), so its per-epoch costs are in it;
``train_s`` is the runner's own epoch time (the steps alone), ``end_of_epoch_s`` the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .command import int_list, json_option, print_result
from .specs import classifier

PATHS = ("guiapp", "npy", "tfrecord", "numpy", "sqlite")
EXTRA_PATHS = ("guiapp_val",)
#: model -> (generator, spec or template name)
MODELS: dict[str, tuple[str, str]] = {
    "light-2d": ("patterns2d", "light"),
    "light-kmer": ("kmer1d", "light"),
    "cnn2d-small": ("patterns2d", "cnn2d-small"),
}
ALIASES = {"light": ["light-2d", "light-kmer"]}
#: The npy script's PyDataset settings tried (the best kept).
NPY_SETTINGS: list[dict[str, Any]] = [
    {"workers": 1, "use_multiprocessing": False},
    {"workers": 2, "use_multiprocessing": False},
    {"workers": 2, "use_multiprocessing": True},
]
SCRIPT = Path(__file__).with_name("baselines_scripts.py")
TFRECORD_FILES = 8


def light_spec(sample_shape: tuple[int, ...], classes: int) -> dict[str, Any]:
    """The light model: the row as float32 (k-mer ids too) -> Dense(classes); 2-D rows get a
    channel axis and a Flatten first."""
    shape = [*sample_shape, 1] if len(sample_shape) == 2 else list(sample_shape)
    layers: list[dict[str, Any]] = [{"type": "Flatten"}] if len(shape) > 1 else []
    layers.append({"type": "Dense", "units": classes, "activation": "softmax"})
    return classifier("light", shape, layers)


# -- the rows, once, in every form ----------------------------------------------------------
def prepare(
    folder: Path, generator: str, rows: int, paths: list[str], record_rows: int
) -> dict[str, Any]:
    """Generate the rows with guiapp's generator, then write what the asked paths read: a
    pre-shuffled ``.npy`` pair (the generator's row order is already shuffled), TFRecord
    files of ``record_rows`` rows a record, a SQLite table of blobs. Bounded memory."""
    from ..core.store import Dataset
    from . import read_paths as rp
    from .train import _dataset

    folder.mkdir(parents=True, exist_ok=True)
    h5 = _dataset(folder, generator, rows)
    ds = Dataset(h5)
    n = len(ds)
    chunk = 65_536
    files: dict[str, Any] = {"h5": str(h5)}
    if {"npy", "numpy"} & set(paths):
        fx, fy = folder / f"{generator}.x.npy", folder / f"{generator}.y.npy"
        x = np.lib.format.open_memmap(fx, "w+", ds.dtype, (n, *ds.sample_shape))
        y = np.lib.format.open_memmap(fy, "w+", np.int32, (n,))
        for a in range(0, n, chunk):
            x[a : a + chunk], y[a : a + chunk] = ds.read_range(a, a + chunk)
        x.flush()
        y.flush()
        del x, y
        files.update(x=str(fx), y=str(fy))
    if "tfrecord" in paths:
        records = n // record_rows
        per_file = -(-records // TFRECORD_FILES)
        recs = []
        for k, r0 in enumerate(range(0, records, per_file)):
            f = folder / f"{generator}.{k:02d}.tfrecord"
            take = min(per_file, records - r0) * record_rows
            rp.write_tfrecords(ds, take, f, record_rows, start=r0 * record_rows)
            recs.append(str(f))
        files["tfrecords"] = recs
    if "sqlite" in paths:
        import sqlite3

        f = folder / f"{generator}.sqlite"
        f.unlink(missing_ok=True)
        con = sqlite3.connect(f)
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, x BLOB NOT NULL, y INTEGER)")
        for a in range(0, n, chunk):
            xs, ys = ds.read_range(a, a + chunk)
            con.executemany(
                "INSERT INTO rows VALUES (?, ?, ?)",
                ((a + i, xs[i].tobytes(), int(ys[i])) for i in range(len(ys))),
            )
        con.commit()
        con.close()
        files["sqlite"] = str(f)
    return {
        "files": files,
        "rows": n,
        "sample_shape": list(ds.sample_shape),
        "dtype": ds.dtype.name,
        "classes": ds.num_classes,
    }


# -- one timed process ----------------------------------------------------------------------
def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    t1 = time.time()
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{cmd[1:4]} exited {r.returncode}: " + " | ".join(tail))
    return t0, t1, r.stdout


def run_guiapp(
    data: dict[str, Any], spec_file: Path, batch: int, epochs: int, out: Path, val: float
) -> dict[str, Any]:
    """``guiapp train`` as a user runs it; its epochs from its events."""
    cmd = [sys.executable, "-m", "guiapp", "train", "--data", data["files"]["h5"]]
    cmd += ["--model", str(spec_file), "--out", str(out), "--epochs", str(epochs)]
    cmd += ["--batch", str(batch), "--val", str(val), "--events", "-"]
    t0, t1, stdout = _run(cmd, _env())
    ev = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    started = next(e for e in ev if e["event"] == "started")
    rows = started["train_rows"]
    bounds = [started["time"]]  # an epoch ends when its checkpoint is written
    bounds += [e["time"] for e in ev if e["event"] == "checkpoint" and e["step"] == 0]
    train_s = [e["duration_s"] for e in ev if e["event"] == "epoch"]
    first_batch = next(e for e in ev if e["event"] == "batch")
    epochs_s = [b - a for a, b in zip(bounds, bounds[1:], strict=False)][:epochs]
    steady_step = statistics.median(train_s[1:]) / first_batch["steps"] if epochs > 1 else 0.0
    return {
        "t_exec": t0,
        "t_exit": t1,
        "epochs": list(zip(bounds, bounds[1:], strict=False))[:epochs],
        "rows_per_epoch": rows,
        "started_s": started["time"] - t0,
        "train_s": train_s,
        "end_of_epoch_s": [c - t for c, t in zip(epochs_s, train_s, strict=False)],
        # the first batch event comes after log-every steps: the first step's end is
        # estimated as that event less the others' steady time
        "t_first_step": first_batch["time"] - (first_batch["step"] - 1) * steady_step,
    }


def guiapp_phases(
    data: dict[str, Any], spec_file: Path, batch: int, epochs: int, out: Path, val: float
) -> dict[str, Any]:
    """``phases_main`` for this case in a process of its own, and its exec-to-exit time."""
    code = "import sys; from guiapp.bench.baselines import phases_main; phases_main(sys.argv[1:])"
    cmd = [sys.executable, "-c", code, "train", "--data", data["files"]["h5"]]
    cmd += ["--model", str(spec_file), "--out", str(out), "--epochs", str(epochs)]
    cmd += ["--batch", str(batch), "--val", str(val), "--events", "-"]
    t0, t1, stdout = _run(cmd, _env())
    res: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    res["process"] = round(t1 - t0, 3)
    return res


def run_script(
    path: str, data: dict[str, Any], spec: dict[str, Any], batch: int, epochs: int, **kw: Any
) -> dict[str, Any]:
    args = {"path": path, "spec": spec, "batch": batch, "epochs": epochs}
    args.update(steps=data["rows"] // batch, files=data["files"], dtype=data["dtype"])
    args.update(sample_shape=data["sample_shape"], **kw)
    t0, t1, stdout = _run([sys.executable, str(SCRIPT), json.dumps(args)], _env())
    res: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    res.update(t_exec=t0, t_exit=t1)
    return res


def _env() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def figures(r: dict[str, Any], epochs: int) -> dict[str, Any]:
    """Rates and parts of one run (times from ``time.time()`` of both processes)."""
    ep = [(float(a), float(b)) for a, b in r["epochs"]]
    if len(ep) != epochs:
        raise RuntimeError(f"{len(ep)} epochs timed, {epochs} asked")
    durs = [b - a for a, b in ep]
    rows = r["rows_per_epoch"]
    process = r["t_exit"] - r["t_exec"]
    out: dict[str, Any] = {
        "process_s": round(process, 3),
        "startup_s": round(ep[0][0] - r["t_exec"], 3),
        "first_epoch_s": round(durs[0], 3),
        "steady_epoch_s": round(statistics.median(durs[1:]), 3) if epochs > 1 else None,
        "tail_s": round(r["t_exit"] - ep[-1][1], 3),
        "to_first_step_s": round(r["t_first_step"] - r["t_exec"], 3),
        "rows_per_epoch": rows,
        "first_rows_per_s": rows / durs[0],
        "steady_rows_per_s": rows / statistics.median(durs[1:]) if epochs > 1 else None,
        "process_rows_per_s": rows * epochs / process,
    }
    for k in ("started_s", "train_s", "end_of_epoch_s"):
        if k in r:
            v = r[k]
            out[k] = [round(x, 3) for x in v] if isinstance(v, list) else round(v, 3)
    return out


# -- the bench ------------------------------------------------------------------------------
def run_bench(
    rows: int,
    batches: list[int],
    models: list[str],
    paths: list[str],
    repeats: int,
    epochs: int,
    jit: str = "auto",
    with_phases: bool = True,
    progress: Any = None,
) -> dict[str, Any]:
    from ..core.model import fit_template

    say = progress or (lambda s: None)
    record_rows = math.gcd(512, *batches)
    with tempfile.TemporaryDirectory(prefix="guiapp-bench-baselines-") as tmp:
        work = Path(tmp)
        data: dict[str, dict[str, Any]] = {}
        cases: list[dict[str, Any]] = []
        for m in models:
            gen, model = MODELS[m]
            if gen not in data:
                say(f"writing {rows:,} {gen} rows for {', '.join(paths)}")
                data[gen] = prepare(work / gen, gen, rows, paths, record_rows)
            d = data[gen]
            spec = (
                light_spec(tuple(d["sample_shape"]), d["classes"])
                if model == "light"
                else fit_template(model, d["sample_shape"], d["classes"])
            )
            spec_file = work / f"{m}.json"
            spec_file.write_text(json.dumps(spec))
            for b in batches:
                if d["rows"] // b < 2:
                    raise ValueError(f"--rows {rows}: fewer than 2 batches of {b}")
                cases.append(
                    {"model": m, "batch": b, "data": gen, "spec": spec, "spec_file": spec_file}
                )
        runs: list[dict[str, Any]] = []
        npy_best: dict[tuple[str, int], int] = {}
        loads = [os.getloadavg()[0]]
        for rep in range(repeats):
            for c in cases:
                key = (c["model"], c["batch"])
                order = paths[rep % len(paths) :] + paths[: rep % len(paths)]
                for p in order:
                    tries = [0]
                    if p == "npy":
                        tries = list(range(len(NPY_SETTINGS))) if rep == 0 else [npy_best[key]]
                    for t in tries:
                        say(f"repeat {rep + 1}/{repeats}: {c['model']}, batch {c['batch']}, {p}")
                        d = data[c["data"]]
                        if p.startswith("guiapp"):
                            out = work / f"run-{p}-{c['model']}-{c['batch']}-{rep}"
                            val = 0.1 if p == "guiapp_val" else 0.0
                            r = run_guiapp(d, c["spec_file"], c["batch"], epochs, out, val)
                        else:
                            kw: dict[str, Any] = {
                                "jit": jit != "off" and "auto",
                                "record_rows": record_rows,
                            }
                            if p == "npy":
                                kw["settings"] = NPY_SETTINGS[t]
                            r = run_script(p, d, c["spec"], c["batch"], epochs, **kw)
                        f = figures(r, epochs)
                        f.update(model=c["model"], batch=c["batch"], path=p, repeat=rep)
                        if p == "npy":
                            f["settings"] = NPY_SETTINGS[t]
                        runs.append(f)
                    if p == "npy" and rep == 0:
                        tried = runs[-len(tries) :]
                        rate = "steady_rows_per_s" if epochs > 1 else "first_rows_per_s"
                        best = max(range(len(tries)), key=lambda i: tried[i][rate])
                        npy_best[key] = best
                        for i, f in enumerate(tried):
                            f["kept"] = i == best
            loads.append(os.getloadavg()[0])
        phases: list[dict[str, Any]] = []
        for c in cases if with_phases else []:
            for val in (0.0, 0.1):
                say(f"phases: {c['model']}, batch {c['batch']}, --val {val}")
                out = work / f"phases-{c['model']}-{c['batch']}-{val}"
                d = data[c["data"]]
                ph = guiapp_phases(d, c["spec_file"], c["batch"], epochs, out, val)
                phases.append({"model": c["model"], "batch": c["batch"], "val": val, **ph})
    return {
        "rows": rows,
        "epochs": epochs,
        "repeats": repeats,
        "batches": batches,
        "models": models,
        "paths": paths,
        "keras_jit_compile": jit,
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(v, 2) for v in loads],
        "cases": summarize(runs, cases, paths),
        "guiapp_phases_s": phases,
        "runs": runs,
    }


def _stat(values: list[float | None]) -> dict[str, float] | None:
    vs = [v for v in values if v is not None]
    if not vs:
        return None
    return {
        "median": round(statistics.median(vs), 3),
        "min": round(min(vs), 3),
        "max": round(max(vs), 3),
    }


def summarize(
    runs: list[dict[str, Any]], cases: list[dict[str, Any]], paths: list[str]
) -> list[dict[str, Any]]:
    out = []
    for c in cases:
        per: dict[str, Any] = {}
        for p in paths:
            rs = [
                r
                for r in runs
                if r["model"] == c["model"]
                and r["batch"] == c["batch"]
                and r["path"] == p
                and r.get("kept", True)
            ]
            s: dict[str, Any] = {"repeats": len(rs), "rows_per_epoch": rs[0]["rows_per_epoch"]}
            for k in ("first_rows_per_s", "steady_rows_per_s", "process_rows_per_s"):
                s[k] = _stat([r[k] for r in rs])
            for k in (
                "startup_s",
                "first_epoch_s",
                "steady_epoch_s",
                "tail_s",
                "to_first_step_s",
                "process_s",
            ):
                s[k] = _stat([r[k] for r in rs])
            if p == "npy":
                s["settings"] = rs[0]["settings"]
            if p.startswith("guiapp"):
                s["started_s"] = _stat([r["started_s"] for r in rs])
                s["train_first_s"] = _stat([r["train_s"][0] for r in rs])
                s["train_steady_s"] = _stat(
                    [statistics.median(r["train_s"][1:]) for r in rs if len(r["train_s"]) > 1]
                )
                s["end_of_epoch_s"] = _stat([statistics.median(r["end_of_epoch_s"]) for r in rs])
            per[p] = s
        ratios = {}
        if "guiapp" in per:
            g = per["guiapp"]
            for p in paths:
                if p == "guiapp":
                    continue
                ratios[p] = {
                    k.removesuffix("_rows_per_s"): (
                        round(g[k]["median"] / per[p][k]["median"], 3)
                        if g[k] and per[p][k]
                        else None
                    )
                    for k in ("first_rows_per_s", "steady_rows_per_s", "process_rows_per_s")
                }
        out.append(
            {
                "model": c["model"],
                "batch": c["batch"],
                "data": c["data"],
                "paths": per,
                "ratio_guiapp_vs": ratios,
            }
        )
    return out


# -- the command ----------------------------------------------------------------------------
def _list(text: str, allowed: list[str], option: str) -> list[str]:
    out: list[str] = []
    for v in (t.strip() for t in text.split(",")):
        if not v:
            continue
        for w in ALIASES.get(v, [v]) if option == "--models" else [v]:
            if w not in allowed:
                raise argparse.ArgumentTypeError(
                    f"{option} {v!r}: choose from {', '.join(allowed)}"
                )
            if w not in out:
                out.append(w)
    if not out:
        raise argparse.ArgumentTypeError(f"{option} is empty: give one of {', '.join(allowed)}")
    return out


_batches = int_list("--batch", "batch sizes", "512,4096")


def cmd_bench_baselines(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()  # TensorFlow's start-up lines, when the TFRecord files are written
    try:
        paths = _list(args.paths, [*PATHS, *EXTRA_PATHS], "--paths")
        models = _list(args.models, [*MODELS, *ALIASES], "--models")
        bad = [o for o in ("rows", "repeats", "epochs") if getattr(args, o) < 1]
        if bad:
            raise argparse.ArgumentTypeError(f"--{bad[0]} {getattr(args, bad[0])}: give 1 or more")
        if args.rows // max(args.batch) < 2:
            raise argparse.ArgumentTypeError(
                f"--rows {args.rows}: fewer than 2 batches of {max(args.batch)}; give more rows "
                "or a smaller --batch"
            )
    except argparse.ArgumentTypeError as e:
        sys.stderr.write(f"guiapp bench baselines: {e}\n")
        return 2
    res = run_bench(
        args.rows,
        args.batch,
        models,
        paths,
        args.repeats,
        args.epochs,
        jit=args.keras_jit,
        with_phases=not args.no_phases,
        progress=None if args.json else lambda s: sys.stderr.write(s + "\n"),
    )
    return print_result(res, args.json, table)


def table(res: dict[str, Any]) -> str:
    """The cases as a Markdown table (medians; ranges in the JSON)."""

    def num(s: dict[str, float] | None) -> str:
        return "-" if s is None else f"{s['median']:,.0f}"

    def sec(s: dict[str, float] | None) -> str:
        return "-" if s is None else f"{s['median']:.2f}"

    lines = [
        "| model | batch | path | first epoch rows/s | steady rows/s | process rows/s | start-up s | "
        "first epoch s | steady epoch s | exit s | to first step s | ratio guiapp/path (first, steady, "
        "process) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in res["cases"]:
        for p, s in c["paths"].items():
            r = c["ratio_guiapp_vs"].get(p)
            ratio = (
                "" if not r else ", ".join("-" if v is None else f"{v:.2f}x" for v in r.values())
            )
            lines.append(
                f"| {c['model']} | {c['batch']} | {p} | {num(s['first_rows_per_s'])} | "
                f"{num(s['steady_rows_per_s'])} | {num(s['process_rows_per_s'])} | {sec(s['startup_s'])} | "
                f"{sec(s['first_epoch_s'])} | {sec(s['steady_epoch_s'])} | {sec(s['tail_s'])} | "
                f"{sec(s['to_first_step_s'])} | {ratio} |"
            )
    for ph in res.get("guiapp_phases_s", []):
        parts = ", ".join(f"{k} {v}" for k, v in ph.items() if k not in ("model", "batch", "rc"))
        lines.append(f"\nguiapp's parts (s), {ph['model']}, batch {ph['batch']}: {parts}")
    return "\n".join(lines)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "baselines",
        help="guiapp train against the careful user's scripts (npy PyDataset, TFRecord, numpy, SQLite)",
    )
    s.add_argument("--rows", type=int, default=51_200, help="rows of each generated dataset")
    s.add_argument("--batch", type=_batches, default=[512, 4096], help="batch sizes (512,4096)")
    s.add_argument("--repeats", type=int, default=3, help="interleaved repeats (3)")
    s.add_argument(
        "--epochs", type=int, default=3, help="epochs per run: the first and steady ones (3)"
    )
    s.add_argument(
        "--paths",
        default=",".join(PATHS),
        help=f"comma-separated, of {', '.join(PATHS + EXTRA_PATHS)} ({','.join(PATHS)})",
    )
    s.add_argument(
        "--models",
        default="light",
        help="light-2d, light-kmer, cnn2d-small, or light (both light models; the default)",
    )
    s.add_argument(
        "--keras-jit",
        default="auto",
        choices=["auto", "off"],
        help="the scripts' jit_compile: Keras's default (auto: XLA only where a GPU is) or off",
    )
    s.add_argument(
        "--no-phases",
        action="store_true",
        help="skip the timing of guiapp's parts (a run per case, with and without validation)",
    )
    json_option(s, cmd_bench_baselines)


# -- where guiapp's time goes (issue 33 point 1) ---------------------------------------------
def phases_main(argv: list[str]) -> None:
    """``guiapp train ARGV`` in this process with its parts timed by wrapping them (the
    training code unchanged); prints one JSON line of seconds. Run as its own process by
    ``guiapp_phases``: the TensorFlow import, the CLI's import, the devices' set-up,
    ``prepare_run`` (model, pipelines; the reader's kernels loaded there), ``make_steps``, the
    first call of the compiled steps (its trace, graph build and first step; the traces of
    every ``tf.function`` and the AutoGraph conversions in them apart as well), the other
    calls, the end of each epoch (validation, history, best model) and its checkpoint, and
    the end of the run (last model, evaluation)."""
    t0 = time.perf_counter()
    spent: dict[str, float] = {}

    def add(name: str, s: float) -> None:
        spent[name] = spent.get(name, 0.0) + s

    import tensorflow  # noqa: F401

    add("import_tensorflow", time.perf_counter() - t0)
    t = time.perf_counter()
    from ..cli import main as cli_main
    from ..core.pipeline import reader
    from ..core.train import devices, prepare, runner, steps

    add("import_guiapp", time.perf_counter() - t)

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                add(name, time.perf_counter() - t)

        return wrapper

    def steps_timed(fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            s = fn(*a, **k)
            add("make_steps", time.perf_counter() - t)
            train, calls = s.train, [0]

            def first_or_rest(*b: Any) -> Any:
                calls[0] += 1
                name = "steps_first_call" if calls[0] == 1 else "steps_other_calls"
                return timed(name, train)(*b)

            return s._replace(train=first_or_rest)

        return wrapper

    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    # Tracing a tf.function (Python builds its graph) on its first call: in the first call
    # of the compiled steps, the rest is the graph's optimisation and its first step.
    pf.Function._initialize = timed("tf_function_traces", pf.Function._initialize)
    from tensorflow.python.autograph.impl import api as autograph

    # Of the traces: AutoGraph rewriting the Python source of what a tf.function calls.
    autograph._convert_actual = timed("autograph_conversions", autograph._convert_actual)
    devices.make_devices = timed("devices", devices.make_devices)
    reader._jitread = timed("reader_kernels", reader._jitread)
    setattr(runner, "prepare_run", timed("prepare_run", prepare.prepare_run))  # noqa: B010
    setattr(runner, "make_steps", steps_timed(steps.make_steps))  # noqa: B010
    job = runner.TrainingJob
    job._end_epoch = timed("end_of_epoch", job._end_epoch)  # type: ignore[method-assign]
    job._checkpoint = timed("checkpoints", job._checkpoint)  # type: ignore[method-assign]
    job._finish = timed("finish", job._finish)  # type: ignore[method-assign]
    rc = cli_main(argv)
    out = {k: round(v, 3) for k, v in spent.items()}
    out["end_of_epoch"] = round(out.get("end_of_epoch", 0) - out.get("checkpoints", 0), 3)
    out["total_in_process"] = round(time.perf_counter() - t0, 3)
    out["rc"] = rc
    sys.stdout.write("\n" + json.dumps(out) + "\n")
