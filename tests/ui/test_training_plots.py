"""The live training plots keep their ranges (and cached axes) while points arrive, so a
refresh repaints the curves only; an ended run is fitted; a user's zoom is kept."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QGraphicsItem

from guiapp.core.train.history import RunHistory
from guiapp.ui.pages.training.training_plots import TrainingPlots


def feed_batches(history: RunHistory, first: int, last: int) -> None:
    for step in range(first, last + 1, 5):
        history.feed(
            {
                "event": "batch",
                "global_step": step,
                "loss": 3.0 / math.sqrt(step),
                "accuracy": 0.3 + step / 1000,
                "rows_per_s": 1000.0 + step,
                "input_wait": 0.02,
            }
        )


def refresh(plots: TrainingPlots) -> None:
    """Refresh until every range that has to move moved (one plot moves per refresh)."""
    for _ in range(len(plots.ranges)):
        plots.refresh()


def shown_plots(qtbot) -> tuple[TrainingPlots, RunHistory]:
    """Plots on screen following a run of 400 planned steps that has not logged yet."""
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(800, 500)
    plots.show()
    history = RunHistory()
    history.feed({"event": "started", "epochs": 1, "steps_per_epoch": 400})
    plots.set_history(history)
    return plots, history


def test_ranges_move_in_steps_and_fit_an_ended_run(qtbot) -> None:
    plots, history = shown_plots(qtbot)
    view = plots.loss_plot.getViewBox()
    axis = plots.loss_plot.getAxis("left")
    assert axis.cacheMode() == QGraphicsItem.CacheMode.DeviceCoordinateCache

    feed_batches(history, 5, 100)
    refresh(plots)
    first = view.viewRange()
    assert first[0][0] == 0 and 400 <= first[0][1] < 420  # the run's planned 400 steps
    moved = 0
    for last in range(105, 150, 5):  # a few more points: the same range, ticks and axes
        feed_batches(history, last, last)
        refresh(plots)
        moved += view.viewRange() != first
    assert moved == 0 and plots.points("loss_raw") == 29

    feed_batches(history, 150, 400)  # the loss falls out of the range: y moves, x stays
    refresh(plots)
    grown = view.viewRange()
    assert grown[0] == first[0] and grown[1][0] < 0.15 < first[1][0]
    wait = plots.wait_plot.getViewBox().viewRange()[1]
    assert wait == [0.0, 0.3]  # a fraction plot from 0 to the bands
    feed_batches(history, 405, 500)  # past the plan (another trial): x grows in a step
    refresh(plots)
    assert view.viewRange()[0][1] > 500 + 100

    history.feed({"event": "finished"})
    refresh(plots)
    (x0, x1), _ = view.viewRange()
    assert x0 < 5 and 500 < x1 < 530  # fitted: no room left for growth

    view.setRange(xRange=(100, 200), padding=0)  # the user's zoom...
    view.sigRangeChangedManually.emit(view.state["mouseEnabled"])  # as a wheel zoom does
    feed_batches(history, 505, 800)
    refresh(plots)
    assert view.viewRange()[0] == [100.0, 200.0]  # ...stays
    view.enableAutoRange()  # the "A" button: follow the data again
    feed_batches(history, 805, 810)
    refresh(plots)
    assert view.viewRange()[0][1] >= 810


def test_one_range_moves_per_refresh_in_turns(qtbot) -> None:
    """A moved range repaints its axes from scratch, so one refresh moves one plot's range
    at most; the others follow at the next refreshes, each in its turn."""
    plots, history = shown_plots(qtbot)  # its own refresh: nothing to show yet
    views = [p.getViewBox() for p in (plots.loss_plot, plots.acc_plot, plots.rate_plot)]
    views.append(plots.wait_plot.getViewBox())
    feed_batches(history, 5, 100)  # every plot's range has to move from the reset (0, 1)
    before = [v.viewRange() for v in views]
    moved_per_refresh = []
    for _ in range(5):
        plots.refresh()
        now = [v.viewRange() for v in views]
        moved_per_refresh.append(sum(a != b for a, b in zip(before, now, strict=True)))
        before = now
    assert moved_per_refresh == [1, 1, 1, 1, 0]
    assert [v.viewRange()[0][0] for v in views] == [0.0] * 4  # all moved, to the plan


def test_plots_paint_one_per_tick_when_the_page_is_shown(qtbot) -> None:
    """Showing the plots does not paint all four in one go: each plot's updates come back
    on in its own timer tick, in order, the later ones still held; hiding holds them
    again, so the next show is staged too."""
    from PySide6.QtWidgets import QStackedWidget, QWidget

    stack = QStackedWidget()
    qtbot.addWidget(stack)
    other, plots = QWidget(), TrainingPlots()
    stack.addWidget(other)
    stack.addWidget(plots)
    stack.resize(800, 500)
    stack.show()
    views = plots.staged.plots
    assert len(views) == 4 and not any(v.updatesEnabled() for v in views)  # never shown yet
    for _ in range(2):
        seen: list[tuple[int, list[bool]]] = []

        def record(i: int, seen: list[tuple[int, list[bool]]] = seen) -> None:
            seen.append((i, [v.updatesEnabled() for v in views]))

        plots.staged.revealed.connect(record)
        stack.setCurrentWidget(plots)
        qtbot.wait(1)
        assert not plots.staged.done()  # the page is shown, its plots follow
        qtbot.waitUntil(plots.staged.done, timeout=2000)
        assert [i for i, _ in seen] == [0, 1, 2, 3]
        for i, enabled in seen:  # at plot i's turn: it and those before it, none after
            assert enabled == [k <= i for k in range(4)]
        plots.staged.revealed.disconnect()
        stack.setCurrentWidget(other)
        assert not any(v.updatesEnabled() for v in views)


def test_the_left_axis_keeps_its_width_whatever_the_values(qtbot) -> None:
    """A self-fitting axis resized itself after the first paint and as values grew (each
    time the plot was laid out and painted again); the app's plots keep one width."""
    import numpy as np

    from guiapp.ui.widgets.plots import new_plot

    widget = new_plot("rows/s", "step", digits=7)
    qtbot.addWidget(widget)
    widget.resize(380, 214)
    widget.show()
    qtbot.wait(50)
    axis = widget.getPlotItem().getAxis("left")
    widths = {round(axis.width(), 1)}
    for top in (0.5, 40_000, 2_000_000):
        widget.getPlotItem().plot(np.arange(10), np.linspace(0, top, 10), clear=True)
        widget.getPlotItem().enableAutoRange()
        qtbot.wait(50)
        widths.add(round(axis.width(), 1))
    assert len(widths) == 1, widths
