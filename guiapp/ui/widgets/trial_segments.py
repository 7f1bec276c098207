"""The trials of an experiment (k folds, data fractions, a sweep) drawn apart.

A :class:`~guiapp.core.train.history.RunHistory` continues the step axis from trial to
trial (``trial_starts``: each trial's id and the x its steps start after), so the points of
trial k lie in ``(start_k, start_k+1]``. :func:`trial_of` says which trial each point is;
:class:`TrialMarks` keeps the Training page's curves from joining two trials (a line from
the last epoch of fold 1 down to the first of fold 2 read as a spike) and marks where
each trial starts with a dashed line labelled with its id; the Runs page plots one curve
per trial with :func:`trial_slices`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg

#: the dashed line where a trial starts, and its label
MARK = (200, 200, 200, 150)
DASH = pg.QtCore.Qt.PenStyle.DashLine


def trial_of(starts: Sequence[float], x: np.ndarray) -> np.ndarray:
    """The index of the trial each ``x`` belongs to (``starts``: each trial's first x)."""
    if not len(starts):
        return np.zeros(len(x), np.int64)
    at = np.searchsorted(np.asarray(starts, np.float64), x, side="left") - 1
    return np.clip(at, 0, None).astype(np.int64)


def connect_mask(trial: np.ndarray, y: np.ndarray) -> np.ndarray:
    """pyqtgraph's ``connect`` array: point i joins point i+1 when both are finite and of
    one trial."""
    finite = np.isfinite(y)
    out = np.zeros(len(y), bool)
    out[:-1] = (trial[:-1] == trial[1:]) & finite[:-1] & finite[1:]
    return out


def trial_slices(history: Any) -> Iterator[tuple[Any, np.ndarray]]:
    """``(trial id, index array)`` of the epoch points of each trial of ``history``, in
    order (one pair, id None, for a run that is not an experiment)."""
    n = len(history.epoch_index)
    starts = history.trial_starts
    if len(starts) < 2:
        yield (starts[0][0] if starts else None), np.arange(n)
        return
    trial = trial_of([x for _, x in starts], history.epoch_step.view())
    for k, (tid, _x) in enumerate(starts):
        idx = np.flatnonzero(trial == k)
        if len(idx):
            yield tid, idx


class TrialMarks:
    """Separates an experiment's trials on a set of plots whose curves share the step axis.

    Every ``setData`` of the ``curves`` gets a ``connect`` array that breaks the line
    between two trials of ``history()`` (their points and NaNs are never joined), so a range
    change that redraws a curve keeps the breaks; ``update(history)``, after the curves got
    their data, adds a dashed line where each trial starts, labelled with its id on the
    ``labelled`` plots (the first trial's label at its first point, without a line).
    """

    def __init__(
        self,
        curves: dict[str, pg.PlotDataItem],
        plots: Sequence[pg.PlotItem],
        labelled: Sequence[pg.PlotItem] = (),
        history: Callable[[], Any] | None = None,
    ) -> None:
        self.curves = curves
        self.plots = list(plots)
        self.labelled = set(map(id, labelled))
        self.history = history
        self.lines: list[tuple[pg.PlotItem, pg.InfiniteLine]] = []
        self.marked: list[tuple[Any, float]] = []
        for item in curves.values():
            self._break_between_trials(item)

    def _starts(self) -> list[float]:
        h = self.history() if self.history is not None else None
        return [x for _, x in h.trial_starts] if h is not None else []

    def _break_between_trials(self, item: pg.PlotDataItem) -> None:
        """Wrap ``item.setData`` so that its line never joins two trials."""
        plain = item.setData

        def set_data(*args: Any, **kw: Any) -> None:
            starts = self._starts()
            if len(starts) >= 2 and len(args) >= 2 and "connect" not in kw:
                x, y = np.asarray(args[0], np.float64), np.asarray(args[1], np.float64)
                if len(x) == len(y):
                    kw["connect"] = connect_mask(trial_of(starts, x), y)
                    kw["skipFiniteCheck"] = False
            elif isinstance(item.opts.get("connect"), np.ndarray):
                kw.setdefault("connect", "auto")  # a mask of other data must not stay
            plain(*args, **kw)

        item.setData = set_data

    def update(self, history: Any) -> None:
        starts = list(history.trial_starts)
        if starts[: len(self.marked)] != self.marked:
            self.clear()  # another run
        if len(starts) < 2:
            return
        first = float(history.step.view()[0]) if len(history.step) else starts[0][1]
        for k, (tid, x0) in enumerate(starts[len(self.marked) :], start=len(self.marked)):
            for plot in self.plots:
                label = str(tid) if id(plot) in self.labelled else None
                if k == 0 and label is None:
                    continue
                line = pg.InfiniteLine(
                    pos=first if k == 0 else x0,
                    angle=90,
                    pen=pg.mkPen(None) if k == 0 else pg.mkPen(MARK, width=1, style=DASH),
                    label=label,
                    labelOpts={"position": 0.95, "color": MARK, "anchors": [(0, 0), (0, 0)]},
                )
                plot.addItem(line, ignoreBounds=True)
                self.lines.append((plot, line))
            self.marked.append((tid, x0))

    def clear(self) -> None:
        for plot, line in self.lines:
            plot.removeItem(line)
        self.lines.clear()
        self.marked.clear()
