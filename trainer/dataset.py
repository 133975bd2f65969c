"""Finds a dataset's shards and metadata, for --data-dir or for --train-files/--eval-files globs.

Reads through TensorFlow's file layer, so the same code serves local paths and gs://.
"""

from __future__ import annotations

import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import tensorflow as tf

from preprocessing.errors import UserError
from preprocessing.schema import METADATA_FILE, Metadata
from trainer.config import Config

STAT_THREADS = 16


@dataclass(frozen=True)
class DataFiles:
    metadata: Metadata
    train: list[str]
    eval: list[str]


def read_metadata(path: str) -> Metadata:
    if not tf.io.gfile.exists(path):
        raise UserError(
            f"{path} does not exist: the folder is not a finished dataset "
            "(preprocessing writes metadata.json last; rerun it if it was interrupted)"
        )
    with tf.io.gfile.GFile(path) as file:
        return Metadata.from_json(file.read(), path)


def expand(patterns: str, flag: str) -> list[str]:
    """Every file matching the comma-separated globs, sorted; UserError if one matches nothing.

    An empty filename queue would block the trainer forever, so this must never return [].
    """
    files = []
    for pattern in filter(None, (p.strip() for p in patterns.split(","))):
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise UserError(f"{flag} {pattern}: no file matches")
        files.extend(matches)
    if not files:
        raise UserError(f"{flag} {patterns!r}: no file pattern given")
    return sorted(set(files))


def _size(path: str) -> int | None:
    try:
        return tf.io.gfile.stat(path).length
    except tf.errors.NotFoundError:
        return None


def _listed_shards(data_dir: str, metadata: Metadata, split: str, where: str) -> list[str]:
    """The split's shard paths, each checked to exist with the size the metadata records."""
    if split not in metadata.splits or not metadata.splits[split].shards:
        raise UserError(f"{where}: has no {split} shards")
    shards = metadata.splits[split].shards
    files = [posixpath.join(data_dir, shard.file) for shard in shards]
    with ThreadPoolExecutor(STAT_THREADS) as pool:  # one round trip each on gs://: overlap them
        sizes = list(pool.map(_size, files))
    for path, shard, size in zip(files, shards, sizes):
        if size is None:
            raise UserError(f"{where}: lists {path}, which does not exist")
        if size != shard.bytes:
            raise UserError(
                f"{path}: {size} bytes, but {where} records {shard.bytes}: the shard was truncated or "
                "replaced; rerun preprocessing"
            )
    return files


def locate(config: Config) -> DataFiles:
    """The metadata and the training and evaluation files the config points at."""
    if config.data_dir:
        where = posixpath.join(config.data_dir, METADATA_FILE)
        metadata = read_metadata(where)
        return DataFiles(
            metadata,
            _listed_shards(config.data_dir, metadata, "train", where),
            _listed_shards(config.data_dir, metadata, "eval", where),
        )
    train = expand(config.train_files, "--train-files")
    evaluation = expand(config.eval_files, "--eval-files")
    metadata_path = config.metadata or posixpath.join(posixpath.dirname(train[0]), METADATA_FILE)
    return DataFiles(read_metadata(metadata_path), train, evaluation)
