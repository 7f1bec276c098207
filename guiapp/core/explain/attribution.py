"""Attribution for one row: which inputs drove the model's score for a class.

Three methods, each a map with the sample's shape (a heat map over a 2-D sample, a curve
over a 1-D row; channels and embedding dimensions summed):

- ``integrated_gradients`` (Sundararajan et al., 2017): the path integral of the class
  logit's gradient from a baseline (zeros; for token rows, the padding token 0's embedding)
  to the sample, times the difference; 32 steps, trapezoid rule. Its sum equals
  ``logit(x) - logit(baseline)`` up to the integration error, kept as ``ig_delta``.
  Token rows (an ``Embedding`` first) are integrated in embedding space.
- ``occlusion`` (Zeiler and Fergus, 2014): the drop of the class probability when a window
  is replaced by the baseline value, averaged over the windows that cover each position
  (2-D: square windows of about a sixth of the side, stride 1; 1-D: one position for token
  rows, so each k-mer is scored alone, else about a twentieth of the length).
- ``gradcam`` (Selvaraju et al., 2017), for models with a convolution: the last
  convolution's maps weighted by their mean gradient of the class logit, rectified and
  resized to the sample (bilinear for 2-D, linear for 1-D). Where every map's mean
  gradient is negative (a class recognised by what is absent, as patterns2d's blob by
  cnn2d-small) it is zero everywhere; ``hirescam`` (Draelos and Carin, 2020) weights each
  position by its own gradient instead, which is faithful for a flatten-dense head.

The class logit is the last Dense layer's pre-activation (its softmax or sigmoid taken
off), so a confident prediction does not flatten the gradients; a model that ends
otherwise is explained on its output. TensorFlow is imported inside these functions only.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

METHODS = ("integrated_gradients", "occlusion", "gradcam", "hirescam")
SHORT = {"ig": "integrated_gradients"}
IG_STEPS = 32
BATCH = 512


def _tf() -> Any:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf

    return tf


@dataclass
class Explained:
    """One row's attributions (each with the sample's shape) and what they are for."""

    target: int
    probs: np.ndarray
    maps: dict[str, np.ndarray]
    ig_delta: float | None = None


class Explainer:
    """A loaded Keras model, taken apart once for its logits, embedding and convolution."""

    def __init__(self, model: Any) -> None:
        import keras

        # Keras 3 warns at every call of a one-input model given a bare tensor (not [x])
        warnings.filterwarnings("ignore", message="The structure of `inputs` doesn't match")
        self.model = model
        self.x_shape = tuple(int(s) for s in model.input_shape[1:])
        dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
        self.tokens = not dtype.startswith("float")
        self.in_dtype = dtype
        last = model.layers[-1]
        act = getattr(getattr(last, "activation", None), "__name__", "")
        self.head = (
            last if type(last).__name__ == "Dense" and act in ("softmax", "sigmoid") else None
        )
        self.sigmoid = act == "sigmoid"
        feat_out = self.head.input if self.head is not None else model.outputs[0]
        self.features = keras.Model(model.inputs, feat_out)
        convs = [layer for layer in model.layers if "Conv" in type(layer).__name__]
        self.conv = convs[-1] if convs else None
        self.cam_model = (
            keras.Model(model.inputs, [self.conv.output, feat_out])
            if self.conv is not None
            else None
        )
        embeds = [layer for layer in model.layers if type(layer).__name__ == "Embedding"]
        self.embedding = embeds[0] if self.tokens and embeds else None
        self.after_embedding = (
            keras.Model(self.embedding.output, feat_out) if self.embedding is not None else None
        )

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods this model supports (Grad-CAM needs a convolution; integrated
        gradients on token rows an embedding)."""
        out = ["occlusion"]
        if not self.tokens or self.after_embedding is not None:
            out.insert(0, "integrated_gradients")
        if self.conv is not None:
            out += ["gradcam", "hirescam"]
        return tuple(out)

    # -- scores -----------------------------------------------------------------------
    def _logits(self, feat: Any) -> Any:
        """Class logits from the features (the head's pre-activation), shape (n, C)."""
        tf = _tf()
        if self.head is None:
            return feat
        z = tf.matmul(feat, self.head.kernel)
        if self.head.use_bias:
            z = z + self.head.bias
        return tf.concat([-z, z], axis=1) if self.sigmoid else z

    def probabilities_of(self, feat: Any) -> np.ndarray:
        """Class probabilities (n, C) from the features (the model's own output function)."""
        tf = _tf()
        if self.head is None:
            p = np.asarray(feat)
            return np.concatenate([1 - p, p], axis=1) if p.shape[1] == 1 else p
        z = tf.matmul(feat, self.head.kernel)
        if self.head.use_bias:
            z = z + self.head.bias
        if self.sigmoid:
            s = np.asarray(tf.sigmoid(z))
            return np.concatenate([1 - s, s], axis=1)
        return np.asarray(tf.nn.softmax(z, axis=-1))

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities of a batch (n, C)."""
        out = []
        for a in range(0, len(x), BATCH):
            p = np.asarray(self.model(x[a : a + BATCH], training=False))
            out.append(np.concatenate([1 - p, p], axis=1) if p.shape[1] == 1 else p)
        return np.concatenate(out)

    # -- methods ----------------------------------------------------------------------
    def integrated_gradients(
        self, x: np.ndarray, c: int, steps: int = IG_STEPS
    ) -> tuple[np.ndarray, float]:
        """The map (model input shape, summed over an embedding) and the completeness
        error ``sum(map) - (logit(x) - logit(baseline))``."""
        tf = _tf()
        alphas = tf.reshape(
            tf.linspace(0.0, 1.0, steps + 1),
            (-1,) + (1,) * (len(self.x_shape) + (1 if self.tokens else 0)),
        )
        if self.tokens:
            assert self.embedding is not None and self.after_embedding is not None
            e = self.embedding(tf.constant(x[None]))
            e0 = self.embedding(tf.zeros_like(tf.constant(x[None])))
            rest = self.after_embedding
        else:
            e = tf.constant(x[None].astype(np.float32))
            e0 = tf.zeros_like(e)
            rest = self.features
        path = e0 + alphas * (e - e0)
        with tf.GradientTape() as tape:
            tape.watch(path)
            z = self._logits(rest(path, training=False))[:, c]
        g = tape.gradient(z, path).numpy()
        avg = (g[:-1] + g[1:]).mean(axis=0) / 2.0
        attr = ((e - e0).numpy()[0]) * avg
        if self.tokens:
            attr = attr.sum(axis=-1)
        zs = z.numpy()
        return attr, float(attr.sum() - (zs[-1] - zs[0]))

    def occlusion(self, x: np.ndarray, c: int) -> np.ndarray:
        """Mean drop of class ``c``'s probability over the windows covering each position."""
        spatial = (
            self.x_shape[:2] if len(self.x_shape) >= 2 and not self.tokens else self.x_shape[:1]
        )
        if len(spatial) == 2:
            h, w = spatial
            k = max(2, round(min(h, w) / 6))
            corners: list[tuple[int, ...]] = [
                (i, j) for i in range(h - k + 1) for j in range(w - k + 1)
            ]
        else:
            n = spatial[0]
            k = 1 if self.tokens else max(1, round(n / 20))
            corners = [(i,) for i in range(n - k + 1)]
        base = self.probabilities(x[None])[0, c]
        drop = np.zeros(spatial, np.float64)
        cover = np.zeros(spatial, np.float64)
        for a in range(0, len(corners), BATCH):
            part = corners[a : a + BATCH]
            batch = np.repeat(x[None], len(part), axis=0)
            for b, corner in enumerate(part):
                at: tuple[Any, ...] = (b, *(slice(o, o + k) for o in corner))
                batch[at] = 0
            p = self.probabilities(batch)[:, c]
            for b, corner in enumerate(part):
                window: tuple[Any, ...] = tuple(slice(o, o + k) for o in corner)
                drop[window] += base - p[b]
                cover[window] += 1
        out: np.ndarray = drop / np.maximum(cover, 1)
        return out

    def gradcam(self, x: np.ndarray, c: int, hires: bool = False) -> np.ndarray:
        """The last convolution's class activation map, resized to the input's positions
        (``hires``: each position's own gradient, not the map's mean: HiResCAM)."""
        tf = _tf()
        assert self.cam_model is not None
        with tf.GradientTape() as tape:
            maps, feat = self.cam_model(tf.constant(x[None]), training=False)
            z = self._logits(feat)[:, c]
        g = tape.gradient(z, maps).numpy()[0]
        a = maps.numpy()[0]
        weights = g.reshape(-1, g.shape[-1]).mean(axis=0)
        cam = np.maximum(((a * g) if hires else (a * weights)).sum(axis=-1), 0.0)
        spatial = self.x_shape[:1] if self.tokens or len(self.x_shape) < 2 else self.x_shape[:2]
        if cam.ndim == 2 and len(spatial) == 2:
            resized = tf.image.resize(cam[None, :, :, None], spatial, method="bilinear")
            out: np.ndarray = resized.numpy()[0, :, :, 0]
            return out
        n = spatial[0]
        src = (np.arange(len(cam)) + 0.5) * n / len(cam) - 0.5
        line: np.ndarray = np.interp(np.arange(n), src, cam)
        return line

    def explain(self, x: np.ndarray, target: int | None, methods: tuple[str, ...]) -> Explained:
        """Every method of ``methods`` for sample ``x`` (already in the model's input shape
        and dtype), for class ``target`` (None: the predicted class)."""
        probs = self.probabilities(x[None])[0]
        c = int(np.argmax(probs)) if target is None else int(target)
        maps: dict[str, np.ndarray] = {}
        delta = None
        for m in methods:
            if m == "integrated_gradients":
                maps[m], delta = self.integrated_gradients(x, c)
            elif m == "occlusion":
                maps[m] = self.occlusion(x, c)
            elif m in ("gradcam", "hirescam"):
                maps[m] = self.gradcam(x, c, hires=m == "hirescam")
        spatial = self.spatial_shape
        for m, v in maps.items():
            v = np.asarray(v, np.float64)
            if v.shape != spatial:  # channels summed
                v = v.reshape(*spatial, -1).sum(axis=-1)
            maps[m] = v.astype(np.float32)
        return Explained(c, probs.astype(np.float32), maps, delta)

    @property
    def spatial_shape(self) -> tuple[int, ...]:
        """The positions a map covers: (H, W) of an image, (L,) of a row."""
        if self.tokens or len(self.x_shape) == 1:
            return self.x_shape[:1]
        return self.x_shape[:2]

    def as_input(self, sample: np.ndarray) -> np.ndarray:
        """A dataset sample reshaped and cast as the model takes it."""
        return np.asarray(sample).reshape(self.x_shape).astype(self.in_dtype)


def randomized(model: Any, seed: int = 0) -> Any:
    """A copy of ``model`` with every weight drawn anew (normal, each weight tensor's own
    std, or 0.05 for constant ones): the model-randomisation test of Adebayo et al. (2018)."""
    import keras

    clone = keras.models.clone_model(model)
    rng = np.random.default_rng(seed)
    weights = []
    for w in model.get_weights():
        std = float(np.std(w)) or 0.05
        weights.append(rng.normal(0.0, std, w.shape).astype(w.dtype))
    clone.set_weights(weights)
    return clone
