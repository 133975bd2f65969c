"""The classification head: what the network's logits mean.

It owns the loss, the evaluation metrics, the predictions and the export outputs, and names the
metric that picks the best export and that hyperparameter tuning reads (METRIC), so no other
module spells it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tensorflow as tf

METRIC = "accuracy"  # higher is better
LOSS = "loss"
CONFUSION = "confusion_matrix"  # rows: true class, columns: predicted class


@dataclass(frozen=True)
class ClassificationHead:
    class_names: tuple[str, ...]

    @property
    def logits_dimension(self) -> int:
        return len(self.class_names)

    def predictions(self, logits: tf.Tensor) -> dict[str, tf.Tensor]:
        class_ids = tf.argmax(logits, axis=1)
        return {
            "class_ids": class_ids,
            "classes": tf.gather(tf.constant(self.class_names), class_ids),
            "probabilities": tf.nn.softmax(logits),
            "logits": logits,
        }

    def metrics(self, labels: tf.Tensor, class_ids: tf.Tensor) -> dict:
        """Accuracy, the confusion matrix, and recall and precision per class (named by class index)."""
        metrics = {
            METRIC: tf.compat.v1.metrics.accuracy(labels, class_ids),
            CONFUSION: self._confusion(labels, class_ids),
        }
        for index in range(self.logits_dimension):
            is_true, is_predicted = tf.equal(labels, index), tf.equal(class_ids, index)
            metrics[f"recall/class_{index}"] = tf.compat.v1.metrics.recall(is_true, is_predicted)
            metrics[f"precision/class_{index}"] = tf.compat.v1.metrics.precision(is_true, is_predicted)
        return metrics

    def _confusion(self, labels: tf.Tensor, class_ids: tf.Tensor) -> tuple[tf.Tensor, tf.Operation]:
        """A streaming confusion matrix: (its value, the op that adds a batch to it)."""
        size = self.logits_dimension
        counts = tf.compat.v1.get_local_variable(
            "confusion_matrix", [size, size], tf.int64, tf.compat.v1.zeros_initializer(), use_resource=True
        )
        batch = tf.math.confusion_matrix(labels, class_ids, num_classes=size, dtype=tf.int64)
        return tf.identity(counts), counts.assign_add(batch)

    def estimator_spec(
        self,
        mode: str,
        logits: tf.Tensor,
        labels: tf.Tensor | None,
        train_op_fn: Callable[[tf.Tensor], tf.Operation],
    ) -> tf.estimator.EstimatorSpec:
        """The EstimatorSpec of `mode`; `train_op_fn(loss)` makes the training op."""
        predictions = self.predictions(logits)
        if mode == tf.estimator.ModeKeys.PREDICT:
            outputs = {"serving_default": tf.estimator.export.PredictOutput(predictions)}
            return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=outputs)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        if mode == tf.estimator.ModeKeys.EVAL:
            metrics = self.metrics(labels, predictions["class_ids"])
            return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
        correct = tf.cast(tf.equal(labels, predictions["class_ids"]), tf.float32)
        tf.compat.v1.summary.scalar(f"train_{METRIC}", tf.reduce_mean(correct))
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op_fn(loss))


def higher_metric(best_eval_result: dict, current_eval_result: dict) -> bool:
    """The BestExporter's comparison: whether the current evaluation beats the best so far."""
    return current_eval_result[METRIC] > best_eval_result[METRIC]
