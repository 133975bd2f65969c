"""Deterministic, stratified train/eval split and shard assignment.

Each example is placed by a hash of its stable key and the seed, never by its position in
the input, so the result does not depend on the order in which examples are read: the same
keys, labels and seed always give the same split and the same shards.
"""

from __future__ import annotations

import hashlib
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
