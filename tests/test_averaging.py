"""--average-weights: a run that reaches --train-steps ends with the mean of its snapshots' weights."""

import numpy as np
import pytest
from test_step_loop import train

from trainer.averaging import COUNT, SCOPE, Schedule
from trainer.config import Config


@pytest.mark.parametrize(
    "train_steps, first, every",
    [(2000, 1100, 100), (40, 22, 2), (16, 7, 1), (5, 1, 1), (1, 1, 1)],
)
def test_ten_snapshots_spread_over_the_last_half(train_steps, first, every):
    assert Schedule.of(train_steps) == Schedule(first, every, train_steps)


def test_the_last_step_holds_the_mean_of_the_snapshots_whatever_the_steps_per_run():
    """16 steps: snapshots at steps 7 to 16. Batch norm's moving averages are averaged too."""
    fields = {"dropout": 0.3, "learning_rate": 0.01, "train_steps": 16}
    plain = []
    train(1, runs=16, each_run=plain, average_weights="off", **fields)
    for steps_per_run, runs in ((1, 16), (8, 2)):
        averaged = []
        final, step, _ = train(steps_per_run, runs=runs, each_run=averaged, average_weights="on", **fields)
        weights = [name for name in plain[0] if name.startswith("classifier/") and "Adam" not in name]
        assert step == 16 and any("moving_mean" in name for name in weights)
        for name in weights:
            expected = np.mean([variables[name] for variables in plain[6:]], axis=0)
            np.testing.assert_allclose(final[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)
            np.testing.assert_allclose(final[f"{SCOPE}/{name}"], expected, rtol=1e-5, atol=1e-6, err_msg=name)
            if steps_per_run == 1:  # training itself is the same until the last step
                np.testing.assert_allclose(averaged[14][name], plain[14][name], rtol=1e-5, atol=1e-6, err_msg=name)
        assert not np.allclose(final["classifier/logits/kernel"], plain[-1]["classifier/logits/kernel"])


def test_a_run_resumed_inside_its_schedule_averages_the_snapshots_it_takes():
    """A run resumed at step 10 with --train-steps 16 (snapshots at 7 to 16) takes those at 11 to 16. The count was
    worked out from the schedule, as if those at 7 to 10 had been taken (zeros, where an interrupted run of more
    steps had none yet), and the last step's weights came out at about half their size."""
    fields = {"learning_rate": 0.01, "train_steps": 16, "start": 10}
    plain = []
    train(1, runs=6, each_run=plain, average_weights="off", **fields)
    final, step, _ = train(1, runs=6, average_weights="on", **fields)
    assert step == 16 and final[COUNT] == 0  # the means are in place, and a run on from here starts new ones
    for name in [name for name in plain[0] if name.startswith("classifier/") and "Adam" not in name]:
        expected = np.mean([variables[name] for variables in plain], axis=0)  # steps 11 to 16
        np.testing.assert_allclose(final[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_off_adds_no_variables():
    variables, _, _ = train(1, runs=1, average_weights="off")
    assert not [name for name in variables if name.startswith(SCOPE)]


def test_a_value_other_than_auto_on_or_off_is_refused():
    with pytest.raises(Exception, match="--average-weights yes: must be auto, on or off"):
        Config(average_weights="yes")


def test_a_run_resumed_with_more_steps_averages_its_own_schedules_snapshots():
    """A run stopped at step 15 of 20 (snapshots 11 to 15 taken) and resumed with 40 steps: its means are those of
    steps 22 to 40, as a 40-step run's. Kept across the resume, the count had mixed in steps 11 to 15."""
    import tensorflow as tf

    from trainer.averaging import Averages

    def run(train_steps: int, start: int, end: int, state: dict) -> dict:
        with tf.Graph().as_default():
            step = tf.compat.v1.train.create_global_step()
            weight = tf.compat.v1.get_variable("w", [], tf.float32, tf.compat.v1.zeros_initializer())
            averages = Averages.create([weight], train_steps)
            mean = averages.pairs[0][1]
            # The weight: its step, read from the increment itself (a group of the two ops read the step before or
            # after it, as TensorFlow ran them: 31.1 for 31.0 once, on a loaded machine).
            update = weight.assign(tf.cast(step.assign_add(1), tf.float32))
            train = averages.after(update)
            with tf.compat.v1.Session() as session:
                session.run(tf.compat.v1.global_variables_initializer())
                session.run([step.assign(start), mean.assign(state["mean"]), averages.count.assign(state["count"])])
                for _ in range(start, end):
                    session.run(train)
                return {"mean": session.run(mean), "count": session.run(averages.count), "weight": session.run(weight)}

    stopped = run(20, 0, 15, {"mean": 0.0, "count": 0})
    assert stopped["count"] == 5 and stopped["mean"] == 13.0  # steps 11 to 15
    resumed = run(40, 15, 40, stopped)
    assert resumed["weight"] == np.mean(range(22, 41, 2)) == 31.0  # the means in place: of steps 22 to 40 alone
