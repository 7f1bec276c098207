"""Importers: bring existing arrays (``.npy``, ``.npz``, CSV/TSV, mongoexport JSON lines)
into the dataset store, shuffled, with bad rows reported by file and line (docs/IMPORT.md).

The names are loaded on first use, so that an import's parse workers (which import only
``parallel`` and the ``piece*`` modules) start without the store and h5py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ImportConfig
    from .job import ImportJob, run_import
    from .sources import FORMATS

_WHERE = {"ImportConfig": "config", "ImportJob": "job", "run_import": "job", "FORMATS": "sources"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FORMATS", "ImportConfig", "ImportJob", "run_import"]
