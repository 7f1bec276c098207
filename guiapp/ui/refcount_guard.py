"""A guard against a reference-count bug of PySide6 6.12 on CPython 3.11 and older.

Measured here (PySide6 6.12.0, CPython 3.11.7): every Python call of
``QApplication.processEvents()`` takes one reference from ``None`` that it never gave,
and some signal emissions do the same to ``None``, ``True`` and ``False``. A long session
(or a test suite that waits with ``qtbot.waitUntil``) then drives their count to zero and
CPython aborts with "Fatal Python error: none_dealloc". CPython 3.12 made these objects
immortal, so there the bug is harmless; on older versions we give them a count so large
that no session can exhaust it, which is what 3.12 does.
"""

from __future__ import annotations

import ctypes
import sys

EXTRA_REFERENCES = 1 << 40


def guard_singletons() -> bool:
    """Make ``None``, ``True`` and ``False`` effectively immortal; True when it did anything."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    for obj in (None, True, False, ()):
        count = ctypes.c_ssize_t.from_address(id(obj))  # ob_refcnt is the first field
        if count.value < EXTRA_REFERENCES:
            count.value += EXTRA_REFERENCES
    return True
