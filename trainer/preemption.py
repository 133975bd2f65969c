"""SIGTERM, which cloud schedulers send before they preempt a machine: save a checkpoint, then stop.

The signal only sets a flag; the hook acts on it between two training steps, where the
session is in a consistent state, saves a checkpoint with the Estimator's own saver and
raises Preempted. A rerun of the same command resumes from that checkpoint.

The handler is installed only once the session exists. Python runs signal handlers between
bytecodes, so a handler installed earlier would leave a task that waits in session creation
(for a parameter server or the chief) deaf to SIGTERM; until then the default action ends the
task at once, and there is nothing to save yet. Nor is SIGTERM raised as Ctrl-C until then: a
KeyboardInterrupt raised by a handler while TensorFlow turns a C++ error into Python's (as
tf.train.load_checkpoint does inside) becomes a RuntimeError, which the checkpoint check took for
a damaged checkpoint, and resumed from an older one.

A task stuck in TensorFlow's C++ code never runs a Python handler: trainer/stuck.py ends it.
"""

from __future__ import annotations

import logging
import posixpath
import signal
import threading

import tensorflow as tf

from trainer import stuck

log = logging.getLogger(__name__)


class Preempted(Exception):
    """Training stopped on SIGTERM after saving a checkpoint."""


class SaveOnSigtermHook(tf.estimator.SessionRunHook):
    def __init__(self, model_dir: str, is_chief: bool):
        self._model_dir = model_dir
        self._is_chief = is_chief  # only the chief writes checkpoints in a cluster
        self._signalled = threading.Event()

    def after_create_session(self, session, coord):
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            signal.signal(signal.SIGTERM, lambda signum, frame: self._signalled.set())
            stuck.watch_signals()

    def after_run(self, run_context, run_values):
        if not self._signalled.is_set():
            return
        session = run_context.session
        step = session.run(tf.compat.v1.train.get_global_step())
        if self._is_chief:
            saver = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)[0]
            path = saver.save(session, posixpath.join(self._model_dir, "model.ckpt"), global_step=step)
            raise Preempted(f"SIGTERM at step {step}: saved {path}; rerun the same command to resume")
        raise Preempted(f"SIGTERM at step {step}; the chief keeps the checkpoints")
