"""One way to write the numbers every page shows: rows/s and durations.

Every rows/s on screen goes through :func:`format_rate` (whole rows with thousands
separators, the way the CLI's log lines write them), every duration through
:func:`format_duration` (``h:mm:ss``). Epochs are 1-based everywhere: in the events and
files as on screen (``RunHistory`` reads older 0-based events into the convention).
"""

from __future__ import annotations

import math


def format_rate(rows_per_s: float | None) -> str:
    """``3,405`` or ``40,211``: rows per second, whole rows with separators; "" when unknown."""
    if rows_per_s is None or not math.isfinite(rows_per_s) or rows_per_s <= 0:
        return ""
    return f"{rows_per_s:,.0f}"


def format_duration(seconds: float | None) -> str:
    """``h:mm:ss`` for a duration or an ETA in seconds; "" when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return ""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
