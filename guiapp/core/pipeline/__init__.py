"""The prefetching reader: shuffled batches from a dataset, as numpy or tf.data."""

from .augment import AugmentSpec
from .batches import BatchPipeline, WaitMeter
from .plan import EpochPlan, ReadPlan, SplitSpec

__all__ = ["AugmentSpec", "BatchPipeline", "EpochPlan", "ReadPlan", "SplitSpec", "WaitMeter"]
