"""The Browser page: a virtual grid of any dataset's samples, a detail pane and statistics.

Everything that touches rows runs off the GUI thread (:class:`SampleLoader`); the grid
reads only the rows on screen. ``show_indices`` lets other pages (Runs) open a list of
samples, e.g. the misclassified ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
)

from guiapp.core.genomes.rows import row_lineage_with_bases
from guiapp.core.predict import PredictionFilter
from guiapp.core.project import Project
from guiapp.core.store.columns import group_rows
from guiapp.ui.background import BackgroundCalls
from guiapp.ui.pages.base import SP, Page
from guiapp.ui.pages.browser.dataset_stats import DatasetStats, sample_statistics
from guiapp.ui.pages.browser.prediction_overlay import PredictionOverlay, select_rows
from guiapp.ui.pages.browser.sample_detail import SampleDetail
from guiapp.ui.widgets.elided_label import ElidedLabel
from guiapp.ui.widgets.layouts import splitter
from guiapp.ui.widgets.plots import StagedPaint
from guiapp.ui.widgets.sample_grid import SampleGridView
from guiapp.ui.widgets.sample_loader import SampleLoader
from guiapp.ui.widgets.sample_selection import SampleSelection
from guiapp.ui.widgets.thumbnails import ColorScale

ALL_CLASSES = -1
STATS_AFTER_MS = 40  # the statistics pane waits this long after a dataset opened


class BrowserPage(Page):
    title = "Browser"
    blurb = (
        "Scroll through any dataset as a grid of thumbnails with labels, reading only "
        "the rows on screen, even for billions of samples."
    )
    icon = SP.SP_FileDialogContentsView

    def build(self) -> None:
        self.loader = SampleLoader(self)
        self.stats_calls = BackgroundCalls(threads=1, parent=self)
        self.meta: dict[str, Any] | None = None
        self.path = ""
        self._scan_id = -1
        self._pending_indices: tuple[np.ndarray, str, PredictionFilter | None] | None = None
        self._header_pending = False

        self.dataset_combo = QComboBox()
        self.dataset_combo.setMinimumContentsLength(14)
        self.class_combo = QComboBox()
        self.class_combo.setMinimumContentsLength(12)
        self.scale_combo = QComboBox()
        self.scale_combo.addItems(["shared scale", "per-sample scale"])
        self.scale_combo.setToolTip("Colour range: the dataset's (comparable) or each sample's own")
        self.jump = QDoubleSpinBox()
        self.jump.setDecimals(0)
        self.jump.setRange(0, 0)
        self.jump.setKeyboardTracking(False)
        self.jump.setToolTip("Jump to this row of the dataset")
        # long texts ("1,234 of 10,000,000 rows · class gratitude · scanning…") must never
        # widen the window: the label takes the room left and elides, the combos keep a width
        self.status = ElidedLabel("No dataset.")
        self.scale_combo.setMinimumContentsLength(13)
        for combo in (self.dataset_combo, self.class_combo, self.scale_combo):
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
        controls = QHBoxLayout()
        for text, widget in (
            ("Dataset", self.dataset_combo),
            ("Class", self.class_combo),
            ("Colours", self.scale_combo),
            ("Go to row", self.jump),
        ):
            controls.addWidget(QLabel(text))
            controls.addWidget(widget)
        controls.addWidget(self.status, 1)

        self.grid = SampleGridView(self.loader)
        self.detail = SampleDetail()
        self.stats = DatasetStats()
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.detail)
        self.predictions = PredictionOverlay()
        right.addWidget(self.predictions.detail)
        right.addWidget(self.stats)
        right.setSizes([300, 40, 240])  # detail, prediction line, statistics
        # The grid paints at once when the page is shown; the pyqtgraph views follow, one
        # per tick (each paints its axes and image; all at once held the loop ~100 ms).
        iv = self.detail.image_view.ui
        views = [iv.graphicsView, iv.histogram, self.detail.plot]
        views += [self.stats.counts_plot, self.stats.hist_plot, self.stats.means_plot]
        self.staged = StagedPaint(self, views)
        split = splitter(Qt.Orientation.Horizontal, self.grid, right, stretch=(3, 2))
        split.setSizes([560, 400])
        self.body.addLayout(controls)
        self.body.addWidget(self.predictions)
        self.body.addWidget(split, 1)

        self.dataset_combo.currentIndexChanged.connect(self._dataset_picked)
        self.class_combo.currentIndexChanged.connect(self._class_picked)
        self.scale_combo.currentIndexChanged.connect(self._scale_picked)
        self.jump.valueChanged.connect(lambda v: self.jump_to(int(v)))
        self.grid.current_changed.connect(self._current_changed)
        self.loader.opened.connect(self._opened)
        self.loader.failed.connect(lambda msg: self.status.setText(f"Cannot open: {msg}"))
        self.loader.sample.connect(self._sample_read)
        self.loader.scan_found.connect(self._scan_found)
        self.loader.scan_done.connect(self._scan_done)
        self.stats_calls.done.connect(self._stats_ready)
        self.grid.prefetch, self.grid.annotate = (
            self.predictions.prefetch,
            self.predictions.annotate,
        )
        self.predictions.file_picked.connect(self.predictions.set_predictions)
        self.predictions.filter_requested.connect(self._filter_predictions)
        self.stats_calls.done.connect(self._predictions_filtered)
        self.stats_calls.done.connect(self._lineage_read)
        self.detail.group_requested.connect(self._show_group)
        self.detail.attribution.rows_requested.connect(
            lambda rows, title, ds: self.show_indices(rows, title, dataset=ds or None)
        )

    # ------------------------------------------------------------------ datasets
    def set_project(self, project: Project) -> None:
        self._project = project
        self.project_updated()

    def project_updated(self) -> None:
        if self._project is None:
            return
        current = self.dataset_combo.currentData()
        self.dataset_combo.blockSignals(True)
        self.dataset_combo.clear()
        for ref in self._project.datasets:
            if ref.path.exists():
                self.dataset_combo.addItem(ref.name, str(ref.path))
        self.dataset_combo.blockSignals(False)
        at = self.dataset_combo.findData(current) if current else -1
        if at >= 0:
            self.dataset_combo.setCurrentIndex(at)
        elif self.dataset_combo.count():
            self.dataset_combo.setCurrentIndex(0)
            self._dataset_picked(0)

    def _dataset_picked(self, index: int) -> None:
        path = self.dataset_combo.itemData(index)
        if path:
            self.open_dataset(str(path))

    def reload_if_open(self, path: str) -> None:
        """Read ``path`` again when it is the dataset shown (a job that writes it ended)."""
        if self.path and Path(self.path).absolute() == Path(path).absolute():
            self.open_dataset(self.path)

    def open_dataset(self, path: str) -> None:
        """Show ``path`` (its header is read on the worker thread)."""
        self.path = str(Path(path))
        self.meta = None
        self.status.setText("Opening…")
        self.grid.set_selection(SampleSelection(0), [])
        self.detail.clear()
        self.loader.open(self.path)

    def _opened(self, meta: dict[str, Any]) -> None:
        self.meta = meta
        self.loader.scale = self._scale()
        self.grid.set_sample_shape(meta["sample_shape"])
        self.class_combo.blockSignals(True)
        self.class_combo.clear()
        self.class_combo.addItem("all classes", ALL_CLASSES)
        for i, (name, count) in enumerate(
            zip(meta["class_names"], meta["class_counts"], strict=False)
        ):
            self.class_combo.addItem(f"{i}: {name} ({count:,})", i)
        self.class_combo.blockSignals(False)
        self.jump.blockSignals(True)
        self.jump.setRange(0, max(0, meta["rows"] - 1))
        self.jump.setValue(0)
        self.jump.blockSignals(False)
        # the statistics pane is drawn just after the grid's first paint, not in the same one
        self._header_pending = True
        QTimer.singleShot(STATS_AFTER_MS, self._show_header)
        self.stats_calls.submit(self.path, sample_statistics, self.path, len(meta["class_names"]))
        if self._pending_indices is not None:
            indices, title, flt = self._pending_indices
            self._pending_indices = None
            self.show_indices(indices, title, flt=flt)
        else:
            self._show_filter(None)
            self._show(SampleSelection(meta["rows"]))

    def _scale(self) -> ColorScale:
        assert self.meta is not None
        shared = self.scale_combo.currentIndex() == 0
        return ColorScale.for_dataset(self.meta["values"], self.meta["dtype"], shared)

    def _show(self, selection: SampleSelection) -> None:
        assert self.meta is not None
        self.grid.set_selection(selection, self.meta["class_names"])
        self._update_status()
        if len(selection):
            self.grid.set_current(0)

    def _update_status(self, scanning: bool = False) -> None:
        if self.meta is None:
            return
        sel, rows = self.grid.selection, self.meta["rows"]
        what = sel.title or ("all rows" if sel.is_all else "matching rows")
        text = f"{len(sel):,} of {rows:,} rows · {what}"
        self.status.setText(text + (" · scanning labels…" if scanning else ""))

    # ------------------------------------------------------------------ filters and jumps
    def _class_picked(self, index: int) -> None:
        if self.meta is None:
            return
        self.predictions.show_filter(PredictionFilter())  # the class alone filters now
        self.set_class_filter(self.class_combo.itemData(index))

    def _show_filter(self, flt: PredictionFilter | None) -> None:
        """The Class box and the prediction filters show the filter of the rows shown
        (a confusion cell: its true class, true and predicted; other lists: all)."""
        flt = flt or PredictionFilter()
        self.class_combo.blockSignals(True)
        at = self.class_combo.findData(flt.true_class if flt.true_class >= 0 else ALL_CLASSES)
        self.class_combo.setCurrentIndex(max(at, 0))
        self.class_combo.blockSignals(False)
        self.predictions.show_filter(flt)

    def set_class_filter(self, cls: int) -> None:
        """Show only class ``cls`` (``-1``: all); labels are scanned in chunks on a worker."""
        assert self.meta is not None
        self.loader.stop_scan()
        if cls == ALL_CLASSES:
            self._scan_id = -1
            self._show(SampleSelection(self.meta["rows"]))
            return
        name = self.meta["class_names"][cls]
        self._show(SampleSelection(self.meta["rows"], np.zeros(0, np.int64), f"class {name}"))
        self._scan_id = self.loader.scan(self.path, {cls})
        self._update_status(scanning=True)

    def _scan_found(self, scan_id: int, rows: object, _scanned: object) -> None:
        if scan_id != self._scan_id or not isinstance(rows, np.ndarray):
            return
        was_empty = len(self.grid.selection) == 0
        self.grid.selection.extend(rows)
        self.grid.selection_grew()
        if was_empty and len(self.grid.selection):
            self.grid.set_current(0)
        self._update_status(scanning=True)

    def _scan_done(self, scan_id: int, complete: bool) -> None:
        if scan_id == self._scan_id:
            self._update_status()
            if not complete:
                self.status.setText(self.status.text() + " (first matches only)")

    def _scale_picked(self, _index: int) -> None:
        if self.meta is not None:
            self.loader.scale = self._scale()
            self.grid.clear_cache()

    def jump_to(self, row: int) -> None:
        """Scroll to dataset row ``row`` (or the next shown row when a filter hides it)."""
        if self.meta is None or not len(self.grid.selection):
            return
        cell = self.grid.selection.cell_of(row)
        if cell is None:
            cell = self.grid.selection.nearest_cell(row)
        self.grid.scroll_to_cell(cell)

    def show_indices(
        self,
        indices: Any,
        title: str,
        dataset: str | None = None,
        predictions: str = "",
        flt: PredictionFilter | None = None,
    ) -> None:
        """Show just these dataset rows (e.g. a run's misclassified samples) under ``title``,
        with the predictions of the file ``predictions`` on their thumbnails; ``flt``: the
        prediction filter they are (a confusion cell's), which the controls then show."""
        if predictions:
            self.predictions.set_predictions(predictions)
        rows = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
        rows = rows.astype(np.int64)
        if dataset is not None and str(Path(dataset)) != self.path:
            self._pending_indices = (rows, title, flt)
            at = self.dataset_combo.findData(str(Path(dataset)))
            if at >= 0:
                self.dataset_combo.setCurrentIndex(at)
            else:
                self.open_dataset(dataset)
            return
        if self.meta is None:
            self._pending_indices = (rows, title, flt)
            return
        self.loader.stop_scan()
        self._scan_id = -1
        rows = rows[(rows >= 0) & (rows < self.meta["rows"])]
        self._show_filter(flt)
        self._show(SampleSelection(self.meta["rows"], rows, title))

    # ------------------------------------------------------------------ detail and stats
    def _filter_predictions(self, flt: object) -> None:
        self.status.setText("Filtering predictions…")
        self.stats_calls.submit(("predictions", flt), select_rows, self.predictions.path, flt)

    def _predictions_filtered(self, key: object, result: object) -> None:
        if isinstance(key, tuple) and key[0] == "predictions" and isinstance(result, tuple):
            self.show_indices(result[0], self.predictions.describe(key[1]), flt=key[1])

    def _current_changed(self, _cell: int, row: int) -> None:
        """A sample picked: "Go to row" shows its row (without jumping again)."""
        self.jump.blockSignals(True)
        self.jump.setValue(row)
        self.jump.blockSignals(False)
        self.loader.request_sample(row)
        self.predictions.show_detail(row)
        names = self.meta["class_names"] if self.meta is not None else []
        self.detail.attribution.set_context(self.path, self.predictions.path, names)
        if self.meta is not None and self.meta.get("columns"):
            # (a genomes dataset's rows also get their bases: ``core/genomes/rows.py``)
            self.stats_calls.submit(
                ("lineage", self.path, row), row_lineage_with_bases, self.path, row
            )

    def _show_group(self, group: int, name: str) -> None:
        self.status.setText(f"Finding the rows of group {name}…")
        self.stats_calls.submit(("group", self.path, name), group_rows, self.path, group)

    def _lineage_read(self, key: object, result: object) -> None:
        if not (isinstance(key, tuple) and key[0] in ("lineage", "group") and key[1] == self.path):
            return
        if key[0] == "lineage" and isinstance(result, dict):
            self.detail.show_lineage(result)
        elif key[0] == "group" and isinstance(result, np.ndarray):
            self.show_indices(result, f"group {key[2]} ({len(result):,} rows)")

    def _sample_read(self, row: object, sample: object, label: int) -> None:
        if self.meta is None or not isinstance(sample, np.ndarray):
            return
        names = self.meta["class_names"]
        name = names[label] if 0 <= label < len(names) else "?"
        self.detail.show_sample(int(row), sample, label, name)  # type: ignore[call-overload]

    def _show_header(self) -> None:
        if self._header_pending and self.meta is not None:
            self._header_pending = False
            self.staged.restage()  # several views change at once: they paint in turns
            self.stats.show_header(self.meta)

    def _stats_ready(self, key: object, stats: object) -> None:
        if key == self.path and self.meta is not None and isinstance(stats, dict):
            self._show_header()  # the header's histogram, when it has one, comes first
            self.staged.restage()
            self.stats.show_sample_statistics(stats, self.meta["sample_shape"])
