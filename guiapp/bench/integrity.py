"""What the store's integrity checks cost: ``python -m guiapp.bench.integrity``.

- ``open``: opening a dataset of ``--shards`` sealed shards (median of 15), with the shard
  vouching of ``Dataset._check_listed`` and without it (the same process, interleaved);
- ``check``: the peak RSS of ``guiapp check --full`` (a child process each, its own
  ``ru_maxrss``) on 126-long uint16 rows at ``--rows`` and ``--rows-large`` rows;
- ``write``: the store's write path (``bench write``'s ``bench_write_path``) with and
  without the commit records of ``commit_sums.py``, interleaved repeats, medians.

Figures and the commands are in docs/BENCHMARKS.md (*Store integrity*).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROW_SHAPE = (126,)


def make(path: Path, rows: int, capacity: int | None = None) -> Path:
    """126-long uint16 rows (varied per block), three classes."""
    from ..core.store import DatasetWriter

    block = np.random.default_rng(0).integers(0, 4, (1 << 16, *ROW_SHAPE), dtype=np.uint16)
    with DatasetWriter(
        path,
        sample_shape=ROW_SHAPE,
        dtype="uint16",
        class_names=["a", "b", "c"],
        shard_capacity=capacity,
        expected_rows=rows,
        overwrite=True,
    ) as w:
        for a in range(0, rows, 1 << 16):
            m = min(1 << 16, rows - a)
            block[:, 0] = a >> 16
            w.append(block[:m], (np.arange(m) + a) % 3)
    return path


def bench_open(folder: Path, shards: int, reps: int = 15) -> dict[str, Any]:
    """Opening with the vouching of every shard (the process's memo of vouched shards
    emptied first: a first open), again (the memo warm: one ``stat`` a shard), and with
    no vouching at all, interleaved."""
    from ..core.store import Dataset, dataset, vouching

    path = make(folder / "open.h5", shards * 1024, capacity=1024)
    checked = dataset.Dataset._check_listed
    modes = ("first", "again", "none")
    times: dict[str, list[float]] = {m: [] for m in modes}
    try:
        for r in range(reps):
            for mode in modes[r % 3 :] + modes[: r % 3]:
                if mode == "first":
                    vouching._VOUCHED.clear()
                dataset.Dataset._check_listed = (  # type: ignore[method-assign]
                    (lambda self: None) if mode == "none" else checked
                )
                t = time.perf_counter()
                with Dataset(path) as ds:
                    assert len(ds.shards) == shards
                times[mode].append(time.perf_counter() - t)
    finally:
        dataset.Dataset._check_listed = checked  # type: ignore[method-assign]
    ms = {m: statistics.median(times[m]) * 1e3 for m in modes}
    return {
        "shards": shards,
        "open_ms": round(ms["first"], 1),
        "open_again_ms": round(ms["again"], 1),
        "open_without_vouching_ms": round(ms["none"], 1),
        "per_shard_us": round(ms["first"] / shards * 1e3, 1),
    }


CHILD = (
    "import resource, sys; from guiapp.cli import main; rc = main(['check', sys.argv[1], "
    "'--full']); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rc, file=sys.stderr)"
)


def bench_check(folder: Path, rows: list[int]) -> list[dict[str, Any]]:
    out = []
    for n in rows:
        path = make(folder / f"check{n}.h5", n)
        t = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - t
        kib, rc = r.stderr.strip().splitlines()[-1].split()
        out.append(
            {
                "rows": n,
                "bytes": n * (2 * ROW_SHAPE[0] + 4),
                "exit": int(rc),
                "peak_rss_mib": round(int(kib) / 1024, 1),
                "wall_s": round(wall, 2),
            }
        )
        from ..core.store import remove_dataset

        remove_dataset(path)
    return out


def bench_write(folder: Path, rows: int, repeats: int) -> dict[str, Any]:
    from ..core.store import shard
    from ..core.store.commit_sums import CommitSums
    from .write import bench_write_path

    of, create = CommitSums.of, shard.create_sums  # type: ignore[attr-defined]
    mb: dict[bool, list[float]] = {True: [], False: []}
    try:
        for r in range(repeats):
            for on in (True, False) if r % 2 else (False, True):
                CommitSums.of = of if on else classmethod(lambda cls, f: None)  # type: ignore[assignment]
                shard.create_sums = create if on else (lambda f: None)  # type: ignore[attr-defined]
                mb[on].append(bench_write_path(folder, rows, repeats=1)["store_mb_per_s"])
    finally:
        CommitSums.of = of  # type: ignore[method-assign]
        shard.create_sums = create  # type: ignore[attr-defined]
    with_sums, without = statistics.median(mb[True]), statistics.median(mb[False])
    return {
        "rows": rows,
        "store_mb_per_s_with_records": mb[True],
        "store_mb_per_s_without": mb[False],
        "ratio_with_over_without": round(with_sums / without, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m guiapp.bench.integrity", description=__doc__)
    ap.add_argument("--shards", type=int, default=1000, help="shards of the open test")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the small check")
    ap.add_argument("--rows-large", type=int, default=20_000_000, help="rows of the large one")
    ap.add_argument("--write-rows", type=int, default=100_000, help="25x25 float32 rows")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved write repeats")
    ap.add_argument("--only", choices=("open", "check", "write"), default=None)
    ap.add_argument("--dir", default=None, help="folder for the temporary files")
    args = ap.parse_args(argv)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        folder = Path(d)
        if args.only in (None, "open"):
            result["open"] = bench_open(folder, args.shards)
        if args.only in (None, "check"):
            result["check_full"] = bench_check(folder, [args.rows, args.rows_large])
        if args.only in (None, "write"):
            result["write"] = bench_write(folder, args.write_rows, args.repeats)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
