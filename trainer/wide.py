"""The wide part of wide_deep: a linear model over a table's numbers, its categorical indices, its numeric
columns' quantile buckets and the hashed crosses of --crosses, as the census samples' wide columns."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from dataformat import tables
from trainer.columns.crosses import CROSS_BUCKETS, cross_bucket

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.columns.numeric import QuantileBuckets
    from trainer.model import ModelSettings

layers = tf.keras.layers
WEIGHT_TABLE = "wide_categories"
LINEAR_SCOPE = "linear"
LINEAR_PREFIX = f"classifier/{LINEAR_SCOPE}/"  # the names of the linear part's weights
# Jobs trained before 2026-12-07 kept a weight table a categorical column, up to 64 columns; such a job resumes with
# them (ModelSettings.column_weight_tables).
COLUMN_WEIGHT_TABLE = re.compile(re.escape(LINEAR_PREFIX) + r"wide_\d+/embeddings")
# The linear part starts at zero, as tf.estimator's linear models do: a random start gives every row logits
# of its numbers' weights (up to 1 each), which Adam, moving a weight some 1e-3 a step, takes hundreds of steps
# to undo (a table's AUC stayed below 0.5 for 300 steps; docs/tables.md).
ZEROS = "zeros"


class LinearPart(layers.Layer):
    """The wide part of wide_deep: logits linear in the standardized numbers, in every categorical (and
    date) column's index, in each numeric column's quantile bucket (its boundaries from metadata.json;
    missing values a bucket of their own; see bucketed_columns in trainer/columns/numeric.py), and in each
    hashed cross of --crosses.
    Each categorical column's weights are an embedding as wide as the classes: its one-hot times a matrix,
    without making the one-hot. Every column's are rows of one table, each column's from its own offset, as DLRM's
    concatenated embedding tables: one lookup and one sparse update a step. A table a column took 500 of each on a
    table of 500 columns (60 ms of its 132 ms step), and COMPAS (34 category inputs) trained at 46-49 steps/s with
    them, 72-77 with one table. The buckets of the numeric columns are one searchsorted and one matrix product
    (BucketWeights), however many columns there are, up to BUCKETED_MAX."""

    def __init__(
        self, settings: ModelSettings, metadata: Metadata, categorical: list, buckets: QuantileBuckets, penalty
    ):
        super().__init__(name=LINEAR_SCOPE)
        classes, columns, starts = metadata.num_classes, metadata.columns, tables.offsets(metadata.columns)
        self.categorical = categorical
        self.numbers = layers.Dense(classes, kernel_initializer=ZEROS, name="wide_logits")
        sizes = [size for _, size in categorical]
        self.one_table = bool(categorical) and not settings.column_weight_tables
        if self.one_table:
            self.table = linear_weights(sum(sizes), classes, penalty, WEIGHT_TABLE)
            self.table_offsets = tf.constant(np.cumsum([0, *sizes[:-1]]), tf.int32)
        else:  # a job trained before 2026-12-07, resumed
            self.weights_of = {i: linear_weights(size, classes, penalty, f"wide_{i}") for i, size in categorical}
        self.bucketized = buckets.places
        self.bucket_weights = BucketWeights(max(len(buckets.places), 1), buckets.count, classes, penalty)
        where = {column.name: (column, start) for column, start in zip(columns, starts)}
        self.crosses = [
            (self._members(cross, where), linear_weights(CROSS_BUCKETS, classes, penalty, f"cross_{k}"))
            for k, cross in enumerate(settings.crosses)
        ]

    def _members(self, cross: tuple[str, ...], where: dict) -> list[tuple[str, int]]:
        """Each crossed column as ("bucket", its place among the bucketized numbers) or ("index", its place
        among the categorical indices)."""
        members = []
        for name in cross:
            column, start = where[name]
            if column.kind == tables.NUMERIC:
                members.append(("bucket", self.bucketized.index(start)))
            else:
                slots = [i for i, _ in self.categorical]
                members.append(("index", slots.index(start + column.category_slot)))
        return members

    def call(self, indices: tf.Tensor, numbers: tf.Tensor | None, buckets: tf.Tensor | None) -> tf.Tensor:
        """The logits of the categorical indices, the standardized numbers and the numeric columns' quantile
        buckets (QuantileBuckets); None where the table has no such numbers (Keras takes the first argument
        for the layer's input, never None)."""
        # No numbers, no dense layer: oneDNN aborts the process on a matrix product of width 0.
        logits = self.numbers(numbers) if numbers is not None else 0.0
        if self.one_table:
            logits += tf.reduce_sum(self.table(indices + self.table_offsets), axis=1)
        else:
            for j, (i, _) in enumerate(self.categorical):
                logits += self.weights_of[i](indices[:, j])
        if self.bucketized:
            logits += self.bucket_weights(buckets)
        for members, weights in self.crosses:
            parts = [buckets[:, j] if kind == "bucket" else indices[:, j] for kind, j in members]
            logits += weights(cross_bucket(parts))
        return logits


def column_weight_tables(variables) -> bool:
    """Whether a checkpoint's variable names hold a linear weight table a categorical column (COLUMN_WEIGHT_TABLE)."""
    return any(COLUMN_WEIGHT_TABLE.fullmatch(name) for name in variables)


def linear_weights(rows: int, classes: int, penalty, name: str) -> layers.Embedding:
    """Linear weights of `rows` indices, a row as wide as the classes: an embedding that starts at zero."""
    return layers.Embedding(rows, classes, embeddings_initializer=ZEROS, embeddings_regularizer=penalty, name=name)


class BucketWeights(layers.Embedding):
    """The bucketed numeric columns' weights for their buckets, one table of [columns x buckets, classes]
    rows. A row's logits are the sum of its columns' bucket rows, made as its buckets' one-hot times the
    table: one matrix product, with a dense gradient. Measured at 1,024 columns and a batch of 128, before
    BUCKETED_MAX: a lookup a column gave Adam 131,072 sparse rows a step to sum by index for a table of
    12,288 rows (2.8 ms), where the product and its dense update take 0.7 ms."""

    def __init__(self, columns: int, buckets: int, classes: int, penalty):
        super().__init__(
            columns * buckets,
            classes,
            embeddings_initializer=ZEROS,
            embeddings_regularizer=penalty,
            name="wide_buckets",
        )
        self.columns, self.buckets = columns, buckets

    def call(self, buckets: tf.Tensor) -> tf.Tensor:
        """[n, columns] bucket indices to [n, classes] logits."""
        one_hot = tf.reshape(tf.one_hot(buckets, self.buckets), [-1, self.columns * self.buckets])
        return tf.matmul(one_hot, self.embeddings)
