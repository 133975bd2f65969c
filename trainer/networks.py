"""The network bodies, one function each, chosen by `--model` from NETWORKS.

A network maps a batch of stored examples (uint8 pixels, float32 vectors, or a table's encoded
rows) to the head's logits, preparing its inputs itself with the dataset's statistics from
metadata.json. To add one, write a function with the signature of `image_cnn` and add a line
to NETWORKS; `--model auto` takes the first network in NETWORKS whose `takes` accepts the data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import tensorflow as tf

from dataformat import tables, text
from trainer import augment, backbones

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.model import ModelSettings

layers = tf.keras.layers
ONE_HOT_MAX = 12  # categorical columns with at most this many indices go in one-hot, larger ones through embeddings
WORD_WIDTH = 128  # a text column's word and bigram embeddings (64: 0.3 points less on rotten tomatoes' reviews)
CNN_FILTERS, CNN_WIDTH = 128, 5  # text_cnn's convolution: filters, and words each sees


def image_cnn(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    """Blocks of two 3x3 convolutions with batch norm and ReLU, then max pooling; then dense_mlp's layers.
    Larger inputs get more blocks (cnn_blocks), so that the dense layers see at most 8x8 positions.

    Inputs come channels_last; on a GPU the network transposes them to channels_first, what
    cuDNN is fastest with, and Flatten transposes back, so checkpoints move between CPU and GPU.
    """
    data_format = settings.data_format
    network = [*_augmented(settings, metadata), _standardized(metadata)]
    if data_format == "channels_first":
        network.append(layers.Permute((3, 1, 2)))
    channel_axis = 1 if data_format == "channels_first" else -1
    for filters in cnn_blocks(settings.conv_filters, augment.input_size(settings.augment, metadata)):
        for _ in range(2):
            network += [
                layers.Conv2D(filters, 3, padding="same", use_bias=False, data_format=data_format),
                layers.BatchNormalization(axis=channel_axis),
                layers.ReLU(),
            ]
        network.append(layers.MaxPool2D(2, padding="same", data_format=data_format))
    network.append(layers.Flatten(data_format=data_format))
    return _classifier(network + _dense_layers(settings), metadata)


MOST_POSITIONS, MOST_FILTERS = 8, 256


def cnn_blocks(filters: tuple[int, ...], size: tuple[int, int]) -> tuple[int, ...]:
    """--conv-filters, then blocks of twice the last filters (at most MOST_FILTERS) until the feature map is at
    most MOST_POSITIONS a side: a 28x28 digit keeps (32, 64) and ends at 7x7; a 224x224 photo gets (32, 64, 128,
    256, 256) and ends at 7x7, where two blocks would leave 56x56x64 = 200,704 inputs to the first dense layer
    (51 million weights at 256 units)."""
    blocks, side = list(filters), max(size)
    for _ in blocks:
        side = math.ceil(side / 2)
    while blocks and side > MOST_POSITIONS:
        blocks.append(min(blocks[-1] * 2, MOST_FILTERS))
        side = math.ceil(side / 2)
    return tuple(blocks)


def dense_mlp(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    """The flattened inputs through dense layers with batch norm, ReLU and dropout (`--hidden-units`);
    with none, softmax regression."""
    network = [*_augmented(settings, metadata), _standardized(metadata), layers.Flatten(), *_dense_layers(settings)]
    return _classifier(network, metadata)


def _augmented(settings: ModelSettings, metadata: Metadata) -> list[layers.Layer]:
    """The augmentation layer where --augment asks for one (trainer/augment.py), as a list to splice in."""
    found = augment.layer(settings, metadata)
    return [found] if found else []


def _standardized(metadata: Metadata) -> layers.Layer:
    """Stored values to float32 with zero mean and unit variance per channel (the last axis)."""
    mean, std = tf.constant(metadata.mean, tf.float32), tf.constant(metadata.std, tf.float32)
    return layers.Lambda(lambda data: (tf.cast(data, tf.float32) - mean) / std, name="standardized")


def _dense_layers(settings: ModelSettings) -> list[layers.Layer]:
    network = []
    for units in settings.hidden_units:
        network += [
            layers.Dense(units, use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.Dropout(settings.dropout, seed=settings.seed),
        ]
    return network


def _classifier(network: list[layers.Layer], metadata: Metadata) -> tf.keras.Sequential:
    """The layers, then the logits; one name for every network, so checkpoints name variables alike."""
    return tf.keras.Sequential([*network, layers.Dense(metadata.num_classes, name="logits")], name="classifier")


class TableNetwork(tf.keras.Model):
    """A table's encoded rows (dataformat.tables) to logits.

    Numeric columns and date columns' features, as one block however many there are: a missing
    value becomes the training mean, then every value is standardized (metadata.json's mean and std
    of each number of the vector), and each column that had missing values in training gains a 0/1
    "was missing" input; the dense layers also see each bucketed numeric column's quantile rank
    (QuantileRanks). Categorical columns: one-hot for small vocabularies, learned embeddings for
    larger ones (missing, out-of-vocabulary and hashed values have indices of their own). Then the
    dense layers of `--hidden-units`, whose logits' weights carry an L2 penalty on a small table
    (resolve_logits_l2). Text columns add logits of their own beside them (TextPart:
    fastText's bags of words, then one linear layer). With `wide`, a linear part over the
    standardized numbers and every categorical column adds its logits, as the census samples'
    wide-and-deep model does; a column's linear weights are an embedding as wide as the classes,
    which is its one-hot times a matrix without making the one-hot.
    """

    def __init__(self, settings: ModelSettings, metadata: Metadata, wide: bool):
        super().__init__(name="classifier")
        # The numbers of numeric and date columns, by their place in the vector, and their statistics.
        self.numeric = [i for i, _ in numeric_inputs(metadata)]
        self.means = tf.constant([metadata.mean[i] for i in self.numeric], tf.float32)
        self.stds = tf.constant([metadata.std[i] for i in self.numeric], tf.float32)
        # Within the block: each column with missing values in training, by its first number.
        self.with_missing = [self.numeric.index(start) for start, _ in missing_inputs(metadata)]
        # (where its index is, how many indices it has): categorical and date columns, and timestamps' days
        self.categorical = [(category.place, category.size) for category in categorical_inputs(metadata)]
        penalty = tf.keras.regularizers.l2(settings.embedding_l2) if settings.embedding_l2 else None
        self.embeddings = {
            i: layers.Embedding(size, embedding_size(size), embeddings_regularizer=penalty, name=f"embedding_{i}")
            for i, size in self.categorical
            if size > ONE_HOT_MAX
        }
        bucketed = bucketed_columns(metadata)
        self.buckets = QuantileBuckets(bucketed)
        self.ranks = QuantileRanks(bucketed, self.buckets.count)
        self.text = TextPart(settings, metadata) if text_columns(metadata) else None
        self.hidden = _dense_layers(settings)
        deep_penalty = tf.keras.regularizers.l2(settings.logits_l2) if settings.logits_l2 else None
        self.logits = layers.Dense(metadata.num_classes, kernel_regularizer=deep_penalty, name="logits")
        self.wide = LinearPart(settings, metadata, self.categorical, self.buckets, penalty) if wide else None

    def call(self, rows: tf.Tensor, training: bool = False) -> tf.Tensor:
        numbers = self._numbers(rows)
        ranks, buckets = [], None
        if self.buckets.places:
            values, buckets = self.buckets(rows)
            ranks = [self.ranks(values, buckets)]
        where = tf.constant([i for i, _ in self.categorical], tf.int32)  # int32 even when there are none
        indices = tf.cast(tf.gather(rows, where, axis=1), tf.int32)
        categories = self._categories(indices)
        found = []  # the logits of each part
        if numbers or categories:
            deep = tf.concat(numbers + ranks + categories, axis=1)
            for layer in self.hidden:
                deep = layer(deep, training=training)
            found.append(self.logits(deep))
        if self.text is not None:
            found.append(self.text(rows, training=training))
        logits = tf.add_n(found)
        if self.wide is not None:
            logits += self.wide(indices, numbers[0] if numbers else None, buckets)
        return logits

    def _categories(self, indices: tf.Tensor) -> list[tf.Tensor]:
        """[] or the categorical columns' inputs to the dense layers, [n, their widths], in their order: each
        small column's one-hot, each larger one's embedding. The one-hots are made as one block (on a table of
        500 small columns an op a column cost a fifth of the deep network's step), then put in place among the
        embeddings by one gather."""
        if not self.categorical:
            return []
        small = [j for j, (i, _) in enumerate(self.categorical) if i not in self.embeddings]
        depth = max([self.categorical[j][1] for j in small], default=0)
        parts = []
        if small:
            hot = tf.one_hot(tf.gather(indices, small, axis=1), depth)
            parts.append(tf.reshape(hot, [-1, len(small) * depth]))
        order, after = [], len(small) * depth  # each unit's place in the parts; the embeddings follow the one-hots
        for j, (i, size) in enumerate(self.categorical):
            if i in self.embeddings:
                parts.append(self.embeddings[i](indices[:, j]))
                order += range(after, after + self.embeddings[i].output_dim)
                after += self.embeddings[i].output_dim
            else:
                order += range(small.index(j) * depth, small.index(j) * depth + size)
        return [tf.gather(tf.concat(parts, axis=1), order, axis=1)]

    def _numbers(self, rows: tf.Tensor) -> list[tf.Tensor]:
        """The numeric columns standardized, then their "was missing" inputs: [] or one [n, k] block."""
        if not self.numeric:
            return []
        values = tf.gather(rows, self.numeric, axis=1)
        missing = tf.math.is_nan(values)
        standardized = (tf.where(missing, self.means, values) - self.means) / self.stds
        if not self.with_missing:
            return [standardized]
        return [tf.concat([standardized, tf.cast(tf.gather(missing, self.with_missing, axis=1), tf.float32)], axis=1)]


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


class Category(NamedTuple):
    """One category index of a row's vector: a categorical or date column's value, or a timestamp's day."""

    place: int  # where it is in the vector
    name: str  # its column's name; a day's: the name + tables.DAY
    size: int  # how many indices it has
    labels: Callable[[], list[str]]  # what each index stands for (Column.index_labels, Column.day_labels)


def categorical_inputs(metadata: Metadata) -> list[Category]:
    """Each category index of the vector: each categorical and date column's value, each timestamp's day."""
    found = []
    for column, start in zip(metadata.columns, tables.offsets(metadata.columns)):
        if column.category_slot is not None:
            found.append(Category(start + column.category_slot, column.name, column.size, column.index_labels))
        if column.day_slot is not None:
            days = column.day_count + 1
            found.append(Category(start + column.day_slot, column.name + tables.DAY, days, column.day_labels))
    return found


BUCKETED_MAX = 64  # the linear part buckets a table's numeric columns when it has at most this many
# The linear part keeps a weight table a column for up to this many category inputs, as before there was one
# table for more (see LinearPart), so that jobs trained then still resume.
COLUMN_WEIGHT_TABLES_MAX = 64
WEIGHT_TABLE = "wide_categories"
LINEAR_SCOPE = "linear"
LINEAR_PREFIX = f"classifier/{LINEAR_SCOPE}/"  # the names of the linear part's weights
# The linear part starts at zero, as tf.estimator's linear models do: a random start gives every row logits
# of its numbers' weights (up to 1 each), which Adam, moving a weight some 1e-3 a step, takes hundreds of steps
# to undo (a table's AUC stayed below 0.5 for 300 steps; docs/tables.md).
ZEROS = "zeros"


def bucketed_columns(metadata: Metadata) -> list[tuple[int, tables.Column]]:
    """(its place in the vector, the column) of each numeric column the linear part buckets: all of them, up
    to BUCKETED_MAX. A wider table's buckets would cost more than the rest of its step (1,024 columns: 1.6
    ms of bucketing, where the whole step of the deep part takes 1.2 ms), and its deep part already sees
    every number."""
    columns = metadata.columns
    numeric = [(start, c) for c, start in zip(columns, tables.offsets(columns)) if c.kind == tables.NUMERIC]
    return numeric if len(numeric) <= BUCKETED_MAX else []


class LinearPart(layers.Layer):
    """The wide part of wide_deep: logits linear in the standardized numbers, in every categorical (and
    date) column's index, in each numeric column's quantile bucket (its boundaries from metadata.json;
    missing values a bucket of their own; see bucketed_columns), and in each hashed cross of --crosses.
    Each categorical column's weights are an embedding as wide as the classes: its one-hot times a matrix,
    without making the one-hot. Past COLUMN_WEIGHT_TABLES_MAX category inputs they are rows of one table, each
    column's from its own offset: one lookup and one sparse update a step, where a table a column took 500 of
    each on a table of 500 columns (60 ms of its 132 ms step). The buckets of the numeric columns are one
    searchsorted and one matrix product (BucketWeights), however many columns there are, up to BUCKETED_MAX."""

    def __init__(
        self, settings: ModelSettings, metadata: Metadata, categorical: list, buckets: QuantileBuckets, penalty
    ):
        super().__init__(name=LINEAR_SCOPE)
        classes, columns, starts = metadata.num_classes, metadata.columns, tables.offsets(metadata.columns)
        self.categorical = categorical
        self.numbers = layers.Dense(classes, kernel_initializer=ZEROS, name="wide_logits")
        sizes = [size for _, size in categorical]
        self.one_table = len(categorical) > COLUMN_WEIGHT_TABLES_MAX
        if self.one_table:
            self.table = linear_weights(sum(sizes), classes, penalty, WEIGHT_TABLE)
            self.table_offsets = tf.constant(np.cumsum([0, *sizes[:-1]]), tf.int32)
        else:
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


CROSS_BUCKETS = 10_000  # hash buckets of each feature cross
CROSS_PRIMES = (1_000_003, 2_000_029, 3_000_017, 4_000_037, 5_000_011, 6_000_047, 7_000_003, 8_000_009)


def cross_bucket(parts: list[tf.Tensor], buckets: int = CROSS_BUCKETS) -> tf.Tensor:
    """A cross of integer indices (each below 2**24) to one of `buckets`: a sum of each times its own
    prime, modulo the buckets (int64 arithmetic: no overflow for up to 8 columns)."""
    mixed = tf.add_n([tf.cast(part, tf.int64) * prime for part, prime in zip(parts, CROSS_PRIMES)])
    return tf.math.floormod(mixed, buckets)


def text_columns(metadata: Metadata) -> list[tuple[int, tables.Column]]:
    """(where its word IDs start in the vector, the column) of each text column."""
    columns = metadata.columns
    return [(start, column) for column, start in zip(columns, tables.offsets(columns)) if column.kind == tables.TEXT]


def word_ids(rows: tf.Tensor, start: int, column: tables.Column) -> tf.Tensor:
    """A text column's [n, width] word IDs (text.PADDING after its words), as int32."""
    return tf.cast(rows[:, start : start + column.width], tf.int32)


class WordBag(layers.Layer):
    """A text column's word IDs to the sum of the embeddings of its words and of its pairs of neighbouring
    words (hashed into the column's bigram buckets) over the square root of their count, as fastText's bag of
    words and bigrams with TensorFlow's "sqrtn" combiner: [n, width]. fastText's mean learns a long text's
    words slowly (each gets 1/n of the gradient): on 20 Newsgroups, 0.78 accuracy by the default steps
    against 0.91 with sqrtn."""

    def __init__(self, column: tables.Column, width: int, name: str):
        super().__init__(name=name)
        # No L2 penalty (--embedding-l2): it shrinks every row at every step, and a word is in few batches: on
        # rotten tomatoes' reviews it left the embeddings near zero and the model near the majority class.
        self.words = layers.Embedding(column.size, width, name="words")
        self.buckets = column.bigram_buckets
        self.bigrams = layers.Embedding(self.buckets, width, name="bigrams") if self.buckets else None

    def call(self, ids: tf.Tensor) -> tf.Tensor:
        present = tf.not_equal(ids, text.PADDING)
        total, count = summed(self.words, ids, present)
        if self.bigrams is not None:
            pairs = cross_bucket([ids[:, :-1], ids[:, 1:]], self.buckets)
            bigram_total, bigram_count = summed(self.bigrams, pairs, present[:, :-1] & present[:, 1:])
            total, count = total + bigram_total, count + bigram_count
        return total / tf.sqrt(tf.maximum(count, 1.0))[:, None]


def summed(embedding: layers.Embedding, ids: tf.Tensor, present: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Each row's sum of the embeddings of its `present` IDs, [n, width], and their count, [n]. Only those IDs
    are looked up: a batch of short texts padded to max_length costs its words, not its padding, forward and
    in the gradient, whose rows are the words' (on modeldata's reviews, 81 words of 300 on average)."""
    where = tf.where(present)
    found = embedding(tf.gather_nd(ids, where))
    rows = tf.shape(ids, out_type=tf.int64)[0]
    return tf.math.unsorted_segment_sum(found, where[:, 0], rows), tf.reduce_sum(tf.cast(present, tf.float32), axis=1)


class TextPart(layers.Layer):
    """fastText's classifier over a table's text columns: each column's bag of words (and bigrams), dropout
    (--dropout), then one linear layer to the logits. Linear in the bags: on modeldata's reviews, the bag
    through a hidden layer of 256 overfit to 0.73 accuracy by the default 64 epochs; straight to the logits
    it held 0.81 (and with dropout kept it there)."""

    def __init__(self, settings: ModelSettings, metadata: Metadata):
        super().__init__(name="text")
        self.texts = text_columns(metadata)
        self.bags = [WordBag(column, WORD_WIDTH, f"words_{start}") for start, column in self.texts]
        self.dropout = layers.Dropout(settings.dropout, seed=settings.seed)
        self.logits = layers.Dense(metadata.num_classes, name="text_logits")

    def call(self, rows: tf.Tensor, training: bool = False) -> tf.Tensor:
        bags = [bag(word_ids(rows, start, column)) for (start, column), bag in zip(self.texts, self.bags)]
        return self.logits(self.dropout(tf.concat(bags, axis=1), training=training))


class TextBag(tf.keras.Model):
    """The `text` network: TextPart alone."""

    def __init__(self, settings: ModelSettings, metadata: Metadata):
        super().__init__(name="classifier")
        self.text = TextPart(settings, metadata)

    def call(self, rows: tf.Tensor, training: bool = False) -> tf.Tensor:
        return self.text(rows, training=training)


class TextCNN(tf.keras.Model):
    """The `text_cnn` network: convolutions over each text column's word embeddings (CNN_FILTERS of CNN_WIDTH
    words, ReLU), max pooled over the text, then dense_mlp's layers, as Keras's text classification from
    scratch. A model of its own, as the others are, so that its weights are named classifier/...: built as a
    functional model, they were not, and a warm start found no weight to take."""

    def __init__(self, settings: ModelSettings, metadata: Metadata):
        super().__init__(name="classifier")
        self.texts = text_columns(metadata)
        self.embeddings = [
            layers.Embedding(column.size, WORD_WIDTH, name=f"words_{start}") for start, column in self.texts
        ]
        self.dropout = layers.Dropout(settings.dropout, seed=settings.seed)
        self.convolutions = [
            layers.Conv1D(CNN_FILTERS, CNN_WIDTH, padding="same", activation="relu") for _ in self.texts
        ]
        self.pool = layers.GlobalMaxPool1D()
        self.top = [*_dense_layers(settings), layers.Dense(metadata.num_classes, name="logits")]

    def call(self, rows: tf.Tensor, training: bool = False) -> tf.Tensor:
        found = []
        for (start, column), embedding, convolution in zip(self.texts, self.embeddings, self.convolutions):
            words = word_ids(rows, start, column)
            vectors = embedding(words) * tf.cast(tf.not_equal(words, text.PADDING), tf.float32)[..., None]
            found.append(self.pool(convolution(self.dropout(vectors, training=training))))
        network = found[0] if len(found) == 1 else tf.concat(found, axis=1)
        for layer in self.top:
            network = layer(network, training=training)
        return network


def only_text(metadata: Metadata) -> bool:
    return metadata.is_table and all(column.kind == tables.TEXT for column in metadata.columns)


def embedding_size(indices: int) -> int:
    """A categorical column's embedding width: grows slowly with its vocabulary, at most 32."""
    return min(32, max(2, round(1.6 * math.pow(indices, 0.56))))


def column_layers(metadata: Metadata) -> dict[str, str]:
    """Each layer named after its column's place in the vector (embedding_3, wide_3, words_5) -> the column's
    name: a warm start finds a column's weights by its name, wherever the column now is."""
    found = {f"words_{start}": column.name for start, column in text_columns(metadata)}
    for category in categorical_inputs(metadata):
        found.update({f"embedding_{category.place}": category.name, f"wide_{category.place}": category.name})
    return found


def row_labels(metadata: Metadata, hidden_units: tuple[int, ...]) -> dict[str, list[str]]:
    """What each row of a table network's weights stands for, by variable name, where the rows follow the
    data's columns and values: an embedding's rows are its column's values (Column.index_labels), a layer's
    kernel rows are its inputs. A warm start moves rows by these labels when vocabularies change."""
    if not metadata.is_table:
        return {}
    found = {}
    numbers = [label for _, label in numeric_inputs(metadata) + missing_inputs(metadata)]
    deep = numbers + rank_labels(metadata)
    categories = categorical_inputs(metadata)
    one_table = len(categories) > COLUMN_WEIGHT_TABLES_MAX
    for i, name, size, labels in categories:
        values = labels()
        if one_table:
            found.setdefault(f"{LINEAR_PREFIX}{WEIGHT_TABLE}/embeddings", []).extend(
                f"<{name}> {value}" for value in values
            )
        else:
            found[f"{LINEAR_PREFIX}wide_{i}/embeddings"] = values
        if size > ONE_HOT_MAX:
            found[f"classifier/embedding_{i}/embeddings"] = values
            deep += [f"<{name} embedding {k}>" for k in range(embedding_size(size))]
        else:
            deep += [f"<{name}> {value}" for value in values]
    if deep:
        found["classifier/dense/kernel" if hidden_units else "classifier/logits/kernel"] = deep
    if numbers:
        found[f"{LINEAR_PREFIX}wide_logits/kernel"] = numbers
    numeric = [column for _, column in bucketed_columns(metadata)]
    buckets = [[f"<{column.name} bucket {k}>" for k in range(bucket_count(numeric) - 1)] + [f"<{column.name} missing>"]
               for column in numeric]  # fmt: skip
    if buckets:
        found[f"{LINEAR_PREFIX}wide_buckets/embeddings"] = [label for labels in buckets for label in labels]
    bags = []
    for start, column in text_columns(metadata):
        words = column.index_labels()
        found[f"classifier/text/words_{start}/words/embeddings"] = words  # text and the tables' TextPart
        found[f"classifier/words_{start}/embeddings"] = words  # text_cnn
        bags += [f"<{column.name} bag {k}>" for k in range(WORD_WIDTH)]
    if bags:
        found["classifier/text/text_logits/kernel"] = bags
    return found


def table_deep(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    return TableNetwork(settings, metadata, wide=False)


def table_wide_deep(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    return TableNetwork(settings, metadata, wide=True)


@dataclass(frozen=True)
class Network:
    build: Callable[[ModelSettings, Metadata], tf.keras.Model]
    takes: Callable[[Metadata], bool]  # whether it can read this dataset's examples
    what: str  # for --help and errors


NETWORKS = {
    "text": Network(TextBag, only_text, "text: fastText's bag of words and bigrams, for tables of text columns alone"),
    "text_cnn": Network(TextCNN, only_text, "text: convolutions over the words, for tables of text columns alone"),
    "cnn": Network(image_cnn, lambda metadata: metadata.is_image, "convolutions for images (H, W, C)"),
    "wide_deep": Network(
        table_wide_deep, lambda metadata: metadata.is_table, "tables: dense layers beside a linear part"
    ),
    "table": Network(table_deep, lambda metadata: metadata.is_table, "tables: dense layers over the columns"),
    "mlp": Network(dense_mlp, lambda metadata: not metadata.is_table, "dense layers for images and vectors"),
    **{
        name: Network(functools.partial(backbones.build, name), backbones.takes, f"photos: {name}, pretrained or not")
        for name in backbones.BACKBONES
    },
}
