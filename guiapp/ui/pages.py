"""The pages the sidebar switches between, in sidebar order."""

from __future__ import annotations

from guiapp.ui.browser import BrowserPage
from guiapp.ui.datasets_page import DatasetsPage
from guiapp.ui.model_page import ModelPage
from guiapp.ui.page import Page, PlaceholderPage
from guiapp.ui.runs_page import RunsPage
from guiapp.ui.training_page import TrainingPage

__all__ = [
    "PAGE_TYPES",
    "BrowserPage",
    "DatasetsPage",
    "ModelPage",
    "Page",
    "PlaceholderPage",
    "RunsPage",
    "TrainingPage",
]

PAGE_TYPES: tuple[type[Page], ...] = (DatasetsPage, BrowserPage, ModelPage, TrainingPage, RunsPage)
