"""The TF_CONFIG cluster a task belongs to, as Vertex AI and scripts/local_cluster.py describe it: the
description checked before anything starts, this task's role in it, and the training files it reads."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time

import tensorflow as tf

from dataformat.errors import UserError
from trainer import stuck

log = logging.getLogger(__name__)

WAITING_SECS = float(os.environ.get("QUEUE_TRAINER_WAITING_SECS", 30))  # between lines while the session waits
SHAPE = '{"cluster": {"chief": ["host:port"], ...}, "task": {"type": "chief", "index": 0}}'


def check_tf_config() -> None:
    """UserError naming TF_CONFIG where it is set but describes no cluster the Estimator can read: the
    Estimator's own words for it were a traceback."""
    text = os.environ.get("TF_CONFIG")
    if text is None:
        return
    if not text.strip():
        raise UserError("TF_CONFIG is set but empty: unset it to train on one machine, or describe a cluster")
    try:
        tf_config = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"TF_CONFIG: not JSON ({error}); it is {SHAPE}") from None
    if not isinstance(tf_config, dict):
        raise UserError(f"TF_CONFIG: a JSON {type(tf_config).__name__}, where it is {SHAPE}")
    _check_cluster(tf_config.get("cluster", {}))
    _check_task(tf_config.get("task", {}), tf_config.get("cluster", {}))
    try:
        tf.estimator.RunConfig()
    except (ValueError, TypeError) as error:  # what the Estimator checks beyond the shape (one chief, ...)
        raise UserError(f"TF_CONFIG: {str(error).splitlines()[0]}") from None


def _check_cluster(cluster) -> None:
    if not isinstance(cluster, dict):
        raise UserError(f"TF_CONFIG: its cluster must map each job to its addresses, as in {SHAPE}")
    for job, addresses in cluster.items():
        if not (isinstance(addresses, list) and all(isinstance(address, str) for address in addresses)):
            raise UserError(f"TF_CONFIG: cluster {job} must be a list of host:port addresses, not {addresses!r}")


def _check_task(task, cluster: dict) -> None:
    if not isinstance(task, dict):
        raise UserError(f"TF_CONFIG: its task must be this task's type and index, as in {SHAPE}")
    if not cluster:
        return
    kind, index = task.get("type"), task.get("index")
    index = int(index) if isinstance(index, str) and index.isdigit() else index  # the Estimator takes "0" too
    if not isinstance(kind, str) or not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise UserError(f"TF_CONFIG: its task needs a type (a job's name) and an index (0 or more), as in {SHAPE}")
    if kind != "evaluator" and index >= len(cluster.get(kind, [])):  # the evaluator is outside the cluster
        jobs = ", ".join(f"{job} ({len(addresses)})" for job, addresses in cluster.items())
        raise UserError(f"TF_CONFIG: task {kind} {index} is not in its cluster, whose jobs are {jobs}")


def is_chief() -> bool:
    """Whether this task writes the checkpoints: alone, or as a TF_CONFIG cluster's chief."""
    return tf.estimator.RunConfig().is_chief


def is_cluster(run_config: tf.estimator.RunConfig) -> bool:
    """Whether this task is one of several that TF_CONFIG describes."""
    tasks = sum(len(addresses) for addresses in run_config.cluster_spec.as_dict().values())
    return tasks > 1 or run_config.task_type == "evaluator"


def worker_share(files: list[str], run_config: tf.estimator.RunConfig) -> list[str]:
    """The training files this task reads: in a cluster, each of the chief and the workers
    reads its own 1/N of them (when there are at least N files)."""
    replicas = run_config.num_worker_replicas
    if replicas <= 1 or run_config.task_type not in ("chief", "master", "worker"):
        return files
    if len(files) < replicas:
        log.warning("%d training files for %d training tasks: every task reads all of them", len(files), replicas)
        return files
    share = files[run_config.global_id_in_cluster :: replicas]
    log.info("This %s reads %d of the %d training files", run_config.task_type, len(share), len(files))
    return share


class SayWhileWaitingHook(tf.estimator.SessionRunHook):
    """In a cluster's training task: every WAITING_SECS until its session starts, a line naming the tasks it
    waits for (the parameter servers, and the chief, which starts the model) whose address does not answer.
    A session waits for them for good, and TensorFlow's own lines of it are hidden with its INFO."""

    def __init__(self, run_config: tf.estimator.RunConfig):
        self._cluster = run_config.cluster_spec.as_dict()
        self._this = (run_config.task_type, run_config.task_id)
        self._started = threading.Event()

    def begin(self):
        stuck.waiting_for_cluster(True)
        threading.Thread(target=self._say, name="waiting-for-the-cluster", daemon=True).start()

    def after_create_session(self, session, coord):
        self._done_waiting()

    def end(self, session):
        self._done_waiting()

    def _done_waiting(self) -> None:
        stuck.waiting_for_cluster(False)
        self._started.set()

    def _say(self) -> None:
        start = time.monotonic()
        while not self._started.wait(WAITING_SECS):
            silent = [
                f"{job} {index} at {address}"
                for job, addresses in self._cluster.items()
                if job in ("ps", "chief", "master")
                for index, address in enumerate(addresses)
                if (job, index) != self._this and not answers(address)
            ]
            log.warning(
                "Waiting %.0f s for the cluster: %s",
                time.monotonic() - start,
                f"no answer from {', '.join(silent)}" if silent else "its parameter servers and chief answer",
            )


def answers(address: str) -> bool:
    """Whether something listens at host:port ([::1]:port for IPv6)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False
