"""``run_embed``: each row's penultimate-layer activations and a 2-D projection (PCA).

The penultimate layer is the input of the model's last Dense layer (what its softmax
sees); its probabilities come from the same pass. Above ``max_rows`` (default 1,000,000,
what the map shows) the split's rows are sampled, uniformly and seeded, and kept in
dataset order. The split is read once, chunk by chunk; the activations go to the file as
they come (float16), so memory holds one chunk and the PCA sample only. PCA is fitted on
up to 100,000 of the rows (seeded) by an SVD of the centred activations, then every row is
projected. No UMAP: PCA needs no extra package and costs one pass; a nonlinear map would
be an optional extra chosen by measurement (docs/EXPLAIN.md).

```
EMB.h5
  row       int64 (n,)       dataset rows, ascending
  label     int32 (n,)       the rows' labels
  pred      int32 (n,)       the predicted class
  prob      float32 (n,)     its probability
  features  float16 (n, d)   the penultimate activations
  pca       float32 (n, 2)   the first two principal components
  attrs: format="guiapp-embedding", format_version, rows, dataset_rows, sampled (0/1),
         seed, split, model_path, model_hash, dataset_path, class_names (JSON),
         pca_mean (d,), pca_components (2, d), explained_variance_ratio (2,)
```
Written under a temporary name and renamed: the file is whole or absent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_path
from ..errors import FileError, OptionError
from ..events import CancelToken, EventSink

FORMAT_NAME = "guiapp-embedding"
MAX_ROWS = 1_000_000
PCA_FIT_ROWS = 100_000
CHUNK = 8192


@dataclass
class EmbedConfig:
    model: str
    data: str
    out: str
    split: str = "all"
    max_rows: int = MAX_ROWS
    seed: int = 0
    which: str = "best"
    batch: int = 512

    def check(self) -> None:
        if self.max_rows < 2:
            raise OptionError(
                "max-rows", self.max_rows, "must be at least 2", "e.g. --max-rows 1000000"
            )
        if Path(self.out).suffix.lower() != ".h5":
            raise OptionError("out", self.out, "is not an .h5 file name", "name it EMB.h5")


def sample_rows(rows: np.ndarray, max_rows: int, seed: int) -> np.ndarray:
    """``rows`` when there are at most ``max_rows``, else that many of them, seeded, sorted."""
    if len(rows) <= max_rows:
        return rows
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(rows, max_rows, replace=False))


def pca_fit(x: np.ndarray, k: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, the first ``k`` components (k, d) and their explained variance ratios."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    var = s**2
    ratio = var[:k] / var.sum() if var.sum() > 0 else np.zeros(k)
    comps = np.zeros((k, x.shape[1]))
    comps[: min(k, len(vt))] = vt[:k]
    return mean, comps, np.pad(ratio, (0, k - len(ratio)))


def run_embed(
    cfg: EmbedConfig, sink: EventSink, cancel: CancelToken | None = None
) -> dict[str, Any]:
    """Write ``cfg.out``; returns the summary (also the ``finished`` event), or
    ``{"status": "stopped"}`` when stopped on request (nothing written)."""
    try:
        return _embed(cfg, sink, cancel)
    except _Stopped:
        return {"status": "stopped"}


def _embed(cfg: EmbedConfig, sink: EventSink, cancel: CancelToken | None) -> dict[str, Any]:
    import h5py

    from ..predict.source import plan_rows, resolve_model, split_plan
    from ..store import Dataset

    cfg.check()
    source = resolve_model(cfg.model, cfg.which)
    if not Path(cfg.data).exists():
        raise FileError(cfg.data, "does not exist", "Give the dataset NAME.h5 to embed")
    with Dataset(cfg.data) as ds:
        split_rows = np.asarray(plan_rows(split_plan(ds, source, cfg.split, cfg.batch)))
        rows = sample_rows(split_rows, cfg.max_rows, cfg.seed)
        sink.emit("started", job="embed", rows=len(rows), split_rows=len(split_rows), out=cfg.out)
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        import keras

        from .attribution import Explainer

        model = keras.saving.load_model(source.path, safe_mode=True, compile=False)
        ex = Explainer(model)
        dim = int(ex.features.outputs[0].shape[-1])
        fit_at = set(sample_rows(np.arange(len(rows)), PCA_FIT_ROWS, cfg.seed + 1).tolist())
        fit: list[np.ndarray] = []
        names = source.class_names or list(ds.class_names)
        with atomic_path(cfg.out) as tmp, h5py.File(tmp, "w", libver="earliest") as f:
            n = len(rows)
            f.create_dataset("row", data=rows.astype(np.int64))
            label = f.create_dataset("label", (n,), "int32")
            pred = f.create_dataset("pred", (n,), "int32")
            prob = f.create_dataset("prob", (n,), "float32")
            feats = f.create_dataset(
                "features", (n, dim), "float16", chunks=(min(n, CHUNK), dim) if n else None
            )
            done = 0
            while done < n:
                if cancel is not None and cancel.cancelled:
                    sink.emit("stopped", job="embed", done=done, total=n)
                    raise _Stopped
                part = rows[done : done + CHUNK]
                a, b = int(part[0]), int(part[-1]) + 1
                xs, ys = ds.read_range(a, b)
                x = np.stack([ex.as_input(v) for v in xs[part - a]]) if len(part) else xs[:0]
                h, p = _features(ex, x, cfg.batch)
                sel = slice(done, done + len(part))
                label[sel] = ys[part - a]
                pred[sel] = p.argmax(axis=1)
                prob[sel] = p.max(axis=1)
                feats[sel] = h.astype(np.float16)
                fit += [h[i - done] for i in range(done, done + len(part)) if i in fit_at]
                done += len(part)
                sink.emit("progress", phase="embed", done=done, total=n)
            mean, comps, ratio = pca_fit(np.asarray(fit).reshape(len(fit), dim))
            pca = f.create_dataset("pca", (n, 2), "float32")
            for a in range(0, n, CHUNK):
                h = np.asarray(feats[a : a + CHUNK], np.float64)
                pca[a : a + CHUNK] = (h - mean) @ comps.T
            at = f.attrs
            at["format"] = FORMAT_NAME
            at["format_version"] = np.int64(1)
            at["rows"] = np.int64(n)
            at["dataset_rows"] = np.int64(len(split_rows))
            at["sampled"] = np.int64(len(split_rows) > n)
            at["seed"] = np.int64(cfg.seed)
            at["split"] = cfg.split
            at["model_path"] = str(source.path.resolve())
            at["model_hash"] = source.hash
            at["dataset_path"] = str(ds.path.resolve())
            at["class_names"] = json.dumps(list(names))
            at["pca_mean"] = mean
            at["pca_components"] = comps
            at["explained_variance_ratio"] = ratio
    result = {
        "status": "finished",
        "out": cfg.out,
        "rows": len(rows),
        "split_rows": len(split_rows),
        "dim": dim,
        "explained_variance_ratio": [round(float(r), 4) for r in ratio],
    }
    sink.emit("finished", job="embed", **result)
    return result


class _Stopped(Exception):
    """Stopped on request: the temporary file is removed, nothing is written."""


def _features(ex: Any, x: np.ndarray, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Penultimate activations (n, d) and class probabilities (n, C) of a chunk."""
    hs, ps = [], []
    for a in range(0, len(x), batch):
        h = ex.features(x[a : a + batch], training=False)
        ps.append(ex.probabilities_of(h))
        hs.append(np.asarray(h))
    return np.concatenate(hs), np.concatenate(ps)


def read_embedding(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What the map needs: ``row``, ``label``, ``pred``, ``prob``, ``pca`` and the attrs."""
    import h5py

    try:
        f = h5py.File(path, "r", locking=False)
    except OSError as exc:
        raise FileError(path, f"cannot be read ({exc})", "Run guiapp embed") from None
    with f:
        if f.attrs.get("format") != FORMAT_NAME:
            raise FileError(path, "is not an embedding file", "Give a file written by guiapp embed")
        out: dict[str, Any] = {k: np.asarray(f[k]) for k in ("row", "label", "pred", "prob", "pca")}
        out["class_names"] = json.loads(str(f.attrs["class_names"]))
        out["dataset_path"] = str(f.attrs["dataset_path"])
    return out
