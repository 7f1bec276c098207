"""Plot legends that never cover data: a line of coloured names in a label next to the
plot instead of a box inside the view."""

from __future__ import annotations

import html
from collections.abc import Sequence

LINE, DOT, SQUARE = "━", "●", "■"


def legend_html(entries: Sequence[tuple[str, tuple[int, ...], str]]) -> str:
    """``[(name, rgb(a), mark)]`` as one line of coloured marks and names."""
    parts = []
    for name, color, mark in entries:
        r, g, b = color[:3]
        parts.append(f'<span style="color:rgb({r},{g},{b})">{mark}</span>&nbsp;{html.escape(name)}')
    return "&nbsp;&nbsp; ".join(parts)
