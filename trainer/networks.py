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
from typing import TYPE_CHECKING

import tensorflow as tf

from dataformat import tables
from dataformat.text import PADDING
from trainer import augment, backbones
from trainer.columns.categorical import ONE_HOT_MAX, categorical_inputs, embedding_size, embedding_tables
from trainer.columns.numeric import (
    QuantileBuckets,
    QuantileRanks,
    bucket_count,
    bucketed_columns,
    missing_inputs,
    numeric_inputs,
    rank_labels,
)
from trainer.columns.text import WORD_WIDTH, TextPart, text_columns, word_ids
from trainer.wide import LINEAR_PREFIX, WEIGHT_TABLE, LinearPart

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.model import ModelSettings

layers = tf.keras.layers
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
    larger ones (missing, out-of-vocabulary and hashed values have indices of their own), a table of
    them a width (embedding_tables). Then the
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
        categories = categorical_inputs(metadata)
        self.categorical = [(category.place, category.size) for category in categories]
        penalty = tf.keras.regularizers.l2(settings.embedding_l2) if settings.embedding_l2 else None
        self.embedding_tables = embedding_tables(categories, settings.column_embedding_tables)
        self.embeddings = {
            table.name: layers.Embedding(table.rows, table.width, embeddings_regularizer=penalty, name=table.name)
            for table in self.embedding_tables
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
        500 small columns an op a column cost a fifth of the deep network's step), and each embedding table's
        columns by one lookup, then put in place by one gather."""
        if not self.categorical:
            return []
        embedded = {j for table in self.embedding_tables for j in table.members}
        small = [j for j in range(len(self.categorical)) if j not in embedded]
        depth = max([self.categorical[j][1] for j in small], default=0)
        parts, units = [], {}  # units: each embedded column's places in the parts
        if small:
            hot = tf.one_hot(tf.gather(indices, small, axis=1), depth)
            parts.append(tf.reshape(hot, [-1, len(small) * depth]))
        after = len(small) * depth  # the embeddings follow the one-hots
        for table in self.embedding_tables:
            table_rows = tf.gather(indices, table.members, axis=1) + table.offsets
            looked_up = self.embeddings[table.name](table_rows)
            parts.append(tf.reshape(looked_up, [-1, len(table.members) * table.width]))
            for j in table.members:
                units[j] = range(after, after + table.width)
                after += table.width
        order = []
        for j, (_, size) in enumerate(self.categorical):
            order += units[j] if j in embedded else range(small.index(j) * depth, small.index(j) * depth + size)
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
            vectors = embedding(words) * tf.cast(tf.not_equal(words, PADDING), tf.float32)[..., None]
            found.append(self.pool(convolution(self.dropout(vectors, training=training))))
        network = found[0] if len(found) == 1 else tf.concat(found, axis=1)
        for layer in self.top:
            network = layer(network, training=training)
        return network


def only_text(metadata: Metadata) -> bool:
    return metadata.is_table and all(column.kind == tables.TEXT for column in metadata.columns)


def column_layers(metadata: Metadata) -> dict[str, str]:
    """Each layer named after its column's place in the vector (a text column's words_5) -> the column's name: a
    warm start finds a column's weights by its name, wherever the column now is."""
    return {f"words_{start}": column.name for start, column in text_columns(metadata)}


def row_labels(metadata: Metadata, hidden_units: tuple[int, ...]) -> dict[str, list[str]]:
    """What each row of a table network's weights stands for, by variable name, where the rows follow the
    data's columns and values: an embedding table's rows are its columns' values (Column.index_labels), each
    "<column> value"; a layer's kernel rows are its inputs. A warm start moves
    rows by these labels when vocabularies change (a model that kept a table a column is first joined into
    today's tables: warm_start.in_todays_layout)."""
    if not metadata.is_table:
        return {}
    found = {}
    numbers = [label for _, label in numeric_inputs(metadata) + missing_inputs(metadata)]
    deep = numbers + rank_labels(metadata)
    categories = categorical_inputs(metadata)
    labelled = {i: [f"<{name}> {value}" for value in labels()] for i, name, _, labels in categories}
    for i, name, size, _ in categories:  # a small column's one-hot, a larger one's embedding
        deep += [f"<{name} embedding {k}>" for k in range(embedding_size(size))] if size > ONE_HOT_MAX else labelled[i]
    if categories:
        found[f"{LINEAR_PREFIX}{WEIGHT_TABLE}/embeddings"] = [label for i, *_ in categories for label in labelled[i]]
    for table in embedding_tables(categories):
        members = [categories[j].place for j in table.members]
        found[f"classifier/{table.name}/embeddings"] = [label for i in members for label in labelled[i]]
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
    dropout_beyond_dense: bool = True  # whether it has dropout besides that of --hidden-units' dense layers


NETWORKS = {
    "text": Network(TextBag, only_text, "text: fastText's bag of words and bigrams, for tables of text columns alone"),
    "text_cnn": Network(TextCNN, only_text, "text: convolutions over the words, for tables of text columns alone"),
    "cnn": Network(image_cnn, lambda metadata: metadata.is_image, "convolutions for images (H, W, C)", False),
    "wide_deep": Network(
        table_wide_deep, lambda metadata: metadata.is_table, "tables: dense layers beside a linear part", False
    ),
    "table": Network(table_deep, lambda metadata: metadata.is_table, "tables: dense layers over the columns", False),
    "mlp": Network(dense_mlp, lambda metadata: not metadata.is_table, "dense layers for images and vectors", False),
    **{
        name: Network(functools.partial(backbones.build, name), backbones.takes, f"photos: {name}, pretrained or not")
        for name in backbones.BACKBONES
    },
}
