"""The classification head: what the network's logits mean.

It owns the loss, the evaluation metrics (named in trainer/metrics.py), the predictions and the
export outputs. The metric that picks the best export is --best-metric's (trainer/metrics.py's better_by).
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf

from trainer import metrics as names

AUC_THRESHOLDS = 1000  # the ROC and PR curves' resolution (TensorFlow's binary head uses 200)


@dataclass(frozen=True)
class ClassificationHead:
    class_names: tuple[str, ...]
    class_weights: tuple[float, ...] | None = None  # each class's weight in the training loss (--class-weights)

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

    def metrics(self, labels: tf.Tensor, predictions: dict[str, tf.Tensor]) -> dict:
        """Accuracy, log loss, the confusion matrix, recall and precision per class (by class index),
        and for binary labels those of TensorFlow's binary head (see trainer/metrics.py)."""
        class_ids, probabilities = predictions["class_ids"], predictions["probabilities"]
        cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=predictions["logits"])
        metrics = {
            names.ACCURACY: tf.compat.v1.metrics.accuracy(labels, class_ids),
            names.LOG_LOSS: tf.compat.v1.metrics.mean(cross_entropy),
            names.CONFUSION: self._confusion(labels, class_ids),
        }
        for index in range(self.logits_dimension):
            is_true, is_predicted = tf.equal(labels, index), tf.equal(class_ids, index)
            metrics[f"recall/class_{index}"] = tf.compat.v1.metrics.recall(is_true, is_predicted)
            metrics[f"precision/class_{index}"] = tf.compat.v1.metrics.precision(is_true, is_predicted)
        if self.logits_dimension == 2:
            metrics.update(_binary_metrics(labels, class_ids, probabilities[:, 1]))
        return metrics

    def _confusion(self, labels: tf.Tensor, class_ids: tf.Tensor) -> tuple[tf.Tensor, tf.Operation]:
        """A streaming confusion matrix: (its value, the op that adds a batch to it)."""
        size = self.logits_dimension
        counts = tf.compat.v1.get_local_variable(
            "confusion_matrix", [size, size], tf.int64, tf.compat.v1.zeros_initializer(), use_resource=True
        )
        batch = tf.math.confusion_matrix(labels, class_ids, num_classes=size, dtype=tf.int64)
        return tf.identity(counts), counts.assign_add(batch)

    def loss(self, logits: tf.Tensor, labels: tf.Tensor, example_weights: tf.Tensor | None = None) -> tf.Tensor:
        """The cross entropy's weighted mean, each example weighted by its class's weight and its own
        (--weight-column): sum(w * loss) / sum(w), so that a weight of 2 counts as two copies, a weight of
        0 as none, and weights scaled together (sampling weights of 1e5) train as the same weights."""
        weights = tf.ones_like(labels, tf.float32)
        if self.class_weights is not None:
            weights *= tf.gather(tf.constant(self.class_weights, tf.float32), labels)
        if example_weights is not None:
            weights *= example_weights
        each = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        # Not in the LOSSES collection: the Estimator adds the loss it is given, and with towers or the
        # in-graph loop there is one loss per tower and step.
        return tf.math.divide_no_nan(tf.reduce_sum(weights * each), tf.reduce_sum(weights))

    def accuracy(self, logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        """The batch's accuracy, for the training summary."""
        return tf.reduce_mean(tf.cast(tf.equal(labels, tf.argmax(logits, axis=1)), tf.float32))

    def estimator_spec(
        self, mode: str, logits: tf.Tensor, labels: tf.Tensor | None, passed: dict | None = None
    ) -> tf.estimator.EstimatorSpec:
        """The EstimatorSpec of prediction (with export outputs, and the `passed` inputs as they came: a
        table's keys) or evaluation (with metrics)."""
        predictions = {**self.predictions(logits), **(passed or {})}
        if mode == tf.estimator.ModeKeys.PREDICT:
            outputs = {"serving_default": tf.estimator.export.PredictOutput(predictions)}
            return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=outputs)
        metrics = self.metrics(labels, predictions)
        return tf.estimator.EstimatorSpec(mode, loss=self.loss(logits, labels), eval_metric_ops=metrics)

    def training_spec(
        self, loss: tf.Tensor, accuracy: tf.Tensor, train_op: tf.Operation, chief_hooks: list, scaffold=None
    ) -> tf.estimator.EstimatorSpec:
        tf.compat.v1.summary.scalar(f"train_{names.ACCURACY}", accuracy)
        return tf.estimator.EstimatorSpec(
            tf.estimator.ModeKeys.TRAIN,
            loss=loss,
            train_op=train_op,
            training_chief_hooks=chief_hooks,
            scaffold=scaffold,
        )


def _binary_metrics(labels: tf.Tensor, class_ids: tf.Tensor, positive: tf.Tensor) -> dict:
    """TensorFlow's binary head's metrics; `positive` is each example's probability of class 1."""
    is_positive = tf.equal(labels, 1)
    label_mean = tf.compat.v1.metrics.mean(tf.cast(labels, tf.float32))
    baseline = tf.maximum(label_mean[0], 1.0 - label_mean[0])  # the majority class's rate
    return {
        names.AUC: tf.compat.v1.metrics.auc(is_positive, positive, num_thresholds=AUC_THRESHOLDS),
        names.PR_AUC: tf.compat.v1.metrics.auc(
            is_positive, positive, curve="PR", num_thresholds=AUC_THRESHOLDS, summation_method="careful_interpolation"
        ),
        names.PRECISION: tf.compat.v1.metrics.precision(is_positive, tf.equal(class_ids, 1)),
        names.RECALL: tf.compat.v1.metrics.recall(is_positive, tf.equal(class_ids, 1)),
        names.LABEL_MEAN: label_mean,
        names.PREDICTION_MEAN: tf.compat.v1.metrics.mean(positive),
        names.BASELINE: (baseline, tf.group(label_mean[1])),
        **_counts_at_thresholds(is_positive, positive),
    }


def _counts_at_thresholds(is_positive: tf.Tensor, positive: tf.Tensor) -> dict:
    """True and false positives and negatives at each of CURVE_THRESHOLDS (a prediction is positive at
    a threshold when its probability is above it), for the curves and the threshold table of report.md."""
    thresholds = list(names.CURVE_THRESHOLDS)
    counters = (
        tf.compat.v1.metrics.true_positives_at_thresholds,
        tf.compat.v1.metrics.false_positives_at_thresholds,
        tf.compat.v1.metrics.true_negatives_at_thresholds,
        tf.compat.v1.metrics.false_negatives_at_thresholds,
    )
    return {name: count(is_positive, positive, thresholds) for name, count in zip(names.CURVE_COUNTS, counters)}
