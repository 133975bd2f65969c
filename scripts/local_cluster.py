"""Runs `python -m trainer.task` as a real TF_CONFIG cluster on 127.0.0.1, to try distributed
training before paying for it: a chief, N workers, parameter servers and an evaluator, each a
process with its own TF_CONFIG, exactly as Vertex AI starts them.

    python scripts/local_cluster.py --workers 2 --ps 1 -- --data-dir data/digits --job-dir runs/cluster

It waits for the chief and workers to finish and for the evaluator to evaluate and export
the final checkpoint, stops the parameter servers, and reports steps, time and accuracy.
Each task's log is JOB_DIR/cluster-logs/TYPE-INDEX.log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

from dataformat.commandline import non_negative_int, positive_int

TIMEOUT_SECS = 1800
STOP_SECS = 60  # a task's time to save a checkpoint and end after SIGTERM
WORKER_GRACE_SECS = 60  # a worker's time to end after the chief succeeded


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: each socket is held until all are found, so the system cannot give one twice."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def cluster_spec(workers: int, ps: int) -> dict[str, list[str]]:
    addresses = [f"127.0.0.1:{port}" for port in free_ports(1 + ps + workers)]
    spec = {"chief": addresses[:1], "ps": addresses[1 : 1 + ps]}
    if workers:
        spec["worker"] = addresses[1 + ps :]
    return spec


def start(task_type: str, index: int, spec: dict, trainer_args: list[str], log_dir: str) -> subprocess.Popen:
    tf_config = {"cluster": spec, "task": {"type": task_type, "index": index}}
    log = open(os.path.join(log_dir, f"{task_type}-{index}.log"), "w")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen(
        [sys.executable, "-m", "trainer.task", *trainer_args],
        env={**os.environ, "TF_CONFIG": json.dumps(tf_config)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def steps_run(log_path: str) -> int | None:
    """The training steps a task reports having run itself (trainer's StepsRunHook), None where it did not say
    (it was stopped, or failed)."""
    with open(log_path) as file:
        found = re.findall(r"This task ran (\d+) training steps", file.read())
    return int(found[-1]) if found else None


def last_error(log_path: str) -> str:
    """A task's last ERROR line (the trainer's one-line error), else its last line (a traceback's exception)."""
    with open(log_path, errors="replace") as file:
        lines = [line.strip() for line in file if line.strip()]
    errors = [line for line in lines if " ERROR " in line]
    return (errors or lines or [f"nothing in {log_path}"])[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=non_negative_int, default=2, help="workers besides the chief (default: 2)")
    parser.add_argument("--ps", type=positive_int, default=1, help="parameter servers (default: 1)")
    parser.add_argument("trainer_args", nargs=argparse.REMAINDER, help="-- then the arguments of trainer.task")
    args = parser.parse_args(argv)
    trainer_args = [a for a in args.trainer_args if a != "--"]
    if "--job-dir" not in trainer_args:
        parser.error("give the trainer a --job-dir after --")
    job_dir = trainer_args[trainer_args.index("--job-dir") + 1]
    log_dir = os.path.join(job_dir, "cluster-logs")
    os.makedirs(log_dir, exist_ok=True)

    spec = cluster_spec(args.workers, args.ps)
    start_time = time.time()
    training, others = [], []  # the chief and workers; the evaluator and the parameter servers
    # A SIGTERM (timeout, a CI's cancel) stops the tasks as Ctrl-C does: it left all four running, the ps forever.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        training.append(start("chief", 0, spec, trainer_args, log_dir))
        training += [start("worker", i, spec, trainer_args, log_dir) for i in range(args.workers)]
        others += [start("evaluator", 0, spec, trainer_args, log_dir)]
        others += [start("ps", i, spec, trainer_args, log_dir) for i in range(args.ps)]
        codes = wait_for_training(training, start_time + TIMEOUT_SECS)
        train_secs = time.time() - start_time
        # The evaluator waits for the last step's checkpoint, which failed training never writes.
        codes.append(others[0].wait(timeout=TIMEOUT_SECS) if not any(codes) else -signal.SIGTERM)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the stopping short
            signal.signal(signum, signal.SIG_IGN)
        stop(training)  # first: the parameter servers hold the variables that a checkpoint on SIGTERM saves
        stop(others)
    return report(job_dir, log_dir, args.workers, codes, train_secs)


def wait_for_training(training: list[subprocess.Popen], deadline: float) -> list[int]:
    """The training tasks' exit codes (the chief's first), once all have ended, one failed (the others are then
    stopped: a worker whose chief died waits for it for good), or the deadline passed. The job is the chief's, as on
    Vertex AI: a worker still running WORKER_GRACE_SECS after the chief succeeded (one that had not joined when an
    early stop ended training waits for the chief's session for good) is stopped, and not counted as failed."""
    chief, finished = training[0], None
    while any(task.poll() is None for task in training) and time.time() < deadline:
        if any(task.poll() for task in training):
            stop(training)
        if chief.poll() == 0:
            finished = finished or time.time()
            if time.time() > finished + WORKER_GRACE_SECS:
                late = [task for task in training if task.poll() is None]
                stop(late)
                print(f"{len(late)} worker(s) stopped {WORKER_GRACE_SECS} s after the chief finished", flush=True)
                return [0 if task in late else task.returncode for task in training]
        time.sleep(0.5)
    stop(training)
    return [task.returncode for task in training]


def stop(tasks: list[subprocess.Popen]) -> None:
    """SIGTERM to the tasks still running (a training task saves a checkpoint on it), then SIGKILL to any that
    has not ended after STOP_SECS: one stuck in TensorFlow's session close (its parameter server gone) hears
    no SIGTERM."""
    running = [task for task in tasks if task.poll() is None]
    for task in running:
        task.terminate()
    deadline = time.time() + STOP_SECS
    for task in running:
        try:
            task.wait(timeout=max(deadline - time.time(), 0.1))
        except subprocess.TimeoutExpired:
            task.kill()
            task.wait()


def report(job_dir: str, log_dir: str, workers: int, codes: list[int], train_secs: float) -> int:
    names = ["chief-0", *(f"worker-{i}" for i in range(workers)), "evaluator-0"]
    failed = [name for name, code in zip(names, codes) if code != 0]
    ran = {name: steps_run(os.path.join(log_dir, name + ".log")) for name in names[:-1]}
    for name, steps in ran.items():
        print(f"{name}: {'steps not reported (it was stopped, or failed)' if steps is None else f'{steps} steps'}")
    metrics_path = os.path.join(job_dir, "eval_metrics.json")
    if os.path.exists(metrics_path):
        with open(metrics_path) as file:
            metrics = json.load(file)
        steps, accuracy, here = metrics["global_step"], metrics["accuracy"], sum(filter(None, ran.values()))
        # The steps this run took: a resumed job's global step counts its earlier runs' too.
        print(f"global step {steps}; {here} steps in {train_secs:.1f} s ({here / train_secs:.1f} steps/s), "
              f"accuracy {accuracy:.4f}")  # fmt: skip
    if failed:
        for name in failed:
            print(f"{name} failed: {last_error(os.path.join(log_dir, name + '.log'))}", file=sys.stderr)
        print(f"failed: {', '.join(failed)}; see {log_dir}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
