"""Augmentation ops: exact behaviour, statistics, validation messages, copies in a real job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from guiapp.core.augment.offline import OPS
from guiapp.core.errors import UserError
from guiapp.core.generate import Augmenter, resolve_config
from guiapp.core.store import Dataset


def img(n: int = 64) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, 8, 8)).astype(np.float32)


def run(spec: dict, x: np.ndarray, seed: int = 1) -> np.ndarray:
    aug = Augmenter(spec, x.shape[1:], x.dtype)
    return aug.apply(np.random.default_rng(seed), x.copy())


def test_flip_twice_is_identity_and_once_mirrors() -> None:
    x = img()
    for axis in ("h", "v"):
        once = run({"ops": [{"op": "flip", "axis": axis, "p": 1}]}, x)
        assert np.array_equal(once, x[:, :, ::-1] if axis == "h" else x[:, ::-1])
        assert np.array_equal(run({"ops": [{"op": "flip", "axis": axis, "p": 1}] * 2}, x), x)


def test_rot90_transpose_keep_shape_and_values() -> None:
    x = img()
    r = run({"ops": [{"op": "rot90"}]}, x)
    assert r.shape == x.shape
    for a, b in zip(r, x, strict=True):
        assert any(np.array_equal(a, np.rot90(b, t)) for t in (1, 2, 3))
    t = run({"ops": [{"op": "transpose", "p": 1}]}, x)
    assert np.array_equal(t, np.swapaxes(x, 1, 2))


def test_shift_roll_and_zero() -> None:
    x = img()
    r = run({"ops": [{"op": "shift", "max": 2}]}, x)
    for a, b in zip(r, x, strict=True):
        assert any(
            np.array_equal(a, np.roll(b, (dy, dx), axis=(0, 1)))
            for dy in range(-2, 3)
            for dx in range(-2, 3)
        )
    z = run({"ops": [{"op": "shift", "max": 3, "mode": "zero"}]}, x)
    assert np.isclose(np.sort(z.reshape(-1))[: x.size // 20], 0).sum() < x.size  # sanity
    assert (z == 0).sum() > 0


def test_noise_scale_cutout_zscore() -> None:
    x = img(2000)
    n = run({"ops": [{"op": "noise", "std": 0.5}]}, x) - x
    assert abs(n.std() - 0.5) < 0.01
    s = run({"ops": [{"op": "scale", "low": 2, "high": 2}]}, x)
    assert np.allclose(s, 2 * x)
    c = run({"ops": [{"op": "cutout", "size": 3, "fill": 9, "p": 1}]}, x)
    assert np.all((c == 9).reshape(len(x), -1).sum(1) == 9)
    zs = run({"ops": [{"op": "scale", "low": 3, "high": 5}, {"op": "zscore"}]}, x)
    flat = zs.reshape(len(x), -1)
    assert np.allclose(flat.mean(1), 0, atol=1e-5) and np.allclose(flat.std(1), 1, atol=1e-4)


def tokens(n: int = 4000) -> np.ndarray:
    return np.random.default_rng(0).integers(1, 65521, (n, 126)).astype(np.uint16)


def test_mutation_rate_statistics() -> None:
    x = tokens()
    m = run({"ops": [{"op": "mutate", "rate": 0.05}]}, x)
    changed = (m != x).mean()
    assert abs(changed - 0.05) < 0.003  # a replacement equal to the old token is rare
    assert m.dtype == np.uint16 and m.min() >= 1


def test_reverse_and_crop_pad() -> None:
    x = tokens(500)
    r = run({"ops": [{"op": "reverse", "p": 1}]}, x)
    assert np.array_equal(r, x[:, ::-1])
    for pad in ("post", "pre"):
        c = run({"ops": [{"op": "crop_pad", "min_length": 100, "pad": pad, "p": 1}]}, x)
        for a, b in zip(c, x, strict=True):
            kept = a[a != 0]
            assert 100 <= len(kept) <= 126
            if pad == "post":
                assert np.all(a[len(kept) :] == 0)
            else:
                assert np.all(a[: 126 - len(kept)] == 0)
            s = bytes(b.tobytes()).find(kept.tobytes())
            assert s != -1 and s % 2 == 0  # found (-1: not found) and aligned to a value


@pytest.mark.parametrize(
    ("spec", "shape", "dtype", "message"),
    [
        ({"ops": [{"op": "spin"}]}, (8, 8), "float32", "ops[0]: unknown op 'spin'"),
        (
            {"ops": [{"op": "flip", "p": 2}]},
            (8, 8),
            "float32",
            "ops[0] (flip): parameter 'p' must be in [0, 1], got 2",
        ),
        (
            {"ops": [{"op": "flip", "axis": "x"}]},
            (8, 8),
            "float32",
            "parameter 'axis' must be one of",
        ),
        ({"ops": [{"op": "noise", "sigma": 1}]}, (8, 8), "float32", "unknown parameter 'sigma'"),
        ({"ops": [{"op": "rot90"}]}, (8, 6), "float32", "needs square samples"),
        ({"ops": [{"op": "noise"}]}, (126,), "uint16", "works on float samples"),
        ({"ops": [{"op": "mutate"}]}, (8, 8), "float32", "works on 1D samples"),
        (
            {"ops": [{"op": "crop_pad", "min_length": 200}]},
            (126,),
            "uint16",
            "'min_length' 200 exceeds",
        ),
        ({"copies": 0}, (8, 8), "float32", "copies: must be an integer"),
        ({"ops": [], "extra": 1}, (8, 8), "float32", "unknown key 'extra'"),
    ],
)
def test_validation_names_op_and_parameter(
    spec: dict, shape: tuple, dtype: str, message: str
) -> None:
    with pytest.raises(UserError, match=None) as err:
        Augmenter(spec, shape, dtype)
    assert message in str(err.value)


def test_every_op_is_documented() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "GENERATION.md").read_text()
    for name in OPS:
        assert f"`{name}`" in doc


def test_copies_in_a_real_job(tmp_path: Path) -> None:
    spec = tmp_path / "aug.json"
    spec.write_text('{"copies": 4, "ops": [{"op": "flip", "p": 0.5}, {"op": "noise", "std": 0.2}]}')
    out = tmp_path / "a.h5"
    r = subprocess.run(
        [sys.executable, "-m", "guiapp", "generate", out, "--n", "4000", "--augment", spec],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        assert len(ds) == 4000 and ds.provenance["augment"]["copies"] == 4
        x, y = ds.read_range(0, 4000)
    cfg = resolve_config("patterns2d", n=1000, seed=0)
    assert cfg.augment is None
    # 4 copies of 1000 sources: near-duplicates (same source) exist but are not adjacent
    flat = x.reshape(4000, -1)
    corr = (flat[:200] @ flat.T) / flat.shape[1]
    np.fill_diagonal(corr[:, :200], 0)
    close = (np.abs(corr) > 0.8).sum(1)
    assert np.median(close) >= 1
    near = [abs(i - j) for i in range(200) for j in np.flatnonzero(np.abs(corr[i]) > 0.8)]
    assert np.median(near) > 10  # copies are spread, not next to each other
