"""`guiapp generate`: registered into the CLI by `register(subparsers)`."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Add the `generate` subcommand (arrives with issue 3)."""
