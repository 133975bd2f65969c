"""Distributed training through TF_CONFIG: a real cluster of processes on 127.0.0.1."""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from dataformat.errors import UserError
from preprocessing.sources import from_arrays
from preprocessing.writer import build_dataset
from trainer import averaging
from trainer.cluster import SHAPE, check_tf_config
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


@pytest.mark.parametrize(
    "tf_config, said",
    [
        ("not json", "TF_CONFIG: not JSON (Expecting value"),
        (" ", "TF_CONFIG is set but empty: unset it to train on one machine"),
        ("[]", "TF_CONFIG: a JSON list, where it is {"),
        ('{"cluster": {"chief": "a:1"}, "task": {"type": "chief", "index": 0}}', "cluster chief must be a list of"),
        ('{"cluster": {"chief": ["a:1"]}, "task": {"type": "worker", "index": 0}}', "task worker 0 is not in its"),
        ('{"cluster": {"chief": ["a:1"]}, "task": {"type": "chief", "index": 3}}', "task chief 3 is not in its"),
        ('{"cluster": {"chief": ["a:1"]}, "task": {"type": "chief"}}', "its task needs a type (a job's name) and"),
        ('{"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief", "index": 1}}', 'only one "chief" node'),
    ],
)
def test_a_tf_config_the_estimator_cannot_read_is_one_line(monkeypatch, tf_config, said):
    """Each of these ended in a traceback: a JSONDecodeError, an AttributeError, a TypeError or a ValueError."""
    monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(UserError) as refused:
        check_tf_config()
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_a_wrong_tf_config_stops_the_trainer_with_exit_2_before_it_writes(tmp_path, digits_dir, monkeypatch):
    job = tmp_path / "job"
    command = [sys.executable, "-m", "trainer.task", "--data-dir", digits_dir, "--job-dir", str(job)]
    result = subprocess.run(command, env={**os.environ, "TF_CONFIG": "[]"}, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(f"TF_CONFIG: a JSON list, where it is {SHAPE}")
    assert not job.exists()
    fine = {"cluster": {"chief": ["a:1"], "ps": ["b:2"]}, "task": {"type": "evaluator", "index": "0"}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(fine))  # an index as a string, which the Estimator reads too
    check_tf_config()


def test_a_chief_waiting_for_its_parameter_server_names_it_and_ctrl_c_ends_it(tmp_path, digits_dir):
    """The session waits for the parameter server in C++, for good: nothing was said, and Ctrl-C, whose handler
    never ran, did nothing for 10 minutes."""
    with socket.socket() as one, socket.socket() as other:  # two free ports, held together so they differ
        one.bind(("127.0.0.1", 0))
        other.bind(("127.0.0.1", 0))
        chief, ps = (f"127.0.0.1:{sock.getsockname()[1]}" for sock in (one, other))  # nothing will listen at ps
    tf_config = {"cluster": {"chief": [chief], "ps": [ps]}, "task": {"type": "chief", "index": 0}}
    env = {**os.environ, "TF_CONFIG": json.dumps(tf_config), "QUEUE_TRAINER_WAITING_SECS": "1"}
    command = [sys.executable, "-m", "trainer.task", "--data-dir", digits_dir, "--job-dir", str(tmp_path / "job")]
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as chief:
        silent = threading.Timer(120, chief.kill)  # a chief that says nothing ends the test, not the suite
        silent.start()
        try:
            waiting = next((line for line in chief.stderr if "WARNING" in line or "ERROR" in line), "")
            chief.send_signal(signal.SIGINT)
            assert chief.wait(timeout=30) == 130
        finally:
            silent.cancel()
            chief.kill()
        last = chief.stderr.read().strip().splitlines()[-1]
    assert waiting.rstrip().endswith(f"for the cluster: no answer from ps 0 at {ps}")
    assert "Ctrl-C while waiting for the cluster: stuck in TensorFlow (its other tasks not up?)" in last


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
    # The Estimator starts worker i (i + 1) x 5 s after the chief, and a worker that finds the variables not yet
    # initialized looks again 30 s later (TensorFlow's SessionManager): the chief must train for longer than 35 s.
    # 1,500 steps took 23 s here, and a worker that came too late failed the test now and then.
    target = 3000
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
            "--eval-start-delay-secs", "1", "--eval-throttle-secs", "0",  # as the docs' early-stopping example
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
            log = file.read()
        assert "Traceback" not in log, task
        assert "throttle_secs is set as 0" not in log  # the evaluator pauses between looks (it looped, warning)
    assert os.path.exists(os.path.join(job_dir, "report.md"))  # the evaluator's last evaluation was the final one


def _task_pids(launcher: subprocess.Popen) -> dict[str, int]:
    """The launcher's tasks by TF_CONFIG's task type (one each here)."""
    found = {}
    for folder in glob.glob("/proc/[0-9]*"):
        try:
            with open(os.path.join(folder, "stat")) as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
            with open(os.path.join(folder, "environ"), "rb") as file:
                environment = file.read().split(b"\0")
        except (OSError, ValueError):
            continue
        for entry in environment if parent == launcher.pid else ():
            if entry.startswith(b"TF_CONFIG="):
                found[json.loads(entry[len(b"TF_CONFIG=") :])["task"]["type"]] = int(os.path.basename(folder))
    return found


def _noise(tmp_path) -> tuple[str, str]:
    """(data dir, job dir): 400 rows of noise in two training shards, one for the chief and one for the worker."""
    rng = np.random.default_rng(0)
    data_dir, job_dir = str(tmp_path / "noise"), str(tmp_path / "job")
    build_dataset(from_arrays(rng.normal(size=(400, 16)).astype(np.float32), rng.integers(0, 2, 400), "n"), data_dir,
                  source="npz", workers=1, shards=2)  # fmt: skip
    return data_dir, job_dir


def _noise_cluster(tmp_path, *trainer_args: str) -> tuple[subprocess.Popen, str]:
    """A local cluster (a worker, a ps) training on noise for ever, once its chief saved a checkpoint after step 0."""
    data_dir, job_dir = _noise(tmp_path)
    launcher = subprocess.Popen(
        [
            sys.executable, os.path.join(ROOT, "scripts", "local_cluster.py"), "--workers", "1", "--ps", "1", "--",
            "--data-dir", data_dir, "--job-dir", job_dir, "--train-steps", "10000000", "--save-checkpoints-steps", "50",
            *trainer_args,
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.time() + 300
    while not glob.glob(os.path.join(job_dir, "model.ckpt-[1-9]*.index")) and time.time() < deadline:
        time.sleep(0.5)
    return launcher, job_dir


def test_a_lost_parameter_server_fails_the_job_in_one_line(tmp_path):
    """With its parameter server killed, the chief and the worker waited in TensorFlow's session close for good,
    deaf to SIGTERM, and the launcher with them. Now a training task that takes no step for twice
    --input-timeout-secs ends, naming why."""
    launcher, job_dir = _noise_cluster(tmp_path, "--input-timeout-secs", "5")
    os.kill(_task_pids(launcher)["ps"], signal.SIGKILL)
    out, _ = launcher.communicate(timeout=300)
    assert launcher.returncode == 1 and "failed: chief-0, worker-0" in _
    with open(os.path.join(job_dir, "cluster-logs", "chief-0.log")) as file:
        assert re.search(
            r"ERROR no training step for \d+ s \(twice --input-timeout-secs\): stuck in TensorFlow", file.read()
        )


def test_a_sigterm_to_the_launcher_stops_every_task(tmp_path):
    """`timeout`, a CI's cancel or a scheduler sends SIGTERM: the launcher ended and left its four tasks running,
    the parameter server for good. Now each task gets the SIGTERM, the chief saving a checkpoint."""
    launcher, job_dir = _noise_cluster(tmp_path)
    launcher.send_signal(signal.SIGTERM)
    launcher.communicate(timeout=300)
    assert launcher.returncode == 128 + signal.SIGTERM
    left = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as file:
                left += [cmdline] if job_dir.encode() in file.read() else []
        except OSError:  # a process that ended meanwhile
            pass
    assert left == []  # every task ended
    with open(os.path.join(job_dir, "cluster-logs", "chief-0.log")) as file:
        assert re.search(r"SIGTERM at step \d+: saved", file.read())


def test_a_run_that_ends_before_the_workers_join_says_their_files_went_unread(tmp_path):
    """The Estimator starts a worker 5 s after the chief: a short run ended first, having read only the chief's
    half of the training files, and said nothing (its accuracy 0.695 against 0.732 alone)."""
    data_dir, job_dir = _noise(tmp_path)
    result = subprocess.run(
        [
            sys.executable, os.path.join(ROOT, "scripts", "local_cluster.py"), "--workers", "1", "--ps", "1", "--",
            "--data-dir", data_dir, "--job-dir", job_dir, "--train-steps", "64", "--eval-start-delay-secs", "1",
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "worker-0: steps not reported" in result.stdout and "chief-0: 64 steps" in result.stdout  # the chief ran all
    with open(os.path.join(job_dir, "cluster-logs", "chief-0.log")) as file:
        assert "The other 1 training task(s) took no step: they joined after this run's steps were done" in file.read()


def test_a_worker_left_waiting_after_the_chief_succeeded_is_stopped_not_failed():
    """An early stop ended training before a late worker had its session: it then waited for the chief's for good,
    and the launcher for it, 1,800 s. The job is the chief's, as on Vertex AI."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("local_cluster", os.path.join(ROOT, "scripts", "local_cluster.py"))
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    launcher.WORKER_GRACE_SECS = 1
    chief = subprocess.Popen([sys.executable, "-c", "pass"])
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    started = time.time()
    assert launcher.wait_for_training([chief, worker], started + 300) == [0, 0]
    assert worker.poll() is not None and time.time() - started < 60
    failing = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1); raise SystemExit(3)"])
    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    assert launcher.wait_for_training([failing, waiting], time.time() + 300)[0] == 3  # a failure stops the others
    assert waiting.poll() is not None


def test_the_launcher_refuses_no_tasks_and_says_why_a_task_failed(tmp_path, capsys):
    """`--workers -1` crashed the parameter server and reported success; a failed task was only named, its
    one-line error left in its log; a task stopped before it said its steps was reported as 0 steps."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("local_cluster", os.path.join(ROOT, "scripts", "local_cluster.py"))
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    for flags, said in ((["--workers", "-1"], "-1 is not zero or a positive"), (["--ps", "0"], "0 is not a positive")):
        with pytest.raises(SystemExit) as refused:
            launcher.main([*flags, "--", "--job-dir", str(tmp_path / "never")])
        assert refused.value.code == 2 and said in capsys.readouterr().err
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    (logs / "chief-0.log").write_text("10:00:00 INFO Dataset: ...\n10:00:01 ERROR unknown flag --lerning-rate\n")
    (logs / "worker-0.log").write_text('Traceback (most recent call last):\n  File "x.py"\nValueError: no\n')
    (logs / "evaluator-0.log").write_text("10:00:01 ERROR unknown flag --lerning-rate\n")
    assert launcher.report(str(tmp_path), str(logs), 1, [2, 1, 2], 1.0) == 1
    said = capsys.readouterr()
    assert "chief-0 failed: 10:00:01 ERROR unknown flag --lerning-rate" in said.err
    assert "worker-0 failed: ValueError: no" in said.err  # the traceback's exception, not its first line
    assert "chief-0: steps not reported (it was stopped, or failed)" in said.out
