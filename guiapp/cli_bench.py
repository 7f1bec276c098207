"""`guiapp bench`: measurements behind docs/BENCHMARKS.md (write; read and train to come)."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Add `guiapp bench` with its sub-commands (each module adds its own)."""
    from . import bench_read, bench_train, bench_write

    s = sub.add_parser("bench", help="measure speeds and memory (see docs/BENCHMARKS.md)")
    bench_sub = s.add_subparsers(dest="bench", metavar="BENCH", parser_class=type(s))
    bench_write.register_bench(bench_sub)
    bench_read.register_bench(bench_sub)
    bench_train.register_bench(bench_sub)
