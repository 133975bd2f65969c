"""--average-weights: a run that reaches --train-steps ends with the mean of its weights at SNAPSHOTS
steps spread evenly over the last half of training, not with its last step's weights alone
(stochastic weight averaging: Izmailov et al., "Averaging Weights Leads to Wider Optima and Better
Generalization", 2018). That model is the one the last evaluation measures and the exports hold.

The last step's weights are one draw from where a constant learning rate keeps them moving; their
mean sits nearer the middle. Measured with the table networks (on by default for them): flights' ROC
AUC 0.780 against 0.768 and accuracy 0.8576 against 0.8547 (five runs each), MplsStops 0.8 rows above
logistic regression on average over six splits, against 6.2 below (benchmarks/results/notes.md).

Each network weight has its running mean beside it, under SCOPE, in every checkpoint: a run resumed
after a preemption goes on with the same mean. At each snapshot step the mean takes in the weights
just updated; at --train-steps it replaces them. The evaluation and serving graphs never see the
means, so exports and warm starts read the weights by their usual names. A snapshot is a dense pass
over every weight, embeddings included, once every `every` steps (every 100 of 2,000 by default).
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf

SNAPSHOTS = 10
SCOPE = "averaged"  # the means' variables: averaged/<the weight's name>


@dataclass(frozen=True)
class Schedule:
    """The snapshot steps: first, first + every, ..., last (--train-steps)."""

    first: int
    every: int
    last: int

    @classmethod
    def of(cls, train_steps: int) -> Schedule:
        every = max(1, train_steps // (2 * SNAPSHOTS))
        return cls(train_steps - (min(SNAPSHOTS, train_steps) - 1) * every, every, train_steps)


COUNT = f"{SCOPE}/snapshots"  # the snapshots the means hold


@dataclass(frozen=True)
class Averages:
    """Each floating-point network weight with the variable that holds its running mean, and the count of the
    snapshots in the means. The count is kept, not worked out from the schedule: a run resumed with fewer
    --train-steps has a schedule whose snapshots before the resume were never taken, and they counted as zeros
    (an interrupted run ended with weights of half their size). A schedule's first snapshot restarts it."""

    pairs: tuple[tuple[tf.Variable, tf.Variable], ...]
    count: tf.Variable
    schedule: Schedule

    @classmethod
    def create(cls, weights: list[tf.Variable], train_steps: int) -> Averages:
        """The means' variables, beside their weights (on a parameter server, or the CPU with towers)."""
        with tf.compat.v1.colocate_with(tf.compat.v1.train.get_global_step()):
            count = tf.compat.v1.get_variable(COUNT, [], tf.int64, tf.compat.v1.zeros_initializer(), trainable=False)
        pairs = []
        for weight in weights:
            if weight.dtype.is_floating:
                with tf.compat.v1.colocate_with(weight):
                    mean = tf.compat.v1.get_variable(
                        f"{SCOPE}/{weight.op.name}",
                        weight.shape,
                        weight.dtype.base_dtype,
                        tf.compat.v1.zeros_initializer(),
                        trainable=False,
                    )
                pairs.append((weight, mean))
        return cls(tuple(pairs), count, Schedule.of(train_steps))

    def after(self, update: tf.Operation) -> tf.Operation:
        """`update` (a training step), then, at a snapshot step, the weights folded into their means;
        at the last, the means put in place of the weights."""
        schedule = self.schedule
        with tf.control_dependencies([update]):
            step = tf.compat.v1.train.get_global_step().read_value()
            on_schedule = tf.equal((schedule.last - step) % schedule.every, 0)  # in a graph, `==` compares the objects
            taken = (step >= schedule.first) & (step <= schedule.last) & on_schedule
            snapshot = tf.cond(taken, lambda: self._fold(step), tf.no_op)
        return tf.group(update, snapshot)

    def _fold(self, step: tf.Tensor) -> tf.Operation:
        # The k-th snapshot moves each mean 1/k of the way to the weight: the mean of the k so far. The schedule's
        # first snapshot starts the means, whatever an earlier schedule left (a run resumed with more steps).
        first = tf.equal(step, self.schedule.first)
        count = self.count.assign(tf.where(first, tf.constant(1, tf.int64), self.count + 1))
        folded = [mean.assign_add((weight - mean) / tf.cast(count, mean.dtype)) for weight, mean in self.pairs]
        with tf.control_dependencies(folded):
            return tf.cond(step >= self.schedule.last, self._swap, tf.no_op)

    def _swap(self) -> tf.Operation:
        """The means in place of the weights; a run that trains on from here (more --train-steps) starts new means."""
        swapped = [weight.assign(mean) for weight, mean in self.pairs]
        with tf.control_dependencies(swapped):
            return self.count.assign(0).op
