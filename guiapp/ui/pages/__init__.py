"""The pages the sidebar switches between, in sidebar order."""

from __future__ import annotations

from guiapp.ui.pages.base import Page
from guiapp.ui.pages.browser.browser_page import BrowserPage
from guiapp.ui.pages.datasets.datasets_page import DatasetsPage
from guiapp.ui.pages.experiments.experiments_page import ExperimentsPage
from guiapp.ui.pages.model.model_page import ModelPage
from guiapp.ui.pages.runs.runs_page import RunsPage
from guiapp.ui.pages.training.training_page import TrainingPage

__all__ = [
    "PAGE_TYPES",
    "BrowserPage",
    "DatasetsPage",
    "ExperimentsPage",
    "ModelPage",
    "Page",
    "RunsPage",
    "TrainingPage",
]

PAGE_TYPES: tuple[type[Page], ...] = (
    DatasetsPage,
    BrowserPage,
    ModelPage,
    TrainingPage,
    RunsPage,
    ExperimentsPage,
)
