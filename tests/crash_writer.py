"""Child process for the crash test: writes reference rows, reports progress, never stops.

Usage: python crash_writer.py PATH ROWS BATCH CAPACITY COMMIT_ROWS
Prints "appended N" after every append and "committed N" after every commit it makes.
"""

from __future__ import annotations

import sys

from conftest import CLASSES, reference_rows

from guiapp.core.store import DatasetWriter


def main() -> None:
    path, rows, batch, capacity, commit_rows = sys.argv[1], *map(int, sys.argv[2:6])
    w = DatasetWriter(
        path,
        sample_shape=(25, 25),
        dtype="float32",
        class_names=CLASSES,
        shard_capacity=capacity,
        commit_rows=10**12,
    )
    print("ready", flush=True)
    since = 0
    for a in range(0, rows, batch):
        b = min(rows, a + batch)
        w.append(*reference_rows(a, b))
        print(f"appended {b}", flush=True)
        since += b - a
        if since >= commit_rows:
            w.commit()
            since = 0
            print(f"committed {b}", flush=True)
    w.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
