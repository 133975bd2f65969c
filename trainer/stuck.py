"""Ending a task that TensorFlow's C++ code holds, so that it stops in one line instead of hanging.

A training task whose parameter server died waits in the session's close, in C++, for good (TensorFlow 2.15);
a step whose input queue starves waits there until --input-timeout-secs, or for good without one. Its main
thread does not return to Python, so it cannot run a signal handler either. Python's C handler writes each
signal to a wakeup fd as it arrives, and watchers, each a thread, act on it:
- after Ctrl-C: while a session runs, the handler only notes it, and StopOnCtrlCHook raises KeyboardInterrupt
  after the step (exit 130, as after any Ctrl-C). A session still running CTRL_C_SECS later (a step waiting
  for its input) is asked to stop with KeyboardInterrupt as its coordinator's exception: its input queues
  close, the step fails, and the session raises the coordinator's exception in place of the step's error,
  before any hook's end (which would save a checkpoint and evaluate, as at the end of the input). Raised by
  the handler itself, KeyboardInterrupt could land while TensorFlow turns the step's error into Python's,
  which then fails with a RuntimeError and a traceback.
- after SIGTERM: a task that has not stopped STUCK_SECS later is ended (exit 143, as SIGTERM's);
- in a cluster: a task that has taken no step for twice --input-timeout-secs (each step's input deadline, so
  no input stall lasts that long) is ended (exit 1), so that the job fails rather than waits for its timeout.
The chief's checkpoints stay: a rerun resumes from the last one.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import weakref

import tensorflow as tf

log = logging.getLogger(__name__)

# Seconds a task may take after SIGTERM to save its checkpoint and stop; the environment shortens it for tests.
STUCK_SECS = float(os.environ.get("QUEUE_TRAINER_STUCK_SECS", 90))
LOOK_SECS = 5  # how often the step watcher looks
# Seconds after Ctrl-C before a running session is asked to stop: a step that is not waiting ends within them,
# and Python raises KeyboardInterrupt on its own.
CTRL_C_SECS = 2
_watched = threading.Event()  # one watcher a process
_sessions = weakref.WeakSet()  # the coordinators of the sessions started (training, evaluation)
_interrupted = threading.Event()  # Ctrl-C while a session ran, not yet raised
_handler_before = []  # the SIGINT handler that ours replaced


def watch_signals() -> None:
    """Starts the watcher of Ctrl-C and SIGTERM, and handles Ctrl-C as the module's docstring says (main thread
    only: it sets the wakeup fd and the handler)."""
    if _watched.is_set() or threading.current_thread() is not threading.main_thread():
        return
    _watched.set()
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)
    _handler_before.append(signal.signal(signal.SIGINT, _on_ctrl_c))

    def watch() -> None:
        while True:
            for signum in os.read(read, 64):
                if signum == signal.SIGINT:
                    threading.Thread(target=_stop_sessions, name="stop-after-ctrl-c", daemon=True).start()
                elif signum == signal.SIGTERM:
                    threading.Thread(target=_end_after_sigterm, name="stuck-after-sigterm", daemon=True).start()

    threading.Thread(target=watch, name="signal-watcher", daemon=True).start()


def _running() -> list:
    return [coord for coord in list(_sessions) if not coord.should_stop()]


def _on_ctrl_c(signum: int, frame) -> None:
    if _interrupted.is_set() or _running():  # (run late, where _stop_sessions stopped them first)
        _interrupted.set()
    elif _handler_before[0] is not signal.SIG_IGN:  # as before: Python's default raises KeyboardInterrupt
        raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """KeyboardInterrupt where Ctrl-C came while a session ran: after a step, after a session, or where a step
    that the session's start ran failed because its input queues were closed (OutOfRangeError)."""
    if _interrupted.is_set():
        _interrupted.clear()
        raise KeyboardInterrupt


def _stop_sessions() -> None:
    time.sleep(CTRL_C_SECS)
    running = _running()
    if not running:
        return
    log.info("Ctrl-C: a step is waiting for its input; closing the input queues")
    _interrupted.set()  # before they stop: the handler runs only once the step has ended
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:  # as the coordinator takes an exception: being handled
        stop = sys.exc_info()
    for coord in running:
        coord.request_stop(stop)


def _end_after_sigterm() -> None:
    time.sleep(STUCK_SECS)
    _end(f"SIGTERM {STUCK_SECS:.0f} s ago, and this task has not stopped", 128 + signal.SIGTERM)


class StopOnCtrlCHook(tf.estimator.SessionRunHook):
    """Lets Ctrl-C stop a training or evaluation session whose step waits for its input (see the module's
    docstring). First among a session's hooks: the next may wait for input already as the session starts
    (trainer/input.py's StagingHook)."""

    def after_create_session(self, session, coord):
        watch_signals()
        _interrupted.clear()  # a Ctrl-C noted for a session before, which its coordinator raised
        _sessions.add(coord)

    def after_run(self, run_context, run_values):
        raise_if_interrupted()

    def end(self, session):  # a waiting step ended by the closed queues ends the session as its input's end does
        raise_if_interrupted()


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
