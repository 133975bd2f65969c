"""The model_fn: a classifier with convolutions for images (H, W, C) and dense layers for vectors.

Inputs arrive in their stored dtype (uint8 pixels or float32 features) and are normalized
here, on the device, with the training split's statistics from metadata.json: training,
evaluation and serving all go through this one function.
"""

from __future__ import annotations

import tensorflow as tf

from preprocessing.schema import Metadata
from trainer.config import Config
from trainer.devices import has_gpu

IMAGE_SUMMARIES = 3


def resolve_data_format(setting: str) -> str:
    """channels_first on a GPU (what cuDNN is fastest with), channels_last on a CPU."""
    if setting != "auto":
        return setting
    return "channels_first" if has_gpu() else "channels_last"


def normalize(data: tf.Tensor, metadata: Metadata) -> tf.Tensor:
    """Stored values to float32 with zero mean and unit variance per channel."""
    mean = tf.constant(metadata.mean, tf.float32)
    std = tf.constant(metadata.std, tf.float32)
    return (tf.cast(data, tf.float32) - mean) / std


def build_network(metadata: Metadata, config: Config, data_format: str) -> tf.keras.Sequential:
    """Conv blocks (two 3x3 convolutions, batch norm, max pool) for images, then dense layers."""
    layers = tf.keras.layers
    network = []
    if len(metadata.shape) == 3:
        channel_axis = 1 if data_format == "channels_first" else -1
        for filters in config.conv_filters:
            for _ in range(2):
                network += [
                    layers.Conv2D(filters, 3, padding="same", use_bias=False, data_format=data_format),
                    layers.BatchNormalization(axis=channel_axis),
                    layers.ReLU(),
                ]
            network.append(layers.MaxPool2D(2, padding="same", data_format=data_format))
    # Flatten reorders channels_first to channels_last first, so checkpoints move between CPU and GPU.
    network.append(layers.Flatten(data_format=data_format))
    for units in config.hidden_units:
        network += [
            layers.Dense(units, use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.Dropout(config.dropout, seed=config.seed),
        ]
    network.append(layers.Dense(metadata.num_classes, name="logits"))
    return tf.keras.Sequential(network, name="classifier")


def _predictions(logits: tf.Tensor, metadata: Metadata) -> dict[str, tf.Tensor]:
    class_ids = tf.argmax(logits, axis=1)
    return {
        "class_ids": class_ids,
        "classes": tf.gather(tf.constant(metadata.class_names), class_ids),
        "probabilities": tf.nn.softmax(logits),
        "logits": logits,
    }


def _metrics(labels: tf.Tensor, class_ids: tf.Tensor, num_classes: int) -> dict:
    """Accuracy, and recall and precision per class (named by class index)."""
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, class_ids)}
    for index in range(num_classes):
        is_true, is_predicted = tf.equal(labels, index), tf.equal(class_ids, index)
        metrics[f"recall/class_{index}"] = tf.compat.v1.metrics.recall(is_true, is_predicted)
        metrics[f"precision/class_{index}"] = tf.compat.v1.metrics.precision(is_true, is_predicted)
    return metrics


def _learning_rate(config: Config) -> tf.Tensor:
    if config.learning_rate_decay == 1.0:
        return tf.constant(config.learning_rate)
    return tf.compat.v1.train.exponential_decay(
        config.learning_rate, tf.compat.v1.train.get_global_step(), config.decay_steps, config.learning_rate_decay
    )


def model_fn(features, labels, mode, params):
    """The Estimator model_fn; `params` holds the run's Config and the dataset's Metadata."""
    config: Config = params["config"]
    metadata: Metadata = params["metadata"]
    training = mode == tf.estimator.ModeKeys.TRAIN
    data = features[metadata.feature_key]
    data_format = resolve_data_format(config.data_format)

    inputs = normalize(data, metadata)
    if len(metadata.shape) == 3 and data_format == "channels_first":
        inputs = tf.transpose(inputs, [0, 3, 1, 2])
    network = build_network(metadata, config, data_format)
    logits = network(inputs, training=training)
    predictions = _predictions(logits, metadata)

    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(
            mode,
            predictions=predictions,
            export_outputs={"serving_default": tf.estimator.export.PredictOutput(predictions)},
        )

    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops=_metrics(labels, predictions["class_ids"], metadata.num_classes)
        )

    learning_rate = _learning_rate(config)
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    if config.mixed_precision:  # float16 gradients underflow without it
        optimizer = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(optimizer, "dynamic")
    # Keras layers keep batch norm's moving-average updates to themselves; run them each step.
    with tf.control_dependencies(network.updates):
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    tf.compat.v1.summary.scalar("learning_rate", learning_rate)
    tf.compat.v1.summary.scalar(
        "train_accuracy", tf.reduce_mean(tf.cast(tf.equal(labels, predictions["class_ids"]), tf.float32))
    )
    if len(metadata.shape) == 3 and metadata.shape[-1] in (1, 3, 4):
        tf.compat.v1.summary.image("inputs", tf.cast(data, tf.uint8), max_outputs=IMAGE_SUMMARIES)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
