"""Ending a task that TensorFlow's C++ code holds for good, so that it fails in one line instead of hanging.

A training task whose parameter server died waits in the session's close, in C++, for good (TensorFlow 2.15):
it takes no step, and its main thread never returns to Python, so it cannot run a signal handler either.
Two watchers, each a thread, end such a task with a line that says why:
- after SIGTERM: Python's C handler writes each signal to a wakeup fd as it arrives, and a task that has not
  stopped STUCK_SECS later is ended (exit 143, as SIGTERM's);
- in a cluster: a task that has taken no step for twice --input-timeout-secs (each step's input deadline, so
  no input stall lasts that long) is ended (exit 1), so that the job fails rather than waits for its timeout.
The chief's checkpoints stay: a rerun resumes from the last one.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import tensorflow as tf

log = logging.getLogger(__name__)

# Seconds a task may take after SIGTERM to save its checkpoint and stop; the environment shortens it for tests.
STUCK_SECS = float(os.environ.get("QUEUE_TRAINER_STUCK_SECS", 90))
LOOK_SECS = 5  # how often the step watcher looks
_sigterm_watched = threading.Event()  # one watcher a process


def end_if_stuck_after_sigterm() -> None:
    """Ends the process STUCK_SECS after a SIGTERM that it has not stopped on (main thread only: it sets the
    wakeup fd)."""
    if _sigterm_watched.is_set():
        return
    _sigterm_watched.set()
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)

    def watch() -> None:
        while signal.SIGTERM not in os.read(read, 64):
            pass
        time.sleep(STUCK_SECS)
        _end(f"SIGTERM {STUCK_SECS:.0f} s ago, and this task has not stopped", 128 + signal.SIGTERM)

    threading.Thread(target=watch, name="stuck-after-sigterm", daemon=True).start()


class NoStepHook(tf.estimator.SessionRunHook):
    """In a cluster's training task: ends the process when no step has ended for `seconds`, counted from the
    first step (creating the session, which waits for the other tasks, is not a step)."""

    def __init__(self, seconds: float):
        self._seconds = seconds
        self._last = None  # time.monotonic() of the last step's end
        self._done = threading.Event()

    def after_run(self, run_context, run_values):
        if self._last is None:
            threading.Thread(target=self._watch, name="no-step", daemon=True).start()
        self._last = time.monotonic()

    def end(self, session):
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(LOOK_SECS):
            idle = time.monotonic() - self._last
            if idle > self._seconds:
                _end(f"no training step for {idle:.0f} s (twice --input-timeout-secs)", 1)


def _end(what: str, code: int) -> None:
    log.error("%s: stuck in TensorFlow (a parameter server lost?); ending this task. The chief's last checkpoint "
              "stays: rerun the job to resume", what)  # fmt: skip
    os._exit(code)
