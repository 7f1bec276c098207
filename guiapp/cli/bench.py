"""`guiapp bench`: measurements behind docs/BENCHMARKS.md (write; read and train to come)."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Add `guiapp bench` with its sub-commands (each module adds its own)."""
    from ..bench import baselines as bench_baselines
    from ..bench import first_call as bench_first_call
    from ..bench import genomes as bench_genomes
    from ..bench import groups as bench_groups
    from ..bench import import_ as bench_import
    from ..bench import predict as bench_predict
    from ..bench import read as bench_read
    from ..bench import scale as bench_scale
    from ..bench import train as bench_train
    from ..bench import write as bench_write

    s = sub.add_parser("bench", help="measure speeds and memory (see docs/BENCHMARKS.md)")
    bench_sub = s.add_subparsers(dest="bench", metavar="BENCH", parser_class=type(s))
    bench_write.register_bench(bench_sub)
    bench_read.register_bench(bench_sub)
    bench_train.register_bench(bench_sub)
    bench_predict.register_bench(bench_sub)
    bench_import.register_bench(bench_sub)
    bench_scale.register_bench(bench_sub)
    bench_groups.register_bench(bench_sub)
    bench_genomes.register_bench(bench_sub)
    bench_baselines.register_bench(bench_sub)
    bench_first_call.register_bench(bench_sub)
    g = bench_sub.add_parser(
        "gui",
        help="the GUI event loop's longest stall while jobs run and the browser scrolls (JSON)",
    )
    g.set_defaults(func=_cmd_bench_gui)


def _cmd_bench_gui(args: Any) -> int:
    import json
    import os
    import sys

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from ..bench.gui import run_gui_bench

    res = run_gui_bench(None)
    sys.stdout.write(json.dumps(res, indent=2) + "\n")
    return 0
