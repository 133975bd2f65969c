"""--weight-column: each row's weight in the training loss, checked and stored beside the row by
preprocessing, carried through the input queues to the loss, never a feature and never asked for at
serving."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import Metadata, parse_records
from preprocessing.tables import TableOptions, build_table_dataset
from trainer import experiment
from trainer.config import Config
from trainer.export import latest_export
from trainer.predict import Model


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


@pytest.mark.parametrize("weight, shown", [("-1", "'-1'"), ("heavy", "'heavy'"), ("", "''"), ("inf", "'inf'")])
def test_a_weight_that_is_not_a_number_at_least_0_is_named_by_line(tmp_path, weight, shown):
    weights = ["1"] * 50
    weights[30] = weight
    source = write_table(tmp_path / "t.csv", weights, ["a", "b"] * 25, range(50))
    with pytest.raises(UserError, match=rf"t.csv: line 32, column 2 \('w'\): the weight {shown} is not a number >= 0"):
        build(tmp_path, source)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"weight": "label"}, "--weight-column label: it is the label or the key column"),
        ({"weight": "x", "key": "x"}, "--weight-column x: it is the label or the key column"),
        ({"numeric": ("w",)}, "--weight-column w: a weight is never a feature"),
        ({"weight": "v"}, "--weight-column: no column 'v'"),
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
