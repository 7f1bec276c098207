"""The careful user's training scripts that ``guiapp bench baselines`` times against guiapp.

Run as a plain script (``python baselines_scripts.py '<json>'``), never imported by
guiapp: what it imports is what such a script imports (numpy, TensorFlow, Keras, sqlite3),
so its process time is a script's. Each path trains the model of the spec (Keras layers
by their own names and arguments, the spec's loss, Adam and metrics, Keras's defaults
otherwise, ``jit_compile`` included) for the given epochs on ``steps x batch`` rows:

- ``npy``: a ``keras.utils.PyDataset`` over the pre-shuffled ``x.npy``/``y.npy`` (memory
  mapped), one contiguous slice per batch, batches in a new order every epoch;
- ``tfrecord``: TFRecord files of ``record_rows`` rows a record, the files shuffled and
  read by ``interleave``, records shuffled, ``batch``, parsed, ``prefetch(AUTOTUNE)``;
- ``numpy``: the arrays loaded into memory and ``model.fit(x, y, shuffle=True)``;
- ``sqlite``: the seed's pattern (documents looked up by id, per batch): a ``PyDataset``
  whose ``__getitem__`` selects its batch's ids from a table of blobs.

Prints one JSON line: wall-clock times (``time.time()``, comparable with the parent's) of
the imports done, the data and model ready, each epoch's begin and end, the first step's
end, and the end of training.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import numpy as np


def _model(spec: dict[str, Any], jit: Any, keras: Any) -> Any:
    layers = [keras.Input(shape=tuple(spec["input"]["shape"]), dtype="float32")]
    for layer in spec["layers"]:
        kw = {k: v for k, v in layer.items() if k != "type"}
        layers.append(getattr(keras.layers, layer["type"])(**kw))
    model = keras.Sequential(layers)
    opt = spec["optimizer"]
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=opt["learning_rate"]),
        loss=spec["loss"],
        metrics=list(spec["metrics"]),
        jit_compile=jit,
    )
    return model


def _source(a: dict[str, Any], keras: Any) -> tuple[Any, dict[str, Any]]:
    """(what ``fit`` is given, fit's other arguments) for path ``a["path"]``."""
    batch, steps = a["batch"], a["steps"]
    shape = tuple(a["spec"]["input"]["shape"])
    files = a["files"]
    settings = a.get("settings") or {}

    if a["path"] == "numpy":
        n = steps * batch
        x = np.load(files["x"])[:n].astype(np.float32).reshape((n, *shape))
        y = np.load(files["y"])[:n]
        return x, {"y": y, "batch_size": batch, "shuffle": True}

    if a["path"] == "npy":

        class NpySlices(keras.utils.PyDataset):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__(**settings)
                self.x = np.load(files["x"], mmap_mode="r")
                self.y = np.load(files["y"], mmap_mode="r")
                self.order = np.arange(steps)
                self.rng = np.random.default_rng(0)
                self.rng.shuffle(self.order)

            def __len__(self) -> int:
                return int(steps)

            def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
                a0 = int(self.order[i]) * batch
                x = np.asarray(self.x[a0 : a0 + batch], np.float32).reshape((batch, *shape))
                return x, np.asarray(self.y[a0 : a0 + batch])

            def on_epoch_end(self) -> None:
                self.rng.shuffle(self.order)

        return NpySlices(), {}

    if a["path"] == "sqlite":
        import sqlite3

        dtype = np.dtype(a["dtype"])

        class SqliteLookup(keras.utils.PyDataset):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__(**settings)
                self.local = threading.local()
                self.ids = np.arange(steps * batch)
                self.rng = np.random.default_rng(0)
                self.rng.shuffle(self.ids)

            def __len__(self) -> int:
                return int(steps)

            def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
                con = getattr(self.local, "con", None)
                if con is None:
                    con = self.local.con = sqlite3.connect(files["sqlite"])
                ids = json.dumps(self.ids[i * batch : (i + 1) * batch].tolist())
                rows = con.execute(
                    "SELECT x, y FROM rows WHERE id IN (SELECT value FROM json_each(?))", (ids,)
                ).fetchall()
                x = np.frombuffer(b"".join(r[0] for r in rows), dtype)
                y = np.array([r[1] for r in rows], np.int32)
                return x.astype(np.float32).reshape((len(rows), *shape)), y

            def on_epoch_end(self) -> None:
                self.rng.shuffle(self.ids)

        return SqliteLookup(), {}

    if a["path"] == "tfrecord":
        import tensorflow as tf

        per = batch // a["record_rows"]
        row = int(np.prod(a["sample_shape"]))
        dt = tf.as_dtype(a["dtype"])
        desc = {
            "x": tf.io.FixedLenFeature([], tf.string),
            "y": tf.io.FixedLenFeature([], tf.string),
        }

        def parse(records: Any) -> Any:
            e = tf.io.parse_example(records, desc)
            x = tf.cast(tf.reshape(tf.io.decode_raw(e["x"], dt), [-1, row]), tf.float32)
            return tf.reshape(x, (-1, *shape)), tf.reshape(tf.io.decode_raw(e["y"], tf.int32), [-1])

        d = tf.data.Dataset.from_tensor_slices(files["tfrecords"]).shuffle(len(files["tfrecords"]))
        d = d.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(4, len(files["tfrecords"])),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=False,
        )
        d = d.shuffle(64).batch(per, drop_remainder=True).take(steps)
        return d.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE), {}

    raise SystemExit(f"unknown path {a['path']!r}")


def main(a: dict[str, Any]) -> dict[str, Any]:
    import keras

    out: dict[str, Any] = {"t_imported": time.time(), "epochs": [], "t_first_step": None}

    class Clock(keras.callbacks.Callback):  # type: ignore[misc]
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            out["epochs"].append([time.time(), None])

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            out["epochs"][-1][1] = time.time()
            out["loss"] = float((logs or {}).get("loss", float("nan")))

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if out["t_first_step"] is None:
                out["t_first_step"] = time.time()

    keras.utils.set_random_seed(0)
    source, kw = _source(a, keras)
    model = _model(a["spec"], a.get("jit", "auto"), keras)
    out["t_ready"] = time.time()
    model.fit(source, epochs=a["epochs"], verbose=0, callbacks=[Clock()], **kw)
    out["t_done"] = time.time()
    out["rows_per_epoch"] = a["steps"] * a["batch"]
    return out


if __name__ == "__main__":
    sys.stdout.write("\n" + json.dumps(main(json.loads(sys.argv[1]))) + "\n")
