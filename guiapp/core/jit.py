"""numba where it is installed: one switch for every compiled kernel of the core.

Importing this module imports numba (about 0.3 s, then each kernel's first call loads it
from numba's cache), so only modules whose work pays for that import it: the import's scan
(``importers/jitparse.py``) and the store's 8/16-bit statistics (``store/jitsums.py``),
which a job turns on explicitly. ``GUIAPP_NO_NUMBA=1`` (or numba missing) leaves every
kernel a plain Python function and every caller on its numpy path, with the same results.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

try:
    if os.environ.get("GUIAPP_NO_NUMBA", "") not in ("", "0"):
        raise ImportError("GUIAPP_NO_NUMBA is set")
    import numba
except ImportError:  # the numpy paths do the work
    numba = None  # type: ignore[assignment]


def available() -> bool:
    """Whether the kernels are compiled (numba is installed and not turned off)."""
    return numba is not None


F = TypeVar("F", bound=Callable[..., Any])


def jit(f: F) -> F:
    """``f`` compiled (cached, without the GIL) where numba is there, else ``f`` itself."""
    return cast(F, numba.njit(cache=True, nogil=True)(f)) if numba is not None else f


__all__ = ["available", "jit"]
