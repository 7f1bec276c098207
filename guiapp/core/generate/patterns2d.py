"""``patterns2d``: HxW float images in K classes of distinct, learnable structures.

Classes cycle through five families; class ``c`` is family ``c % 5`` with variant ``c // 5``
(a different frequency, size, radius, sharpness or grain), so any K works, though classes
beyond the first five differ more subtly. Every sample gets a random phase, position,
orientation and scale, additive gaussian noise whose strength grows with ``difficulty``
in [0, 1], and is z-scored (mean 0, std 1 per sample).

==========  =====================================================================
family      structure
==========  =====================================================================
grating     oriented sinusoidal stripes; variant raises the spatial frequency
blob        one gaussian spot; variant makes it smaller
ring        a thin circle; variant makes it smaller and thinner
edge        a straight step between two half-planes; variant softens it
texture     smooth random texture (bilinear upsampling of a coarse random grid);
            variant makes the grain finer
==========  =====================================================================

Pure numpy, vectorized over the rows of a batch (no Python loop per sample).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserError
from .defaults import with_defaults

FAMILIES = ("grating", "blob", "ring", "edge", "texture")
DEFAULTS: dict[str, Any] = {"shape": [25, 25], "classes": 5, "difficulty": 0.3}
F32 = np.float32


def class_names(classes: int) -> list[str]:
    return [FAMILIES[c % 5] + ("" if c < 5 else f"_{c // 5}") for c in range(classes)]


def resolve_params(params: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled in and checked; the result is what the dataset's provenance records."""
    p = with_defaults("patterns2d", params, DEFAULTS)
    shape = [int(s) for s in p["shape"]]
    if len(shape) != 2 or min(shape) < 4:
        raise UserError(f"patterns2d: shape {shape} must be two sizes of at least 4, like 25x25")
    d = p["difficulty"]
    if not isinstance(d, (int, float)) or not 0.0 <= float(d) <= 1.0:
        raise UserError(f"patterns2d: difficulty {d!r} must be a number in [0, 1]")
    k = p["classes"]
    if not isinstance(k, int) or not 1 <= k <= 1000:
        raise UserError(f"patterns2d: classes {k!r} must be an integer in 1..1000")
    dtype = str(p.get("dtype", "float32"))
    if not dtype.startswith("float"):
        raise UserError(
            f"patterns2d: dtype {dtype} cannot hold z-scored samples; use float32 or float16"
        )
    return {"shape": shape, "classes": k, "difficulty": float(d)}


def _u(rng: np.random.Generator, m: int, lo: float, hi: float) -> np.ndarray:
    """``m`` uniform numbers as an (m, 1, 1) float32 array, ready to broadcast."""
    return rng.uniform(lo, hi, m).astype(F32).reshape(m, 1, 1)


def _grating(rng: np.random.Generator, m: int, yy: Any, xx: Any, v: int) -> np.ndarray:
    theta = _u(rng, m, 0.0, np.pi)
    freq = _u(rng, m, 1.0, 1.8) * F32(1.0 + 1.2 * v)  # cycles per half image
    phase = _u(rng, m, 0.0, 2 * np.pi)
    u: np.ndarray = xx * (np.cos(theta) * freq * F32(np.pi)) + yy * (
        np.sin(theta) * freq * F32(np.pi)
    )
    u += phase
    np.sin(u, out=u)
    return u


def _blob(rng: np.random.Generator, m: int, yy: Any, xx: Any, v: int) -> np.ndarray:
    cy, cx = _u(rng, m, -0.5, 0.5), _u(rng, m, -0.5, 0.5)
    s = _u(rng, m, 0.18, 0.35) / F32(1.0 + 0.6 * v)
    inv = F32(-0.5) / (s * s)
    gy = np.exp((yy - cy) ** 2 * inv)  # (m, H, 1)
    gx = np.exp((xx - cx) ** 2 * inv)  # (m, 1, W)
    return gy * gx  # type: ignore[no-any-return]


def _ring(rng: np.random.Generator, m: int, yy: Any, xx: Any, v: int) -> np.ndarray:
    cy, cx = _u(rng, m, -0.3, 0.3), _u(rng, m, -0.3, 0.3)
    r0 = _u(rng, m, 0.35, 0.65) / F32(1.0 + 0.4 * v)
    w = F32(0.08 / (1.0 + 0.3 * v))
    r: np.ndarray = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
    r -= r0
    r *= F32(1.0) / w
    np.square(r, out=r)
    r *= F32(-0.5)
    np.exp(r, out=r)
    return r


def _edge(rng: np.random.Generator, m: int, yy: Any, xx: Any, v: int) -> np.ndarray:
    theta = _u(rng, m, 0.0, 2 * np.pi)
    off = _u(rng, m, -0.4, 0.4)
    width = F32(0.05 + 0.25 * v)
    u: np.ndarray = xx * (np.cos(theta) / width) + yy * (np.sin(theta) / width)
    u -= off / width
    np.clip(u, -1.0, 1.0, out=u)
    return u


def _interp_matrix(size: int, grid: int) -> np.ndarray:
    """(size, grid) bilinear interpolation weights from a coarse grid to ``size`` pixels."""
    pos = np.linspace(0, grid - 1, size)
    lo = np.clip(np.floor(pos).astype(int), 0, grid - 2)
    frac = pos - lo
    a = np.zeros((size, grid), dtype=F32)
    a[np.arange(size), lo] = 1 - frac
    a[np.arange(size), lo + 1] += frac
    return a


def _texture(rng: np.random.Generator, m: int, yy: Any, xx: Any, v: int) -> np.ndarray:
    h, w = yy.shape[1], xx.shape[2]
    g = min(4 + 3 * v, max(h, w) // 2)
    coarse = rng.standard_normal((m, g, g), dtype=F32)
    return _interp_matrix(h, g) @ coarse @ _interp_matrix(w, g).T  # type: ignore[no-any-return]


MAKERS = (_grating, _blob, _ring, _edge, _texture)


def generate(
    rng: np.random.Generator, n: int, params: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples ``(n, H, W)`` float32 and labels ``(n,)`` int32, classes interleaved."""
    h, w = params["shape"]
    k = int(params["classes"])
    d = float(params["difficulty"])
    # Balanced labels in random order.
    y = (np.arange(n) % k)[rng.permutation(n)].astype(np.int32)
    order = np.argsort(y, kind="stable")
    counts = np.bincount(y, minlength=k)
    yy = np.linspace(-1, 1, h, dtype=F32).reshape(1, h, 1)
    xx = np.linspace(-1, 1, w, dtype=F32).reshape(1, 1, w)
    grouped = np.empty((n, h, w), dtype=F32)
    at = 0
    for c in range(k):
        m = int(counts[c])
        if m:
            grouped[at : at + m] = MAKERS[c % 5](rng, m, yy, xx, c // 5)
            at += m
    x = np.empty_like(grouped)
    x[order] = grouped
    del grouped
    _standardize(x)
    noise = np.asarray(rng.standard_normal(x.shape, dtype=F32))
    noise *= F32(0.15 + 2.0 * d)
    x += noise
    del noise
    _standardize(x)
    return x, y


def _standardize(x: np.ndarray) -> None:
    """Z-score each sample in place (a constant sample becomes all zeros)."""
    flat = x.reshape(len(x), -1)
    mean = flat.mean(axis=1, keepdims=True)
    flat -= mean
    std = np.sqrt(np.einsum("ij,ij->i", flat, flat) / flat.shape[1]).reshape(-1, 1)
    std[std < 1e-6] = 1.0
    flat *= (1.0 / std).astype(F32)
