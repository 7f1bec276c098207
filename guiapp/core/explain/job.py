"""``run_explain``: attributions of chosen rows, one small ``.npz`` file per (model, row,
class), cached.

Files: ``OUT/<model>-<dataset>/row<R>-<pred|cC>.npz`` where ``<model>`` is the first 12 hex
digits of the model file's sha256 and ``<dataset>`` the first 8 of the dataset's uuid, so a
retrained model or another dataset never meets a stale file. ``OUT`` defaults to the run
folder's ``explain/`` (a bare model file: ``explain/`` beside it). Each file holds ``x``
(the sample), ``probs``, one array per method (``integrated_gradients``, ``occlusion``,
``gradcam``, ``hirescam``: the sample's positions) and ``meta`` (a JSON string: row, label, target
class and its name, predicted class, methods, ``ig_delta``, model and dataset). Plain
arrays only: read them with ``numpy.load(path, allow_pickle=False)``. A file that already
holds the asked methods is not computed again.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write_bytes
from ..errors import FileError, OptionError, UserError
from ..events import CancelToken, EventSink
from .attribution import METHODS, SHORT

MAX_ROWS = 10_000


@dataclass
class ExplainConfig:
    model: str
    data: str
    rows: list[int]
    out: str | None = None
    target: str = "pred"  # "pred", a class name or a class index
    methods: list[str] = field(default_factory=list)  # empty: every method the model has
    which: str = "best"


def parse_rows(text: str) -> list[int]:
    """``"3,10-12,40"`` -> ``[3, 10, 11, 12, 40]``; one line naming the bad part."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            if "-" in part[1:]:
                a, b = part.split("-", 1)
                lo, hi = int(a), int(b)
                if hi < lo:
                    raise ValueError
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise OptionError(
                "rows", text, f"'{part}' is not a row or a range A-B", "e.g. --rows 3,10-12"
            ) from None
        if len(out) > MAX_ROWS:
            raise OptionError(
                "rows", text, f"more than {MAX_ROWS:,} rows", "explain fewer rows at once"
            )
    return out


def parse_methods(text: str | None) -> list[str]:
    if not text:
        return []
    out = []
    for m in (p.strip() for p in text.split(",")):
        full = SHORT.get(m, m)
        if full not in METHODS:
            raise OptionError(
                "methods", text, f"unknown method '{m}'", "use ig, occlusion, gradcam or hirescam"
            )
        out.append(full)
    return out


def cache_folder(out: Path, model_hash: str, dataset_uuid: str) -> Path:
    return out / f"{model_hash.removeprefix('sha256:')[:12]}-{str(dataset_uuid)[:8]}"


def cache_name(row: int, target: str) -> str:
    return f"row{row}-{'pred' if target == 'pred' else 'c' + target}.npz"


def read_explained(path: str | Path) -> dict[str, Any]:
    """A file's arrays and its ``meta`` (parsed), no pickle."""
    with np.load(path, allow_pickle=False) as f:
        out: dict[str, Any] = {k: np.asarray(f[k]) for k in f.files if k != "meta"}
        out["meta"] = json.loads(str(f["meta"]))
    return out


def _holds(path: Path, methods: list[str]) -> bool:
    try:
        with np.load(path, allow_pickle=False) as f:
            return all(m in f.files for m in methods)
    except (OSError, ValueError, KeyError):
        return False


def run_explain(
    cfg: ExplainConfig, sink: EventSink, cancel: CancelToken | None = None
) -> dict[str, Any]:
    """Explain every row of ``cfg.rows``; returns ``{"files": [...], "computed", "cached"}``
    (also the ``finished`` event)."""
    from ..predict.source import resolve_model
    from ..store import Dataset

    source = resolve_model(cfg.model, cfg.which)
    if not Path(cfg.data).exists():
        raise FileError(cfg.data, "does not exist", "Give the dataset NAME.h5 the rows are in")
    out = Path(cfg.out) if cfg.out else (source.run_dir or source.path.parent) / "explain"
    with Dataset(cfg.data) as ds:
        n = len(ds)
        bad = [r for r in cfg.rows if not 0 <= r < n]
        if bad:
            raise OptionError(
                "rows", bad[0], f"is not a row of {cfg.data} ({n:,} rows)", f"give rows 0..{n - 1}"
            )
        names = source.class_names or list(ds.class_names)
        target = _target(cfg.target, names)
        folder = cache_folder(out, source.hash, ds.uuid)
        paths = {r: folder / cache_name(r, target) for r in cfg.rows}
        todo = [r for r in cfg.rows if not (cfg.methods and _holds(paths[r], cfg.methods))]
        sink.emit(
            "started",
            job="explain",
            rows=len(cfg.rows),
            cached=len(cfg.rows) - len(todo),
            out=str(folder),
        )
        if todo and not _compute(cfg, source, ds, names, target, todo, paths, sink, cancel):
            return {"status": "stopped"}
    result = {
        "status": "finished",
        "files": [str(paths[r]) for r in cfg.rows],
        "computed": len(todo),
        "cached": len(cfg.rows) - len(todo),
    }
    sink.emit("finished", job="explain", **result)
    return result


def _target(text: str, names: list[str]) -> str:
    """``pred`` or a class index as text; a name is looked up."""
    if text == "pred":
        return text
    if text in names:
        return str(names.index(text))
    if text.isdigit() and int(text) < len(names):
        return text
    raise OptionError("class", text, "no such class", "use pred or one of " + ", ".join(names))


def _compute(
    cfg: ExplainConfig,
    source: Any,
    ds: Any,
    names: list[str],
    target: str,
    rows: list[int],
    paths: dict[int, Path],
    sink: EventSink,
    cancel: CancelToken | None,
) -> bool:
    """Compute and write the files of ``rows``; False when stopped on request."""
    import os

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    from .attribution import Explainer

    model = keras.saving.load_model(source.path, safe_mode=True, compile=False)
    ex = Explainer(model)
    if int(np.prod(ex.x_shape)) != int(np.prod(ds.sample_shape)):
        raise UserError(
            f"{cfg.data}: samples of shape {tuple(ds.sample_shape)} do not fit the model's input {ex.x_shape}"
        )
    methods = cfg.methods or list(ex.methods)
    missing = [m for m in methods if m not in ex.methods]
    if missing:
        raise OptionError(
            "methods",
            ",".join(cfg.methods),
            f"{missing[0]} is not available for this model (it has {', '.join(ex.methods)})",
            "leave it out",
        )
    for i, r in enumerate(rows):
        if cancel is not None and cancel.cancelled:
            sink.emit("stopped", job="explain", done=i, total=len(rows))
            return False
        sample, label = ds.read(r)
        got = ex.explain(
            ex.as_input(sample), None if target == "pred" else int(target), tuple(methods)
        )
        meta = {
            "row": r,
            "label": label,
            "label_name": names[label] if 0 <= label < len(names) else str(label),
            "target": got.target,
            "target_name": names[got.target] if got.target < len(names) else str(got.target),
            "predicted": int(np.argmax(got.probs)),
            "methods": list(got.maps),
            "ig_delta": got.ig_delta,
            "model": str(source.path),
            "dataset": str(ds.path),
            "sample_shape": list(ds.sample_shape),
        }
        buf = io.BytesIO()
        arrays: dict[str, Any] = {"x": np.asarray(sample), "probs": got.probs, **got.maps}
        np.savez(buf, meta=np.array(json.dumps(meta)), **arrays)
        paths[r].parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(paths[r], buf.getvalue(), durable=False)
        sink.emit("progress", phase="explain", done=i + 1, total=len(rows))
        sink.emit(
            "explained", row=r, path=str(paths[r]), target=got.target, predicted=meta["predicted"]
        )
    return True
