"""The input-wait meter's cases as a user meets them: ``python -m guiapp.bench.input_wait``.

Real ``guiapp train`` processes in a temporary folder, on generated data:

- ``fast_busy``: cnn2d-small on 4,000 uncompressed 25x25 rows (the issue's case), 64 steps
  an epoch, 3 epochs, logged every 8 steps, with two CPU-burning processes beside it;
- ``fast_busy_every``: the same with ``GUIAPP_WAIT_EVERY_STEP=1`` (every step timed too:
  the sampled estimate and the every-step figure of one run);
- ``short``: 3 epochs of 2,000 rows (62 steps, one reader segment, one logging window) of
  a linear model, each segment read 10 ms a batch (``GUIAPP_READ_DELAY_MS``): one slow
  first batch an epoch;
- ``slow``: the linear model on 64x64 rows read 10 ms a batch, 160 steps, 8 per call.

Each case prints the epochs' ``input_wait`` (and ``input_wait_every_step``, ``startup_s``
where the code reports them) and the highest window's. ``--root DIR`` runs the code of
another checkout (``git archive COMMIT guiapp | tar -x -C DIR``) with this interpreter, for
before/after figures in one sitting (the children run in the temporary folder, so
``PYTHONPATH=DIR`` comes before the current folder and the installed package). Figures: docs/BENCHMARKS.md ("The input-wait meter").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LINEAR = {
    "name": "linear",
    "input": {"shape": [25, 25, 1], "dtype": "float32"},
    "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 5, "activation": "softmax"}],
    "loss": "sparse_categorical_crossentropy",
    "optimizer": {"type": "adam", "learning_rate": 0.001},
    "metrics": ["accuracy"],
    "seed": 0,
}
TRAIN = ["--batch", "32", "--events", "-"]
CASES: dict[str, tuple[str, str, list[str], dict[str, str], bool]] = {
    # name: (data, model, options, environment, two busy processes)
    "fast_busy": ("p25", "cnn2d-small", ["--max-steps", "64", "--log-every", "8",
                  "--epochs", "3"], {}, True),
    "fast_busy_every": ("p25", "cnn2d-small", ["--max-steps", "64", "--log-every", "8",
                        "--epochs", "3"], {"GUIAPP_WAIT_EVERY_STEP": "1"}, True),
    "short": ("p25s", "linear25", ["--log-every", "1000", "--epochs", "3"],
              {"GUIAPP_READ_DELAY_MS": "10"}, False),
    "slow": ("p64", "linear64", ["--max-steps", "160", "--log-every", "8",
             "--steps-per-call", "8"], {"GUIAPP_READ_DELAY_MS": "10"}, False),
}  # fmt: skip


def run_case(name: str, folder: Path, env: dict[str, str]) -> dict[str, Any]:
    data, model, options, extra, busy = CASES[name]
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * busy)
    ]
    model_arg = str(folder / f"{model}.json") if model.startswith("linear") else model
    argv = [sys.executable, "-m", "guiapp", "train", "--data", str(folder / f"{data}.h5")]
    argv += ["--model", model_arg, "--out", str(folder / name), *options, *TRAIN]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, env={**env, **extra}, cwd=folder)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    if r.returncode:
        return {"case": name, "error": r.stderr.strip().splitlines()[-1:]}
    ev = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    epochs = [e for e in ev if e["event"] == "epoch"]
    windows = [e for e in ev if e["event"] == "batch"]
    return {
        "case": name,
        "input_wait": [round(e["input_wait"], 3) for e in epochs],
        "input_wait_every_step": [e.get("input_wait_every_step") for e in epochs],
        "startup_s": [e.get("startup_s") for e in epochs],
        "highest_window": round(max(e["input_wait"] for e in windows), 3),
        "rows_per_s": [round(e["rows_per_s"]) for e in epochs],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m guiapp.bench.input_wait")
    ap.add_argument("--root", help="run the guiapp package found in this folder")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated")
    args = ap.parse_args(argv)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    if args.root:
        env["PYTHONPATH"] = str(Path(args.root).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, rows, shape in (("p25", 4000, "25x25"), ("p25s", 2000, "25x25"),
                                  ("p64", 6000, "64x64")):  # fmt: skip
            gen = [sys.executable, "-m", "guiapp", "generate", str(folder / f"{name}.h5")]
            gen += ["--n", str(rows), "--shape", shape, "--seed", "3"]
            subprocess.run(gen, check=True, capture_output=True, env=env, cwd=folder)
        for name, side in (("linear25", 25), ("linear64", 64)):
            spec = {**LINEAR, "input": {"shape": [side, side, 1], "dtype": "float32"}}
            (folder / f"{name}.json").write_text(json.dumps(spec))
        for name in args.cases.split(","):
            print(json.dumps(run_case(name, folder, env)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
