"""Pretrained backbones: weights loaded from a file (never downloaded here), the head alone for --freeze-steps,
then the top blocks too; the lower blocks and batch norm's statistics keep the file's values."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image
from test_augment import write_photos

from dataformat.errors import UserError
from trainer import backbones, experiment, figures
from trainer.config import Config
from trainer.devices import TOWERS_ON_CPUS
from trainer.export import latest_export
from trainer.exported_model import Model


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = tmp_path_factory.mktemp("backbone")
    write_photos(root, side=36, per_class=12, suffix=".jpg")
    # A MobileNetV2 without its top, its weights drawn with a seed, saved as Keras publishes them (.h5).
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.applications.MobileNetV2(include_top=False, weights=None, input_shape=(224, 224, 3), pooling="avg")
    model.save_weights(str(root / "mobilenet_v2_notop.h5"))
    return root, {
        f"{layer.name}/{w.name.split('/')[-1][:-2]}": w.numpy() for layer in model.layers for w in layer.weights
    }


def _devices(job_dir: str) -> set[str]:
    """The devices the training graph's ops ask for, from the graph TensorBoard reads (the events file)."""
    devices = set()
    for path in tf.io.gfile.glob(f"{job_dir}/{figures.EVENTS_GLOB}"):
        for event in tf.compat.v1.train.summary_iterator(path):
            if event.graph_def:
                graph = tf.compat.v1.GraphDef.FromString(event.graph_def)  # the steps' loop: a library function
                nodes = [*graph.node, *(node for function in graph.library.function for node in function.node_def)]
                devices.update(node.device for node in nodes)
    return devices


def _stored(job_dir: str, suffix: str) -> np.ndarray:
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(job_dir))
    (name,) = [n for n in reader.get_variable_to_shape_map() if n.endswith(suffix) and "Adam" not in n]
    return reader.get_tensor(name)


def test_weights_from_a_file_and_only_the_top_blocks_train_on_two_towers(photos, tmp_path, caplog, monkeypatch):
    """Two towers (virtual CPUs here), with XLA and mixed precision asked for (on a CPU TensorFlow leaves both
    out, so here they show only that the graph builds and exports with them)."""
    monkeypatch.setenv(TOWERS_ON_CPUS, "1")
    root, saved = photos
    weights = str(root / "mobilenet_v2_notop.h5")
    config = Config(data_dir=str(root / "data"), job_dir=str(tmp_path / "job"), model="mobilenet_v2", batch_size=4,
                    pretrained=weights, train_steps=3, freeze_steps=2, eval_steps=1, num_towers="2", xla=True,
                    mixed_precision=True)  # fmt: skip
    with caplog.at_level(logging.INFO, logger="trainer"):
        experiment.run(config)
    assert "Initializing mobilenet_v2 from" in caplog.text
    assert "/device:CPU:1" in _devices(config.job_dir)  # the second tower's ops
    frozen, top = "Conv1/kernel", "Conv_1/kernel"  # the first convolution, and the last block's
    np.testing.assert_array_equal(_stored(config.job_dir, frozen), saved[frozen])
    np.testing.assert_array_equal(_stored(config.job_dir, "bn_Conv1/moving_mean"), saved["bn_Conv1/moving_mean"])
    assert not np.array_equal(_stored(config.job_dir, top), saved[top])  # step 3: past --freeze-steps
    served = Model(latest_export(config, "latest"))  # JPEG bytes of another size are resized
    image = tmp_path / "big.jpg"
    Image.fromarray(np.full((90, 70, 3), 200, np.uint8)).save(image)
    (prediction,) = served.predict("image_bytes:serving_default", [image.read_bytes()])
    assert prediction["classes"] in ("red", "blue")


def test_the_top_blocks_wait_for_freeze_steps_then_learn_at_a_tenth_of_the_rate():
    with tf.Graph().as_default():
        step = tf.compat.v1.train.create_global_step()
        head, top = tf.Variable(0.0, name="head"), tf.Variable(0.0, name="top")
        rate = 0.01
        slower = tf.compat.v1.train.AdamOptimizer(rate * backbones.FINE_TUNE_RATE)
        optimizer = backbones.TwoRates(tf.compat.v1.train.AdamOptimizer(rate), slower, 2, {"top"})
        train = optimizer.apply_gradients([(tf.constant(1.0), head), (tf.constant(1.0), top)], global_step=step)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            seen = []
            for _ in range(3):
                session.run(train)
                seen.append(session.run([head, top]))
    assert seen[0][0] == pytest.approx(-rate) and seen[0][1] == 0 and seen[1][1] == 0  # steps 0 and 1: the head only
    # Step 2: the top moves too, by at most a tenth of the head's first step (Adam's first steps are about its rate).
    assert 0 < -seen[2][1] <= rate * backbones.FINE_TUNE_RATE


def test_weights_that_do_not_fit_and_weights_for_another_network_are_refused(photos, tmp_path):
    root, _ = photos
    (tmp_path / "bad.h5").write_bytes(b"not hdf5")
    with pytest.raises(UserError, match=r"--pretrained .*bad.h5: not resnet50's weights without its top"):
        backbones.pretrained_weights("resnet50", str(tmp_path / "bad.h5"))
    config = Config(data_dir=str(root / "data"), job_dir=str(tmp_path / "job"), model="cnn", pretrained="imagenet")
    with pytest.raises(UserError, match="--pretrained imagenet: weights are for --model mobilenet_v2"):
        experiment.run(config)
    frozen = Config(data_dir=str(root / "data"), job_dir=str(tmp_path / "job"), model="cnn", freeze_steps=10)
    with pytest.raises(UserError, match="--freeze-steps 10: it freezes a --pretrained backbone, and this run has none"):
        experiment.run(frozen)  # it was ignored silently
