"""The measurements behind docs/BENCHMARKS.md, each a ratio against a reference in the same run: read, write, train, gui."""
