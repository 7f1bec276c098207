"""``EpochMeters``: the numbers one training epoch reports, read from the device's sums.

The step adds its loss, correct predictions and input wait to :class:`~.steps.DeviceTotals`
on the device; this reads them once per logging window (the ``batch`` event), before a
checkpoint and at the end of the epoch (the ``epoch`` event and the history row), and
turns them into what the events carry:

- ``input_wait``: the fraction of the window's (or the epoch's) wall time after start-up
  that the step spent waiting for its next batch, absolute (TensorFlow profiler's bands:
  < 5% fine, 5-20% moderate, > 20% input-bound); an unbiased estimate from the steps the
  clock times (:mod:`.steps`: segment starts, one in 8 of the others, all after a call that
  waited; the clock's own cost taken out);
- ``startup_s``: what the epoch's first batch waited (the reader starting), apart;
- ``wait_sampled_1_in``: (``batch`` events) one step in how many has its wait timed now
  (1: every step; it follows the step time, :mod:`.steps`);
- ``input_wait_every_step``: with ``GUIAPP_WAIT_EVERY_STEP=1`` only, the same fraction from
  every step timed, beside the sampled estimate of the same run;
- each metric of the run (:mod:`.metrics`): ``accuracy``, ``top3_accuracy``, ...;
- ``supply_rows_per_s``: rows per second spent inside the iterator's ``get_next``: what
  the input pipeline delivered while the step waited (an upper bound on its rate when it
  keeps up, the step then barely waits; close to its rate when it is the bottleneck);
- ``consume_rows_per_s``: rows per second of the time not spent waiting: what the model
  consumes when input is free;
- ``rows_per_s``: rows per second of wall time, the two together.

Each read checks that every loss so far was finite; the first step whose loss was not
raises :func:`~guiapp.core.errors.loss_not_finite`. ``position()`` is what a checkpoint
stores of the epoch so far, so a resumed epoch's history row equals the uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from .. import errors
from .metrics import ACCURACY, extra_metrics
from .steps import (
    CORRECT,
    FINITE,
    KEPT_SUMS,
    LOSS,
    METRIC0,
    STARTUP_S,
    STEPS,
    WAIT_ALL_S,
    WAIT_S,
    DeviceTotals,
    every_step_timed,
)


@dataclasses.dataclass
class EpochMeters:
    totals: DeviceTotals
    epoch: int  # 0-based here (the loop's counter); every event and row says epoch + 1
    epochs: int
    steps: int
    global_batch: int
    start_step: int = 0
    resumed: dict[str, Any] | None = None  # a checkpoint's ``position()`` of this epoch
    t_epoch: float = dataclasses.field(default_factory=time.perf_counter)
    metrics: tuple[str, ...] = (ACCURACY,)

    def __post_init__(self) -> None:
        r = self.resumed or {}
        self.before_s = float(r.get("elapsed_s", 0.0))  # wall time of the epoch before resume
        self.extras = extra_metrics(self.metrics)
        self.every = every_step_timed()
        hits = r.get("hits") or {}
        kept_hits = [float(hits.get(m, 0.0)) for m in self.extras]
        self.last = self.totals.initial(self.start_step, r, kept_hits)
        self.totals.reset(self.last)
        self.last_t = self.t_epoch

    def read(self) -> list[float]:
        """The device's sums now; raises a UserError if a loss was NaN or infinite."""
        sums = self.totals.read()
        if not math.isfinite(sums[LOSS]):
            raise errors.loss_not_finite(self.epoch, int(sums[FINITE]) + 1, sums[LOSS])
        return sums

    def _numbers(self, sums: list[float], wall_s: float) -> dict[str, float]:
        """The meters of the sums ``sums`` (of one window or the epoch) over ``wall_s``."""
        rows = int(sums[STEPS]) * self.global_batch
        out = rates(
            sums[LOSS],
            sums[CORRECT],
            rows,
            sums[WAIT_S],
            wall_s,
            startup_s=sums[STARTUP_S],
            hits={m: sums[METRIC0 + i] for i, m in enumerate(self.extras)},
        )
        if self.every:
            every = rates(0.0, 0.0, rows, sums[WAIT_ALL_S], wall_s, startup_s=sums[STARTUP_S])
            out["input_wait_every_step"] = every["input_wait"]
        return out

    def window(self) -> dict[str, float]:
        """The ``batch`` event's numbers since the last window; starts a new one."""
        sums, now = self.read(), time.perf_counter()
        out = self._numbers(
            [a - b for a, b in zip(sums, self.last, strict=True)], now - self.last_t
        )
        out["wait_sampled_1_in"] = int(self.totals.rate.numpy())
        done = int(sums[STEPS])
        per_step = (now - self.last_t) / max(1.0, sums[STEPS] - self.last[STEPS])
        per_step_epoch = (now - self.t_epoch) / max(1, done - self.start_step)
        out["eta_s"] = (self.steps - done) * per_step + (
            self.epochs - self.epoch - 1
        ) * self.steps * per_step_epoch
        self.last, self.last_t = sums, now
        return out

    def position(self) -> dict[str, Any]:
        """The epoch's sums so far, for a checkpoint (read from the device, checked)."""
        sums = self.read()
        return {
            **{name: sums[slot] for name, slot in KEPT_SUMS.items()},
            "hits": {m: sums[METRIC0 + i] for i, m in enumerate(self.extras)},
            "elapsed_s": self.before_s + time.perf_counter() - self.t_epoch,
        }

    def epoch_row(self) -> dict[str, Any]:
        """The epoch's history row (before validation), its time counted across resumes;
        its ``epoch`` 1-based."""
        sums = self.read()
        duration = self.before_s + time.perf_counter() - self.t_epoch
        row = self._numbers(sums, duration)
        out: dict[str, Any] = {
            "epoch": self.epoch + 1,
            "loss": row["loss"],
            **{m: row[m] for m in self.metrics},
            "duration_s": round(duration, 3),
            "rows_per_s": round(row["rows_per_s"], 1),
            "input_wait": round(row["input_wait"], 4),
            "startup_s": round(row["startup_s"], 3),
            "supply_rows_per_s": round(row["supply_rows_per_s"], 1),
            "consume_rows_per_s": round(row["consume_rows_per_s"], 1),
        }
        if "input_wait_every_step" in row:
            out["input_wait_every_step"] = round(row["input_wait_every_step"], 4)
        return out


def rates(
    loss: float,
    correct: float,
    rows: int,
    wait_s: float,
    wall_s: float,
    *,
    startup_s: float = 0.0,
    hits: dict[str, float] | None = None,
) -> dict[str, float]:
    """Mean loss, accuracy (and each of ``hits``' metrics), the input-wait fraction and the
    three rates of ``rows`` rows. ``startup_s`` (the epoch's first batch's wait) is
    reported as it is and left out of the input-wait fraction: the fraction is of the wall
    time after start-up."""
    wall = max(wall_s, 1e-9)
    startup = min(max(startup_s, 0.0), wall)
    after = max(wall - startup, 1e-9)
    wait = min(max(wait_s, 0.0), after)
    n = max(1, rows)
    return {
        "loss": loss / n,
        "accuracy": correct / n,
        **{m: h / n for m, h in (hits or {}).items()},
        "rows_per_s": rows / wall,
        "input_wait": wait / after,
        "startup_s": startup,
        "supply_rows_per_s": rows / max(wait + startup, 1e-9),
        "consume_rows_per_s": rows / max(after - wait, 1e-9),
    }


#: TensorFlow profiler's input-bound bands: below FINE the input keeps up, above BOUND
#: the step mostly waits for it.
FINE, BOUND = 0.05, 0.20


def wait_band(fraction: float) -> str:
    """``fine`` (< 5%), ``moderate`` (5-20%) or ``input-bound`` (> 20%)."""
    if fraction < FINE:
        return "fine"
    return "moderate" if fraction <= BOUND else "input-bound"
