"""``EpochMeters``: the numbers one training epoch reports, read from the device's sums.

The step adds its loss, correct predictions and input wait to :class:`~.steps.DeviceTotals`
on the device; this reads them once per logging window (the ``batch`` event), before a
checkpoint and at the end of the epoch (the ``epoch`` event and the history row), and
turns them into what the events carry:

- ``input_wait``: the fraction of the window's (or the epoch's) wall time the step spent
  waiting for its next batch, absolute (TensorFlow profiler's bands: < 5% fine, 5-20%
  moderate, > 20% input-bound); an unbiased estimate from the steps the clock times
  (:mod:`.steps`: segment starts, one in 8 of the others, all after a call that waited);
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
from .steps import CORRECT, FINITE, LOSS, STEPS, WAIT_S, DeviceTotals


@dataclasses.dataclass
class EpochMeters:
    totals: DeviceTotals
    epoch: int
    epochs: int
    steps: int
    global_batch: int
    start_step: int = 0
    resumed: dict[str, float] | None = None  # a checkpoint's ``position()`` of this epoch
    t_epoch: float = dataclasses.field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        r = self.resumed or {}
        self.before_s = float(r.get("elapsed_s", 0.0))  # wall time of the epoch before resume
        self.totals.reset(
            loss=r.get("loss", 0.0),
            correct=r.get("correct", 0.0),
            steps=self.start_step,
            wait_s=r.get("wait_s", 0.0),
        )
        self.last = self.totals.initial(
            r.get("loss", 0.0), r.get("correct", 0.0), self.start_step, r.get("wait_s", 0.0)
        )
        self.last_t = self.t_epoch

    def read(self) -> list[float]:
        """The device's sums now; raises a UserError if a loss was NaN or infinite."""
        sums = self.totals.read()
        if not math.isfinite(sums[LOSS]):
            raise errors.loss_not_finite(self.epoch, int(sums[FINITE]) + 1, sums[LOSS])
        return sums

    def window(self) -> dict[str, float]:
        """The ``batch`` event's numbers since the last window; starts a new one."""
        sums, now = self.read(), time.perf_counter()
        out = rates(
            sums[LOSS] - self.last[LOSS],
            sums[CORRECT] - self.last[CORRECT],
            int(sums[STEPS] - self.last[STEPS]) * self.global_batch,
            sums[WAIT_S] - self.last[WAIT_S],
            now - self.last_t,
        )
        done = int(sums[STEPS])
        per_step = (now - self.last_t) / max(1.0, sums[STEPS] - self.last[STEPS])
        per_step_epoch = (now - self.t_epoch) / max(1, done - self.start_step)
        out["eta_s"] = (self.steps - done) * per_step + (
            self.epochs - self.epoch - 1
        ) * self.steps * per_step_epoch
        self.last, self.last_t = sums, now
        return out

    def position(self) -> dict[str, float]:
        """The epoch's sums so far, for a checkpoint (read from the device, checked)."""
        sums = self.read()
        return {
            "loss": sums[LOSS],
            "correct": sums[CORRECT],
            "wait_s": sums[WAIT_S],
            "elapsed_s": self.before_s + time.perf_counter() - self.t_epoch,
        }

    def epoch_row(self) -> dict[str, Any]:
        """The epoch's history row (before validation), its time counted across resumes."""
        sums = self.read()
        duration = self.before_s + time.perf_counter() - self.t_epoch
        row = rates(
            sums[LOSS],
            sums[CORRECT],
            int(sums[STEPS]) * self.global_batch,
            sums[WAIT_S],
            duration,
        )
        return {
            "epoch": self.epoch,
            "loss": row["loss"],
            "accuracy": row["accuracy"],
            "duration_s": round(duration, 3),
            "rows_per_s": round(row["rows_per_s"], 1),
            "input_wait": round(row["input_wait"], 4),
            "supply_rows_per_s": round(row["supply_rows_per_s"], 1),
            "consume_rows_per_s": round(row["consume_rows_per_s"], 1),
        }


def rates(loss: float, correct: float, rows: int, wait_s: float, wall_s: float) -> dict[str, float]:
    """Mean loss, accuracy, input-wait fraction and the three rates of ``rows`` rows."""
    wall = max(wall_s, 1e-9)
    wait = min(max(wait_s, 0.0), wall)
    return {
        "loss": loss / max(1, rows),
        "accuracy": correct / max(1, rows),
        "rows_per_s": rows / wall,
        "input_wait": wait / wall,
        "supply_rows_per_s": rows / max(wait, 1e-9),
        "consume_rows_per_s": rows / max(wall - wait, 1e-9),
    }


#: TensorFlow profiler's input-bound bands: below FINE the input keeps up, above BOUND
#: the step mostly waits for it.
FINE, BOUND = 0.05, 0.20


def wait_band(fraction: float) -> str:
    """``fine`` (< 5%), ``moderate`` (5-20%) or ``input-bound`` (> 20%)."""
    if fraction < FINE:
        return "fine"
    return "moderate" if fraction <= BOUND else "input-bound"
