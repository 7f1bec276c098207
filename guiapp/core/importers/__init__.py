"""Importers: bring existing arrays (``.npy``, ``.npz``, CSV/TSV, mongoexport JSON lines)
into the dataset store, shuffled, with bad rows reported by file and line (docs/IMPORT.md)."""

from .config import ImportConfig
from .job import ImportJob, run_import
from .sources import FORMATS

__all__ = ["FORMATS", "ImportConfig", "ImportJob", "run_import"]
