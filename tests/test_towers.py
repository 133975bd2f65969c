"""--num-towers: the model replicated in-graph, each tower on its own device and batch, run here on
virtual CPU devices (QUEUE_TRAINER_TOWERS_ON_CPUS)."""

import collections
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from queues import run_batches
from tiny import VECTORS

from dataformat.errors import UserError
from trainer import experiment
from trainer.config import Config
from trainer.dataset import locate
from trainer.devices import TOWERS_ON_CPUS, resolve_towers
from trainer.input import PrefetchQueue, QueueBatches, make_input_fn, training_batches, use_for_training
from trainer.model import ModelSettings, model_fn
from trainer.vertex import jobs


def t4_pool(pool: str, machine_type: str, gpus: int) -> str:
    """A job shape's pool of one machine with `gpus` T4s, as YAML."""
    return (
        f"{pool}:\n  machine_type: {machine_type}\n  replica_count: 1\n"
        f"  accelerator_type: NVIDIA_TESLA_T4\n  accelerator_count: {gpus}\n"
    )


FOUR_T4_CHIEF = t4_pool("chief", "n1-standard-16", 4)
PS_WITH_GPUS = t4_pool("parameter_servers", "n1-standard-8", 1)
EVALUATOR_WITH_2_GPUS = t4_pool("evaluator", "n1-standard-8", 2)


@pytest.fixture(autouse=True)
def towers_on_cpus(monkeypatch):
    monkeypatch.setenv(TOWERS_ON_CPUS, "1")


def batches(count: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    data = rng.normal(1.0, 2.0, size=(count, size, 6)).astype(np.float32)
    return data, (data.sum(axis=2) > 6).astype(np.int64)


def train_graph(towers: int, data: np.ndarray, labels: np.ndarray, **fields):
    """model_fn's train_op over `towers` towers, which take the batches data[i], labels[i] from a
    queue; returns (model_fn's EstimatorSpec, the op that fills the queue, the queue's size)."""
    config = Config(steps_per_run="1", num_towers=str(towers), dropout=0.0, learning_rate=0.01, **fields)
    params = {"settings": ModelSettings.of(config, VECTORS), "metadata": VECTORS}
    tf.keras.utils.set_random_seed(0)  # Keras draws unseeded initializers from Python's random
    tf.compat.v1.train.create_global_step()
    queue = tf.queue.FIFOQueue(len(data), [tf.float32, tf.int64])
    prefetch = PrefetchQueue(queue, (tf.TensorShape([None, 6]), tf.TensorShape([None])))
    use_for_training(QueueBatches(prefetch, None))
    spec = model_fn({VECTORS.feature_key: None}, None, tf.estimator.ModeKeys.TRAIN, params)  # the queue feeds it
    return spec, queue.enqueue_many([data, labels]), queue.size()


def one_step(towers: int, data: np.ndarray, labels: np.ndarray, **fields) -> tuple[dict, int, float]:
    """The variables after one step of `towers` towers, how many batches the step took, and the
    loss it reported (what the summaries and the progress show)."""
    with tf.Graph().as_default():
        spec, fill, size = train_graph(towers, data, labels, **fields)
        with tf.compat.v1.Session(config=tf.compat.v1.ConfigProto(device_count={"CPU": towers})) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(fill)
            _, loss = session.run([spec.train_op, spec.loss])
            variables = {v.op.name: session.run(v) for v in tf.compat.v1.global_variables()}
            return variables, len(data) - session.run(size), loss


def assert_same_variables(these: dict, those: dict, names=None) -> None:
    assert these.keys() == those.keys()
    for name in names or these:
        np.testing.assert_allclose(these[name], those[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("towers", [2, 4])
def test_towers_over_their_batches_make_the_update_of_one_tower_over_all_of_them(towers):
    """Without batch norm (softmax regression), the mean of the towers' gradients is the gradient
    over the concatenated batches: every variable, Adam's slots included, ends the same."""
    data, labels = batches(towers, 16)
    replicated, taken, loss = one_step(towers, data, labels, hidden_units=())
    single, _, single_loss = one_step(1, data.reshape(1, -1, 6), labels.reshape(1, -1), hidden_units=())
    assert taken == towers  # each tower took a batch of its own
    assert_same_variables(replicated, single)
    assert loss == pytest.approx(single_loss, rel=1e-5)  # the loss reported is over every tower's batch


def test_an_embeddings_gradients_averaged_over_the_towers_stay_sparse():
    """Made dense, they had lazy Adam update every row of a table each step (4x slower on text) and move rows no
    batch looked up by their momentum, unlike one tower's run."""
    from trainer.towers import _mean

    shape = tf.constant([5, 2], tf.int64)
    first = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([0, 3], tf.int64), shape)
    second = tf.IndexedSlices(tf.constant([[5.0, 6.0]]), tf.constant([3], tf.int64), shape)
    variable = tf.Variable(tf.zeros([5, 2]))
    ((mean, averaged),) = _mean([[(first, variable)], [(second, variable)]])
    assert isinstance(mean, tf.IndexedSlices) and averaged is variable
    dense = (tf.convert_to_tensor(first) + tf.convert_to_tensor(second)) / 2
    np.testing.assert_allclose(tf.convert_to_tensor(mean), dense)  # row 3, looked up by both: (3 + 5) / 2


def test_batch_norm_moving_averages_follow_the_first_tower_only():
    """With batch norm each tower normalizes over its own batch, so the weights' update differs
    from one tower over the concatenation; what is compared is the moving averages, which come
    from one tower's batch, as tf_cnn_benchmarks does (which tower took which batch is up to the
    queue)."""
    data, labels = batches(2, 16)
    replicated, _, _ = one_step(2, data, labels, hidden_units=(8,))
    alone = [one_step(1, data[i : i + 1], labels[i : i + 1], hidden_units=(8,))[0] for i in range(2)]
    moving = [name for name in replicated if "moving_" in name]
    assert moving
    matches = [all(np.allclose(replicated[name], one[name], rtol=1e-5, atol=1e-6) for name in moving) for one in alone]
    assert matches.count(True) == 1


def tower_computation(operations: list, tower: int) -> list:
    """The ops of a tower's own computation: not its variable reads and batch norm's updates,
    which run where the variables are (ops colocated with a variable, reads of one)."""
    return [
        op
        for op in operations
        if op.name.startswith(f"tower_{tower}/")
        and op.type != "ReadVariableOp"
        and op.colocation_groups() == [f"loc:@{op.name}".encode()]
    ]


def test_each_tower_runs_on_its_own_device_and_the_variables_on_the_cpu():
    with tf.Graph().as_default():
        train_graph(2, *batches(2, 4), hidden_units=(8,))
        operations = tf.compat.v1.get_default_graph().get_operations()
    for tower in range(2):
        ops = tower_computation(operations, tower)
        assert len(ops) > 20 and all(op.device == f"/device:CPU:{tower}" for op in ops), tower
    assert {op.type for op in tower_computation(operations, 1)} >= {"MatMul", "SparseSoftmaxCrossEntropyWithLogits"}
    variables = [op for op in operations if op.type == "VarHandleOp" and op.name != "global_step"]
    assert len(variables) > 10 and all(op.device == "/device:CPU:0" for op in variables)  # Adam's slots too


def test_with_staging_each_tower_stages_its_own_batches_on_its_own_device(digits_dir):
    config = Config(data_dir=digits_dir, num_towers="2", stage_on_device="on", steps_per_run="1")
    data = locate(config)
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        features, labels = make_input_fn(data.train, data.metadata, config, training=True)()
        model_fn(features, labels, tf.estimator.ModeKeys.TRAIN, experiment.model_params(config, data.metadata))
        operations = tf.compat.v1.get_default_graph().get_operations()
    stages = [op for op in operations if op.type in ("Stage", "Unstage")]
    for tower in range(2):
        area = [op for op in stages if op.get_attr("shared_name").decode().endswith(f"_{tower}")]
        # the first fill, the step's unstage and the step's stage of the next batch
        assert sorted(op.type for op in area) == ["Stage", "Stage", "Unstage"]
        assert all(op.device == f"/device:CPU:{tower}" for op in area)
    queues = {op.name: op.device for op in operations if op.type.startswith(("FIFOQueue", "RandomShuffleQueue"))}
    dequeues = [op for op in operations if op.type.startswith("QueueDequeue")]
    assert dequeues and all(op.device in ("", queues[op.inputs[0].op.name]) for op in dequeues)  # with their queues


def test_in_a_parameter_server_cluster_variables_go_to_the_ps_and_towers_stay_on_the_worker():
    # What the Estimator wraps its graph in when TF_CONFIG names parameter servers.
    setter = tf.compat.v1.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")
    with tf.Graph().as_default() as graph, graph.device(setter):
        train_graph(2, *batches(2, 4), hidden_units=(8,))
        operations = tf.compat.v1.get_default_graph().get_operations()
    assert all(op.device.startswith("/job:ps/") for op in operations if op.type == "VarHandleOp")
    tower = tower_computation(operations, 1)
    assert tower and all(op.device == "/job:worker/task:0/device:CPU:1" for op in tower)


def test_in_a_step_each_tower_trains_on_examples_of_its_own(digits_dir):
    """Through the real input pipeline, for one epoch: the towers of a step take different
    batches, and every training example reaches exactly one tower."""
    config = Config(data_dir=digits_dir, num_towers="2", num_epochs=1, batch_size=32)
    data = locate(config)
    in_order = run_batches(make_input_fn(data.train, data.metadata, config, training=False))  # every example once
    every_example = collections.Counter(image.tobytes() for features, _ in in_order for image in features["image"])
    with tf.Graph().as_default():
        make_input_fn(data.train, data.metadata, config, training=True)()
        takes = [training_batches(None, None, None).take(tower).data for tower in range(2)]
        seen, steps = collections.Counter(), 0
        with tf.compat.v1.train.MonitoredSession() as session:  # starts the queue runners
            while not session.should_stop():
                first, second = session.run(takes)
                assert not np.array_equal(first, second)
                seen.update(image.tobytes() for image in (*first, *second))
                steps += 1
    examples, taken = sum(every_example.values()), sum(seen.values())  # (Counter.total is Python 3.10+)
    assert steps > 10 and examples - 64 < taken <= examples
    assert not seen - every_example  # no example more often than the data has it


def test_more_towers_than_gpus_is_refused_naming_the_flag(monkeypatch):
    monkeypatch.delenv(TOWERS_ON_CPUS)
    with pytest.raises(UserError, match=r"--num-towers 2: this machine has 0 GPU"):
        resolve_towers("2")
    assert resolve_towers("auto") == 1


@pytest.mark.parametrize(
    "pools, trainer_args, message",
    [
        (PS_WITH_GPUS, [], "parameter_servers.accelerator_count: parameter servers only hold the variables"),
        (EVALUATOR_WITH_2_GPUS, [], "evaluator.accelerator_count: the evaluator runs one tower, so 1 of its 2 GPUs"),
        ("", ["--num-towers", "2"], "--num-towers 2: SHAPE gives each chief machine 4 GPU(s); leave the flag out"),
        ("", ["--num-towers=8"], "--num-towers 8: SHAPE gives each chief machine 4 GPU(s)"),
    ],
)
def test_a_job_shape_whose_gpus_the_trainer_cannot_use_is_refused(tmp_path, pools, trainer_args, message):
    path = tmp_path / "shape.yaml"
    path.write_text(FOUR_T4_CHIEF + pools)
    with pytest.raises(UserError) as error:
        jobs.check_towers(jobs.load(str(path)), str(path), trainer_args)
    assert message.replace("SHAPE", str(path)) in str(error.value)
    assert "\n" not in str(error.value)


def test_a_job_shapes_gpus_become_towers_with_no_flag(tmp_path):
    path = tmp_path / "shape.yaml"
    path.write_text(FOUR_T4_CHIEF + t4_pool("evaluator", "n1-standard-8", 1))
    for trainer_args in ([], ["--num-towers", "auto"], ["--num-towers", "4"]):
        jobs.check_towers(jobs.load(str(path)), str(path), trainer_args)  # no error


def train_estimator(config: Config):
    """An Estimator of `config` trained to --train-steps, and its data."""
    data = locate(config)
    estimator = experiment.make_estimator(config, data.metadata)
    estimator.train(make_input_fn(data.train, data.metadata, config, training=True), max_steps=config.train_steps)
    return estimator, data


def digits_config(digits_dir: str, job_dir: str, towers: int, train_steps: int) -> Config:
    return Config(
        data_dir=digits_dir, job_dir=job_dir, num_towers=str(towers), train_steps=train_steps, conv_filters=(4,),
        hidden_units=(16,), batch_size=32, shuffle_buffer=64, save_checkpoints_steps=1000,
    )  # fmt: skip


def test_checkpoints_resume_across_one_two_and_four_towers(digits_dir, tmp_path):
    steps = 0
    for towers in (1, 2, 4, 1):
        steps += 8
        estimator, _ = train_estimator(digits_config(digits_dir, str(tmp_path), towers, steps))
        assert estimator.get_variable_value("global_step") == steps


def test_the_checkpoint_check_sees_the_same_variables_whatever_the_towers(digits_dir, tmp_path):
    """A rerun checks that --job-dir's checkpoint holds the model before resuming: towers must not change its answer."""
    metadata = locate(digits_config(digits_dir, str(tmp_path), 1, 8)).metadata
    variables = [experiment.model_variables(digits_config(digits_dir, str(tmp_path), n, 8), metadata) for n in (1, 4)]
    assert variables[0] == variables[1]


def test_the_export_of_several_towers_predicts_as_one_tower_with_the_same_weights(digits_dir, tmp_path):
    from trainer import serving

    estimator, data = train_estimator(digits_config(digits_dir, str(tmp_path), 2, 16))
    one_tower, _ = train_estimator(digits_config(digits_dir, str(tmp_path), 1, 16))  # the same checkpoint
    images = np.random.default_rng(0).integers(0, 17, size=(5, 8, 8, 1), dtype=np.uint8)
    export = estimator.export_saved_model(str(tmp_path / "export"), serving.make_serving_input_fn(data.metadata))
    exported = tf.saved_model.load(export.decode()).signatures["serving_default"]
    (pixels,) = exported.structured_input_signature[1]
    from_export = exported(**{pixels: tf.constant(images, tf.float32)})["probabilities"].numpy()
    direct = one_tower.predict(lambda: tf.data.Dataset.from_tensors({data.metadata.feature_key: images}))
    np.testing.assert_allclose(from_export, [row["probabilities"] for row in direct], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_two_towers_train_the_digits_as_well_as_one(trained_job, digits_dir, tmp_path):
    """Two towers against the shared one-tower run of the same digits (800 steps of 128). 600 steps of 256: at
    300 two towers reached 0.953 once against one tower's 0.997."""
    with open(os.path.join(trained_job[0], "eval_metrics.json")) as file:
        one_tower = json.load(file)["accuracy"]
    job_dir = str(tmp_path / "two")
    result = subprocess.run(
        [sys.executable, "-m", "trainer.task", "--data-dir", digits_dir, "--job-dir", job_dir,
         "--train-steps", "600", "--save-checkpoints-steps", "600", "--num-towers", "2"],
        capture_output=True, text=True, timeout=600, env={**os.environ, TOWERS_ON_CPUS: "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 tower(s) x batch 128 = global batch 256" in result.stderr
    two_towers = float(re.search(r"^accuracy:\s+([\d.]+)", result.stdout, re.M).group(1))
    assert one_tower > 0.9 and two_towers >= one_tower - 0.03, (one_tower, two_towers)
