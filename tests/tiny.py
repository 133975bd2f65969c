"""Tiny dataset descriptions for tests that build the model on made-up inputs."""

from dataformat.schema import Metadata, ShardInfo, SplitInfo

_SPLITS = {"train": SplitInfo(1, 10, (ShardInfo("t", 1, 10),))}
IMAGES = Metadata(
    shape=(8, 8, 1), dtype="uint8", class_names=tuple("abcde"), splits=_SPLITS, mean=(100.0,), std=(50.0,)
)
VECTORS = Metadata(
    shape=(6,), dtype="float32", class_names=("no", "yes"), splits=_SPLITS, mean=(0.0,) * 6, std=(1.0,) * 6
)
