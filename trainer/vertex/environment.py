"""What Vertex AI tells a running job through its environment: where to write, which tuning trial
this is, where the tuning service reads the metric, and where its TensorBoard reads summaries.
The environment is read when it is used, never at import time, so a test or a launcher can set
it first."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import posixpath
import time

from trainer.config import Config

log = logging.getLogger(__name__)

# Where the tuning service reads metrics, in cloudml-hypertune's JSON-lines format, by default.
DEFAULT_TUNING_FILE = "/tmp/hypertune/output.metrics"


def trial_id() -> str | None:
    """This hyperparameter-tuning trial's id, or None outside a tuning job."""
    return os.environ.get("CLOUD_ML_TRIAL_ID")


def reports_tuning_metric() -> bool:
    return trial_id() is not None or "CLOUD_ML_HP_METRIC_FILE" in os.environ


def cloud_folders(config: Config) -> Config:
    """Applies the folders Vertex AI passes in the environment, where no flag gives them.

    Checkpoints and summaries go to AIP_CHECKPOINT_DIR, exports to AIP_MODEL_DIR. A tuning
    trial with an explicit --job-dir gets a sub-folder of its own, so that trials never resume
    from each other's checkpoints.
    """
    environ = os.environ
    job_dir = config.job_dir or environ.get("AIP_CHECKPOINT_DIR") or environ.get("AIP_MODEL_DIR")
    if config.job_dir and trial_id() is not None:
        job_dir = posixpath.join(config.job_dir, f"trial-{trial_id()}")
    export_dir = config.export_dir or (None if config.job_dir else environ.get("AIP_MODEL_DIR"))
    if job_dir and (job_dir, export_dir) != (config.job_dir, config.export_dir):  # --job-dir "": None, refused later
        log.info("Job dir %s, exports in %s", job_dir, export_dir or posixpath.join(job_dir, "export"))
    return dataclasses.replace(config, job_dir=job_dir, export_dir=export_dir)


def trial_best_metric(config: Config) -> Config:
    """A tuning trial's best export is chosen by the study's metric, where --best-metric is left to auto: the study
    ranks a trial by its --tuning-metric, and its best/ export, by log loss, held another model (accuracy 0.64 where
    the study counted 0.94)."""
    if config.best_metric != "auto" or not reports_tuning_metric():
        return config
    log.info("Best export by %s, the tuning metric", config.tuning_metric)
    return dataclasses.replace(config, best_metric=config.tuning_metric)


def report_tuning_metric(name: str, value: float, global_step: int) -> None:
    """One JSON line in the format the cloudml-hypertune package writes, without depending on it."""
    path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", DEFAULT_TUNING_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    line = {
        "timestamp": time.time(),
        "trial": trial_id() or "0",
        name: str(float(value)),
        "global_step": str(int(global_step)),
    }
    with open(path, "a", encoding="utf-8") as file:
        file.write(json.dumps(line, sort_keys=True) + "\n")
    log.info("Reported %s = %.4f at step %d for hyperparameter tuning", name, value, global_step)


def tensorboard_log_dir() -> str | None:
    """Where Vertex AI TensorBoard reads summaries (the job's baseOutputDirectory/logs/), or None."""
    return os.environ.get("AIP_TENSORBOARD_LOG_DIR")


def copy_summaries(job_dir: str) -> None:
    """Copies the run's event files (training's in JOB_DIR, evaluation's in JOB_DIR/eval) to
    AIP_TENSORBOARD_LOG_DIR, each that changed since the last copy. The Estimator writes its
    summaries beside its checkpoints and cannot be told otherwise; the copies keep the layout,
    so TensorBoard shows the same two runs there as on JOB_DIR."""
    import tensorflow as tf

    from trainer.figures import EVENTS_GLOB  # imports TensorFlow, as this does only when copying

    target = tensorboard_log_dir()
    if not target or target.rstrip("/") == job_dir.rstrip("/"):
        return
    for run in ("", "eval"):
        for source in tf.io.gfile.glob(posixpath.join(job_dir, run, EVENTS_GLOB)):
            copy = posixpath.join(target, run, posixpath.basename(source))
            if not tf.io.gfile.exists(copy) or tf.io.gfile.stat(copy).length != tf.io.gfile.stat(source).length:
                tf.io.gfile.makedirs(posixpath.dirname(copy))
                tf.io.gfile.copy(source, copy, overwrite=True)
