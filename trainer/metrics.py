"""The evaluation's metric names and which way each is better: one home for them, without TensorFlow,
so that the flags, the tuning job's checks and the head (trainer/head.py, which computes them) agree.

Every label reports accuracy, the loss (the mean of the batches' losses), log_loss (the mean
cross-entropy over every example) and recall/precision per class. Binary labels add what
TensorFlow's binary head reports: ROC and precision-recall AUC, the positive class's precision
and recall, accuracy_baseline (the majority rate), label/mean and prediction/mean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

ACCURACY, LOSS, LOG_LOSS = "accuracy", "loss", "log_loss"
AUC, PR_AUC, PRECISION, RECALL = "auc", "auc_precision_recall", "precision", "recall"
BASELINE, LABEL_MEAN, PREDICTION_MEAN = "accuracy_baseline", "label/mean", "prediction/mean"
CONFUSION = "confusion_matrix"  # rows: true class, columns: predicted class
# Binary labels: the counts at each of CURVE_THRESHOLDS, for the ROC and precision-recall curves of report.md.
CURVE_COUNTS = ("curve/true_positives", "curve/false_positives", "curve/true_negatives", "curve/false_negatives")
CURVE_THRESHOLDS = tuple(i / 100 for i in range(101))
BINARY_ONLY = (AUC, PR_AUC, PRECISION, RECALL, BASELINE, LABEL_MEAN, PREDICTION_MEAN, *CURVE_COUNTS)
LOWER_IS_BETTER = (LOSS, LOG_LOSS)
# What --best-metric and a tuning study may optimize: the figures of the model's quality, not the
# data's (accuracy_baseline, label/mean) nor the predictions' mean.
# A class's index as the metrics name it: class_1, never class_01 (which passed, and failed after training).
CHOOSABLE = re.compile(
    r"accuracy|loss|log_loss|auc|auc_precision_recall|precision|recall|(recall|precision)/class_(0|[1-9]\d*)"
)
CHOOSABLE_TEXT = (
    "accuracy, loss, log_loss, auc, auc_precision_recall, precision, recall, recall/class_N or precision/class_N"
)


def default_best(num_classes: int) -> str:
    """--best-metric auto: ROC AUC for two classes, log loss for more. A model that predicts the
    majority class for every row scores the majority rate in accuracy, which on imbalanced labels
    beats most real models early in training; its AUC is 0.5 and its log loss the labels' entropy,
    which every model that learned anything beats."""
    return AUC if num_classes == 2 else LOG_LOSS


def resolve_best(setting: str, num_classes: int) -> str:
    return default_best(num_classes) if setting == "auto" else setting


def higher_is_better(name: str) -> bool:
    return name not in LOWER_IS_BETTER


def ranking(metric: str) -> Callable[[dict], tuple]:
    """An evaluation's sort key by `metric`, the better the higher. An exact tie goes to the lower log loss: on a
    small evaluation set AUC often reaches 1.0 early, and the first such evaluation otherwise stayed the best
    export (and stopped training early) however much better the later ones classified."""
    sign = 1 if higher_is_better(metric) else -1
    return lambda evaluation: (sign * evaluation[metric], -evaluation.get(LOG_LOSS, math.inf))  # none: the worst


def better_by(metric: str) -> Callable[[dict, dict], bool]:
    """The BestExporter's comparison by `metric`: whether the current evaluation beats the best so far."""
    key = ranking(metric)

    def better(best_eval_result: dict, current_eval_result: dict) -> bool:  # the names BestExporter requires
        return key(current_eval_result) > key(best_eval_result)

    return better


def goal(name: str) -> str:
    """A Vertex AI study's goal for the metric."""
    return "MAXIMIZE" if higher_is_better(name) else "MINIMIZE"


def problem(name: str, num_classes: int) -> str | None:
    """Why the metric cannot be reported for a dataset of `num_classes` classes, or None."""
    if name in BINARY_ONLY and num_classes != 2:
        return f"only binary labels report it, and the dataset has {num_classes} classes"
    _, _, index = name.partition("/class_")
    if index and int(index) >= num_classes:
        return f"the dataset has {num_classes} classes, class_0 to class_{num_classes - 1}"
    return None


def majority_rate(metrics: dict) -> float | None:
    """The accuracy of always answering the evaluation's most common class, from its confusion matrix (any number
    of classes; for two it equals accuracy_baseline); None without one."""
    if CONFUSION not in metrics:
        return None
    rows = [sum(row) for row in metrics[CONFUSION]]
    return max(rows) / max(sum(rows), 1)
