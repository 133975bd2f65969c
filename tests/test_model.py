"""The model_fn in each mode, on tiny inputs: shapes, dtypes and what each mode returns."""

import dataclasses
import logging

import numpy as np
import pytest
import tensorflow as tf
from tiny import IMAGES, VECTORS

from dataformat.errors import UserError
from dataformat.schema import ShardInfo, SplitInfo
from dataformat.tables import NUMERIC, TEXT, Column
from trainer.config import Config
from trainer.model import LazyAdam, ModelSettings, model_fn

MODES = tf.estimator.ModeKeys


def params(metadata, **fields):
    cnn = metadata.is_image and fields.get("model", "auto") in ("auto", "cnn")
    images = {"conv_filters": (4,), "data_format": "channels_last"} if cnn else {}
    config = Config(**{"hidden_units": (8,), "steps_per_run": "1", **images, **fields})
    return {"settings": ModelSettings.of(config, metadata), "metadata": metadata}


def call(metadata, mode, batch=4):
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        dtype = tf.uint8 if metadata.dtype == "uint8" else tf.float32
        features = {metadata.feature_key: tf.zeros([batch, *metadata.shape], dtype)}
        labels = tf.zeros([batch], tf.int64) if mode != MODES.PREDICT else None
        spec = model_fn(features, labels, mode, params(metadata))
        values = None
        if mode != "build-only":
            with tf.compat.v1.Session() as session:
                session.run([tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()])
                if mode == MODES.PREDICT:
                    values = session.run(spec.predictions)
                elif mode == MODES.TRAIN:
                    weights = tf.compat.v1.trainable_variables()
                    before = session.run(weights)
                    loss, _ = session.run([spec.loss, spec.train_op])
                    values = loss, before, session.run(weights), session.run(tf.compat.v1.train.get_global_step())
                else:
                    session.run([update for _, update in spec.eval_metric_ops.values()])
                    values = session.run({k: v for k, (v, _) in spec.eval_metric_ops.items()})
        return spec, values


@pytest.mark.parametrize("metadata", [IMAGES, VECTORS], ids=["images", "vectors"])
def test_predict_mode(metadata):
    spec, predictions = call(metadata, MODES.PREDICT)
    assert predictions["logits"].shape == (4, metadata.num_classes)
    assert predictions["probabilities"].shape == (4, metadata.num_classes)
    np.testing.assert_allclose(predictions["probabilities"].sum(axis=1), 1.0, rtol=1e-5)
    assert predictions["class_ids"].dtype == np.int64
    assert all(name.decode() in metadata.class_names for name in predictions["classes"])
    assert "serving_default" in spec.export_outputs


@pytest.mark.parametrize("metadata", [IMAGES, VECTORS], ids=["images", "vectors"])
def test_train_mode_returns_a_finite_loss_and_a_train_op_that_updates_the_weights(metadata):
    _, (loss, before, after, step) = call(metadata, MODES.TRAIN)
    assert np.isfinite(loss)
    assert step == 1
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))


def test_train_mode_updates_batch_norm_statistics():
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        features = {"features": tf.random.normal([16, 6], mean=5.0)}
        spec = model_fn(features, tf.zeros([16], tf.int64), MODES.TRAIN, params(VECTORS, conv_filters=()))
        moving = [v for v in tf.compat.v1.global_variables() if "moving_mean" in v.name]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            before = session.run(moving)
            session.run(spec.train_op)
            after = session.run(moving)
    assert moving and not all(np.array_equal(a, b) for a, b in zip(before, after))


def test_eval_mode_has_accuracy_and_per_class_metrics():
    spec, metrics = call(IMAGES, MODES.EVAL)
    assert 0 <= metrics["accuracy"] <= 1
    assert {f"recall/class_{i}" for i in range(5)} <= set(metrics)
    assert {f"precision/class_{i}" for i in range(5)} <= set(metrics)


def test_channels_first_graph_builds_with_the_same_variables():
    # CPUs lack NCHW kernels for some ops, so only the graph is built here; a GPU runs it.
    def variable_shapes(data_format):
        with tf.Graph().as_default():
            features = {"image": tf.zeros([2, 8, 8, 1], tf.uint8)}
            model_fn(features, tf.zeros([2], tf.int64), MODES.EVAL, params(IMAGES, data_format=data_format))
            return [(v.name, v.shape.as_list()) for v in tf.compat.v1.global_variables()]

    assert variable_shapes("channels_first") == variable_shapes("channels_last")


def test_a_model_trained_in_channels_first_exports_in_channels_last():
    """A GPU trains the CNN in NCHW; its export held NCHW pooling, which a CPU without oneDNN (TF Serving's CPU
    builds, macOS) cannot run: "Default MaxPoolingOp only supports NHWC on device type CPU"."""
    with tf.Graph().as_default() as graph:
        features = {"image": tf.zeros([2, 8, 8, 1], tf.uint8)}
        model_fn(features, None, MODES.PREDICT, params(IMAGES, data_format="channels_first"))
        formats = {op.get_attr("data_format") for op in graph.get_operations() if "data_format" in op.node_def.attr}
    assert formats == {b"NHWC"}


def test_auto_picks_the_cnn_for_images_and_the_mlp_for_vectors():
    assert params(IMAGES)["settings"].network == "cnn"
    assert params(VECTORS)["settings"].network == "mlp"
    assert params(IMAGES, model="mlp")["settings"].network == "mlp"


def test_a_networks_flags_are_refused_for_another_network():
    """--conv-filters and --data-format were ignored silently for a table's network, and config.yaml said them."""
    table = dataclasses.replace(VECTORS, shape=(1,), columns=(Column("age", NUMERIC),), label_column="y")
    with pytest.raises(UserError, match=r"--conv-filters 16,32: the convolution blocks of --model cnn \(images\), "
                                        "and this run's network, wide_deep, has none"):  # fmt: skip
        params(table, conv_filters=(16, 32))
    with pytest.raises(UserError, match="--conv-filters 8: .* this run's network, mlp, has none"):
        params(IMAGES, model="mlp", conv_filters=(8,))
    with pytest.raises(UserError, match="--data-format channels_first: the layout of --model cnn's images; this "
                                        "run's network, wide_deep, has no setting of its own"):  # fmt: skip
        params(table, data_format="channels_first")
    assert params(table, conv_filters=())["settings"].network == "wide_deep"  # no blocks: what every network has
    assert params(IMAGES, conv_filters=(8,), data_format="channels_first")["settings"].conv_filters == (8,)


def test_dropout_defaults_to_more_for_tables_and_a_flag_overrides_it(caplog):
    table = dataclasses.replace(VECTORS, shape=(1,), columns=(Column("age", NUMERIC),), label_column="y")
    assert params(table)["settings"].network == "wide_deep"
    assert params(table)["settings"].dropout == 0.5
    assert params(VECTORS)["settings"].dropout == params(IMAGES)["settings"].dropout == 0.3
    assert params(table, dropout=0.1)["settings"].dropout == params(IMAGES, dropout=0.1)["settings"].dropout == 0.1
    # Without dense layers, a network whose only dropout is theirs ignored the rate silently: now warned of (a tuning
    # study's trials may search both flags, and those should run).
    with caplog.at_level(logging.WARNING):
        assert params(table, dropout=0.2, hidden_units=())["settings"].dropout == 0.2
    assert "--dropout 0.2 does nothing: it is the rate of --hidden-units' dense layers in this run's network, " in (
        caplog.text
    )
    assert "wide_deep, and --hidden-units '' leaves it none" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        params(VECTORS, dropout=0.2, hidden_units=(8,))
        params(table, hidden_units=())  # the default, unused, is no request
        params(table, dropout=0.0, hidden_units=())
    assert "--dropout" not in caplog.text
    assert params(table, hidden_units=())["settings"].dropout == 0.5  # the default, unused, is no request
    assert params(table, dropout=0.0, hidden_units=())["settings"].dropout == 0.0


def test_the_learning_rate_defaults_to_adams_own_for_tables_without_text_and_a_flag_overrides_it():
    table = dataclasses.replace(VECTORS, shape=(1,), columns=(Column("age", NUMERIC),), label_column="y")
    assert params(table)["settings"].learning_rate == params(table, model="table")["settings"].learning_rate == 1e-3
    review = Column("review", TEXT, vocabulary=("good",), vocabulary_size=1, max_length=4)
    reviews = dataclasses.replace(table, shape=(6,), columns=(Column("age", NUMERIC), review))
    assert params(reviews)["settings"].network == "wide_deep"
    assert params(reviews)["settings"].learning_rate == 3e-4
    assert params(VECTORS)["settings"].learning_rate == params(IMAGES)["settings"].learning_rate == 3e-4
    assert params(table, learning_rate=0.01)["settings"].learning_rate == 0.01


def test_a_table_trains_about_forty_passes_by_default_within_1000_to_2000_steps_and_a_flag_overrides_it():
    def table(rows):
        splits = {"train": SplitInfo(rows, 10, (ShardInfo("t", rows, 10),))}
        return dataclasses.replace(VECTORS, shape=(1,), columns=(Column("age", NUMERIC),), splits=splits)

    def steps(metadata, **fields):
        return params(metadata, **fields)["settings"].train_steps

    assert steps(table(4_000)) == 1_250  # 40 passes of 4,000 rows in batches of 128
    assert steps(table(4_000), batch_size=64) == 2_000
    assert steps(table(1_000)) == 1_000 and steps(table(10**6)) == 2_000  # at least 1,000, at most the default
    assert steps(dataclasses.replace(VECTORS, splits=table(1_000).splits)) == 2_000  # arrays and images: 2,000
    assert steps(table(1_000), train_steps=7) == 7
    # --num-epochs: the steps its passes take (it was capped at 2,000: 50 passes over MNIST stopped after 4).
    assert steps(table(1_000), num_epochs=3) == 24 and steps(table(10**6), num_epochs=50) == 390_625
    assert steps(dataclasses.replace(VECTORS, splits=table(1_000).splits), num_epochs=3, train_steps=5) == 5
    assert steps(table(1_000), num_epochs=1, train_steps=100) == 8  # the pass ends it: the run's last evaluation
    assert params(table(4_000), freeze_steps=None)["settings"].freeze_steps == 625  # half the run, as before
    assert params(table(4_000), num_epochs=2)["settings"].freeze_steps == 63  # with --num-epochs, all of it


def test_a_network_that_cannot_read_the_data_is_refused_naming_the_flag():
    with pytest.raises(
        UserError, match=r"--model cnn: convolutions for images \(H, W, C\), and this dataset's examples are 6"
    ):
        params(VECTORS, model="cnn")
    with pytest.raises(
        UserError, match="--model resnet: not a network; choose auto or one of text, text_cnn, cnn, wide_deep, table"
    ):
        params(IMAGES, model="resnet")


def test_the_mlp_on_images_flattens_them():
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        features = {"image": tf.zeros([3, 8, 8, 1], tf.uint8)}
        spec = model_fn(features, None, MODES.PREDICT, params(IMAGES, model="mlp"))
        assert spec.predictions["logits"].shape.as_list() == [3, 5]
        assert not any("conv2d" in v.name for v in tf.compat.v1.global_variables())


def test_training_leaves_the_losses_collection_to_the_estimator():
    """The Estimator adds the spec's loss to LOSSES, and the progress line sums that collection:
    a loss of the head's own there would count twice."""
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        features = {VECTORS.feature_key: tf.zeros([4, *VECTORS.shape])}
        model_fn(features, tf.zeros([4], tf.int64), MODES.TRAIN, params(VECTORS))
        assert tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES) == []


def test_lazy_adam_moves_only_the_batchs_rows_of_an_embedding_and_every_dense_weight_as_adam():
    with tf.Graph().as_default():
        table = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2))
        dense = tf.Variable([1.0, 2.0])
        ids = tf.compat.v1.placeholder(tf.int32, [None])
        loss = tf.reduce_sum(tf.square(tf.gather(table, ids))) + tf.reduce_sum(tf.square(dense))
        train = LazyAdam(0.1).minimize(loss)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            for batch in ([1, 3, 3], [3, 4]):  # row 3 twice in one batch: its gradients add up
                session.run(train, {ids: batch})
            rows, weights = session.run([table, dense])
    expected = np.arange(12, dtype=np.float64).reshape(6, 2)
    moments, squares = np.zeros_like(expected), np.zeros_like(expected)
    weight, weight_moment, weight_square = np.array([1.0, 2.0]), np.zeros(2), np.zeros(2)
    for step, batch in enumerate(([1, 3, 3], [3, 4]), 1):
        gradient = np.zeros_like(expected)
        for row in batch:
            gradient[row] += 2 * expected[row]
        seen = sorted(set(batch))
        rate = 0.1 * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
        moments[seen] = 0.9 * moments[seen] + 0.1 * gradient[seen]
        squares[seen] = 0.999 * squares[seen] + 0.001 * gradient[seen] ** 2
        expected[seen] -= rate * moments[seen] / (np.sqrt(squares[seen]) + 1e-8)
        weight_moment = 0.9 * weight_moment + 0.1 * 2 * weight
        weight_square = 0.999 * weight_square + 0.001 * (2 * weight) ** 2
        weight = weight - rate * weight_moment / (np.sqrt(weight_square) + 1e-8)
    np.testing.assert_allclose(rows, expected, atol=1e-5)
    assert rows[[0, 2, 5]].tolist() == [[0, 1], [4, 5], [10, 11]]  # never in a batch: never moved
    np.testing.assert_allclose(weights, weight, atol=1e-5)


def test_a_class_absent_from_the_evaluation_split_is_named(caplog):
    """A few rows of a rare class, all drawn for training: its recall and the AUC say nothing (they read 1.0)."""
    from types import SimpleNamespace

    from trainer.experiment import _warn_of_absent_classes

    _warn_of_absent_classes({"confusion_matrix": [[3, 1], [0, 0]]}, SimpleNamespace(class_names=("no", "yes")))
    assert "no example of class 'yes': its recall, and the AUC, say nothing" in caplog.text
    caplog.clear()
    _warn_of_absent_classes({"confusion_matrix": [[3, 1], [0, 2]]}, SimpleNamespace(class_names=("no", "yes")))
    assert not caplog.text
