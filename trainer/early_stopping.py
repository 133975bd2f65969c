"""--early-stopping-evals N: training stops when --best-metric has not improved for N evaluations, on one
machine and in a TF_CONFIG cluster, and the run then ends as a finished one does (a last evaluation, the
exports, the figures).

The evaluations are read from the event files that the evaluating task writes in JOB_DIR/eval, so the
chief decides the same way alone or in a cluster. It then writes JOB_DIR/early_stopped.json (the marker
every other task reads) and stops; tf.estimator's early-stopping hook carries the stop to the workers
through a variable on the parameter servers. The evaluator, which would otherwise wait for --train-steps
forever (tf.estimator's own warning), ends once it has evaluated the step the marker names. A rerun
with the same --train-steps finds the marker and does nothing; a larger --train-steps trains on.
"""

from __future__ import annotations

import json
import logging
import posixpath
from dataclasses import asdict, dataclass

import tensorflow as tf
from tensorflow_estimator.python.estimator import early_stopping as estimator_early_stopping
from tensorflow_estimator.python.estimator import training as estimator_training

from trainer import metrics as names

log = logging.getLogger("trainer")

MARKER = "early_stopped.json"
SET_ASIDE = "early_stopped_before.json"  # the marker of an early stop that a larger --train-steps trained on from
CHECK_STEPS = 100  # the chief reads the evaluations at least this often


@dataclass(frozen=True)
class Stop:
    """Why and where a run stopped early (early_stopped.json)."""

    step: int  # the evaluation after which training stopped
    best_step: int  # the evaluation with the best metric
    metric: str
    best: float
    evaluations: int  # --early-stopping-evals
    train_steps: int  # the run's --train-steps, which a rerun must raise to train on
    final_step: int = -1  # the last checkpoint's step, once the chief has saved it (-1: not yet)

    def describe(self) -> str:
        return (
            f"stopped early after the evaluation at step {self.step}: {self.metric} had not improved for "
            f"{self.evaluations} evaluation{'s' * (self.evaluations != 1)} since step {self.best_step} "
            f"({self.metric} {self.best:.4f})"
        )


def read_stop(job_dir: str, name: str = MARKER) -> Stop | None:
    """The early stop the job's marker records (or the one set aside, SET_ASIDE); None without one."""
    path = posixpath.join(job_dir, name)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as file:
        return Stop(**json.load(file))


def write_stop(job_dir: str, stop: Stop) -> None:
    with tf.io.gfile.GFile(posixpath.join(job_dir, MARKER), "w") as file:
        file.write(json.dumps(asdict(stop), indent=2) + "\n")


def clear_stop(job_dir: str) -> None:
    """Sets an earlier early stop aside: the run trains on to a larger --train-steps, counting the evaluations
    after that stop's (counted_since), also where it is preempted and resumed."""
    path = posixpath.join(job_dir, MARKER)
    if tf.io.gfile.exists(path):
        tf.io.gfile.rename(path, posixpath.join(job_dir, SET_ASIDE), overwrite=True)


def counted_since(job_dir: str) -> int:
    """The step after which early stopping counts evaluations: the last early stop's that a larger --train-steps
    trained on from, else 0 (all of them, across resumes, as an uninterrupted run would)."""
    set_aside = read_stop(job_dir, SET_ASIDE)
    return set_aside.step if set_aside else 0


def no_improvement(evaluations: dict[int, dict], metric: str, patience: int, since: int) -> int | None:
    """The step of the best evaluation when the last `patience` evaluations after step `since` (an earlier early
    stop's, which a larger --train-steps trains on from) are all no better than it; None while training should go
    on."""
    steps = sorted(step for step in evaluations if metric in evaluations[step])
    if not steps:
        return None
    rank = names.ranking(metric)
    best = max(steps, key=lambda step: (rank(evaluations[step]), -step))  # the first of equal ones
    after = [step for step in steps if step > max(best, since)]
    return best if len(after) >= patience else None


def training_hook(estimator: tf.estimator.Estimator, metric: str, patience: int, train_steps: int, since: int):
    """The hook that stops every training task: the chief decides (and writes the marker), workers follow."""
    eval_dir = posixpath.join(estimator.model_dir, "eval")

    def should_stop() -> bool:
        evaluations = estimator_early_stopping.read_eval_metrics(eval_dir) if tf.io.gfile.exists(eval_dir) else {}
        best = no_improvement(evaluations, metric, patience, since)
        if best is None:
            return False
        step = max(evaluations)
        value = float(evaluations[best][metric])
        write_stop(estimator.model_dir, Stop(step, best, metric, value, patience, train_steps))
        return True

    every = min(estimator.config.save_checkpoints_steps, CHECK_STEPS)  # evaluations follow checkpoints
    return tf.estimator.experimental.make_early_stopping_hook(estimator, should_stop, None, every)


class EvaluatorStops(estimator_training._ContinuousEvalListener):
    """Ends a cluster's evaluator once it has evaluated the last checkpoint of a run that stopped early (the
    chief adds its step to the marker after saving it: the evaluator may see the marker first)."""

    def __init__(self, job_dir: str):
        self._job_dir, self._evaluated = job_dir, -1

    def after_eval(self, eval_result) -> bool:
        if eval_result.metrics:
            self._evaluated = int(eval_result.metrics[tf.compat.v1.GraphKeys.GLOBAL_STEP])
        stop = read_stop(self._job_dir)
        return stop is None or stop.final_step < 0 or self._evaluated < stop.final_step
