"""Distributed training through TF_CONFIG: a real cluster of processes on 127.0.0.1."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from preprocessing.sources import from_arrays
from preprocessing.writer import build_dataset
from trainer import averaging
from trainer.devices import TOWERS_ON_CPUS

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_num_epochs_is_refused_in_a_cluster_instead_of_leaving_the_evaluator_waiting(tmp_path, digits_dir):
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
    tf_config = json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}})
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.task",
            "--data-dir",
            digits_dir,
            "--job-dir",
            str(tmp_path),
            "--num-epochs",
            "1",
        ],
        env={**os.environ, "TF_CONFIG": tf_config},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert "--num-epochs: not for a TF_CONFIG cluster" in result.stderr.strip().splitlines()[-1]


def test_a_table_with_hashed_columns_and_dates_trains_on_a_cluster_of_towers(tmp_path):
    """Chief, a worker, a parameter server and the evaluator, as processes, on a table whose badges hash
    into buckets and whose hire dates become features: the embeddings and the averaged weights live on the
    parameter server, and chief and worker each run two towers (on virtual CPU devices), as on GPU machines."""
    from test_tables_serving import census_like

    from preprocessing.tables import TableOptions, build_table_dataset

    (tmp_path / "census.csv").write_text(census_like(3000))
    data_dir, job_dir = str(tmp_path / "data"), str(tmp_path / "job")
    options = TableOptions(label_column="income", max_categories=20, min_frequency=3)  # badges past 20 hash
    metadata = build_table_dataset(str(tmp_path / "census.csv"), data_dir, options, shards=4)
    assert {column.name: column.hash_buckets > 0 for column in metadata.columns}["badge"]
    # The Estimator starts worker i (i + 1) x 5 s after the chief; on 2 busy cores worker-0
    # joins about 10 s in, so the target must outlast that with room to spare.
    target = 1500
    result = subprocess.run(
        [
            sys.executable, os.path.join(ROOT, "scripts", "local_cluster.py"), "--workers", "1", "--ps", "1", "--",
            "--data-dir", data_dir, "--job-dir", job_dir, "--train-steps", str(target),
            "--save-checkpoints-steps", "500", "--eval-start-delay-secs", "1", "--eval-throttle-secs", "1",
            "--num-towers", "2",
        ],
        capture_output=True, text=True, timeout=900, env={**os.environ, TOWERS_ON_CPUS: "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    steps = {name: int(n) for name, n in re.findall(r"^(\w+-\d): (\d+) steps$", result.stdout, re.M)}
    assert set(steps) == {"chief-0", "worker-0"} and all(n > 0 for n in steps.values()), steps  # both trained
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        metrics = json.load(file)  # written by the evaluator
    assert metrics["global_step"] >= target and metrics["accuracy"] > 0.8 and metrics["auc"] > 0.85
    stored = [name for name, _ in tf.train.list_variables(job_dir)]  # the means, kept beside their weights
    assert f"{averaging.SCOPE}/classifier/logits/kernel" in stored and "classifier/logits/kernel" in stored
    for name in ("latest", "best"):  # in a cluster the evaluator runs the exporters
        exported = os.path.join(job_dir, "export", name)
        assert any(os.path.exists(os.path.join(exported, v, "saved_model.pb")) for v in os.listdir(exported))
    with open(os.path.join(job_dir, "cluster-logs", "worker-0.log")) as file:
        log = file.read()
    assert "This worker reads 2 of the 4 training files" in log
    assert "2 tower(s) x batch 128 = global batch 256" in log  # each worker runs its own towers


def test_early_stopping_ends_every_task_of_a_cluster(tmp_path):
    """The chief stops when the metric stalls, the worker follows through the parameter server, and the
    evaluator, which would wait for --train-steps, ends after the last checkpoint: all exit 0. Labels of
    pure noise stall the AUC within a few evaluations."""
    rng = np.random.default_rng(0)
    data_dir, job_dir = str(tmp_path / "noise"), str(tmp_path / "job")
    x, y = rng.normal(size=(400, 16)).astype(np.float32), rng.integers(0, 2, 400)
    build_dataset(from_arrays(x, y, "noise"), data_dir, source="npz", workers=1, shards=3)
    target = 1_000_000
    result = subprocess.run(
        [
            sys.executable, os.path.join(ROOT, "scripts", "local_cluster.py"), "--workers", "1", "--ps", "1", "--",
            "--data-dir", data_dir, "--job-dir", job_dir, "--train-steps", str(target), "--learning-rate", "0.01",
            "--save-checkpoints-steps", "100", "--keep-checkpoint-max", "50",  # outlives an evaluation
            "--eval-start-delay-secs", "1", "--eval-throttle-secs", "1",
            "--early-stopping-evals", "2",
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    with open(os.path.join(job_dir, "early_stopped.json")) as file:
        stop = json.load(file)
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        metrics = json.load(file)
    assert stop["best_step"] < stop["step"] <= metrics["global_step"] < target
    for task in ("chief-0", "worker-0", "evaluator-0"):
        with open(os.path.join(job_dir, "cluster-logs", f"{task}.log")) as file:
            assert "Traceback" not in file.read(), task
    assert os.path.exists(os.path.join(job_dir, "report.md"))  # the evaluator's last evaluation was the final one
