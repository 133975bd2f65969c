"""What Vertex AI passes in the environment: output folders, tuning trials, the tuning metric, the
TensorBoard log folder."""

import json
import os
import subprocess
import sys

import pytest

from dataformat.errors import UserError
from trainer import metrics
from trainer.config import Config
from trainer.vertex.environment import cloud_folders, copy_summaries, trial_best_metric


def test_flags_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("AIP_MODEL_DIR", "gs://b/out/model")
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", "gs://b/out/checkpoints")
    config = cloud_folders(Config(job_dir="gs://b/mine"))
    assert (config.job_dir, config.export_dir) == ("gs://b/mine", None)


def test_environment_folders_apply_without_flags(monkeypatch):
    monkeypatch.setenv("AIP_MODEL_DIR", "gs://b/out/model")
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", "gs://b/out/checkpoints")
    config = cloud_folders(Config())
    assert (config.job_dir, config.export_dir) == ("gs://b/out/checkpoints", "gs://b/out/model")


def test_a_tuning_trial_gets_its_own_job_dir(monkeypatch):
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    assert cloud_folders(Config(job_dir="gs://b/tuning")).job_dir == "gs://b/tuning/trial-7"


def test_a_tuning_trials_best_export_is_chosen_by_the_studys_metric(monkeypatch):
    """The study ranked a trial by its accuracy (0.94 at step 50), and best/ held the log-loss best (0.64)."""
    assert trial_best_metric(Config(tuning_metric="accuracy")).best_metric == "auto"  # no trial: as it was
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    assert trial_best_metric(Config(tuning_metric="accuracy")).best_metric == "accuracy"
    assert trial_best_metric(Config(tuning_metric="accuracy", best_metric="auc")).best_metric == "auc"  # as given


def test_summaries_are_copied_where_vertex_ai_tensorboard_reads_them(monkeypatch, tmp_path):
    job_dir, logs = tmp_path / "job", tmp_path / "logs"
    (job_dir / "eval").mkdir(parents=True)
    (job_dir / "events.out.tfevents.1.host").write_bytes(b"train")
    (job_dir / "eval" / "events.out.tfevents.2.host").write_bytes(b"eval")
    (job_dir / "model.ckpt-1.index").write_bytes(b"checkpoint")
    copy_summaries(str(job_dir))  # no AIP_TENSORBOARD_LOG_DIR: nothing to do
    assert not logs.exists()
    monkeypatch.setenv("AIP_TENSORBOARD_LOG_DIR", str(logs))
    copy_summaries(str(job_dir))
    assert sorted(str(p.relative_to(logs)) for p in logs.rglob("*") if p.is_file()) == [
        "eval/events.out.tfevents.2.host",
        "events.out.tfevents.1.host",
    ]
    (job_dir / "events.out.tfevents.1.host").write_bytes(b"train, and more")  # event files grow
    copy_summaries(str(job_dir))
    assert (logs / "events.out.tfevents.1.host").read_bytes() == b"train, and more"


@pytest.mark.parametrize("classes", [("a", "b"), ("a", "b", "c")])
def test_the_tuning_metrics_are_the_names_the_evaluation_gives(classes):
    import tensorflow as tf

    from trainer.head import ClassificationHead

    head = ClassificationHead(classes)
    with tf.Graph().as_default():
        names = set(head.metrics(tf.constant([0]), head.predictions(tf.constant([[0.0] * len(classes)]))))
    not_choosable = {metrics.CONFUSION, metrics.BASELINE, metrics.LABEL_MEAN, metrics.PREDICTION_MEAN}
    not_choosable |= set(metrics.CURVE_COUNTS)
    choosable = {name for name in names | {metrics.LOSS} if metrics.CHOOSABLE.fullmatch(name)}
    assert choosable == (names - not_choosable) | {metrics.LOSS}
    assert all(metrics.problem(name, len(classes)) is None for name in names)
    assert (metrics.AUC in names) == (len(classes) == 2)


def test_a_tuning_metric_the_trainer_cannot_report_is_one_line():
    from trainer.export import MetricsWriter

    with pytest.raises(UserError, match=r"^--tuning-metric f1: must be accuracy, loss, log_loss, auc, "):
        Config(tuning_metric="f1")
    with pytest.raises(UserError, match=r"^--best-metric auc_roc: must be auto, accuracy, loss, log_loss, auc, "):
        Config(best_metric="auc_roc")
    with pytest.raises(
        UserError, match=r"^--tuning-metric recall/class_3: the dataset has 3 classes, class_0 to class_2$"
    ):
        MetricsWriter("/tmp/unused", ("a", "b", "c"), "recall/class_3", "log_loss")
    with pytest.raises(UserError, match=r"^--tuning-metric auc: only binary labels report it, and the dataset has 3"):
        MetricsWriter("/tmp/unused", ("a", "b", "c"), "auc", "log_loss")


@pytest.mark.slow
def test_a_trial_writes_where_vertex_says_and_reports_the_asked_metric(tmp_path, digits_dir):
    env = {
        **os.environ,
        "AIP_MODEL_DIR": str(tmp_path / "model"),
        "AIP_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "CLOUD_ML_TRIAL_ID": "3",
        "CLOUD_ML_HP_METRIC_FILE": str(tmp_path / "hypertune" / "output.metrics"),
        "AIP_TENSORBOARD_LOG_DIR": str(tmp_path / "logs"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "trainer.task", "--data-dir", digits_dir, "--train-steps", "40",
         "--tuning-metric", "recall/class_1"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.path.exists(tmp_path / "checkpoints" / "model.ckpt-40.index")
    assert os.path.exists(tmp_path / "checkpoints" / "eval_metrics.json")
    for name in ("latest", "best"):
        (version,) = os.listdir(tmp_path / "model" / name)
        assert os.path.exists(tmp_path / "model" / name / version / "saved_model.pb")
    for run in ("", "eval"):  # the training and evaluation summaries, for Vertex AI TensorBoard
        assert [name for name in os.listdir(tmp_path / "logs" / run) if name.startswith("events.out.tfevents")]
    lines = (tmp_path / "hypertune" / "output.metrics").read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["trial"] == "3" and last["global_step"] == "40" and 0 <= float(last["recall/class_1"]) <= 1
    assert "accuracy" not in last  # only the metric the study optimizes
