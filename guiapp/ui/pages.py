"""The pages the sidebar switches between, in sidebar order."""

from __future__ import annotations

from guiapp.ui.browser import BrowserPage
from guiapp.ui.datasets_page import DatasetsPage
from guiapp.ui.page import SP, Page, PlaceholderPage

__all__ = ["PAGE_TYPES", "BrowserPage", "DatasetsPage", "Page", "PlaceholderPage"]


class ModelPage(PlaceholderPage):
    arrives_with = "the model editor"
    title = "Model"
    blurb = (
        "Define a Keras CNN as a list of layers, start from a template, and check its "
        "shapes and parameter count before training."
    )
    icon = SP.SP_FileDialogDetailedView


class TrainingPage(PlaceholderPage):
    arrives_with = "the training runner"
    title = "Training"
    blurb = (
        "Train a model on one GPU, several GPUs or several machines, and watch loss, "
        "metrics and the input-bound fraction live."
    )
    icon = SP.SP_ComputerIcon


class RunsPage(PlaceholderPage):
    arrives_with = "the run store"
    title = "Runs"
    blurb = (
        "Compare finished runs: their configs, learning curves, confusion matrices "
        "and per-class scores, each reproducible from its folder."
    )
    icon = SP.SP_FileDialogListView


PAGE_TYPES: tuple[type[Page], ...] = (DatasetsPage, BrowserPage, ModelPage, TrainingPage, RunsPage)
