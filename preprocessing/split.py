"""Deterministic, stratified train/eval split and shard assignment.

Each example is placed by a hash of its stable key and the seed, never by its position in
the input, so the result does not depend on the order in which examples are read: the same
keys, labels and seed always give the same split and the same shards. Two schemes share that rule:
- sources of examples (digits, arrays, images): a hash of each example's key (example_hashes), each
  class split as a whole (split_class);
- tables, which stream: a hash of each row's file and line (file_key, row_hashes), each block's rows
  of a class split as they come (stratified_train), the fraction's remainder drawn at random.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence

import numpy as np

SPLIT, ORDER = 0, 1  # the columns of example_hashes
FREE, TRAIN, EVAL = -1, 0, 1  # an example's fixed split (an image list's ML_USE), or none: placed by its hash


def example_hashes(keys: Sequence[str], seed: int) -> np.ndarray:
    """Two independent stable 64-bit hashes of each example key and the seed, shape [n, 2]:
    column SPLIT places an example in train or eval, column ORDER in the shuffled order.

    One 16-byte blake2b digest a key (Python's own hash() changes between runs) serves both.
    """
    digests = b"".join(hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=16).digest() for key in keys)
    return np.frombuffer(digests, "<u8").reshape(-1, 2)


def split_class(
    hashes: np.ndarray, indices: np.ndarray, eval_fraction: float, fixed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(train, eval) of one class's example indices: those with a `fixed` split (TRAIN or EVAL) keep it; of
    the others, the round(n * eval_fraction) that hash lowest go to eval. The Beam pipeline calls this per
    class too."""
    if fixed is not None:
        placed = fixed[indices]
        train, evaluation = split_class(hashes, indices[placed == FREE], eval_fraction)
        return np.concatenate([train, indices[placed == TRAIN]]), np.concatenate([evaluation, indices[placed == EVAL]])
    ranked = indices[np.argsort(hashes[indices, SPLIT], kind="stable")]
    n_eval = int(round(len(ranked) * eval_fraction))
    return ranked[n_eval:], ranked[:n_eval]


def in_shuffled_order(hashes: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """A seeded shuffle of `indices` that does not depend on their input order."""
    return indices[np.argsort(hashes[indices, ORDER], kind="stable")]


def split_indices(
    keys: Sequence[str], labels: np.ndarray, eval_fraction: float, seed: int, fixed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(train, eval) example indices, stratified by class, each in shuffled order; `fixed` as in split_class."""
    hashes = example_hashes(keys, seed)
    parts = [split_class(hashes, np.flatnonzero(labels == label), eval_fraction, fixed) for label in np.unique(labels)]
    train = np.concatenate([train for train, _ in parts])
    evaluation = np.concatenate([evaluation for _, evaluation in parts])
    return in_shuffled_order(hashes, train), in_shuffled_order(hashes, evaluation)


def shard_name(split: str, index: int, count: int, suffix: str = ".tfrecord") -> str:
    return f"{split}-{index:05d}-of-{count:05d}{suffix}"


# A table's rows, placed by hashes of their file and line, a block at a time (vectorized).


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a stable, well-spread 64-bit hash of each uint64."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def file_key(path: str, root: str, seed: int) -> np.uint64:
    """A stable number for a file: its path below --input's folder and the seed, hashed."""
    relative = posixpath.relpath(path, root) if root else posixpath.basename(path)
    digest = hashlib.blake2b(f"{seed}:{relative}".encode(), digest_size=8).digest()
    return np.frombuffer(digest, "<u8")[0]


def row_hashes(key: np.uint64, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(split hash, order hash) of each line of a file."""
    with np.errstate(over="ignore"):
        split = _mix(lines.astype(np.uint64) + key)
    return split, _mix(split)


def stratified_train(
    split_hash: np.ndarray, order: np.ndarray, classes: np.ndarray, eval_fraction: float
) -> np.ndarray:
    """Which rows of a block are training rows, given each row's class as an index from 0. Of each class's n rows
    in the block, those with the lowest split hashes go to evaluation: n x eval_fraction of them, its fraction
    rounded up or down by a draw from the class's order hashes, so that a class seen once a block still reaches
    evaluation at the fraction's rate. Per block, so no stream needs counting ahead."""
    ranked = np.lexsort((split_hash, classes))  # by class, then by split hash
    counts = np.bincount(classes)
    firsts = np.cumsum(counts) - counts  # where each class starts in `ranked`
    draw = order[ranked[firsts]] / 2.0**64  # uniform in [0, 1), one a class
    evaluated = np.floor(counts * eval_fraction + draw).astype(np.int64)
    rank = np.arange(len(ranked)) - firsts[classes[ranked]]
    train = np.ones(len(classes), bool)
    train[ranked[rank < evaluated[classes[ranked]]]] = False
    return train
