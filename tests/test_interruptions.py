"""Interruptions lose nothing: killed or preempted runs resume, killed preprocessing redoes cleanly."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from test_bad_records import write_dataset

from trainer.config import Config
from trainer.devices import TOWERS_ON_CPUS
from trainer.export import latest_export

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines


def start(module, *args, log_path, env=None):
    log = open(log_path, "w")  # noqa: SIM115 - closed by the caller through finish()
    command = [sys.executable, "-m", module, *args]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env), log


def finish(process, log, timeout=300):
    code = process.wait(timeout=timeout)
    log.close()
    return code


def wait_for(path, text, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and text in Path(path).read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared in {path}")


def test_sigterm_saves_a_checkpoint_and_a_rerun_resumes(tmp_path, digits_dir):
    """Preempted with two towers and 8 steps per run, it saves after the current run; the rerun
    resumes with one tower."""
    job_dir = str(tmp_path / "job")
    args = ["--data-dir", digits_dir, "--job-dir", job_dir, "--save-checkpoints-steps", "100000"]
    process, log = start(
        "trainer.task", *args, "--train-steps", "100000", "--progress-secs", "1", "--num-towers", "2",
        "--steps-per-run", "8", log_path=tmp_path / "1.log", env={**os.environ, TOWERS_ON_CPUS: "1"},
    )  # fmt: skip
    wait_for(tmp_path / "1.log", "INFO step ")  # training is under way (the first progress line)
    process.send_signal(signal.SIGTERM)
    assert finish(process, log) == 143
    text = (tmp_path / "1.log").read_text()
    step = int(text.split("SIGTERM at step ")[1].split(":")[0])
    assert step >= 8 and step % 8 == 0  # at the end of a run, not within one
    assert tf.train.latest_checkpoint(job_dir).endswith(f"model.ckpt-{step}")

    resumed = subprocess.run(
        [sys.executable, "-m", "trainer.task", *args, "--train-steps", str(step + 20)], capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"This task ran 20 training steps; the global step is {step + 20}" in resumed.stderr
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        assert json.load(file)["global_step"] == step + 20


def test_sigkill_at_random_moments_then_rerun_reaches_the_target(tmp_path, digits_dir):
    job_dir = str(tmp_path / "job")
    args = ["--data-dir", digits_dir, "--job-dir", job_dir, "--save-checkpoints-steps", "60"]
    moments = random.Random(7).sample([4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 3)
    steps_seen = []
    for attempt, seconds in enumerate(moments):  # runs that would not end by themselves: the kills always cut them
        process, log = start("trainer.task", *args, "--train-steps", "1000000", log_path=tmp_path / f"{attempt}.log")
        time.sleep(seconds)
        process.kill()
        finish(process, log)
        checkpoint = tf.train.latest_checkpoint(job_dir)
        steps_seen.append(int(checkpoint.rsplit("-", 1)[1]) if checkpoint else 0)
    assert steps_seen == sorted(steps_seen)  # never goes back
    target = max(steps_seen[-1] + 40, 800)  # past the last kill, and enough steps for the accuracy below
    final = subprocess.run(
        [sys.executable, "-m", "trainer.task", *args, "--train-steps", str(target)], capture_output=True, text=True
    )
    assert final.returncode == 0, final.stderr[-2000:]
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        metrics = json.load(file)
    assert metrics["global_step"] == target
    assert metrics["accuracy"] > 0.9
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(job_dir))
    assert reader.get_tensor("global_step") == target
    model = tf.saved_model.load(latest_export(Config(job_dir=job_dir), "latest"))
    outputs = model.signatures["serving_default"](image=tf.zeros([2, 8, 8, 1]))
    assert outputs["probabilities"].shape == (2, 10)


def test_preprocessing_killed_midway_reruns_to_the_same_bytes(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "big.npz", x=rng.normal(size=(60_000, 128)).astype(np.float32), y=rng.integers(0, 5, 60_000))
    common = ["--source", "npz", "--input", str(tmp_path / "big.npz"), "--shards", "8", "--workers", "2"]

    complete = subprocess.run(
        [sys.executable, "-m", "preprocessing", *common, "--output", str(tmp_path / "complete")], capture_output=True
    )
    assert complete.returncode == 0, complete.stderr[-2000:]

    output = tmp_path / "interrupted"
    process, log = start("preprocessing", *common, "--output", str(output), log_path=tmp_path / "p.log")
    deadline = time.time() + 120
    while not (output.exists() and any(name.endswith(".tfrecord") for name in os.listdir(output))):
        assert time.time() < deadline and process.poll() is None, "no shard was finished before the run ended"
        time.sleep(0.02)
    process.kill()
    finish(process, log)
    assert not (output / "metadata.json").exists()

    refused = subprocess.run(
        [sys.executable, "-m", "trainer.task", "--data-dir", str(output), "--job-dir", str(tmp_path / "job")],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "not a finished dataset" in refused.stderr

    rerun = subprocess.run(
        [sys.executable, "-m", "preprocessing", *common, "--output", str(output)], capture_output=True
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert sorted(os.listdir(output)) == sorted(os.listdir(tmp_path / "complete"))
    for name in os.listdir(output):
        if name.endswith(".tfrecord"):
            assert (output / name).read_bytes() == (tmp_path / "complete" / name).read_bytes(), name
    first = json.loads((tmp_path / "complete" / "metadata.json").read_text())
    second = json.loads((output / "metadata.json").read_text())
    assert {**first, "extra": None} == {**second, "extra": None}  # only the timings differ


def test_ctrl_c_stops_the_shard_writing_threads_without_finishing_the_dataset(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "big.npz", x=rng.normal(size=(100_000, 128)).astype(np.float32), y=rng.integers(0, 5, 100_000))
    output = tmp_path / "out"
    args = ["--source", "npz", "--input", str(tmp_path / "big.npz"), "--shards", "40", "--workers", "2"]
    process, log = start("preprocessing", *args, "--output", str(output), log_path=tmp_path / "p.log")
    deadline = time.time() + 120
    while not (output.exists() and any(name.endswith(".tfrecord") for name in os.listdir(output))):
        assert time.time() < deadline and process.poll() is None, "no shard was finished before the run ended"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    assert finish(process, log, timeout=60) == 130
    assert "Interrupted: no metadata.json was written" in (tmp_path / "p.log").read_text()
    assert not (output / "metadata.json").exists()
    assert sum(name.endswith(".tfrecord") for name in os.listdir(output)) < 50  # the queued shards never started


def test_sigterm_stops_a_table_preprocessing_as_ctrl_c_does(tmp_path):
    """SIGTERM (timeout, Kubernetes, a preemption) ended the run at once: no line, and 46-59 MB of temporary files
    left in /tmp for good. It now cleans up and says what it left, as after Ctrl-C, and exits 143."""
    rng = np.random.default_rng(0)
    rows = "".join(f"{x:.5f},{'xyz'[i % 3]},{'pq'[i % 2]}\n" for i, x in enumerate(rng.normal(size=300_000)))
    (tmp_path / "t.csv").write_text("a,b,label\n" + rows)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    args = ["--source", "csv", "--input", str(tmp_path / "t.csv"), "--output", str(tmp_path / "out")]
    process, log = start("preprocessing", *args, log_path=tmp_path / "p.log", env=env)
    wait_for(tmp_path / "p.log", "Reading tables")
    process.send_signal(signal.SIGTERM)
    assert finish(process, log, timeout=60) == 143
    assert "Interrupted: no metadata.json was written" in (tmp_path / "p.log").read_text()
    assert os.listdir(tmp_path / "tmp") == []


def test_a_run_started_with_nohup_goes_on_when_its_terminal_closes(tmp_path):
    """SIGHUP is taken as Ctrl-C, except where the process was started to ignore it: a nohup'd qt-preprocess
    stopped when its ssh session closed, as if it had not been nohup'd."""
    rows = "".join(f"{i * 0.5},{'xyz'[i % 3]},{'pq'[i % 2]}\n" for i in range(300_000))
    (tmp_path / "t.csv").write_text("a,b,label\n" + rows)
    args = ["--source", "csv", "--input", str(tmp_path / "t.csv"), "--output", str(tmp_path / "out")]
    with open(tmp_path / "p.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "preprocessing", *args], stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # as nohup starts it
        )  # fmt: skip
        wait_for(tmp_path / "p.log", "Reading tables")
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=120) == 0
    assert (tmp_path / "out" / "metadata.json").exists()


@pytest.mark.parametrize("timeout", ["600", "0"])  # a deadline far off, and none: the step would wait for good
def test_ctrl_c_stops_a_step_that_waits_for_its_input(tmp_path, timeout):
    """Ctrl-C while the input queue starves (a slow bucket, an empty shard) was acted on only when the step's
    deadline passed, and never with --input-timeout-secs 0: Python's handler waits for the blocked session.run."""
    data_dir = write_dataset(tmp_path / "data", [], [])
    args = ["--data-dir", data_dir, "--job-dir", str(tmp_path / "job"), "--input-timeout-secs", timeout]
    process, log = start("trainer.task", *args, "--verbosity", "debug", log_path=tmp_path / "task.log")
    try:
        wait_for(tmp_path / "task.log", "Done running local_init_op")
        time.sleep(2)  # the first step waits for a batch that never comes
        process.send_signal(signal.SIGINT)
        assert finish(process, log, timeout=60) == 130
    finally:
        process.kill()
    text = (tmp_path / "task.log").read_text()
    assert "Ctrl-C: the session has not stopped in 2 s (its step waiting for input?); closing its input queues" in text
    assert "RuntimeError" not in text and "Starting evaluation" not in text  # no evaluation after a Ctrl-C
    assert text.strip().splitlines()[-1].endswith("ERROR Interrupted: rerun the same command to resume (from the "
                                                 "last checkpoint, if one was saved)")  # fmt: skip


def free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_sigterm_stops_a_worker_still_waiting_for_its_cluster(tmp_path, digits_dir):
    cluster = {"chief": [free_address()], "worker": [free_address()], "ps": [free_address()]}  # nobody else runs
    env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}})}
    log_path = tmp_path / "worker.log"
    with open(log_path, "w") as log:
        args = ["--data-dir", digits_dir, "--job-dir", str(tmp_path / "job"), "--verbosity", "debug"]
        worker = subprocess.Popen([sys.executable, "-m", "trainer.task", *args], stdout=log, stderr=log, env=env)
        try:
            wait_for(log_path, "Graph was finalized")  # next: a session, which waits for the parameter server
            time.sleep(2)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == -signal.SIGTERM
        finally:
            worker.kill()


def test_a_second_run_in_the_same_job_dir_is_refused_naming_the_first(tmp_path, digits_dir):
    job_dir = str(tmp_path / "job")
    args = ["--data-dir", digits_dir, "--job-dir", job_dir, "--train-steps", "100000", "--progress-secs", "1"]
    first, log = start("trainer.task", *args, log_path=tmp_path / "1.log")
    try:
        wait_for(tmp_path / "1.log", "INFO step ")
        second = subprocess.run([sys.executable, "-m", "trainer.task", *args], capture_output=True, text=True)
        assert second.returncode == 2
        assert f"--job-dir {job_dir} is in use by another training run (host " in second.stderr
        assert f"pid {first.pid}, since " in second.stderr.strip().splitlines()[-1]
    finally:
        first.kill()  # that a killed holder never blocks a rerun: the SIGKILL tests here and in test_lease.py
        finish(first, log)


def test_ctrl_c_stops_training_with_one_line_and_a_rerun_resumes(tmp_path, digits_dir):
    job_dir = str(tmp_path / "job")
    args = ["--data-dir", digits_dir, "--job-dir", job_dir, "--save-checkpoints-steps", "50", "--progress-secs", "1"]
    process, log = start("trainer.task", *args, "--train-steps", "100000", log_path=tmp_path / "1.log")
    wait_for(tmp_path / "1.log", "INFO step ")
    process.send_signal(signal.SIGINT)
    assert finish(process, log, timeout=120) == 130
    last = (tmp_path / "1.log").read_text().strip().splitlines()[-1]
    assert last.endswith(
        "ERROR Interrupted: rerun the same command to resume (from the last checkpoint, if one was saved)"
    )
    step = int(tf.train.latest_checkpoint(job_dir).rsplit("-", 1)[1])
    resumed = subprocess.run([sys.executable, "-m", "trainer.task", *args, "--train-steps", str(step + 10)],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0 and f"the global step is {step + 10}" in resumed.stderr, resumed.stderr[-2000:]
