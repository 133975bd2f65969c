"""The network bodies, one function each, chosen by `--model` from NETWORKS.

A network maps normalized float32 inputs of one example's shape to the head's logits. To add
one, write a function with the signature of `image_cnn` and add a line to NETWORKS; `--model
auto` takes the first network in NETWORKS whose `takes` accepts the data's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tensorflow as tf

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.model import ModelSettings

layers = tf.keras.layers


def image_cnn(settings: ModelSettings, shape: tuple[int, ...], outputs: int) -> tf.keras.Sequential:
    """Blocks of two 3x3 convolutions with batch norm and ReLU, then max pooling; then dense_mlp's layers.

    Inputs come channels_last; on a GPU the network transposes them to channels_first, what
    cuDNN is fastest with, and Flatten transposes back, so checkpoints move between CPU and GPU.
    """
    data_format = settings.data_format
    network = [layers.Permute((3, 1, 2))] if data_format == "channels_first" else []
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
    return _classifier(network + _dense_layers(settings), outputs)


def dense_mlp(settings: ModelSettings, shape: tuple[int, ...], outputs: int) -> tf.keras.Sequential:
    """The flattened inputs through dense layers with batch norm, ReLU and dropout (`--hidden-units`);
    with none, softmax regression."""
    return _classifier([layers.Flatten(), *_dense_layers(settings)], outputs)


def _dense_layers(settings: ModelSettings) -> list[tf.keras.layers.Layer]:
    network = []
    for units in settings.hidden_units:
        network += [
            layers.Dense(units, use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.Dropout(settings.dropout, seed=settings.seed),
        ]
    return network


def _classifier(network: list[tf.keras.layers.Layer], outputs: int) -> tf.keras.Sequential:
    """The layers, then the logits; one name for every network, so checkpoints name variables alike."""
    return tf.keras.Sequential([*network, layers.Dense(outputs, name="logits")], name="classifier")


@dataclass(frozen=True)
class Network:
    build: Callable[[ModelSettings, tuple[int, ...], int], tf.keras.Model]
    takes: Callable[[Metadata], bool]  # whether it can read this dataset's examples
    what: str  # for --help and errors


NETWORKS = {
    "cnn": Network(image_cnn, lambda metadata: metadata.is_image, "convolutions for images (H, W, C)"),
    "mlp": Network(dense_mlp, lambda metadata: True, "dense layers for any shape"),
}
