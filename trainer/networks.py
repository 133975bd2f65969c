"""The network bodies, one function each, chosen by `--model` from NETWORKS.

A network maps a batch of stored examples (uint8 pixels, float32 vectors, or a table's encoded
rows) to the head's logits, preparing its inputs itself with the dataset's statistics from
metadata.json. To add one, write a function with the signature of `image_cnn` and add a line
to NETWORKS; `--model auto` takes the first network in NETWORKS whose `takes` accepts the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tensorflow as tf

from dataformat import tables

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.model import ModelSettings

layers = tf.keras.layers
ONE_HOT_MAX = 12  # categorical columns with at most this many indices go in one-hot, larger ones through embeddings


def image_cnn(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    """Blocks of two 3x3 convolutions with batch norm and ReLU, then max pooling; then dense_mlp's layers.

    Inputs come channels_last; on a GPU the network transposes them to channels_first, what
    cuDNN is fastest with, and Flatten transposes back, so checkpoints move between CPU and GPU.
    """
    data_format = settings.data_format
    network = [_standardized(metadata)]
    if data_format == "channels_first":
        network.append(layers.Permute((3, 1, 2)))
    channel_axis = 1 if data_format == "channels_first" else -1
    for filters in settings.conv_filters:
        for _ in range(2):
            network += [
                layers.Conv2D(filters, 3, padding="same", use_bias=False, data_format=data_format),
                layers.BatchNormalization(axis=channel_axis),
                layers.ReLU(),
            ]
        network.append(layers.MaxPool2D(2, padding="same", data_format=data_format))
    network.append(layers.Flatten(data_format=data_format))
    return _classifier(network + _dense_layers(settings), metadata)


def dense_mlp(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    """The flattened inputs through dense layers with batch norm, ReLU and dropout (`--hidden-units`);
    with none, softmax regression."""
    return _classifier([_standardized(metadata), layers.Flatten(), *_dense_layers(settings)], metadata)


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

    Numeric columns: a missing value becomes the training mean, then every value is
    standardized, and a column that had missing values in training gains a 0/1 "was missing"
    input. Categorical columns: one-hot for small vocabularies, learned embeddings for larger
    ones (missing and out-of-vocabulary values have indices of their own). Then the dense layers
    of `--hidden-units`. With `wide`, a linear part over the standardized numbers and every
    categorical column in one-hot adds its logits, as the census samples' wide-and-deep model does.
    """

    def __init__(self, settings: ModelSettings, metadata: Metadata, wide: bool):
        super().__init__(name="classifier")
        self.table_columns = metadata.columns
        self.embeddings = {
            column.name: layers.Embedding(column.size, embedding_size(column.size), name=f"embedding_{i}")
            for i, column in enumerate(metadata.columns)
            if column.kind == tables.CATEGORICAL and column.size > ONE_HOT_MAX
        }
        self.hidden = _dense_layers(settings)
        self.logits = layers.Dense(metadata.num_classes, name="logits")
        self.wide = layers.Dense(metadata.num_classes, name="wide_logits") if wide else None

    def call(self, rows: tf.Tensor, training: bool = False) -> tf.Tensor:
        numbers, one_hots, embedded = [], [], []
        for i, column in enumerate(self.table_columns):
            value = rows[:, i]
            if column.kind == tables.NUMERIC:
                missing = tf.math.is_nan(value)
                numbers.append((tf.where(missing, column.mean, value) - column.mean) / column.std)
                if column.missing:
                    numbers.append(tf.cast(missing, tf.float32))
                continue
            index = tf.cast(value, tf.int32)
            one_hots.append(tf.one_hot(index, column.size))
            if column.name in self.embeddings:
                embedded.append(self.embeddings[column.name](index))
        numeric = [tf.stack(numbers, axis=1)] if numbers else []
        small = [one_hot for one_hot in one_hots if one_hot.shape[-1] <= ONE_HOT_MAX]
        deep = tf.concat(numeric + small + embedded, axis=1)
        for layer in self.hidden:
            deep = layer(deep, training=training)
        logits = self.logits(deep)
        if self.wide is not None:
            logits += self.wide(tf.concat(numeric + one_hots, axis=1))
        return logits


def embedding_size(indices: int) -> int:
    """A categorical column's embedding width: grows slowly with its vocabulary, at most 32."""
    return min(32, max(2, round(1.6 * math.pow(indices, 0.56))))


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
    "cnn": Network(image_cnn, lambda metadata: metadata.is_image, "convolutions for images (H, W, C)"),
    "wide_deep": Network(
        table_wide_deep, lambda metadata: metadata.is_table, "tables: dense layers beside a linear part"
    ),
    "table": Network(table_deep, lambda metadata: metadata.is_table, "tables: dense layers over the columns"),
    "mlp": Network(dense_mlp, lambda metadata: not metadata.is_table, "dense layers for images and vectors"),
}
