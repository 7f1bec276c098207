"""The augmentation ops, each with its parameters and where it may run: the one table of them.

Two JSON forms name these ops, and both are checked against this table:

* offline, written into a dataset (``guiapp generate --augment``)::

      {"copies": 2, "ops": [{"op": "flip", "axis": "h", "p": 0.5}, {"op": "noise", "std": 0.1}]}

  checked by :mod:`.check` (names, parameters, defaults, ranges, sample shape and dtype)
  and applied by :mod:`.offline`;
* online, per batch while training (``guiapp train --augment``)::

      {"flip_h": true, "rot90": true, "noise_std": 0.1}     (2-D samples)
      {"reverse": true}                                    (1-D k-mer rows)

  one key per entry of :data:`ONLINE_KEYS`, each naming an op of :data:`OP_DEFS` that runs
  ``"online"``, applied by :mod:`.online`.

Pure Python and numpy-free, so the GUI can list ops without importing the implementations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OFFLINE = "offline"
ONLINE = "online"
BOTH = frozenset({OFFLINE, ONLINE})


@dataclass(frozen=True)
class Param:
    """One parameter of an op: its default and what it accepts.

    ``kind`` is ``"num"`` (int or float, stored as float), ``"int"``, or a tuple of the
    accepted values; numbers must lie in ``[low, high]``.
    """

    default: Any
    kind: str | tuple[Any, ...]
    low: float = 0
    high: float = 0


@dataclass(frozen=True)
class OpDef:
    """An op: its parameters (in the order a checked spec lists them), the samples it
    works on, and where it may run.

    ``samples``: ``"2d"`` (HxW, optionally with channels), ``"float"`` (any shape, float
    dtype) or ``"1d"`` (vectors). ``square``: HxW must be equal. ``integer``: the samples'
    dtype must be an integer type.
    """

    params: dict[str, Param]
    samples: str
    runs: frozenset[str] = frozenset({OFFLINE})
    square: bool = False
    integer: bool = False


_P05 = Param(0.5, "num", 0, 1)
_P1 = Param(1.0, "num", 0, 1)

OP_DEFS: dict[str, OpDef] = {
    "flip": OpDef({"axis": Param("h", ("h", "v")), "p": _P05}, "2d", BOTH),
    "rot90": OpDef({"p": _P1}, "2d", BOTH, square=True),
    "transpose": OpDef({"p": _P05}, "2d", square=True),
    "shift": OpDef(
        {"max": Param(2, "int", 0, 10**6), "mode": Param("roll", ("roll", "zero")), "p": _P1},
        "2d",
    ),
    "noise": OpDef({"std": Param(0.1, "num", 0, 1e6), "p": _P1}, "float", BOTH),
    "cutout": OpDef(
        {"size": Param(5, "int", 1, 10**6), "fill": Param(0.0, "num", -1e30, 1e30), "p": _P05},
        "2d",
    ),
    "scale": OpDef(
        {"low": Param(0.8, "num", -1e6, 1e6), "high": Param(1.2, "num", -1e6, 1e6), "p": _P1},
        "float",
    ),
    "zscore": OpDef({}, "float"),
    "mutate": OpDef(
        {
            "rate": Param(0.01, "num", 0, 1),
            "low": Param(1, "int", 0, 2**31),
            "vocab": Param(65521, "int", 1, 2**31),
        },
        "1d",
        integer=True,
    ),
    # 1-D rows read backwards: with canonical k-mers, a read's reverse complement.
    "reverse": OpDef({"p": _P05}, "1d", BOTH),
    "crop_pad": OpDef(
        {
            "min_length": Param(64, "int", 1, 10**9),
            "pad": Param("post", ("post", "pre")),
            "pad_value": Param(0, "int", -(2**31), 2**31),
            "p": _P05,
        },
        "1d",
    ),
}


@dataclass(frozen=True)
class OnlineKey:
    """A key of the online form: the op it runs and how the key's value maps onto it.

    ``fixed``: the op's parameters this key pins (``flip_h`` is ``flip`` with axis "h"
    and p 0.5). ``value``: the op parameter the key's value sets (``noise_std`` sets
    ``noise``'s ``std``); ``None`` for an on/off switch.
    """

    op: str
    fixed: dict[str, Any] = field(default_factory=dict)
    value: str | None = None


#: The online form's keys, in the order they are applied to a batch. Online ``rot90``
#: turns each sample by 0, 90, 180 or 270 degrees (the offline op never leaves it as is).
ONLINE_KEYS: dict[str, OnlineKey] = {
    "flip_h": OnlineKey("flip", {"axis": "h", "p": 0.5}),
    "flip_v": OnlineKey("flip", {"axis": "v", "p": 0.5}),
    "rot90": OnlineKey("rot90"),
    "noise_std": OnlineKey("noise", {"p": 1.0}, value="std"),
    "reverse": OnlineKey("reverse", {"p": 0.5}),
}


def ops_that_run(where: str) -> list[str]:
    """The names of the ops that may run ``where`` (``"offline"`` or ``"online"``), sorted."""
    return sorted(name for name, op in OP_DEFS.items() if where in op.runs)


def online_param(key: str) -> Param:
    """The registry parameter an online key's value sets (``noise_std`` -> noise ``std``)."""
    k = ONLINE_KEYS[key]
    assert k.value is not None, f"{key} is an on/off switch"
    return OP_DEFS[k.op].params[k.value]


def _check_table() -> None:
    for key, k in ONLINE_KEYS.items():
        op = OP_DEFS[k.op]
        assert ONLINE in op.runs, f"online key {key}: op {k.op} does not run online"
        assert set(k.fixed) | ({k.value} - {None}) <= set(op.params), key


_check_table()
