"""Problems found in a model spec: one :class:`SpecError` each, raised together as one UserError."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import UserError

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class SpecError:
    """One problem, located in the spec.

    ``where`` is the prefix a user reads ("layer 3 Conv2D", "input", "optimizer"),
    ``path`` the JSON location (``layers[3].kernel_size``) a GUI can highlight,
    ``layer`` the index path of the layer (``(3,)``; ``(2, 1)`` is layer 1 inside the
    residual block at layer 2) or None, ``param`` the parameter name or None.
    A ``warning`` does not stop training; an ``error`` does.
    """

    where: str
    problem: str
    path: str = ""
    layer: tuple[int, ...] | None = None
    layer_type: str | None = None
    param: str | None = None
    severity: Severity = "error"

    @property
    def message(self) -> str:
        return f"{self.where}: {self.problem}"

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """The message, then every field (``layer`` as a JSON list)."""
        out = {"message": self.message, **asdict(self)}
        out["layer"] = list(self.layer) if self.layer is not None else None
        return out


class ModelSpecError(UserError):
    """A model spec that cannot be used; ``errors`` holds every problem found.

    ``str(err)`` is one line for one problem, else a first line and one line per problem.
    """

    def __init__(self, errors: Sequence[SpecError], source: str = "model spec") -> None:
        self.errors = list(errors)
        self.source = source
        if len(self.errors) == 1:
            text = f"{source}: {self.errors[0].message}"
        else:
            lines = [f"{source}: {len(self.errors)} problems"]
            lines += [f"  - {e.message}" for e in self.errors]
            text = "\n".join(lines)
        super().__init__(text)


def layer_label(index: tuple[int, ...], layer_type: str) -> str:
    """``"layer 3 Conv2D"``; ``"layer 2.1 Conv2D"`` inside the residual block at layer 2."""
    return f"layer {'.'.join(str(i) for i in index)} {layer_type}".rstrip()


def layer_path(index: tuple[int, ...]) -> str:
    """``"layers[2].layers[1]"``: the JSON location of a (nested) layer."""
    return ".".join(f"layers[{i}]" for i in index)
