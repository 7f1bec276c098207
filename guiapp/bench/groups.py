"""``guiapp bench groups``: reading and training by groups vs by blocks, same files.

One dataset per seed case, generated with lineage (patterns2d 25x25 float32 and kmer1d
126 uint16, each source sample written as ``--copies`` augmented copies that share a
group). The training split (``--val 0.1``) is read twice from the same files, in
interleaved repeats: once split by blocks (``--split-by rows``: whole blocks of rows, the
way every dataset without groups is read) and once by groups (the default: whole atoms of
the packed layout, ``generate/packing.py``, or a row mask over the same blocks for rows
not packed). The same consumer reads every byte of every batch
(``read_paths.checksum_np``), whole epochs until :data:`READ_ROWS` rows; then the
template's compiled training steps take the same number of batches from each through
``tf_dataset``. The ratios (groups / rows) are the cost of grouped splits (target >= 0.9).
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

from .command import json_option, print_result

CASES = {
    "cnn2d-small": ("patterns2d", {"op": "noise", "std": 0.05}),
    "kmer-conv1d": ("kmer1d", {"op": "mutate", "rate": 0.01}),
}


def _dataset(folder: Path, generator: str, op: dict[str, Any], rows: int, copies: int) -> Path:
    path = folder / f"{generator}.h5"
    aug = json.dumps({"copies": copies, "ops": [op]})
    cmd = [sys.executable, "-m", "guiapp", "generate", str(path), "--generator", generator]
    cmd += ["--n", str(rows), "--seed", "1", "--workers", "1", "--augment", aug]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"generating {generator} failed: {r.stderr.strip()}")
    return path


def _pipe(data: Path, mode: str, batch: int, dtype: Any = None) -> Any:
    from ..core.pipeline import BatchPipeline, SplitSpec
    from ..core.pipeline.group_split import split_mask
    from ..core.store import Dataset

    ds = Dataset(data)
    splits = SplitSpec(val=0.1, seed=0)
    mask = split_mask(ds, splits, "train", split_by=mode)
    assert (mask is None) == (mode == "rows")
    return BatchPipeline(
        ds, batch_size=batch, split="train", splits=splits, row_mask=mask, drop_remainder=True,
        dtype=dtype,
    )  # fmt: skip


#: Each read measurement reads whole epochs of the split until it has read this many rows
#: (a 126-long uint16 split of 180,000 rows is read in ~15 ms: one epoch is too short).
READ_ROWS = 2_000_000


def _read(data: Path, mode: str, batch: int) -> tuple[float, int, int]:
    """Seconds, rows read and rows per epoch of reading whole epochs of the split."""
    from .read_paths import checksum_np, word_bytes

    pipe = _pipe(data, mode, batch)
    word = word_bytes(pipe.ds.row_nbytes)
    rows = epoch = per_epoch = 0
    t = time.perf_counter()
    while rows < READ_ROWS:
        for x, y in pipe.numpy_batches(epoch):
            checksum_np(x, y, word)
            rows += len(y)
        per_epoch = per_epoch or rows
        epoch += 1
    s = time.perf_counter() - t
    pipe.close()
    return s, rows, per_epoch


def _train(data: Path, template: str, mode: str, batch: int, steps: int) -> float:
    from ..core.model import fit_template
    from ..core.store import Dataset
    from .train import _parts, run_loop

    with Dataset(data) as ds:
        spec = fit_template(template, ds.sample_shape, ds.num_classes)
    pipe = _pipe(data, mode, batch)
    strategy, model, compiled = _parts(spec, batch, segment_batches=pipe.segment_batches)
    in_dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
    pipe.close()
    pipe = _pipe(data, mode, batch, in_dtype)
    x_shape = tuple(spec["input"]["shape"])
    warm = 3
    it = iter(strategy.experimental_distribute_dataset(pipe.tf_dataset(range(1), x_shape=x_shape)))
    compiled.train(it, warm)
    s, _ = run_loop(compiled, it, steps, 1, origin=-warm)
    pipe.close()
    return s


def run_bench(rows: int, copies: int, batch: int, steps: int, repeats: int) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="guiapp-bench-groups-") as tmp:
        for template, (generator, op) in CASES.items():
            data = _dataset(Path(tmp), generator, op, rows, copies)
            times: dict[str, list[float]] = {"rows": [], "groups": []}
            train: dict[str, list[float]] = {"rows": [], "groups": []}
            counted: dict[str, int] = {}
            per_epoch: dict[str, int] = {}
            _read(data, "rows", batch)  # warm the page cache
            for _ in range(repeats):
                for mode in ("rows", "groups"):
                    s, n, per_epoch[mode] = _read(data, mode, batch)
                    times[mode].append(s)
                    counted[mode] = n
            for _ in range(repeats):
                for mode in ("rows", "groups"):
                    train[mode].append(_train(data, template, mode, batch, steps))
            read_rate = {m: counted[m] / statistics.median(times[m]) for m in times}
            step_s = {m: statistics.median(train[m]) for m in train}
            out.append(
                {
                    "template": template,
                    "generator": generator,
                    "rows": rows,
                    "copies": copies,
                    "train_rows": per_epoch,
                    "read_rows_per_s": {m: round(v) for m, v in read_rate.items()},
                    "read_ratio_groups_vs_rows": round(read_rate["groups"] / read_rate["rows"], 3),
                    "train_s": {m: round(v, 3) for m, v in step_s.items()},
                    "train_ratio_groups_vs_rows": round(step_s["rows"] / step_s["groups"], 3),
                }
            )
    return {"cpu_count": os.cpu_count(), "batch": batch, "steps": steps, "results": out}


def cmd_bench_groups(args: argparse.Namespace) -> int:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()
    res = run_bench(args.rows, args.copies, args.batch, args.steps, args.repeats)
    return print_result(res, args.json, format_text)


def format_text(res: dict[str, Any]) -> str:
    lines = []
    for r in res["results"]:
        rr, tr = r["read_rows_per_s"], r["train_s"]
        lines.append(
            f"{r['template']:<12} train split of {r['rows']:,} rows ({r['copies']} copies a "
            f"group): read by blocks {rr['rows']:,} rows/s, by groups {rr['groups']:,} rows/s, "
            f"ratio {r['read_ratio_groups_vs_rows']:.3f}; {res['steps']} training steps by "
            f"blocks {tr['rows']:.2f} s, by groups {tr['groups']:.2f} s, ratio "
            f"{r['train_ratio_groups_vs_rows']:.3f}"
        )
    return "\n".join(lines)


def register_bench(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "groups", help="the training split read and trained by groups vs by blocks (same files)"
    )
    s.add_argument("--rows", type=int, default=200_000, help="rows of each generated dataset")
    s.add_argument("--copies", type=int, default=4, help="augmented copies per group")
    s.add_argument("--batch", type=int, default=256)
    s.add_argument("--steps", type=int, default=40, help="training steps per timed run")
    s.add_argument("--repeats", type=int, default=3)
    json_option(s, cmd_bench_groups)
