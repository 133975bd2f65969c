"""--weight-column: each row's weight in the training loss, checked and stored beside the row by
preprocessing, carried through the input queues to the loss, never a feature and never asked for at
serving."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import WEIGHT, Metadata, decode_record, parse_records
from preprocessing.cli import main as preprocess
from preprocessing.table_shards import ShardWriter
from preprocessing.tables import TableOptions, build_table_dataset
from trainer import experiment
from trainer.config import Config
from trainer.dataset import locate
from trainer.export import latest_export
from trainer.exported_model import Model
from trainer.head import ClassificationHead
from trainer.input import StagingHook, make_input_fn, training_batches


def write_table(path, weights: list[str], labels: list[str], xs) -> str:
    lines = ["x,w,label", *(f"{x:.3f},{w},{label}" for x, w, label in zip(xs, weights, labels))]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def build(tmp_path, source: str, **options) -> Metadata:
    flags = {"label_column": "label", "weight": "w", **options}
    return build_table_dataset(source, str(tmp_path / "data"), TableOptions(**flags), examples_per_record=8)


def test_the_weights_are_stored_beside_each_row_and_are_no_feature(tmp_path):
    labels = ["a" if i % 3 else "b" for i in range(200)]
    source = write_table(tmp_path / "t.csv", [" 2.5" if label == "a" else "0" for label in labels], labels, range(200))
    metadata = build(tmp_path, source)
    assert metadata.weight_column == "w" and [column.name for column in metadata.columns] == ["x"]
    assert Metadata.from_json((tmp_path / "data" / "metadata.json").read_text(), "m").weight_column == "w"
    shards = [str(tmp_path / "data" / shard.file) for shard in metadata.splits["train"].shards]
    records = list(tf.data.TFRecordDataset(shards).as_numpy_iterator())
    _, parsed_labels, weights = (part.numpy() for part in parse_records(tf.constant(records), metadata))
    a = metadata.class_names.index("a")
    assert len(weights) == metadata.splits["train"].examples
    np.testing.assert_array_equal(weights, np.where(parsed_labels == a, 2.5, 0.0))


# 1e39: infinite as the float32 stored; 1e37: finite, but a batch's sum of them is not (a NaN loss, before)
@pytest.mark.parametrize("weight", ["-1", "heavy", "", "inf", "1e39", "1e37"])
def test_a_weight_that_is_not_a_number_at_least_0_is_named_by_line(tmp_path, weight):
    weights = ["1"] * 50
    weights[30] = weight
    source = write_table(tmp_path / "t.csv", weights, ["a", "b"] * 25, range(50))
    expected = rf"t.csv: line 32, column 2 \('w'\): the weight '{weight}' is not a number from 0 to 1e30"
    with pytest.raises(UserError, match=expected) as refused:
        build(tmp_path, source)
    assert ("rescale the column" in str(refused.value)) == (weight == "1e37")  # advice only where it helps


@pytest.mark.parametrize(
    "options, message",
    [
        ({"weight": "label"}, "--weight-column label: it is the label or the key column, or named as"),
        ({"weight": "x", "key": "x"}, "--weight-column x: it is the label or the key column"),
        ({"numeric": ("w",)}, "--weight-column w: a weight is never a feature"),
        ({"ignore": ("w",)}, "--weight-column w: a weight is never a feature"),  # it weighed the rows all the same
        ({"weight": "label", "label_column": "-1"}, "--weight-column label: it is the last column, which is the "),
        ({"key": "label", "label_column": "-1"}, "--key-column label: it is the last column, which is the label wh"),
        ({"weight": "v"}, "--weight-column: .*t.csv: no column 'v'"),
    ],
)
def test_a_weight_column_that_cannot_be_one_is_refused(tmp_path, options, message):
    source = write_table(tmp_path / "t.csv", ["1"] * 20, ["a", "b"] * 10, range(20))
    with pytest.raises(UserError, match=message):
        build(tmp_path, source, **options)


def test_the_loss_follows_the_weights_and_serving_needs_none(tmp_path):
    """A quarter of the rows say a number above 0 is `up`, three quarters say it is `down`; the three
    quarters have weight 0. Trained on the weights, the model says `up`, as only they would have it."""
    rng = np.random.default_rng(0)
    xs = rng.normal(size=800)
    honest = np.arange(800) % 4 == 0
    labels = ["up" if (x > 0) == keep else "down" for x, keep in zip(xs, honest)]
    source = write_table(tmp_path / "t.csv", np.where(honest, "1", "0"), labels, xs)
    build(tmp_path, source)
    config = Config(data_dir=str(tmp_path / "data"), job_dir=str(tmp_path / "job"), train_steps=400)
    experiment.run(config)
    answers = Model(latest_export(config, "latest")).predict("serving_default", [{"x": 2.0}, {"x": -2.0}])
    assert [answer["classes"] for answer in answers] == ["up", "down"]


def test_the_loss_is_the_weighted_mean():
    """A weight of 2 counts as two copies, 0 as none; weights scaled together train alike; class weights
    and row weights multiply."""
    head = ClassificationHead(("a", "b"))
    logits, labels = tf.constant([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), tf.constant([1, 1, 0], tf.int64)

    def loss(rows, weights=None, of=head):
        chosen = tf.constant(rows)
        given = None if weights is None else tf.constant(weights, tf.float32)
        return float(of.loss(tf.gather(logits, chosen), tf.gather(labels, chosen), given))

    assert loss([0, 1, 2], [2, 0, 1]) == pytest.approx(loss([0, 0, 2]))
    assert loss([0, 1, 2], [2e5, 1e5, 3e5]) == pytest.approx(loss([0, 1, 2], [2, 1, 3]))
    assert loss([0, 1], [0, 0]) == 0.0  # a batch that weighs nothing teaches nothing
    weighted_classes = ClassificationHead(("a", "b"), class_weights=(4.0, 1.0))
    assert loss([0, 1, 2], [1, 1, 0.25], weighted_classes) == pytest.approx(loss([0, 1, 2]))


def test_the_weights_reach_the_staging_area_and_a_fed_batch(tmp_path):
    labels = ["a" if i % 3 else "b" for i in range(200)]
    source = write_table(tmp_path / "t.csv", ["2.5" if label == "a" else "0" for label in labels], labels, range(200))
    metadata = build(tmp_path, source)
    config = Config(data_dir=str(tmp_path / "data"), batch_size=16, shuffle_buffer=50, stage_on_device="on")
    data = locate(config)
    with tf.Graph().as_default():
        features, _ = make_input_fn(data.train, data.metadata, config, training=True)()
        batch = training_batches(None, None, None).take(0)
        with tf.compat.v1.train.MonitoredSession(hooks=[StagingHook(30)]) as session:
            staged, weights, put = session.run((batch.labels, batch.weights, batch.put))
        assert features[WEIGHT].dtype == tf.float32
    np.testing.assert_array_equal(weights, np.where(staged == metadata.class_names.index("a"), 2.5, 0.0))
    with tf.Graph().as_default():  # a batch given to model_fn (no queue): its weights come with its features
        fed = training_batches({metadata.feature_key: tf.zeros([2, 1]), WEIGHT: tf.ones([2])}, tf.zeros([2]), metadata)
        assert fed.take(0).weights is not None


def test_a_record_without_its_weight_is_named(tmp_path):
    labels = ["a", "b"] * 20
    metadata = build(tmp_path, write_table(tmp_path / "t.csv", ["1"] * 40, labels, range(40)))
    shard = tmp_path / "data" / metadata.splits["train"].shards[0].file
    record = tf.train.Example.FromString(next(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator()))
    decode_record(record.SerializeToString(), metadata)
    del record.features.feature["w"]
    with pytest.raises(UserError, match="feature 'w' \\(the weights\\) is missing"):
        decode_record(record.SerializeToString(), metadata)


def test_weights_of_0_in_every_training_row_are_refused_locally_and_by_beam(tmp_path):
    """A model of nothing trained to its last step, was exported, and the run exited 0."""
    source = write_table(tmp_path / "t.csv", ["0"] * 60, ["a", "b"] * 30, range(60))
    with pytest.raises(UserError, match="--weight-column w: every training row's weight is 0"):
        build(tmp_path, source)
    beam = pytest.importorskip("preprocessing.beam")
    options = TableOptions(label_column="label", weight="w")
    with pytest.raises(UserError, match="--weight-column w: every training row's weight is 0"):
        beam.build_table_dataset_with_beam(source, str(tmp_path / "beam"), options, ["--runner", "DirectRunner"])


def test_beams_writer_keeps_the_weight_column_on_its_way_through_json():
    beam = pytest.importorskip("preprocessing.beam")
    writer = ShardWriter("label", (), ("a", "b"), "", 8, key="id", weight="w")
    assert beam._writer_from_json(beam._writer_json(writer), "out") == writer


def test_a_weight_column_for_images_is_refused(tmp_path, caplog):
    assert preprocess(["--source", "digits", "--output", str(tmp_path / "d"), "--weight-column", "w"]) == 2
    assert "--weight-column: a flag of tables (--source csv), not of --source digits" in caplog.text
