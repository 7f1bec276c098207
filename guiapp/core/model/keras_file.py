"""Reading a ``.keras`` file: checked as data before Keras sees it, loaded in safe mode.

A ``.keras`` file is a zip of ``config.json``, ``metadata.json`` and the weights. guiapp
only loads what its own layers describe: a ``Lambda`` layer (a Python function) or a class
from a module outside Keras is code, refused before anything is imported from it. A file
that is not a whole zip (truncated, bytes changed: each member carries a CRC) or whose
config or weights Keras cannot read is damaged. Both are one :class:`FileError` (exit 2).
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import FileError

#: Modules a layer, a model or an initializer of a file guiapp can load comes from.
SAFE_MODULES = ("keras", "builtins")
#: Config keys that hold Python code or a reference to it in a Keras config.
CODE_KEYS = ("function", "function_type", "output_shape_type")


def damaged(path: str | os.PathLike[str], why: str) -> FileError:
    return FileError(
        path,
        f"the model file is damaged ({why})",
        "Train the run again (--restart), or use its other model file (--which best/last)",
        option="--which",
    )


def contains_code(path: str | os.PathLike[str], what: str) -> FileError:
    return FileError(
        path,
        f"refused: the model file contains code ({what})",
        "Only model files of layers guiapp builds are loaded; export the model again "
        "without Lambda layers or custom classes",
    )


def _dicts(obj: Any) -> Iterator[dict[str, Any]]:
    """Every dict inside ``obj`` (a parsed config), without recursion."""
    todo = [obj]
    while todo:
        cur = todo.pop()
        if isinstance(cur, dict):
            yield cur
            todo.extend(cur.values())
        elif isinstance(cur, list):
            todo.extend(cur)


def code_in_config(config: Any) -> str | None:
    """What in a ``.keras`` config is code (a Lambda layer, a function, a class from a
    module outside Keras), or None."""
    for d in _dicts(config):
        name = d.get("class_name")
        if name in ("Lambda", "function", "__lambda__"):
            return f"a {name} object"
        module = d.get("module")
        if isinstance(module, str) and module.split(".")[0] not in SAFE_MODULES:
            return f"a reference to module {module!r}"
        if isinstance(name, str) and "registered_name" in d:
            reg = d["registered_name"]
            if isinstance(reg, str) and ">" in reg:  # "package>Name": a custom class
                return f"the custom class {reg!r}"
        for key in CODE_KEYS:
            if d.get(key) in ("lambda", "raw"):
                return f"{key} {d[key]!r}"
    return None


def check_keras_file(path: str | os.PathLike[str]) -> None:
    """Refuse a ``.keras`` file that is damaged or holds code; reads no TensorFlow."""
    p = Path(path)
    try:
        with zipfile.ZipFile(p) as z:
            bad = z.testzip()  # every member's CRC: a flipped or missing byte shows here
            if bad is not None:
                raise damaged(p, f"{bad} does not match its checksum")
            try:
                config = json.loads(z.read("config.json"))
            except KeyError:
                raise damaged(p, "it has no config.json") from None
    except zipfile.BadZipFile as exc:
        raise damaged(p, f"not a whole zip file: {exc}") from None
    except (ValueError, RecursionError) as exc:  # JSON (UnicodeDecodeError is a ValueError)
        raise damaged(p, f"its config.json is not valid JSON: {exc}") from None
    except OSError as exc:
        raise FileError(p, f"cannot be read ({exc.strerror or exc})", "Check the path") from None
    what = code_in_config(config)
    if what:
        raise contains_code(p, what)


def load_keras(path: str | os.PathLike[str]) -> Any:
    """The model in ``path`` (not compiled), after :func:`check_keras_file`; whatever Keras
    cannot read in a file that passed is damaged too, in one line."""
    check_keras_file(path)
    import keras

    try:
        return keras.saving.load_model(path, safe_mode=True, compile=False)
    except (ValueError, TypeError, KeyError, OSError, zipfile.BadZipFile) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "arbitrary code" in text or "safe_mode" in text:
            raise contains_code(path, text[:200]) from None
        raise damaged(path, f"{type(exc).__name__}: {text[:200]}") from None
