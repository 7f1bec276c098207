"""Python's cyclic garbage collector around a training run.

A full collection walks every object the collector tracks: with TensorFlow, Keras and a
model loaded, several hundred thousand, 0.13-0.15 s on this machine each time. Importing
TensorFlow triggers about five of them (0.2-0.3 s of its 2.4 s), and during a run one lands
wherever the allocations happen to trigger it: when it fell in the first epoch, that epoch
took a third longer (``guiapp bench baselines``, docs/BENCHMARKS.md). So:

- :func:`paused` holds the collector off while an experiment starts (TensorFlow's import,
  the devices, the first run's model and pipelines) and puts it back as it was at the end;
- :func:`frozen` is a run once it is prepared: every object that exists then is moved out of
  the collector's reach (``gc.freeze``) and the collector runs again, so what the run makes
  is still collected but never walked with the rest; at the run's end the frozen objects
  are handed back (``gc.unfreeze``), so a trial's model is freed before the next trial's
  when an experiment runs its trials in one process.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside (until a :func:`frozen` run turns it back on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def frozen() -> Iterator[None]:
    """Everything that exists now out of the collector's reach, the collector on."""
    gc.freeze()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
