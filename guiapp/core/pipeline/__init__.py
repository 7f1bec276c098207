"""The prefetching reader: shuffled batches from a dataset, as numpy or tf.data."""

from ..augment.online import AugmentSpec
from .batches import BatchPipeline, WaitMeter
from .read_plan import EpochPlan, ReadPlan, SplitSpec

__all__ = ["AugmentSpec", "BatchPipeline", "EpochPlan", "ReadPlan", "SplitSpec", "WaitMeter"]
