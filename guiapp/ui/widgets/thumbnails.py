"""Samples as small colour images: 2D arrays as images, 1D arrays as heat strips.

Rendering runs on worker threads (``QImage`` is safe there; ``QPixmap`` is not). Values are
mapped through a 256-entry viridis table with either a shared range (the dataset's) or
each sample's own range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtGui import QImage, qRgb


def _viridis_table() -> list[int]:
    import pyqtgraph as pg

    lut = pg.colormap.get("viridis").getLookupTable(0.0, 1.0, 256, alpha=False)
    return [qRgb(int(r), int(g), int(b)) for r, g, b in np.asarray(lut)]


COLOR_TABLE = _viridis_table()


@dataclass(frozen=True)
class ColorScale:
    """``shared``: every sample mapped through [low, high]; otherwise each sample's own range."""

    shared: bool = True
    low: float = 0.0
    high: float = 1.0

    @classmethod
    def for_dataset(cls, values: dict[str, Any], dtype: str, shared: bool = True) -> ColorScale:
        """A shared range from the dataset's value statistics (mean ± 3 std inside min..max)."""
        lo, hi = float(values.get("min", 0.0)), float(values.get("max", 1.0))
        if np.dtype(dtype).kind == "f":
            mean, std = float(values.get("mean", 0.0)), float(values.get("std", 1.0))
            if np.isfinite(mean) and np.isfinite(std) and std > 0:
                lo, hi = max(lo, mean - 3 * std), min(hi, mean + 3 * std)
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
            lo, hi = 0.0, 1.0
        return cls(shared, lo, hi)


def as_plane(sample: np.ndarray) -> np.ndarray:
    """A 2D plane to draw: 1D -> one row, 2D as is, more axes averaged into channels."""
    a = np.asarray(sample)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    if a.ndim > 2:
        channels: np.ndarray = a.reshape(a.shape[0], a.shape[1], -1).mean(axis=-1)
        return channels
    return a


def to_indices(plane: np.ndarray, scale: ColorScale) -> np.ndarray:
    """Colour-table indices 0..255 (uint8, C-contiguous) for a plane of values."""
    a = plane.astype(np.float32, copy=False)
    if scale.shared:
        lo, hi = scale.low, scale.high
    else:
        finite = a[np.isfinite(a)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    out = np.nan_to_num((a - lo) * (255.0 / span), nan=0.0, posinf=255.0, neginf=0.0)
    return np.ascontiguousarray(np.clip(out, 0, 255).astype(np.uint8))


def render(sample: np.ndarray, scale: ColorScale) -> QImage:
    """One sample as an indexed-colour ``QImage`` (one pixel per value; the view scales it)."""
    idx = to_indices(as_plane(sample), scale)
    h, w = idx.shape
    image = QImage(idx.data, w, h, w, QImage.Format.Format_Indexed8)
    image.setColorTable(COLOR_TABLE)
    return image.copy()  # own the pixels: ``idx`` goes away
