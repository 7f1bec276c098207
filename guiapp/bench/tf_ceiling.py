"""How fast TensorFlow can hand batches to the bench's consumer when reading costs nothing.

``python -m guiapp.bench.tf_ceiling [--segments 200] [--repeat 3]`` prints, for the two
row types of ``guiapp bench read`` (25x25 float32 at batch 512, 126 uint16 at batch 4096),
the rows/s the ``tf.function`` consumer (``read_paths.tf_consumer``) reaches on datasets
whose elements are already in memory, one figure per way of handing batches over:

- ``batches``: one element per batch (the best any per-batch pipeline can do);
- ``rebatch``: segments of 16 batches split by ``Dataset.rebatch`` (what ``tfdata.py`` does);
- ``segments``: the 16-batch segments themselves, not split;
- ``numpy_function``: one ``tf.numpy_function`` per segment returning an aligned buffer it
  already holds (the reader's hand-off with the read taken out);
- ``numpy``: ``checksum_np`` on a batch in the cache (the consumer with no TensorFlow).

Each is the best of ``--repeat`` passes. Set against the raw limit ``guiapp bench read``
measures on the same machine, these are the ceilings of the tf.data path on it
(docs/BENCHMARKS.md, "What TensorFlow's hand-off allows").
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.pipeline.reader import AlignedPool
from .read_paths import checksum_np, tf_consumer, word_bytes

CASES = (((25, 25), np.float32, 512), ((126,), np.uint16, 4096))
SEGMENT_BATCHES = 16


def ceilings(segments: int = 200, repeat: int = 3) -> list[dict[str, Any]]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return [_case(shape, np.dtype(dt), bs, segments, repeat) for shape, dt, bs in CASES]


def _case(
    shape: tuple[int, ...], dtype: np.dtype[Any], bs: int, segments: int, repeat: int
) -> dict[str, Any]:
    import tensorflow as tf

    rows = bs * SEGMENT_BATCHES
    xb = AlignedPool(1).take(rows * int(np.prod(shape)) * dtype.itemsize)
    x = xb.view(dtype).reshape((rows, *shape))
    x[...] = 1
    y = np.zeros(rows, np.int32)
    word = word_bytes(x[0].nbytes)
    consume = tf_consumer(word)
    tdt = tf.as_dtype(dtype)

    def handed(_i: Any) -> tuple[Any, Any]:
        a, b = tf.numpy_function(lambda: (x, y), [], [tdt, tf.int32], stateful=False)
        a.set_shape((None, *shape))
        b.set_shape((None,))
        return a, b

    paths: dict[str, Callable[[], Any]] = {
        "batches": lambda: tf.data.Dataset.from_tensors((x[:bs], y[:bs])).repeat(
            segments * SEGMENT_BATCHES
        ),
        "rebatch": lambda: tf.data.Dataset.from_tensors((x, y)).repeat(segments).rebatch(bs),
        "segments": lambda: tf.data.Dataset.from_tensors((x, y)).repeat(segments),
        "numpy_function": lambda: tf.data.Dataset.range(segments).map(handed),
    }
    row: dict[str, Any] = {"shape": list(shape), "dtype": dtype.name, "batch": bs}
    for name, make in paths.items():
        best = 0.0
        for _ in range(repeat):
            d = make()
            t = time.perf_counter()
            n, _c = consume(d)
            best = max(best, n / (time.perf_counter() - t))
        row[name] = round(best)
    best = 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(segments * SEGMENT_BATCHES):
            checksum_np(x[:bs], y[:bs], word)
        best = max(best, segments * rows / (time.perf_counter() - t))
    row["numpy"] = round(best)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m guiapp.bench.tf_ceiling", description=__doc__)
    ap.add_argument("--segments", type=int, default=200, help="segments per pass")
    ap.add_argument("--repeat", type=int, default=3, help="passes per figure (best kept)")
    ap.add_argument("--json", action="store_true", help="print one JSON list")
    args = ap.parse_args(argv)
    rows = ceilings(max(1, args.segments), max(1, args.repeat))
    if args.json:
        print(json.dumps(rows))
        return 0
    for r in rows:
        figures = ", ".join(
            f"{k} {r[k]:,}" for k in ("batches", "rebatch", "segments", "numpy_function", "numpy")
        )
        print(f"{'x'.join(map(str, r['shape']))} {r['dtype']} batch {r['batch']}: {figures} rows/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
