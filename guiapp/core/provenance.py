"""Provenance: the package versions every dataset and run records (the one place they are read)."""

from __future__ import annotations

import platform


def versions(*, tensorflow: bool = False) -> dict[str, str]:
    """guiapp, numpy, h5py, HDF5 and Python versions; with ``tensorflow``, TensorFlow and Keras.

    ``tensorflow=True`` imports TensorFlow: only training jobs ask for it.
    """
    import h5py
    import numpy as np

    from .. import __version__

    found = {
        "guiapp": __version__,
        "numpy": np.__version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
        "python": platform.python_version(),
    }
    if tensorflow:
        import keras
        import tensorflow as tf

        found["tensorflow"] = tf.__version__
        found["keras"] = keras.__version__
    return found
