"""``guiapp --self-test``: check that this installation (source or frozen) works end to end.

One line per check with its time; exit 0 only if every check passes. Checks: Qt offscreen
(a widget and a pyqtgraph plot, grabbed to a pixmap), the CLI's commands, a multiprocessing
'spawn' worker (what generation jobs use; needs ``freeze_support`` in a frozen build), an
HDF5 round trip through the dataset store, TensorFlow import, building a tiny Keras model,
training one step, and saving it to ``.keras`` and loading it back with ``safe_mode=True``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

USAGE = "usage: guiapp --self-test [--verbose]  (checks Qt, HDF5, TensorFlow and Keras; exit 0 if all pass)"


def _spawn_target(q: Any) -> None:
    q.put(os.getpid())


def check_qt(tmp: Path) -> str:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before the first QApplication
    from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

    app = QApplication.instance() or QApplication(["guiapp-self-test"])
    import pyqtgraph as pg

    w = QWidget()
    layout = QVBoxLayout(w)
    layout.addWidget(QLabel("guiapp self-test"))
    plot = pg.PlotWidget()
    plot.plot([0, 1, 2, 3], [3, 1, 2, 0])
    layout.addWidget(plot)
    w.resize(320, 240)
    app.processEvents()
    pix = w.grab()  # renders the widget tree without showing a window
    if pix.isNull() or pix.width() < 1:
        raise RuntimeError("QWidget.grab() returned an empty pixmap")
    return f"platform {QApplication.platformName()}, grabbed {pix.width()}x{pix.height()}"


def check_cli(tmp: Path) -> str:
    from . import build_parser, parsed_names

    names = parsed_names(build_parser())  # every command module imported and registered
    missing = {"generate", "train", "info", "check"} - names
    if missing:
        raise RuntimeError(f"commands missing: {sorted(missing)}")
    return "commands: " + " ".join(sorted(names))


def check_spawn(tmp: Path) -> str:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_spawn_target, args=(q,))
    p.start()
    pid = q.get(timeout=60)
    p.join(60)
    if p.exitcode != 0:
        raise RuntimeError(f"spawn worker exited with {p.exitcode}")
    return f"worker pid {pid} exit 0"


def check_hdf5(tmp: Path) -> str:
    import numpy as np

    from ..core.store import Dataset, DatasetWriter

    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 5, 5)).astype(np.float32)
    y = rng.integers(0, 2, 100)
    path = tmp / "roundtrip.h5"
    with DatasetWriter(path, sample_shape=(5, 5), dtype="float32", class_names=["a", "b"]) as w:
        w.append(x, y)
    with Dataset(path) as ds:
        x2, y2 = ds.read_range(0, len(ds))
        if len(ds) != 100 or not np.array_equal(x2, x) or not np.array_equal(y2, y):
            raise RuntimeError("rows read back differ from the rows written")
    import h5py

    return f"100 rows written and read back (h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version})"


def check_tf(tmp: Path) -> str:
    from ..core.logs import divert_native_stderr

    divert_native_stderr()  # TensorFlow's start-up notices go to the log, not the terminal
    import tensorflow as tf

    devices = [d.device_type for d in tf.config.list_physical_devices()]
    return f"tensorflow {tf.__version__}, devices {devices}"


_model: dict[str, Any] = {}


def check_build(tmp: Path) -> str:
    import keras

    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    _model["m"] = model
    return f"keras {keras.__version__}, {model.count_params()} parameters"


def check_train(tmp: Path) -> str:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    _model["x"] = x
    logs = _model["m"].train_on_batch(x, y, return_dict=True)
    loss = float(logs["loss"])
    if not np.isfinite(loss):
        raise RuntimeError(f"loss is {loss}")
    return f"one step, loss {loss:.4f}"


def check_save_load(tmp: Path) -> str:
    import keras
    import numpy as np

    path = tmp / "tiny.keras"
    model, x = _model["m"], _model["x"]
    model.save(path)
    again = keras.saving.load_model(path, safe_mode=True)
    a, b = model.predict(x, verbose=0), again.predict(x, verbose=0)
    if not np.allclose(a, b, atol=1e-6):
        raise RuntimeError("reloaded model predicts differently")
    return (
        f"{path.name} {path.stat().st_size} bytes, reloaded with safe_mode=True, same predictions"
    )


CHECKS: list[tuple[str, Callable[[Path], str]]] = [
    ("qt-offscreen", check_qt),
    ("cli-commands", check_cli),
    ("spawn-worker", check_spawn),
    ("hdf5-roundtrip", check_hdf5),
    ("tensorflow-import", check_tf),
    ("keras-build", check_build),
    ("keras-train-step", check_train),
    ("keras-save-load", check_save_load),
]


def run_self_test(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    unknown = [a for a in argv if a != "--verbose"]
    if unknown:
        sys.stderr.write(f"guiapp --self-test: unknown argument {unknown[0]!r}\n{USAGE}\n")
        return 2
    verbose = "--verbose" in argv
    frozen = "frozen" if getattr(sys, "frozen", False) else "source"
    print(
        f"self-test: {frozen} build, python {sys.version.split()[0]}, {sys.executable}", flush=True
    )
    passed, t_all = 0, time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="guiapp-selftest-") as tmp:
        for name, fn in CHECKS:
            t0 = time.perf_counter()
            try:
                detail, ok = fn(Path(tmp)), True
            except Exception as exc:  # every failure is reported, none stops the run
                detail, ok = f"{type(exc).__name__}: {exc}", False
                if verbose:
                    traceback.print_exc()
            passed += ok
            status = "ok  " if ok else "FAIL"
            print(f"  {status} {name:<18} {time.perf_counter() - t0:7.2f} s  {detail}", flush=True)
    total = len(CHECKS)
    print(f"self-test: {passed}/{total} passed in {time.perf_counter() - t_all:.1f} s", flush=True)
    return 0 if passed == total else 1


def register(sub: Any) -> None:
    """``guiapp self-test [--verbose]`` (``guiapp --self-test`` is the same)."""
    s = sub.add_parser(
        "self-test",
        help="check this installation: Qt, HDF5, worker processes, TensorFlow, a training step",
    )
    s.add_argument("--verbose", action="store_true", help="print each check's details")
    s.set_defaults(func=lambda a: run_self_test(["--verbose"] if a.verbose else []))
