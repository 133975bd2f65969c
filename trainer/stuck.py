"""Ending a task that TensorFlow's C++ code holds, so that it stops in one line instead of hanging.

A training task whose parameter server died waits in the session's close, in C++, for good (TensorFlow 2.15);
a step whose input queue starves waits there until --input-timeout-secs, or for good without one. Its main
thread does not return to Python, so it cannot run a signal handler either. Python's C handler writes each
signal to a wakeup fd as it arrives, and watchers, each a thread, act on it:
- after Ctrl-C while a cluster's training task waits for the others as its session starts (waiting_for_cluster):
  a task whose handler has not run HELD_SECS later is held in C++, and is ended (exit 130, as after any Ctrl-C);
- after Ctrl-C: while a session is open, the handler only notes it, and StopOnCtrlCHook raises KeyboardInterrupt
  after the step (exit 130, as after any Ctrl-C). A session still open CTRL_C_SECS later (a step waiting for
  its input) is asked to stop with KeyboardInterrupt as its coordinator's exception: its input queues close,
  the step fails, and the session raises the coordinator's exception in place of the step's error, before any
  hook's end (which would save a checkpoint and evaluate, as at the end of the input). Raised by the handler
  itself, KeyboardInterrupt could land while TensorFlow turns the step's error into Python's, which then fails
  with a RuntimeError and a traceback.
- after SIGTERM: a task that has not stopped STUCK_SECS later is ended (exit 143, as SIGTERM's);
- in a cluster: a task that has taken no step for twice --input-timeout-secs (each step's input deadline, so
  no input stall lasts that long) is ended (exit 1), so that the job fails rather than waits for its timeout.
The chief's checkpoints stay: a rerun resumes from the last one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import tensorflow as tf

log = logging.getLogger(__name__)

# Seconds a task may take after SIGTERM to save its checkpoint and stop; the environment shortens it for tests.
STUCK_SECS = float(os.environ.get("QUEUE_TRAINER_STUCK_SECS", 90))
LOOK_SECS = 5  # how often the step watcher looks
# Seconds after Ctrl-C before an open session is asked to stop: a step that is not waiting ends within them, and
# StopOnCtrlCHook raises KeyboardInterrupt after it.
CTRL_C_SECS = 2
HELD_SECS = 5  # after Ctrl-C while waiting for the cluster: the handler runs within them unless C++ holds the thread
_watched = threading.Event()  # one watcher a process
_sessions = weakref.WeakSet()  # the coordinators of this run's sessions (training, evaluation)
_noted = threading.Event()  # a Ctrl-C that came while a session was open, not yet raised
_handled_at = [0.0]  # time.monotonic() when the Ctrl-C handler last ran (once for signals that come close together)
_waiting = threading.Event()  # a cluster's training task waits for the other tasks as its session starts


def watch_signals() -> None:
    """Starts the watcher of Ctrl-C and SIGTERM (main thread only: it sets the wakeup fd), and takes Ctrl-C as the
    module's docstring says where Python's own handler had it (not where SIGINT is ignored, as for `cmd &`)."""
    if _watched.is_set() or threading.current_thread() is not threading.main_thread():
        return
    _watched.set()
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)
    takes_ctrl_c = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if takes_ctrl_c:
        signal.signal(signal.SIGINT, _on_ctrl_c)

    def watch() -> None:
        while True:
            for signum in os.read(read, 64):
                if signum == signal.SIGINT and takes_ctrl_c:
                    arrived = time.monotonic()
                    threading.Thread(target=_stop_sessions, args=(arrived,), name="ctrl-c", daemon=True).start()
                elif signum == signal.SIGTERM:
                    threading.Thread(target=_end_after_sigterm, name="stuck-after-sigterm", daemon=True).start()

    threading.Thread(target=watch, name="signal-watcher", daemon=True).start()


@contextlib.contextmanager
def ctrl_c_between_steps() -> Iterator[None]:
    """Around a run's sessions, from before the first (Ctrl-C and SIGTERM watched from then on): a Ctrl-C noted
    during a step that then failed (its closed queues' OutOfRangeError as a session starts, a bad record's error) is
    raised in place of that error; afterwards, Ctrl-C raises at once again, and no session of this run counts as
    open (one that failed as it started was never closed)."""
    watch_signals()
    try:
        yield
    except Exception:
        if _noted.is_set():
            raise KeyboardInterrupt from None
        raise
    finally:
        _noted.clear()
        _sessions.clear()


def _open() -> list:
    return [coord for coord in list(_sessions) if not coord.should_stop()]


def waiting_for_cluster(waiting: bool) -> None:
    """Marks a cluster's training task as waiting for the other tasks as its session starts, in C++ that holds the
    main thread (cluster.SayWhileWaitingHook), or as done waiting."""
    if waiting:
        _waiting.set()
    else:
        _waiting.clear()


def _on_ctrl_c(signum: int, frame) -> None:
    _handled_at[0] = time.monotonic()
    if _noted.is_set() or _open():  # (run late, after _stop_sessions stopped them: noted there)
        _noted.set()
    else:
        raise KeyboardInterrupt


def raise_if_noted() -> None:
    """KeyboardInterrupt where Ctrl-C came while a session was open."""
    if _noted.is_set():
        _noted.clear()
        raise KeyboardInterrupt


def _stop_sessions(arrived: float) -> None:
    sessions = _open()  # those open as Ctrl-C came: not one a process that goes on opens after
    if not sessions:
        if _waiting.is_set():
            _end_if_unhandled(arrived)
        return
    time.sleep(CTRL_C_SECS)
    sessions = [coord for coord in sessions if not coord.should_stop()]
    if not sessions:
        return
    log.info("Ctrl-C: the session has not stopped in %d s (its step waiting for input?); closing its input queues",
             CTRL_C_SECS)  # fmt: skip
    _noted.set()  # first: the handler runs only once the step has ended, the sessions stopped
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:  # the coordinator takes an exception being handled
        stop = sys.exc_info()
    for coord in sessions:
        coord.request_stop(stop)


def _end_if_unhandled(arrived: float) -> None:
    """Ends the task where the Ctrl-C handler has not run within HELD_SECS of the signal (nor just before the watcher
    read it)."""
    deadline = arrived + HELD_SECS
    while time.monotonic() < deadline:
        if _handled_at[0] > arrived - 1:
            return
        time.sleep(0.1)
    if _waiting.is_set() and _handled_at[0] <= arrived - 1:
        _end("Ctrl-C while waiting for the cluster", 128 + signal.SIGINT, "its other tasks not up?")


def _end_after_sigterm() -> None:
    time.sleep(STUCK_SECS)
    _end(f"SIGTERM {STUCK_SECS:.0f} s ago, and this task has not stopped", 128 + signal.SIGTERM)


class StopOnCtrlCHook(tf.estimator.SessionRunHook):
    """Lets Ctrl-C stop a training or evaluation session whose step waits for its input (see the module's
    docstring). First among the trainer's hooks: the next may wait for input already as the session starts
    (trainer/input.py's StagingHook)."""

    def after_create_session(self, session, coord):
        watch_signals()
        _sessions.add(coord)

    def after_run(self, run_context, run_values):
        raise_if_noted()

    def end(self, session):  # a waiting step ended by the closed queues ends the session as its input's end does
        raise_if_noted()


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


def _end(what: str, code: int, cause: str = "a parameter server lost?") -> None:
    log.error("%s: stuck in TensorFlow (%s); ending this task. The chief's last checkpoint stays: rerun the job "
              "to resume", what, cause)  # fmt: skip
    os._exit(code)
