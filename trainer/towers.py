"""One training step over every tower: the model replicated in-graph across a machine's GPUs.

Each tower is the same network on its own device, training on its own batch from the input
queue. Their gradients are averaged and applied once, so N towers of --batch-size B train one
model on a global batch of N x B. This is how TensorFlow's multi-GPU trainers of the queue era
work (the CIFAR-10 multi-GPU tutorial, tf_cnn_benchmarks): MirroredStrategy needs tf.data.

With several towers the variables live once, on the CPU, and each tower reads them at the
start of its step (tf_cnn_benchmarks' `parameter_server` update with the CPU as parameter
device, and the CIFAR-10 tutorial's layout). For models of this size on GPUs linked by PCIe,
as on the cloud's T4 machines, that is the layout TensorFlow's performance guide recommends;
one copy per GPU kept in sync by NCCL all-reduce pays off for large models on NVLink. One copy
also makes checkpoints the same whatever the number of towers. With one tower nothing is
placed, and TensorFlow puts the whole step on the GPU as before.

Batch norm's moving averages update from the first tower's batch only, as tf_cnn_benchmarks
does; the loss and the training accuracy are the towers' means.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import tensorflow as tf

from dataformat.schema import Metadata
from trainer.devices import tower_device
from trainer.head import ClassificationHead
from trainer.input import FixedBatches, QueueBatches

VARIABLE_DEVICE = "/cpu:0"  # with several towers
SUMMARY_EXAMPLES = 3  # inputs of the first tower kept for the image summary


class StepResult(NamedTuple):
    train_op: tf.Operation  # the update, batch norm's, and the staging of the towers' next batches
    loss: tf.Tensor
    accuracy: tf.Tensor
    examples: tf.Tensor  # the first tower's first inputs, for the image summary


def build_variables(network: tf.keras.Model, metadata: Metadata, towers: int) -> None:
    """Creates the network's variables before any tower or loop uses them (on the CPU with
    several towers), by calling it on an empty batch that never runs."""
    empty = tf.zeros([0, *metadata.shape], tf.as_dtype(metadata.dtype))
    with _placed(VARIABLE_DEVICE, towers):
        network(empty, training=False)


def train_step(
    network: tf.keras.Model,
    head: ClassificationHead,
    optimizer: tf.compat.v1.train.Optimizer,
    batches: QueueBatches | FixedBatches,
    towers: int,
) -> StepResult:
    """One step: every tower takes its batch and computes its gradients; their mean updates the variables."""
    losses, accuracies, gradients, puts = [], [], [], []
    for tower in range(towers):
        batch = batches.take(tower)
        data, labels = batch.data, batch.labels
        with _placed(tower_device(tower), towers), _scope(tower, towers):
            known_updates = len(network.updates)
            logits = network(data, training=True)
            if tower == 0:  # Keras layers keep batch norm's updates to themselves; run the first tower's
                updates, examples = network.updates[known_updates:], data[:SUMMARY_EXAMPLES]
            loss = head.loss(logits, labels, batch.weights)
            penalties = network.losses  # the layers' weight penalties, if any
            # The network's own trainable weights: a frozen layer's stay in the graph's collection.
            total = loss + tf.add_n(penalties) if penalties else loss
            gradients.append(optimizer.compute_gradients(total, var_list=network.trainable_weights))
        losses.append(loss)
        accuracies.append(head.accuracy(logits, labels))
        puts += [batch.put] if batch.put is not None else []
    with tf.control_dependencies(updates), _placed(VARIABLE_DEVICE, towers):
        update = optimizer.apply_gradients(_mean(gradients), global_step=tf.compat.v1.train.get_global_step())
    return StepResult(tf.group(update, *puts), tf.add_n(losses) / towers, tf.add_n(accuracies) / towers, examples)


def _mean(tower_gradients: list[list[tuple[tf.Tensor, tf.Variable]]]) -> list[tuple[tf.Tensor, tf.Variable]]:
    """Each variable's gradient averaged over the towers (None where the loss does not reach it)."""
    if len(tower_gradients) == 1:
        return tower_gradients[0]
    averaged = []
    for pairs in zip(*tower_gradients):
        grads, variable = [grad for grad, _ in pairs], pairs[0][1]
        if grads[0] is None:
            averaged.append((None, variable))
        elif all(isinstance(grad, tf.IndexedSlices) for grad in grads):
            averaged.append((_sparse_mean(grads), variable))
        else:
            averaged.append((tf.add_n([tf.convert_to_tensor(grad) for grad in grads]) / len(grads), variable))
    return averaged


def _sparse_mean(grads: list[tf.IndexedSlices]) -> tf.IndexedSlices:
    """An embedding's gradients (IndexedSlices: the rows a batch looked up) averaged over the towers, still sparse:
    every tower's rows, each divided by the towers (the optimizer adds a row given twice). Made dense, they had
    every row of a table updated each step, by lazy Adam's dense path (4x slower on text), and moved rows no batch
    looked up by their momentum, unlike one tower's run."""
    values = tf.concat([grad.values for grad in grads], axis=0) / len(grads)
    return tf.IndexedSlices(values, tf.concat([grad.indices for grad in grads], axis=0), grads[0].dense_shape)


def _placed(device: str, towers: int):
    """Ops on `device` with several towers; with one, where TensorFlow puts them (the GPU if any)."""
    return tf.device(device) if towers > 1 else contextlib.nullcontext()


def _scope(tower: int, towers: int):
    return tf.name_scope(f"tower_{tower}") if towers > 1 else contextlib.nullcontext()
