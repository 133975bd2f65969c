"""The job's results beyond checkpoints: exports where the user wants them, the metrics file,
and the metric that Vertex AI's hyperparameter tuning service reads."""

from __future__ import annotations

import json
import logging
import os
import posixpath
import time

import tensorflow as tf

log = logging.getLogger(__name__)

METRICS_FILE = "eval_metrics.json"
TUNING_METRIC = "accuracy"
# Where the tuning service reads metrics, in cloudml-hypertune's JSON-lines format.
TUNING_FILE = os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics")


class ExportTo(tf.estimator.Exporter):
    """Runs an exporter into FOLDER/NAME instead of the Estimator's fixed MODEL_DIR/export/NAME."""

    def __init__(self, exporter: tf.estimator.Exporter, folder: str):
        self._exporter = exporter
        self._folder = folder

    @property
    def name(self) -> str:
        return self._exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        folder = posixpath.join(self._folder, self.name)
        return self._exporter.export(estimator, folder, checkpoint_path, eval_result, is_the_final_export)


class MetricsWriter(tf.estimator.Exporter):
    """After every evaluation (on whichever task evaluates, alone or in a cluster): writes the
    metrics to JOB_DIR/eval_metrics.json and, in a tuning trial, reports the tuning metric."""

    def __init__(self, job_dir: str):
        self._path = posixpath.join(job_dir, METRICS_FILE)

    @property
    def name(self) -> str:
        return "metrics"

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        metrics = plain(eval_result)
        with tf.io.gfile.GFile(self._path, "w") as file:
            file.write(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
        if "CLOUD_ML_TRIAL_ID" in os.environ or "CLOUD_ML_HP_METRIC_FILE" in os.environ:
            report_tuning_metric(metrics[TUNING_METRIC], metrics["global_step"])
        return None


def plain(metrics: dict) -> dict:
    """Evaluation results (numpy scalars) as plain JSON numbers."""
    return {key: value.item() if hasattr(value, "item") else value for key, value in metrics.items()}


def report_tuning_metric(value: float, global_step: int) -> None:
    """One JSON line in the format the cloudml-hypertune package writes, without depending on it."""
    os.makedirs(os.path.dirname(TUNING_FILE), exist_ok=True)
    line = {
        "timestamp": time.time(),
        "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "0"),
        TUNING_METRIC: str(float(value)),
        "global_step": str(int(global_step)),
    }
    with open(TUNING_FILE, "a", encoding="utf-8") as file:
        file.write(json.dumps(line, sort_keys=True) + "\n")
    log.info("Reported %s = %.4f at step %d for hyperparameter tuning", TUNING_METRIC, value, global_step)
