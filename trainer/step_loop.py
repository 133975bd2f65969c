"""--steps-per-run K: K training steps in one session.run, as TPUEstimator's iterations_per_loop
and Keras's steps_per_execution do.

Every session.run pays a fixed cost that the model does not: the run itself, every hook's
before_run and after_run, and the handoff of the batch. On a GPU, where a step of a small model
takes well under a millisecond, that cost would set the speed. With K > 1 the train_op is an
in-graph loop: each iteration takes its own batch from the queue and applies its own update,
so K steps of one run train exactly as K runs of one step would. The loop ends early at
--train-steps and at each multiple of --save-checkpoints-steps, so training stops exactly there
and checkpoints (and the evaluations after them) come at the steps they would with K=1.

Hooks see one run per K steps. Those that count by the global step (checkpoints, summaries,
the step counter, progress) fire on the first run at or past their step; the loss and the
summaries are those of the run's last step. RUN_STEPS holds what a run did, for the hooks here.
One exception: TensorFlow's own loss line, shown with --verbosity debug, counts runs, so it
comes every 100 runs (K x 100 steps); the progress line here counts time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

import tensorflow as tf

from trainer.towers import StepResult

log = logging.getLogger(__name__)
RUN_STEPS = ("run_steps/count", "run_steps/global_step")  # collections of the tensors of RunSteps


class RunSteps(NamedTuple):
    count: tf.Tensor  # the steps the run trained
    global_step: tf.Tensor  # the global step once they are done

    def add_to_graph(self) -> None:
        # Tensors each in a collection of its own: a Python object in a collection cannot go into
        # the MetaGraph that every checkpoint writes (TensorFlow warns each time).
        for collection, tensor in zip(RUN_STEPS, self):
            tf.compat.v1.add_to_collection(collection, tensor)

    @classmethod
    def of_graph(cls) -> RunSteps:
        return cls(*(tf.compat.v1.get_collection(collection)[0] for collection in RUN_STEPS))


def run(
    step: Callable[[], StepResult], steps_per_run: int, train_steps: int, checkpoint_steps: int, examples: tf.TensorSpec
) -> StepResult:
    """The train_op of up to `steps_per_run` steps of `step`, with the loss, accuracy and examples
    (of spec `examples`) of the last one. A run ends early at `train_steps` and at the next
    multiple of `checkpoint_steps`, so checkpoints are where --save-checkpoints-steps puts them."""
    global_step = tf.compat.v1.train.get_global_step()
    if steps_per_run == 1:
        result, count = step(), tf.constant(1, tf.int64)
    else:
        next_checkpoint = (global_step // checkpoint_steps + 1) * checkpoint_steps
        end = tf.minimum(tf.constant(train_steps, tf.int64), next_checkpoint)
        result, count = _loop(step, tf.clip_by_value(end - global_step, 0, steps_per_run), examples)
    with tf.control_dependencies([result.train_op]):
        RunSteps(count, tf.identity(global_step)).add_to_graph()
    return result


def _loop(step: Callable[[], StepResult], count: tf.Tensor, examples: tf.TensorSpec) -> tuple[StepResult, tf.Tensor]:
    def body(done, loss, accuracy, last_examples):
        with tf.control_dependencies([done]):  # a step starts once the step before it has updated
            result = step()
        with tf.control_dependencies([result.train_op]):
            return done + 1, tf.identity(result.loss), tf.identity(result.accuracy), tf.identity(result.examples)

    # An empty run (in a cluster, another worker reached --train-steps) reports a zero loss.
    no_examples = tf.zeros([0, *examples.shape[1:]], examples.dtype)
    start = (tf.constant(0, tf.int64), tf.constant(0.0), tf.constant(0.0), no_examples)
    shapes = (tf.TensorShape([]), tf.TensorShape([]), tf.TensorShape([]), examples.shape)
    done, loss, accuracy, last_examples = tf.while_loop(
        lambda done, *_: done < count, body, start, shape_invariants=shapes, parallel_iterations=1
    )
    return StepResult(tf.group(done), loss, accuracy, last_examples), done


class StopAtTrainStepsHook(tf.estimator.SessionRunHook):
    """Stops at --train-steps as soon as a run reaches it. (The Estimator's own StopAtStepHook
    expects one step per run, and would run once more, for nothing.)"""

    def __init__(self, train_steps: int):
        self._train_steps = train_steps

    def before_run(self, run_context):
        return tf.estimator.SessionRunArgs(RunSteps.of_graph().global_step)

    def after_run(self, run_context, run_values):
        if run_values.results >= self._train_steps:
            run_context.request_stop()


class StepsRunHook(tf.estimator.SessionRunHook):
    """Logs how many training steps this task ran itself: in a `cluster`, every worker's share (scripts/local_cluster.py
    reads it); alone, where it is not the global step (a resumed run). With `input_ends` (--num-epochs, one machine
    only), the last run stops inside its loop when the input runs out, and its steps are the global step's growth
    since the run before."""

    def __init__(self, input_ends: bool = False, others: int = 0, cluster: bool = False):
        self.steps = 0
        self._input_ends = input_ends
        self._others = others  # the other training tasks, each reading its own share of the training files
        self._cluster = cluster

    def after_create_session(self, session, coord):
        self._last_step = self._first_step = int(session.run(tf.compat.v1.train.get_global_step()))

    def before_run(self, run_context):
        graph_steps = RunSteps.of_graph()
        return tf.estimator.SessionRunArgs((graph_steps.count, graph_steps.global_step))

    def after_run(self, run_context, run_values):
        count, self._last_step = map(int, run_values.results)
        self.steps += count

    def end(self, session):
        step = int(session.run(tf.compat.v1.train.get_global_step()))
        if self._input_ends:
            self.steps += step - self._last_step
        if self.steps != step or self._cluster:  # else the progress line said it
            log.info("This task ran %d training steps; the global step is %d", self.steps, step)
        if self._others and self.steps and step - self._first_step == self.steps:
            # The Estimator starts worker i (i + 1) x 5 s after the chief: a short run can end before any joins.
            log.warning(
                "The other %d training task(s) took no step: they joined after this run's steps were done, so "
                "their shares of the training files were never read; a cluster is for runs that outlast its start",
                self._others,
            )
