"""A run's attempts: what a crash lost, and where each attempt starts on the plots.

A training process that dies without a last event (``kill -9``, the OOM killer, a power
cut) leaves its run at its last checkpoint. :func:`lost_steps` reads that checkpoint's
position (``checkpoints/last.h5``, its ``position`` attribute: the global step it holds;
none yet: step 0) against the last step the run logged, so the page can say what the
crash cost and what Resume will train again. :class:`AttemptMarks` draws, on the Training
page's plots, a red dashed line where an attempt died and a dashed line where the next
one starts again (its checkpoint), each labelled; the steps in between are the dead
attempt's, trained again by the next one.

Qt-free reading (h5py attributes only, no TensorFlow), plus the marks' pyqtgraph items.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import pyqtgraph as pg

from guiapp.core.train.history import RunHistory, feed_events_file

DIED = (230, 80, 80, 200)
RESUMED = (120, 200, 120, 200)


def checkpoint_step(run_dir: str | Path) -> int | None:
    """The global step the run's last checkpoint holds (None: there is none, or it cannot
    be read; the resume then says so itself)."""
    path = Path(run_dir) / "checkpoints" / "last.h5"
    try:
        with h5py.File(path, "r", locking=False) as f:
            position = json.loads(str(f.attrs["position"]))
        return int(position.get("global_step", 0))
    except (OSError, KeyError, ValueError, TypeError):
        return None


@dataclass
class Loss:
    """What a dead attempt lost: the last step it logged and the checkpoint's step."""

    last_step: int
    checkpoint: int | None  # None: no checkpoint yet, Resume starts from step 0

    @property
    def steps(self) -> int:
        return max(0, self.last_step - (self.checkpoint or 0))

    def text(self) -> str:
        if self.checkpoint is None:
            return (
                f"no checkpoint yet: the {self.steps:,} steps done are lost, and training "
                "starts again at step 0"
            )
        if not self.steps:
            return f"nothing lost: the last checkpoint holds step {self.checkpoint:,}"
        return (
            f"the last checkpoint holds step {self.checkpoint:,}: the {self.steps:,} steps "
            f"after it (to step {self.last_step:,}) are lost and trained again"
        )


def lost_steps(history: Any) -> Loss | None:
    """What resuming ``history``'s run now loses (None before its first logged step)."""
    run_dir = history.started.get("run_dir")
    last = history.last_batch.get("global_step")
    if not isinstance(last, int) or not run_dir:
        return None
    return Loss(last, checkpoint_step(run_dir))


def resumed_step(started: dict[str, Any]) -> int | None:
    """The global step a resumed ``started`` event continues from (its ``resumed_from``
    epoch and step; the epoch 1-based where the event says ``epochs_from`` 1)."""
    at, steps = started.get("resumed_from"), started.get("steps_per_epoch")
    if not isinstance(at, dict) or not isinstance(steps, int):
        return None
    epoch, step = at.get("epoch"), at.get("step")
    if not isinstance(epoch, int) or not isinstance(step, int):
        return None
    return (epoch - (1 if started.get("epochs_from") == 1 else 0)) * steps + step


def read_attempts(path: str | Path) -> tuple[RunHistory, list[tuple[float, Loss]]]:
    """A run's history from its ``events.jsonl`` and where each of its earlier attempts
    ended: the plots' x of its last step, and what the next attempt started from (a
    ``started`` of the same trial after steps: its checkpoint, or step 0 without one)."""
    history = RunHistory()
    ends: list[tuple[float, Loss]] = []

    def feed(event: dict[str, Any]) -> None:
        last = history.last_batch.get("global_step")
        same = event.get("trial", event.get("fold")) == history.trial
        if event.get("event") == "started" and same and isinstance(last, int) and len(history.step):
            ends.append((float(history.step.last() or 0.0), Loss(last, resumed_step(event))))
        history.feed(event)

    history.offset = feed_events_file(path, feed)
    return history, ends


class AttemptMarks:
    """Dashed lines on the plots where an attempt died and where the next one started."""

    def __init__(self, plots: list[pg.PlotItem], labelled: list[pg.PlotItem]) -> None:
        self.plots = plots
        self.labelled = set(map(id, labelled))
        self.lines: list[tuple[pg.PlotItem, pg.InfiniteLine]] = []
        self.attempts = 1

    def died(self, x: float, loss: Loss) -> None:
        """Attempt n died at plot position ``x``; the next resumes ``loss.steps`` before it."""
        n = self.attempts
        # both labels end at their line (the plot ends at the last), at different heights
        self._line(x, f"attempt {n} died", DIED, 0.15, (1, 1))
        self._line(x - loss.steps, f"attempt {n + 1} from here", RESUMED, 0.95, (1, 0))
        self.attempts += 1

    def _line(
        self, x: float, label: str, color: tuple[int, ...], at: float, anchor: tuple[int, int]
    ) -> None:
        """A dashed line at ``x``; its label ``at`` that height, ``anchor`` its corner."""
        for plot in self.plots:
            line = pg.InfiniteLine(
                pos=x,
                angle=90,
                pen=pg.mkPen(color, width=1, style=pg.QtCore.Qt.PenStyle.DashLine),
                label=label if id(plot) in self.labelled else None,
                labelOpts={"position": at, "color": color, "anchors": [anchor, anchor]},
            )
            plot.addItem(line, ignoreBounds=True)
            self.lines.append((plot, line))

    def clear(self) -> None:
        for plot, line in self.lines:
            plot.removeItem(line)
        self.lines.clear()
        self.attempts = 1
