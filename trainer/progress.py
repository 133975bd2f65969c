"""Training progress a person can read: step / total, steps/s, examples/s, loss, ETA and the last
evaluation's accuracy. On a terminal, one progress bar; elsewhere (cloud logs, CI), one plain line
every --progress-secs seconds and at the end.

The hook asks the session for the loss only when a report is due, so the steps in between pay
nothing but a clock read.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

import tensorflow as tf
from tqdm import tqdm

log = logging.getLogger("trainer")
TERMINAL_REFRESH_SECS = 0.5


class LastEvaluation:
    """The latest evaluation's metrics and the one to show (--best-metric's), set by the exporter that sees
    them, read by the progress hook."""

    metrics: dict = {}
    shown: str = ""
    figures_of: tuple = ()  # (job dir, step) of the evaluation whose figures and report were written last


def describe(
    step: int, total: int, steps_per_sec: float, global_batch: int, loss: float | None, final: bool = False
) -> str:
    """The progress line's figures; the `final` line, once training has stopped, has no ETA."""
    left = (total - step) / steps_per_sec if steps_per_sec > 0 else float("inf")
    parts = [
        f"step {step:,}/{total:,} ({100 * step / total:.0f}%)",
        f"{steps_per_sec:,.1f} steps/s",
        f"{steps_per_sec * global_batch:,.0f} examples/s",
    ]
    if loss is not None:
        parts.append(f"loss {loss:.4f}")
    if not final:
        parts.append(f"ETA {_duration(left)}")
    elif step < total:  # --num-epochs or early stopping ended it
        parts.append("stopped before --train-steps")
    shown = LastEvaluation.shown
    if shown in LastEvaluation.metrics:
        parts.append(f"last eval {shown} {LastEvaluation.metrics[shown]:.4f}")
    return ", ".join(parts)


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "?"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class ProgressHook(tf.estimator.SessionRunHook):
    """Reports training progress; a bar on a terminal, a line every `every_secs` otherwise."""

    def __init__(self, total_steps: int, global_batch: int, every_secs: float, stream: TextIO | None = None):
        self._total, self._global_batch = total_steps, global_batch
        self._stream = stream or sys.stderr
        self._terminal = self._stream.isatty()
        self._every = TERMINAL_REFRESH_SECS if self._terminal else every_secs
        self._bar = None

    def begin(self):
        self._step_tensor = tf.compat.v1.train.get_global_step()
        self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._step_tensor))
        self._since, self._since_step, self._due = time.monotonic(), self._step, time.monotonic() + self._every
        self._started, self._first_step = self._since, self._step
        if self._terminal:
            self._bar = tqdm(total=self._total, initial=self._step, unit="step", file=self._stream, leave=True)

    def before_run(self, run_context):
        if time.monotonic() < self._due:
            return None
        return tf.estimator.SessionRunArgs({"step": self._step_tensor, "loss": self._loss})

    def after_run(self, run_context, run_values):
        if run_values.results is None:
            return
        self._step = int(run_values.results["step"])
        losses = run_values.results["loss"]
        self._report(float(sum(losses)) if losses else None)

    def end(self, session):
        """The last line's speed is the whole session's, evaluations and exports included."""
        self._step = int(session.run(self._step_tensor))
        self._since, self._since_step = self._started, self._first_step
        self._report(None, final=True)
        if self._bar is not None:
            self._bar.close()

    def _report(self, loss: float | None, final: bool = False) -> None:
        now = time.monotonic()
        rate = (self._step - self._since_step) / max(now - self._since, 1e-9)
        self._since, self._since_step, self._due = now, self._step, now + self._every
        if self._bar is None:
            log.info("%s", describe(self._step, self._total, rate, self._global_batch, loss, final))
            return
        self._bar.update(self._step - self._bar.n)
        figures = describe(self._step, self._total, rate, self._global_batch, loss, final).split(", ")[1:]
        self._bar.set_postfix_str(", ".join(figures), refresh=True)
