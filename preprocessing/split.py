"""Deterministic, stratified train/eval split and shard assignment.

Each example is placed by a hash of its stable key and the seed, never by its position in
the input, so the result does not depend on the order in which examples are read: the same
keys, labels and seed always give the same split and the same shards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def key_hash(key: str, seed: int, salt: str) -> int:
    """A stable 64-bit hash of an example key (Python's own hash() changes between runs)."""
    digest = hashlib.blake2b(f"{salt}:{seed}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _rank(keys: Sequence[str], indices: np.ndarray, seed: int, salt: str) -> np.ndarray:
    """`indices` ordered by the hash of their keys."""
    hashes = [key_hash(keys[i], seed, salt) for i in indices]
    return indices[np.argsort(np.array(hashes, dtype=np.uint64), kind="stable")]


def split_class(
    keys: Sequence[str], indices: np.ndarray, eval_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(train, eval) of one class's example indices: the round(n * eval_fraction) whose keys
    hash lowest go to eval. The Beam pipeline calls this per class too."""
    ranked = _rank(keys, indices, seed, "split")
    n_eval = int(round(len(ranked) * eval_fraction))
    return ranked[n_eval:], ranked[:n_eval]


def in_shuffled_order(keys: Sequence[str], indices: np.ndarray, seed: int) -> np.ndarray:
    """A seeded shuffle of `indices` that does not depend on their input order."""
    return _rank(keys, indices, seed, "order")


def split_indices(
    keys: Sequence[str], labels: np.ndarray, eval_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(train, eval) example indices, stratified by class, each in shuffled order."""
    parts = [split_class(keys, np.flatnonzero(labels == label), eval_fraction, seed) for label in np.unique(labels)]
    train = np.concatenate([train for train, _ in parts])
    evaluation = np.concatenate([evaluation for _, evaluation in parts])
    return in_shuffled_order(keys, train, seed), in_shuffled_order(keys, evaluation, seed)


def shard_name(split: str, index: int, count: int, suffix: str = ".tfrecord") -> str:
    return f"{split}-{index:05d}-of-{count:05d}{suffix}"
