"""The model_fn: run the chosen network, and let the head turn its logits into a loss, metrics,
predictions and export outputs.

Inputs arrive in their stored dtype (uint8 pixels, float32 features, a table's encoded rows)
and the network prepares them on the device with the training split's statistics from
metadata.json: training, evaluation and serving all go through this one function. The
model_fn receives only what the model needs: its settings (ModelSettings) and the dataset's
description (Metadata).
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import Metadata
from trainer.config import Config
from trainer.devices import has_gpu
from trainer.head import ClassificationHead
from trainer.networks import NETWORKS

IMAGE_SUMMARIES = 3


@dataclass(frozen=True)
class ModelSettings:
    """The model's own settings, resolved for this machine and dataset (no paths, no timeouts)."""

    network: str  # a key of NETWORKS
    conv_filters: tuple[int, ...] = (32, 64)
    hidden_units: tuple[int, ...] = (256,)
    dropout: float = 0.3
    data_format: str = "channels_last"
    learning_rate: float = 3e-4
    learning_rate_decay: float = 1.0
    decay_steps: int = 1000
    mixed_precision: bool = False
    seed: int = 0

    @classmethod
    def of(cls, config: Config, metadata: Metadata) -> ModelSettings:
        return cls(
            network=choose_network(config.model, metadata),
            conv_filters=config.conv_filters,
            hidden_units=config.hidden_units,
            dropout=config.dropout,
            data_format=resolve_data_format(config.data_format),
            learning_rate=config.learning_rate,
            learning_rate_decay=config.learning_rate_decay,
            decay_steps=config.decay_steps,
            mixed_precision=config.mixed_precision,
            seed=config.seed,
        )


def choose_network(name: str, metadata: Metadata) -> str:
    """`--model`: a network of NETWORKS that reads this data, or with auto the first that does."""
    if name == "auto":
        return next(key for key, network in NETWORKS.items() if network.takes(metadata))
    if name not in NETWORKS:
        raise UserError(f"--model {name}: not a network; choose auto or one of {', '.join(NETWORKS)}")
    if not NETWORKS[name].takes(metadata):
        shape = "x".join(map(str, metadata.shape))
        what = "table rows" if metadata.is_table else shape
        raise UserError(f"--model {name}: {NETWORKS[name].what}, and this dataset's examples are {what}")
    return name


def resolve_data_format(setting: str) -> str:
    """channels_first on a GPU (what cuDNN is fastest with), channels_last on a CPU."""
    if setting != "auto":
        return setting
    return "channels_first" if has_gpu() else "channels_last"


def build_network(settings: ModelSettings, metadata: Metadata) -> tf.keras.Model:
    return NETWORKS[settings.network].build(settings, metadata)


def _learning_rate(settings: ModelSettings) -> tf.Tensor:
    if settings.learning_rate_decay == 1.0:
        return tf.constant(settings.learning_rate)
    return tf.compat.v1.train.exponential_decay(
        settings.learning_rate,
        tf.compat.v1.train.get_global_step(),
        settings.decay_steps,
        settings.learning_rate_decay,
    )


def _optimizer(settings: ModelSettings) -> tf.compat.v1.train.Optimizer:
    learning_rate = _learning_rate(settings)
    tf.compat.v1.summary.scalar("learning_rate", learning_rate)
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    if settings.mixed_precision:  # float16 gradients underflow without it
        optimizer = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(optimizer, "dynamic")
    return optimizer


def model_fn(features, labels, mode, params):
    """The Estimator model_fn; `params` holds the ModelSettings and the dataset's Metadata."""
    settings: ModelSettings = params["settings"]
    metadata: Metadata = params["metadata"]
    data = features[metadata.feature_key]
    network = build_network(settings, metadata)
    logits = network(data, training=mode == tf.estimator.ModeKeys.TRAIN)

    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        if metadata.is_image and metadata.shape[-1] in (1, 3, 4):
            tf.compat.v1.summary.image("inputs", tf.cast(data, tf.uint8), max_outputs=IMAGE_SUMMARIES)
        # Keras layers keep batch norm's moving-average updates to themselves; run them each step.
        with tf.control_dependencies(network.updates):
            return _optimizer(settings).minimize(loss, global_step=tf.compat.v1.train.get_global_step())

    return ClassificationHead(metadata.class_names).estimator_spec(mode, logits, labels, train_op_fn)
