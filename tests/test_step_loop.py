"""--steps-per-run: K steps in one session.run train exactly as K runs of one step."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf
from tiny import VECTORS

from trainer import experiment, step_loop
from trainer.config import Config
from trainer.dataset import locate
from trainer.input import PrefetchQueue, QueueBatches, make_input_fn, use_for_training
from trainer.model import ModelSettings, model_fn

BATCH = 8


def batches(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(count, BATCH, 6)).astype(np.float32)
    return data, (data.sum(axis=2) > 0).astype(np.int64)


def train(
    steps_per_run: int, runs: int, train_steps: int = 1000, each_run: list | None = None, start: int = 0, **fields
) -> tuple[dict, int, list[int]]:
    """Trains on 16 fixed batches taken in order from a queue, from global step `start` (a resumed run's); returns
    the variables, the global step and each run's step count (and appends the variables after each run to
    `each_run`)."""
    config = Config(hidden_units=(16,), steps_per_run=str(steps_per_run), train_steps=train_steps, **fields)
    params = {"settings": ModelSettings.of(config, VECTORS), "metadata": VECTORS}
    data, labels = batches(16)
    with tf.Graph().as_default():
        tf.keras.utils.set_random_seed(0)  # Keras draws unseeded initializers from Python's random
        tf.compat.v1.train.create_global_step()
        queue = tf.queue.FIFOQueue(len(data), [tf.float32, tf.int64])
        fill = queue.enqueue_many([data, labels])
        prefetch = PrefetchQueue(queue, (tf.TensorShape([BATCH, 6]), tf.TensorShape([BATCH])))
        use_for_training(QueueBatches(prefetch, None))
        spec = model_fn({VECTORS.feature_key: None}, None, tf.estimator.ModeKeys.TRAIN, params)  # the queue feeds it
        run_steps = step_loop.RunSteps.of_graph()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(tf.compat.v1.train.get_global_step().assign(start))
            session.run(fill)

            def values() -> dict:
                return {v.op.name: session.run(v) for v in tf.compat.v1.global_variables()}

            counts = []
            for _ in range(runs):
                counts.append(session.run([spec.train_op, run_steps.count])[1])
                if each_run is not None:
                    each_run.append(values())
            variables, step = values(), session.run(tf.compat.v1.train.get_global_step())
    return variables, step, counts


def test_eight_steps_per_run_train_as_eight_runs_of_one():
    """Dropout, batch norm's moving averages, Adam's slots and a decaying learning rate included."""
    fields = {"dropout": 0.3, "learning_rate": 0.01, "learning_rate_decay": 0.5, "decay_steps": 3}
    one, one_step, _ = train(1, runs=16, **fields)
    eight, eight_step, counts = train(8, runs=2, **fields)
    assert one_step == eight_step == 16 and counts == [8, 8]
    assert one.keys() == eight.keys()
    assert any("moving_mean" in name for name in one)
    for name in one:
        np.testing.assert_allclose(eight[name], one[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.allclose(one["global_step"], 0)


def test_the_last_run_does_only_the_steps_that_remain():
    _, step, counts = train(8, runs=3, train_steps=13)
    assert counts == [8, 5, 0] and step == 13


def test_a_run_ends_at_each_checkpoint_step():
    _, step, counts = train(4, runs=4, save_checkpoints_steps=6)  # 12 of the 16 batches
    assert counts == [4, 2, 4, 2] and step == 12


def test_checkpoints_come_at_the_steps_asked_for_whatever_the_steps_per_run(digits_dir, tmp_path):
    config = Config(
        data_dir=digits_dir, job_dir=str(tmp_path), steps_per_run="32", save_checkpoints_steps=50, train_steps=120,
        keep_checkpoint_max=10, conv_filters=(), hidden_units=(8,),
    )  # fmt: skip
    data = locate(config)
    estimator = experiment.make_estimator(config, data.metadata)
    estimator.train(make_input_fn(data.train, data.metadata, config, training=True), max_steps=config.train_steps)
    saved = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert [int(path.rsplit("-", 1)[1]) for path in saved] == [0, 50, 100, 120]  # 0: the Estimator saves first


def test_num_epochs_ends_at_the_same_step_whatever_the_steps_per_run(digits_dir, tmp_path, caplog):
    """1,438 training digits in batches of 100: 15 steps (the last one of 38), then the input ends, inside
    a run of 8 steps: the steps logged count that run's too. (--train-steps 1000 with --num-epochs 1 makes 15, the
    pass's steps, where the in-graph loop ends too, so the Estimator is given those, as experiment.run gives them.)"""
    caplog.set_level(logging.INFO)
    steps, counted = [], []
    for steps_per_run in ("1", "8"):
        config = Config(
            data_dir=digits_dir,
            job_dir=str(tmp_path / steps_per_run),
            batch_size=100,
            num_epochs=1,
            train_steps=1000,  # more than the pass takes: the pass's steps, where the input ends
            steps_per_run=steps_per_run,
            conv_filters=(),
            hidden_units=(8,),
        )
        data = locate(config)
        estimator = experiment.make_estimator(config, data.metadata)
        hook = step_loop.StepsRunHook(input_ends=True)
        planned = estimator.params["settings"].train_steps
        input_fn = make_input_fn(data.train, data.metadata, config, training=True)
        estimator.train(input_fn, max_steps=planned, hooks=[hook])
        steps.append(estimator.get_variable_value("global_step"))
        counted.append(hook.steps)
    assert steps == [15, 15] and counted == [15, 15]
    assert not [r for r in caplog.records if r.getMessage().startswith("This task ran")]  # all of the global step


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_steps_per_run_that_is_not_a_positive_whole_number_is_refused(value):
    with pytest.raises(Exception, match="--steps-per-run"):
        Config(steps_per_run=value)
