"""``EpochMeters``: the running sums of one training epoch and the numbers the events carry.

It owns what the loop measures while it trains: the loss and correct-prediction sums, the
rows seen, the time spent waiting for input, both for the current logging window (the
``batch`` event: loss, accuracy, rows/s, input wait, ETA) and for the whole epoch (the
``epoch`` event and the history row). How input wait is measured lives in ``fetch`` alone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any


@dataclasses.dataclass
class EpochMeters:
    epoch: int
    epochs: int
    steps: int
    start_step: int
    global_batch: int
    log_every: int
    t_epoch: float
    loss: float = 0.0
    correct: float = 0.0
    rows: int = 0
    wait_s: float = 0.0
    win_loss: float = 0.0
    win_correct: float = 0.0
    win_rows: int = 0
    win_wait: float = 0.0
    win_t: float = dataclasses.field(default_factory=time.perf_counter)
    # Input wait: time next() takes beyond the fastest fetch seen (the iterator's own
    # fixed cost when a batch is already waiting), i.e. time spent waiting for data.
    fastest: float = float("inf")

    def fetch(self, it: Iterator[Any]) -> Any:
        """The next batch from ``it``, counting the time spent waiting for it."""
        t0 = time.perf_counter()
        batch = next(it)
        fetch = time.perf_counter() - t0
        self.fastest = min(self.fastest, fetch)
        waited = fetch - self.fastest
        self.wait_s += waited
        self.win_wait += waited
        return batch

    def add(self, loss_sum: float, correct: float) -> None:
        """Count one global batch with its summed loss and number of correct predictions."""
        self.loss += loss_sum
        self.correct += correct
        self.rows += self.global_batch
        self.win_loss += loss_sum
        self.win_correct += correct
        self.win_rows += self.global_batch

    def window(self, step: int) -> dict[str, float]:
        """The ``batch`` event's numbers for the window ending at ``step``; starts a new one."""
        now = time.perf_counter()
        out = {
            "loss": self.win_loss / max(1, self.win_rows),
            "accuracy": self.win_correct / max(1, self.win_rows),
            "rows_per_s": self.win_rows / max(1e-9, now - self.win_t),
            "input_wait": self.win_wait / max(1e-9, now - self.win_t),
            "eta_s": (self.steps - step)
            * (now - self.win_t)
            / max(1, step % self.log_every or self.log_every)
            + (self.epochs - self.epoch - 1)
            * self.steps
            * (now - self.t_epoch)
            / max(1, step - self.start_step),
        }
        self.win_loss = self.win_correct = 0.0
        self.win_rows = 0
        self.win_wait = 0.0
        self.win_t = now
        return out

    def epoch_row(self) -> dict[str, Any]:
        """The epoch's history row (before validation), timed from ``t_epoch`` to now."""
        duration = time.perf_counter() - self.t_epoch
        return {
            "epoch": self.epoch,
            "loss": self.loss / max(1, self.rows),
            "accuracy": self.correct / max(1, self.rows),
            "duration_s": round(duration, 3),
            "rows_per_s": round(self.rows / max(duration, 1e-9), 1),
            "input_wait": round(self.wait_s / max(duration, 1e-9), 4),
        }
