"""Training runs: config, devices, the loop, checkpoints, evaluation (TensorFlow inside)."""

from .config import TrainConfig
from .runfolder import RunFolder

__all__ = ["RunFolder", "TrainConfig"]
