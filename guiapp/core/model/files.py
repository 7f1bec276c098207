"""Model spec files: JSON read with errors that name the file, written atomically.

Pure Python; specs are data, never code (no pickle).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from ..errors import UserError, load_json
from .param_types import did_you_mean
from .templates import get_template, template_names


def load_spec(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a spec file as a dict (not validated; see ``validate``/``check_spec``).

    Raises UserError naming the file when it is missing, unreadable, not JSON (with line
    and column) or not a JSON object.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{p}: no such model spec file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read the model spec ({exc})") from None
    spec = load_json(text, str(p))
    if not isinstance(spec, dict):
        raise UserError(
            f"{p}: a model spec must be a JSON object {{...}}, not a {type(spec).__name__}"
        )
    return spec


def dumps_spec(spec: dict[str, Any]) -> str:
    """The spec as indented JSON text with a final newline (what ``save_spec`` writes)."""
    try:
        return json.dumps(spec, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise UserError(f"model spec cannot be written as JSON: {exc}") from None


def save_spec(spec: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``spec`` to ``path`` atomically (the old file stays whole if this fails)."""
    atomic_write_text(path, dumps_spec(spec))


def spec_from_argument(value: str) -> dict[str, Any]:
    """``--model SPEC.json|TEMPLATE``: a template name, else a spec file path."""
    if value in template_names() and not Path(value).exists():
        return get_template(value)
    if not value.endswith(".json") and not Path(value).exists():
        raise UserError(
            f"--model {value!r}: neither a spec file nor a template"
            f"{did_you_mean(value, template_names())} (templates: {', '.join(template_names())})"
        )
    return load_spec(value)
