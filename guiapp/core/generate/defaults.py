"""Parameter handling shared by the built-in generators."""

from __future__ import annotations

from typing import Any

from ..errors import UserError


def with_defaults(
    generator: str, params: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, Any]:
    """``defaults`` updated with ``params``; an unknown parameter is a UserError naming them."""
    unknown = set(params) - set(defaults) - {"dtype"}
    if unknown:
        raise UserError(
            f"{generator}: unknown parameter(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **params}
