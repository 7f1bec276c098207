"""The HDF5 dataset store: sharded, contiguous, crash-safe (format in docs/FORMAT.md)."""

from .dataset import Dataset
from .format import FORMAT_VERSION, default_capacity, parse_shape, shard_dir
from .shard import ShardWriter
from .shard_file import content_hash
from .shard_meta import ShardMeta
from .writer import DatasetWriter, remove_dataset

__all__ = [
    "FORMAT_VERSION",
    "Dataset",
    "DatasetWriter",
    "ShardMeta",
    "ShardWriter",
    "content_hash",
    "default_capacity",
    "parse_shape",
    "remove_dataset",
    "shard_dir",
]
