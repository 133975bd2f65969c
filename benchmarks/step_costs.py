"""What every session.run of training pays besides the model, each timed alone on a graph with no
model, in turns: the call itself, the MonitoredSession around it, a hook's before_run and
after_run, and the handoff of a ready batch from the input's last queue.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import partial

import tensorflow as tf

from benchmarks.common import Bench, extra_microseconds, measure
from benchmarks.feeds import fifo_constant_feed, session_loop
from trainer.config import Config


class GlobalStepHook(tf.estimator.SessionRunHook):
    """Fetches the global step with every run, as TensorFlow's CheckpointSaverHook, StepCounterHook
    and SummarySaverHook each do."""

    def begin(self):
        self._step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        return tf.estimator.SessionRunArgs(self._step)


def no_op_graph() -> tuple[tf.Operation, None]:
    tf.compat.v1.train.create_global_step()
    return tf.no_op(), None


def handoff_graph(bench: Bench, config: Config) -> tuple[tf.Operation, None]:
    """Takes one ready batch out of the prefetch FIFO (which its thread keeps full), and nothing else."""
    tf.compat.v1.train.create_global_step()
    feed = fifo_constant_feed(bench.data.train, bench.data.metadata, config)
    return tf.group(feed.features[bench.data.metadata.feature_key], feed.labels), None


@contextlib.contextmanager
def plain_session_loop() -> Callable[[int], float]:
    """run(steps) of a no-op in a tf.compat.v1.Session: TensorFlow's own cost of a call."""
    with tf.Graph().as_default() as graph:
        no_op = tf.no_op()
    with tf.compat.v1.Session(graph=graph) as session:

        def run(steps: int) -> float:
            start = time.perf_counter()
            for _ in range(steps):
                session.run(no_op)
            return time.perf_counter() - start

        yield run


def run(bench: Bench) -> dict:
    """Microseconds per call of each, and each addition's own cost (medians of per-round differences)."""
    config = Config(**bench.size.base)
    with contextlib.ExitStack() as stack:
        loops = [
            stack.enter_context(plain_session_loop()),
            stack.enter_context(session_loop(no_op_graph)),
            stack.enter_context(session_loop(no_op_graph, hooks=(tf.estimator.SessionRunHook(),))),
            stack.enter_context(session_loop(no_op_graph, hooks=(GlobalStepHook(),))),
            stack.enter_context(session_loop(partial(handoff_graph, bench, config))),
        ]
        session, monitored, empty_hook, step_hook, handoff = measure(loops, 1, bench.size)
    return {
        "session.run of a no-op (tf.compat.v1.Session)": 1e6 / session["median"],
        "MonitoredSession around it": extra_microseconds(monitored, session),
        "a hook that does nothing (its before_run and after_run)": extra_microseconds(empty_hook, monitored),
        "a hook that fetches the global step": extra_microseconds(step_hook, monitored),
        "the queue handoff (dequeue a ready batch from the prefetch FIFO)": extra_microseconds(handoff, monitored),
    }
