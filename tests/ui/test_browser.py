"""The Browser: scroll arithmetic for 10^10 rows, visible-only reads, jump, filter, indices."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import open_browser

from guiapp.core.project import DatasetRef, Project
from guiapp.ui.main_window import MainWindow
from guiapp.ui.pages.browser.browser_page import BrowserPage
from guiapp.ui.widgets.sample_selection import INT_MAX, GridGeometry, SampleSelection


def test_scroll_bar_counts_rows_of_cells_for_ten_billion_samples() -> None:
    g = GridGeometry(count=10**10, cell_w=72, cell_h=84, viewport_w=720, viewport_h=600)
    assert g.columns == 10 and g.rows == 10**9 and g.page_rows == 7
    assert g.rows_per_step == 1 and g.scroll_maximum == 10**9 - 7 <= INT_MAX
    first, last = g.visible_cells(g.top_row_for(g.scroll_maximum))
    assert last == 10**10 and last - first <= g.visible_rows * g.columns
    narrow = GridGeometry(count=10**10, cell_w=72, cell_h=84, viewport_w=100, viewport_h=600)
    assert narrow.columns == 1 and narrow.rows == 10**10
    assert narrow.rows_per_step == 5 and narrow.scroll_maximum <= INT_MAX
    assert narrow.top_row_for(narrow.scroll_maximum) == narrow.max_top_row  # the end is reachable
    cell = 7_654_321_098
    top = narrow.top_row_showing(cell, 0)
    a, b = narrow.visible_cells(top)
    assert a <= cell < b
    assert narrow.cell_at(top, 10, (cell - a) * 84 + 5) == cell


def test_selection_of_indices_grows_and_finds_rows() -> None:
    sel = SampleSelection(10**10)
    assert len(sel) == 10**10 and sel.rows(10**10 - 2, 10**10 + 5).tolist() == [
        10**10 - 2,
        10**10 - 1,
    ]
    some = SampleSelection(100, np.zeros(0, np.int64))
    some.extend(np.array([3, 9, 40]))
    some.extend(np.array([41, 77]))
    assert len(some) == 5 and some.rows(1, 4).tolist() == [9, 40, 41]
    assert some.cell_of(41) == 3 and some.cell_of(42) is None and some.nearest_cell(42) == 4


@pytest.fixture
def browser(qtbot, tmp_path: Path, make_dataset) -> tuple[MainWindow, BrowserPage]:
    make_dataset(tmp_path / "img.h5", 20_000, shape=(8, 8), classes=4)
    make_dataset(tmp_path / "vec.h5", 3_000, shape=(50,), classes=3)
    project = Project.new(tmp_path / "p.gproj", "Demo")
    project.datasets = [
        DatasetRef("img", tmp_path / "img.h5"),
        DatasetRef("vec", tmp_path / "vec.h5"),
    ]
    return open_browser(qtbot, project)


def all_visible_cached(page: BrowserPage) -> bool:
    rows = page.grid.visible_rows()
    return len(rows) > 0 and all(r in page.grid.cache for r in rows.tolist())


def test_reads_only_the_visible_rows(browser, qtbot) -> None:
    _, page = browser
    qtbot.waitUntil(lambda: all_visible_cached(page), timeout=10_000)
    visible = len(page.grid.visible_rows())
    reader = page.loader.reader
    assert reader is not None and len(reader.dataset) == 20_000
    assert 0 < visible < 200
    # the visible cells, plus the one sample shown in the detail pane
    assert reader.rows_read <= visible + 1
    bar = page.grid.verticalScrollBar()
    assert bar.maximum() == page.grid.geometry_model().scroll_maximum > 100
    before = reader.rows_read
    bar.setValue(bar.maximum() // 2)
    qtbot.waitUntil(lambda: all_visible_cached(page), timeout=10_000)
    assert reader.rows_read - before <= len(page.grid.visible_rows())
    assert "tensorflow" not in sys.modules and "keras" not in sys.modules


def test_jump_to_index_shows_and_selects_the_row(browser, qtbot) -> None:
    _, page = browser
    page.jump.setValue(12_345)
    assert 12_345 in page.grid.visible_rows().tolist()
    qtbot.waitUntil(lambda: page.detail.row == 12_345, timeout=10_000)
    assert "class 1" in page.detail.title.text()  # 12345 % 4
    assert page.detail.values is not None and float(page.detail.values[0, 0]) == 12_345.0
    qtbot.waitUntil(lambda: all_visible_cached(page), timeout=10_000)
    assert page.grid.cache[12_345][1] == 1


def test_class_filter_scans_labels_and_shows_only_that_class(browser, qtbot) -> None:
    _, page = browser
    page.class_combo.setCurrentIndex(3)  # "2: class2"
    qtbot.waitUntil(lambda: len(page.grid.selection) == 5_000, timeout=10_000)
    qtbot.waitUntil(lambda: "scanning" not in page.status.text(), timeout=10_000)
    rows = page.grid.selection.rows(0, 5_000)
    assert (rows % 4 == 2).all() and rows[:3].tolist() == [2, 6, 10]
    assert page.status.text().startswith("5,000 of 20,000 rows")
    page.jump_to(7)  # hidden by the filter: the next shown row
    qtbot.waitUntil(lambda: page.detail.row == 10, timeout=10_000)
    page.class_combo.setCurrentIndex(0)
    assert len(page.grid.selection) == 20_000


def test_show_indices_and_1d_dataset(browser, qtbot) -> None:
    _, page = browser
    page.show_indices([5, 17, 19_999], "misclassified")
    assert len(page.grid.selection) == 3 and "misclassified" in page.status.text()
    qtbot.waitUntil(lambda: page.detail.row == 5, timeout=10_000)
    page.dataset_combo.setCurrentIndex(1)
    qtbot.waitUntil(lambda: page.meta is not None and page.meta["rows"] == 3_000, timeout=10_000)
    qtbot.waitUntil(lambda: page.detail.row == 0, timeout=10_000)
    assert page.detail.stack.currentWidget() is page.detail.plot
    assert page.grid.thumb.height() < page.grid.thumb.width()  # heat strips
    qtbot.waitUntil(lambda: all_visible_cached(page), timeout=10_000)
    qtbot.waitUntil(lambda: page.stats.has_histogram(), timeout=10_000)


def test_all_pages_shown_without_tensorflow(browser) -> None:
    window, _ = browser
    for i in range(window.stack.count()):
        window.set_page(i)
        assert not window.current_page().grab().isNull()
    assert not any(m.split(".")[0] in ("tensorflow", "keras") for m in sys.modules)


def test_layout_captions_legend_and_go_to_row(qtbot, tmp_path: Path) -> None:
    """Issue 17.9: a class filter never widens the window; captions from row 100 on keep
    the row and the class; the 1-D means legend has every class and covers no curve;
    "Go to row" shows the current sample's row."""
    names = ["gratitude", "admiration", "amusement", "anger", "annoyance", "approval"]
    names += ["caring", "confusion", "curiosity", "desire", "disappointment", "disgust", "fear"]
    named_dataset(tmp_path / "img.h5", (8, 8), names)
    named_dataset(tmp_path / "vec.h5", (30,), names)
    project = Project.new(tmp_path / "p.gproj", "Layout")
    project.datasets = [
        DatasetRef("img", tmp_path / "img.h5"),
        DatasetRef("vec", tmp_path / "vec.h5"),
    ]
    window, page = open_browser(qtbot, project)
    width, combo = window.width(), page.class_combo.width()
    assert width <= 1100  # every page fits the window the user asked for
    page.class_combo.setCurrentIndex(11)  # "10: disappointment (…)"
    qtbot.waitUntil(lambda: "scanning" not in page.status.text(), timeout=10_000)
    qtbot.wait(50)
    assert window.width() == width and page.class_combo.width() == combo
    assert page.status.text().startswith("154 of 2,000 rows · class disappointment")

    qtbot.waitUntil(lambda: all_visible_cached(page), timeout=10_000)
    row = page.grid.selection.row(16)  # 218: a three-digit row
    lines = page.grid.caption(row)
    assert lines == [f"{row:,}", "disappointment"]
    metrics = page.grid.fontMetrics()
    assert metrics.horizontalAdvance(lines[0]) < page.grid.thumb.width()  # the row is whole

    page.grid.set_current(3)
    assert int(page.jump.value()) == page.grid.selection.row(3)  # not the last jump's value

    page.dataset_combo.setCurrentIndex(1)
    qtbot.waitUntil(lambda: page.meta is not None and page.meta["rows"] == 2_000, timeout=10_000)
    page.stats.setCurrentIndex(2)  # the Class means tab
    qtbot.waitUntil(lambda: "fear" in page.stats.means_legend.text(), timeout=10_000)
    assert page.stats.means_plot.isVisible() and page.stats.means_legend.isVisible()
    legend = page.stats.means_legend.text()
    assert all(name in legend for name in names)  # all 13 classes
    assert len(page.stats.means_plot.getPlotItem().listDataItems()) == 13
    assert page.stats.means_plot.getPlotItem().legend is None


def named_dataset(path: Path, shape: tuple[int, ...], names: list[str]) -> None:
    """2,000 rows, row i of class i % len(names), with these (long) class names."""
    from guiapp.core.store import DatasetWriter

    rows = 2_000
    y = (np.arange(rows) % len(names)).astype(np.int32)
    x = np.broadcast_to(np.arange(rows, dtype=np.float32).reshape(-1, *[1] * len(shape)),
                        (rows, *shape)).copy()  # fmt: skip
    with DatasetWriter(path, sample_shape=shape, dtype="float32", class_names=names) as w:
        w.append(x, y)


def test_sample_detail_shows_lineage_and_show_this_group(qtbot, tmp_path: Path) -> None:
    """Issue 28.7: a row's group and kept fields in the detail; "Show this group" filters
    the grid to exactly that group's rows."""
    from guiapp.core.store import DatasetWriter
    from guiapp.core.store.columns import group_id

    names = [f"GCF_{i % 7:03d}" for i in range(700)]
    ids = group_id(names)
    path = tmp_path / "reads.h5"
    cols = {"group": "int64", "_id": "S12"}
    with DatasetWriter(path, sample_shape=(20,), dtype="uint16", class_names=["a", "b"],
                       columns=cols) as w:  # fmt: skip
        w.append(np.zeros((700, 20), np.uint16), np.arange(700) % 2,
                 {"group": ids, "_id": [f"doc{i}" for i in range(700)]})  # fmt: skip
        uniq = sorted(set(names))
        w.set_group_names(group_id(uniq), uniq)
    project = Project.new(tmp_path / "p.gproj", "Lineage")
    project.datasets.append(DatasetRef("reads", path))
    _, page = open_browser(qtbot, project)
    qtbot.waitUntil(lambda: "GCF_000" in page.detail.lineage.text(), timeout=10_000)
    assert "_id: <b>doc0</b>" in page.detail.lineage.text()
    assert page.detail.group_button.isVisibleTo(page)
    page.jump.setValue(15)
    qtbot.waitUntil(lambda: "doc15" in page.detail.lineage.text(), timeout=10_000)
    assert "GCF_001" in page.detail.lineage.text()
    page.detail.group_button.click()
    qtbot.waitUntil(lambda: len(page.grid.selection) == 100, timeout=10_000)
    rows = page.grid.selection.rows(0, 100)
    assert (rows % 7 == 1).all() and "group GCF_001" in page.status.text()
