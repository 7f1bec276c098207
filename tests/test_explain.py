"""Attribution (issue 32): ``guiapp explain`` on a small CNN trained on generated patterns2d
rows: a map per method with the sample's shape, files cached per (model, row, class); on
blobs most of the attribution mass lies on the blob; the maps change when the model's
weights are randomised (Adebayo et al., 2018); bad rows and methods are one line."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import generated, guiapp

from guiapp.core.events import EventSink
from guiapp.core.explain.job import ExplainConfig, read_explained, run_explain
from guiapp.core.store import Dataset

MASS_METHODS = ("integrated_gradients", "occlusion", "hirescam")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("explain")
    data = generated(d / "p.h5", "patterns2d", 1500)
    r = guiapp("train", "--data", data, "--model", "cnn2d-small", "--out", d / "run",
               "--epochs", 2, "--batch", 32)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return data, d / "run"


def blob_region(x: np.ndarray) -> np.ndarray:
    """The blob: where the 3x3 mean of the sample reaches 30% of its highest value."""
    p = np.pad(x, 1, mode="edge")
    s = sum(p[i : i + x.shape[0], j : j + x.shape[1]] for i in range(3) for j in range(3)) / 9
    return np.asarray(s >= 0.3 * s.max())


def mass_on(a: np.ndarray, region: np.ndarray) -> float:
    a = np.abs(a)
    return float(a[region].sum() / max(a.sum(), 1e-12))


def test_explain_maps_cache_and_mass_on_the_blob(trained: tuple[Path, Path]) -> None:
    data, run = trained
    with Dataset(data) as ds:
        labels = ds.read_labels(0, 300)
        blob = ds.class_names.index("blob")
    rows = [int(r) for r in np.flatnonzero(labels == blob)[:8]]
    arg = ",".join(map(str, rows))
    r = guiapp("explain", "--model", run, "--data", data, "--rows", arg)
    assert r.returncode == 0, r.stderr[-2000:]
    files = [Path(p) for p in r.stdout.split()]
    assert len(files) == len(rows) and all(f.parent.parent == run / "explain" for f in files)
    mass: dict[str, list[float]] = {m: [] for m in MASS_METHODS}
    area = []
    for row, f in zip(rows, files, strict=True):
        got = read_explained(f)
        meta = got["meta"]
        assert meta["row"] == row and meta["label_name"] == "blob"
        assert meta["target"] == meta["predicted"] == int(np.argmax(got["probs"]))
        for m in ("integrated_gradients", "occlusion", "gradcam", "hirescam"):
            assert got[m].shape == (25, 25) and np.isfinite(got[m]).all()
        assert got["integrated_gradients"].any() and got["occlusion"].any()
        if meta["predicted"] == blob:
            region = blob_region(got["x"])
            area.append(region.mean())
            for m in MASS_METHODS:
                mass[m].append(mass_on(got[m], region))
    assert len(area) >= 4, "the model should call most blobs blobs"
    for m in MASS_METHODS:  # the blob is about a tenth of the image
        assert np.mean(mass[m]) > 0.5, f"{m}: {np.mean(mass[m]):.2f} of the mass on the blob"
    assert np.mean(area) < 0.25

    # the same command again: every file from the cache, untouched
    stamps = [f.stat().st_mtime_ns for f in files]
    r = guiapp(
        "explain", "--model", run, "--data", data, "--rows", arg, "--methods", "ig,occlusion"
    )
    assert r.returncode == 0 and f"0 computed, {len(rows)} from the cache" in r.stderr, r.stderr
    assert [f.stat().st_mtime_ns for f in files] == stamps

    # bad input: one line, exit 2
    for args, words in (
        (["--rows", "99999"], "--rows 99999"),
        (["--rows", "3-x"], "--rows 3-x"),
        (["--rows", "1", "--methods", "shap"], "--methods shap"),
        (["--rows", "1", "--class", "square"], "--class square"),
    ):
        r = guiapp("explain", "--model", run, "--data", data, *args)
        assert r.returncode == 2 and words in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_maps_change_when_the_weights_are_randomised(trained: tuple[Path, Path]) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    from guiapp.core.explain.attribution import Explainer, randomized

    data, run = trained
    model = keras.saving.load_model(run / "best.keras", safe_mode=True, compile=False)
    ex, rx = Explainer(model), Explainer(randomized(model, seed=1))
    with Dataset(data) as ds:
        labels = ds.read_labels(0, 200)
        rows = np.flatnonzero(labels == ds.class_names.index("blob"))[:3]
        corr: dict[str, list[float]] = {m: [] for m in MASS_METHODS}
        drop: dict[str, list[float]] = {m: [] for m in MASS_METHODS}
        for row in rows:
            x, y = ds.read(int(row))
            a = ex.explain(ex.as_input(x), y, MASS_METHODS).maps
            b = rx.explain(rx.as_input(x), y, MASS_METHODS).maps
            region = blob_region(x)
            for m in MASS_METHODS:
                assert not np.allclose(a[m], b[m])
                corr[m].append(float(np.corrcoef(np.abs(a[m]).ravel(), np.abs(b[m]).ravel())[0, 1]))
                drop[m].append(mass_on(a[m], region) - mass_on(b[m], region))
    for m in MASS_METHODS:
        assert np.nanmean(corr[m]) < 0.8, f"{m}: the random model's map is the trained one's"
        assert np.mean(drop[m]) > 0.1, f"{m}: the random model puts as much mass on the blob"

    # a chosen class: its own file, explained for that class (run here, TensorFlow loaded)
    sink = EventSink()
    got_events: list[dict] = []
    sink.listeners.append(got_events.append)
    cfg = ExplainConfig(str(run), str(data), [int(rows[0])], target="ring", methods=["occlusion"])
    result = run_explain(cfg, sink)
    assert result["computed"] == 1 and result["files"][0].endswith(f"row{rows[0]}-c2.npz")
    got = read_explained(result["files"][0])
    assert got["meta"]["target_name"] == "ring" and got["meta"]["methods"] == ["occlusion"]
    assert [e["event"] for e in got_events] == ["started", "progress", "explained", "finished"]


def test_embed_writes_activations_predictions_and_their_pca(
    trained: tuple[Path, Path], tmp_path: Path
) -> None:
    import h5py

    from guiapp.core.explain.embed import EmbedConfig, read_embedding, run_embed
    from guiapp.core.predict.table import PredictionTable

    data, run = trained
    out = tmp_path / "emb.h5"  # in this process (TensorFlow is loaded): the CLI is a shell
    got = run_embed(EmbedConfig(str(run), str(data), str(out), max_rows=400), EventSink())
    assert got["status"] == "finished" and got["rows"] == 400
    emb = read_embedding(out)
    rows = emb["row"]
    assert len(rows) == 400 and (np.diff(rows) > 0).all() and rows.max() < 1500  # sampled
    with h5py.File(out, "r") as f:
        feats = np.asarray(f["features"], np.float64)
        mean, comps = f.attrs["pca_mean"], f.attrs["pca_components"]
        ratio = f.attrs["explained_variance_ratio"]
    assert feats.shape == (400, 64) and ratio[0] >= ratio[1] > 0
    assert np.allclose((feats - mean) @ comps.T, emb["pca"], atol=1e-4)
    with Dataset(data) as ds:
        assert (emb["label"] == ds.read_labels()[rows]).all()
    # the penultimate layer and the head give the model's own predictions
    table = PredictionTable(run / "predictions.h5")
    cols = table.read_all()
    common, a, b = np.intersect1d(rows, cols["row"], return_indices=True)
    assert len(common) > 20 and (emb["pred"][a] == cols["pred"][b]).all()
    assert np.allclose(emb["prob"][a], cols["prob"][b], atol=1e-4)
    # the classes stand apart on the map: nearest class centre beats chance (0.2) by far
    pca, y = emb["pca"], emb["label"]
    centres = np.array([pca[y == k].mean(axis=0) for k in range(5)])
    nearest = np.argmin(((pca[:, None] - centres[None]) ** 2).sum(axis=-1), axis=1)
    assert (nearest == y).mean() > 0.5
    r = guiapp("embed", "--model", run, "--data", data, "--out", out, "--max-rows", 1)
    assert r.returncode == 2 and "--max-rows 1" in r.stderr and len(r.stderr.splitlines()) == 1
