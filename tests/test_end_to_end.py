"""The whole slice: preprocess -> train_and_evaluate -> export -> serve, as a user runs it."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from preprocessing.schema import parse_examples
from trainer.config import Config
from trainer.dataset import locate
from trainer.experiment import latest_export, make_estimator
from trainer.input import make_input_fn


def run_task(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "trainer.task", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory, digits_dir):
    """A short training run on the preprocessed digits, through the command line."""
    job_dir = str(tmp_path_factory.mktemp("job"))
    args = ["--data-dir", digits_dir, "--job-dir", job_dir, "--train-steps", "300", "--save-checkpoints-steps", "150"]
    result = run_task(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    return job_dir, args, result


def test_training_writes_checkpoints_metrics_and_exports(trained):
    job_dir, _, result = trained
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        metrics = json.load(file)
    assert metrics["global_step"] == 300
    assert metrics["accuracy"] > 0.9  # 300 steps on the digits; the full default run reaches ~0.99
    assert tf.train.latest_checkpoint(job_dir).endswith("model.ckpt-300")
    for name in ("latest", "best"):
        export = latest_export(job_dir, name)
        assert export and os.path.exists(os.path.join(export, "saved_model.pb"))
        assert f"{name} export:" in result.stdout
    assert f"accuracy:       {metrics['accuracy']:.4f}" in result.stdout
    assert "is deprecated" not in result.stderr


def test_rerun_resumes_from_the_last_checkpoint(trained, tmp_path):
    job_dir, args, _ = trained
    result = run_task(*args[:-4], "--train-steps", "350", "--save-checkpoints-steps", "150")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Restoring parameters from" in result.stderr and "model.ckpt-300" in result.stderr
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        assert json.load(file)["global_step"] == 350


def test_saved_model_agrees_with_estimator_predict(trained, digits_dir):
    job_dir, _, _ = trained
    config = Config(data_dir=digits_dir, job_dir=job_dir)
    data = locate(config)
    estimator = make_estimator(config, data.metadata)
    expected = list(estimator.predict(make_input_fn(data.eval, data.metadata, config, training=False)))
    serialized = list(tf.data.TFRecordDataset(data.eval).as_numpy_iterator())
    images, _ = parse_examples(tf.constant(serialized), data.metadata)
    assert len(expected) == len(serialized) == data.metadata.splits["eval"].examples

    model = tf.saved_model.load(latest_export(job_dir, "latest"))
    raw = model.signatures["serving_default"](image=tf.cast(images, tf.float32))
    examples = model.signatures["examples:serving_default"](examples=tf.constant(serialized))
    for outputs in (raw, examples):
        np.testing.assert_array_equal(outputs["class_ids"].numpy(), [p["class_ids"] for p in expected])
        np.testing.assert_allclose(outputs["probabilities"].numpy(), [p["probabilities"] for p in expected], atol=1e-5)
        assert [c.decode() for c in outputs["classes"].numpy()] == [p["classes"].decode() for p in expected]


def test_task_with_missing_data_says_so_in_one_line(tmp_path):
    result = run_task("--data-dir", str(tmp_path), "--job-dir", str(tmp_path / "job"))
    assert result.returncode == 2
    assert "metadata.json does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_task_ignores_flags_added_by_a_cloud_service(tmp_path):
    result = run_task("--config", str(tmp_path / "missing.yaml"), "--some-cloud-flag", "x")
    assert "Ignoring arguments this trainer does not know: --some-cloud-flag x" in result.stderr
    assert result.returncode == 2 and "missing.yaml" in result.stderr
