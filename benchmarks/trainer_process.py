"""`python -m trainer.task` as users run it, in a child process that takes timed windows in turns
with the rows measured inside the benchmark's own process.

The trainer keeps its defaults: its hooks, summaries every 100 steps and a checkpoint every 500.
It evaluates and exports once, at its first checkpoint after step 0, before any window. Between its windows
it is paused (SIGSTOP), so it never shares the cores with another row. Its speed comes from the
events file TensorFlow writes in the job dir: the StepCounterHook records the global step and the
wall time every 100 steps. Only the intervals between two such records that both fall inside one
window are timed, so start-up and the pauses never are, nor the end of the evaluation's exports.
Checkpoints stay in: a user's run writes them too.
"""

from __future__ import annotations

import glob
import os
import signal
import statistics
import subprocess
import sys
import time

import tensorflow as tf

from benchmarks.common import ROOT, stats
from trainer.config import EXPORT_DIR
from trainer.export import METRICS_FILE

STEP_TAG = "global_step/sec"  # the StepCounterHook's summary: a global step and its wall time, every 100 steps
SUMMARY_STEPS = 100
# --train-steps and --eval-throttle-secs: the benchmark stops the run itself, and evaluations,
# which pause training for seconds, happen only once, after the first checkpoint.
NEVER = str(10**9)
START_TIMEOUT_SECONDS = 300


def lists_flag(flag: str) -> bool:
    """Whether `python -m trainer.task --help` offers `flag`."""
    command = [sys.executable, "-m", "trainer.task", "--help"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return f"{flag} " in done.stdout


def as_flags(fields: dict) -> list[str]:
    """Config fields as trainer.task flags (a tuple comma-separated, '' for none)."""
    flags = []
    for name, value in fields.items():
        flags += ["--" + name.replace("_", "-"), ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
    return flags


class TrainerProcess:
    """`python -m trainer.task` in a child process: started, then warmed up and paused by
    pause_when_warm(), then let run a while by each window()."""

    def __init__(self, data_dir: str, job_dir: str, flags: list[str], env: dict | None = None):
        if os.path.exists(job_dir):  # the trainer would resume there, and find its evaluation done
            raise FileExistsError(f"{job_dir}: a trainer process needs a new job dir")
        self.job_dir = job_dir
        self.command = [sys.executable, "-m", "trainer.task", "--data-dir", data_dir, "--job-dir", job_dir]
        self.command += ["--train-steps", NEVER, "--eval-throttle-secs", NEVER, *flags]
        self._log_path = f"{job_dir}.log"
        with open(self._log_path, "w") as log:
            self._process = subprocess.Popen(
                self.command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
            )
        self._windows: list[tuple[float, float, float]] = []  # wall-clock start, end, CPU seconds

    def __enter__(self) -> TrainerProcess:
        return self

    def __exit__(self, *exception) -> None:
        if self._process.poll() is None:  # left running by an error
            self._process.kill()
            self._process.wait()

    def pause_when_warm(self, warmup_seconds: float) -> None:
        """Waits until the run has evaluated and exported once (its one evaluation before the end: at
        its first checkpoint after step 0), lets it train `warmup_seconds` more, then pauses it. The
        exports take seconds on a busy machine: a window that began before their end could hold too
        few steps to time."""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not exported(self.job_dir):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self._fail("did not train and evaluate")
            time.sleep(0.1)
        time.sleep(warmup_seconds)
        os.kill(self._process.pid, signal.SIGSTOP)

    def window(self, seconds: float) -> None:
        """Lets the trainer run for `seconds`, then pauses it again."""
        cpu = self._cpu_seconds()
        start = time.time()  # the clock of the events' wall times
        os.kill(self._process.pid, signal.SIGCONT)
        time.sleep(seconds)
        os.kill(self._process.pid, signal.SIGSTOP)
        self._windows.append((start, time.time(), self._cpu_seconds() - cpu))

    def stop(self) -> None:
        """Stops the run as a scheduler would (SIGTERM: it saves and exits, its events written out)."""
        os.kill(self._process.pid, signal.SIGTERM)
        os.kill(self._process.pid, signal.SIGCONT)
        if self._process.wait(timeout=START_TIMEOUT_SECONDS) not in (0, 143):
            self._fail(f"exited with {self._process.returncode}")

    def measurement(self) -> dict:
        """Steps per second in each window (as `measure` reports them), from the events file."""
        steps, evaluated = step_times(self.job_dir), evaluated_steps(self.job_dir)
        rates = [window_rate(steps, evaluated, start, end) for start, end, _ in self._windows]
        if None in rates:
            self._fail("had a window without two summaries of its global step in it: make the windows longer")
        cores = statistics.median(cpu / (end - start) for start, end, cpu in self._windows)
        return {**stats(rates), "cores": cores}

    def _cpu_seconds(self) -> float:
        """The child's user and system CPU time, from /proc (Linux)."""
        with open(f"/proc/{self._process.pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _fail(self, what: str) -> None:
        if self._process.poll() is None:
            self._process.kill()
        with open(self._log_path) as log:
            tail = log.read()[-3000:]
        raise RuntimeError(f"{' '.join(self.command)} {what}; its output ends:\n{tail}")


def events(folder: str) -> list[tf.compat.v1.Event]:
    """Every event in the folder's events files."""
    paths = sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*")))
    return [event for path in paths for event in tf.compat.v1.train.summary_iterator(path)]


def step_times(job_dir: str) -> list[tuple[int, float]]:
    """(global step, wall time) of each StepCounterHook summary, in order."""
    return sorted(
        (event.step, event.wall_time)
        for event in events(job_dir)
        if any(value.tag == STEP_TAG for value in event.summary.value)
    )


def evaluated_steps(job_dir: str) -> set[int]:
    """The global steps at which the run evaluated (and exported): its eval folder's summaries."""
    return {event.step for event in events(os.path.join(job_dir, "eval")) if event.summary.value}


def exported(job_dir: str) -> bool:
    """Whether the run's best export, its last after an evaluation, is written: its metrics file is."""
    return bool(glob.glob(os.path.join(job_dir, EXPORT_DIR, "best", "*", "assets.extra", METRICS_FILE)))


def window_rate(steps: list[tuple[int, float]], evaluated: set[int], start: float, end: float) -> float | None:
    """Steps per second over the intervals between consecutive summaries inside [start, end],
    leaving out any interval during which the run evaluated; None when there is no such interval."""
    inside = [(step, wall) for step, wall in steps if start <= wall <= end]
    pairs = [
        (b_step - a_step, b_wall - a_wall)
        for (a_step, a_wall), (b_step, b_wall) in zip(inside, inside[1:])
        if not any(a_step <= step <= b_step for step in evaluated)
    ]
    if not pairs:
        return None
    return sum(step for step, _ in pairs) / sum(seconds for _, seconds in pairs)
