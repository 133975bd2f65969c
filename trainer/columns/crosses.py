"""Hashed crosses of a table's indices: --crosses in the linear part, and a text column's pairs of
neighbouring words."""

from __future__ import annotations

import tensorflow as tf

CROSS_BUCKETS = 10_000  # hash buckets of each feature cross
CROSS_PRIMES = (1_000_003, 2_000_029, 3_000_017, 4_000_037, 5_000_011, 6_000_047, 7_000_003, 8_000_009)


def cross_bucket(parts: list[tf.Tensor], buckets: int = CROSS_BUCKETS) -> tf.Tensor:
    """A cross of integer indices (each below 2**24) to one of `buckets`: a sum of each times its own
    prime, modulo the buckets (int64 arithmetic: no overflow for up to 8 columns)."""
    mixed = tf.add_n([tf.cast(part, tf.int64) * prime for part, prime in zip(parts, CROSS_PRIMES)])
    return tf.math.floormod(mixed, buckets)
