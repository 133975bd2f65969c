"""A table's numeric columns (and a date column's numbers) as a network's inputs: their places in the row's
vector, their labels for warm start, and the quantile buckets and ranks of metadata.json's boundaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from dataformat import tables

if TYPE_CHECKING:
    from dataformat.schema import Metadata

BUCKETED_MAX = 64  # the linear part buckets a table's numeric columns when it has at most this many


def numeric_inputs(metadata: Metadata) -> list[tuple[int, str]]:
    """(its place in the vector, a label) of each number of the numeric and date columns."""
    return [
        (start + j, f"<{column.name} {j}>")
        for column, start in zip(metadata.columns, tables.offsets(metadata.columns))
        for j in range(column.width)
        if column.kind in (tables.NUMERIC, tables.DATE) and j not in (column.category_slot, column.day_slot)
    ]


def missing_inputs(metadata: Metadata) -> list[tuple[int, str]]:
    """(its first number's place in the vector, a label) of each numeric or date column with missing values."""
    return [
        (start, f"<{column.name} missing>")
        for column, start in zip(metadata.columns, tables.offsets(metadata.columns))
        if column.missing and column.kind in (tables.NUMERIC, tables.DATE)
    ]


def bucketed_columns(metadata: Metadata) -> list[tuple[int, tables.Column]]:
    """(its place in the vector, the column) of each numeric column the linear part buckets: all of them, up
    to BUCKETED_MAX. A wider table's buckets would cost more than the rest of its step (1,024 columns: 1.6
    ms of bucketing, where the whole step of the deep part takes 1.2 ms), and its deep part already sees
    every number."""
    columns = metadata.columns
    numeric = [(start, c) for c, start in zip(columns, tables.offsets(columns)) if c.kind == tables.NUMERIC]
    return numeric if len(numeric) <= BUCKETED_MAX else []


class QuantileBuckets:
    """Each bucketed numeric column's (see bucketed_columns) quantile bucket: how many of its boundaries in
    metadata.json its value is at or above, a missing value the last bucket. One searchsorted for every
    column, made once a step for the linear part's bucket weights and the dense layers' QuantileRanks."""

    def __init__(self, columns: list[tuple[int, tables.Column]]):
        self.places = [start for start, _ in columns]  # in the row's vector
        self.count = bucket_count([column for _, column in columns])
        most = self.count - 2  # the boundaries of the column that has the most
        padded = [list(column.boundaries) + [np.inf] * (most - len(column.boundaries)) for _, column in columns]
        self.boundaries = tf.constant(padded or np.zeros((0, most)), tf.float32)

    def __call__(self, rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The rows' [n, columns] values (missing ones NaN) and their [n, columns] buckets."""
        values = tf.gather(rows, self.places, axis=1)
        found = tf.transpose(tf.searchsorted(self.boundaries, tf.transpose(values), side="right", out_type=tf.int32))
        return values, tf.where(tf.math.is_nan(values), self.count - 1, found)


class QuantileRanks:
    """Each bucketed numeric column's value as its place among the column's distinct deciles in metadata.json
    (a missing one at its training mean's): 0 up to the first, 1 from the last, and linear between each two,
    each gap an equal share (a coarse scikit-learn QuantileTransformer). A standardized count with a long tail
    puts most rows within a fraction of one unit and a few far out, where the dense layers cannot tell the many
    apart; its ranks spread them out. A value's rank is its bucket's (QuantileBuckets) rank at the bucket's
    lower boundary plus its distance from that boundary times the bucket's slope: one lookup in a table of
    every column's buckets, and three ops on [n, columns]. Summing clipped shares of every gap instead made
    [n, columns, gaps] in ten ops, a fifth of a 64-column table's step on two cores."""

    def __init__(self, columns: list[tuple[int, tables.Column]], count: int):
        table = np.zeros((len(columns), count, 3), np.float32)  # a bucket's lower boundary, slope and rank there
        for j, (_, column) in enumerate(columns):
            boundaries = np.asarray(column.boundaries, np.float64)
            gaps = len(boundaries) - 1
            if gaps < 1:  # no gap to rank in (one boundary, or none): every rank 0
                continue
            inside = slice(1, gaps + 1)  # bucket k + 1 lies between boundaries k and k + 1
            table[j, inside, 0] = boundaries[:-1]
            table[j, inside, 1] = 1.0 / (gaps * np.diff(boundaries))
            table[j, inside, 2] = np.arange(gaps) / gaps
            table[j, gaps + 1 :, 2] = 1.0  # at or above the last boundary
            at_mean = table[j, np.searchsorted(boundaries, column.mean, side="right")]  # the mean's bucket's row
            table[j, -1] = (0.0, 0.0, at_mean[2] + (column.mean - at_mean[0]) * at_mean[1])  # missing: the mean's rank
        self.table = tf.constant(table.reshape(-1, 3))
        self.offsets = tf.constant(np.arange(len(columns), dtype=np.int32) * count)  # each column's first row

    def __call__(self, values: tf.Tensor, buckets: tf.Tensor) -> tf.Tensor:
        """[n, columns] ranks of the values in their buckets."""
        lower, slope, rank = tf.unstack(tf.gather(self.table, buckets + self.offsets), axis=2)
        return rank + tf.math.multiply_no_nan(values - lower, slope)  # a missing value's slope 0 times NaN: 0


def bucket_count(columns: list[tables.Column]) -> int:
    """The quantile buckets of every bucketed column: 0 up to the most boundaries any has, then missing."""
    return max([len(column.boundaries) for column in columns], default=0) + 2


def rank_labels(metadata: Metadata) -> list[str]:
    """What each of QuantileRanks' inputs stands for, in its order."""
    return [f"<{column.name} rank>" for _, column in bucketed_columns(metadata)]
