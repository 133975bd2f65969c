"""The classification head: what the network's logits mean.

It owns the loss, the evaluation metrics, the predictions and the export outputs, and names the
metric that picks the best export (METRIC), so no other module spells it. A tuning trial reports
whichever evaluation metric --tuning-metric names (trainer/config.py's TUNING_METRICS, which a
test keeps equal to the names metrics() gives).
"""

from __future__ import annotations

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

    def loss(self, logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        # Out of the LOSSES collection: the Estimator adds the loss it is given, and with towers
        # or the in-graph loop there is one loss per tower and step.
        return tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits, loss_collection=None)

    def accuracy(self, logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        """The batch's accuracy, for the training summary."""
        return tf.reduce_mean(tf.cast(tf.equal(labels, tf.argmax(logits, axis=1)), tf.float32))

    def estimator_spec(self, mode: str, logits: tf.Tensor, labels: tf.Tensor | None) -> tf.estimator.EstimatorSpec:
        """The EstimatorSpec of prediction (with export outputs) or evaluation (with metrics)."""
        predictions = self.predictions(logits)
        if mode == tf.estimator.ModeKeys.PREDICT:
            outputs = {"serving_default": tf.estimator.export.PredictOutput(predictions)}
            return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=outputs)
        metrics = self.metrics(labels, predictions["class_ids"])
        return tf.estimator.EstimatorSpec(mode, loss=self.loss(logits, labels), eval_metric_ops=metrics)

    def training_spec(
        self, loss: tf.Tensor, accuracy: tf.Tensor, train_op: tf.Operation, chief_hooks: list
    ) -> tf.estimator.EstimatorSpec:
        tf.compat.v1.summary.scalar(f"train_{METRIC}", accuracy)
        return tf.estimator.EstimatorSpec(
            tf.estimator.ModeKeys.TRAIN, loss=loss, train_op=train_op, training_chief_hooks=chief_hooks
        )


def higher_metric(best_eval_result: dict, current_eval_result: dict) -> bool:
    """The BestExporter's comparison: whether the current evaluation beats the best so far."""
    return current_eval_result[METRIC] > best_eval_result[METRIC]
