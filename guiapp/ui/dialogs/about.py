"""The versions shown in Help > About. Reads package metadata; never imports TensorFlow."""

from __future__ import annotations

import html
import platform
from importlib.metadata import PackageNotFoundError, version

import PySide6
from PySide6.QtCore import qVersion


def _dist_version(name: str, fallback: str = "not installed") -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return fallback


def version_rows() -> list[tuple[str, str]]:
    """``(component, version)`` pairs for guiapp and the libraries the GUI runs on."""
    return [
        ("guiapp", _dist_version("guiapp", "dev")),
        ("Python", platform.python_version()),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
        ("numpy", _dist_version("numpy")),
        ("h5py", _dist_version("h5py")),
    ]


def about_html() -> str:
    """The About box text: what guiapp is, then a table of versions."""
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>&nbsp;&nbsp;{html.escape(v)}</td></tr>"
        for k, v in version_rows()
    )
    return (
        "<h3>guiapp</h3>"
        "<p>A workbench for training classifiers on billions of small arrays.</p>"
        f"<table>{rows}</table>"
    )
