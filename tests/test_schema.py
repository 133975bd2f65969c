import json

import numpy as np
import pytest
import tensorflow as tf

from dataformat.errors import UserError
from dataformat.schema import (
    Metadata,
    ShardInfo,
    SplitInfo,
    decode_record,
    encode_record,
    parse_examples,
    parse_records,
)


def make_metadata(shape=(4, 3, 2), dtype="uint8", classes=3) -> Metadata:
    channels = shape[-1]
    return Metadata(
        shape=shape,
        dtype=dtype,
        class_names=tuple(f"c{i}" for i in range(classes)),
        splits={
            "train": SplitInfo(10, 900, (ShardInfo("train-00000-of-00001.tfrecord", 10, 900),)),
            "eval": SplitInfo(2, 180, (ShardInfo("eval-00000-of-00001.tfrecord", 2, 180),)),
        },
        mean=(0.0,) * channels,
        std=(1.0,) * channels,
    )


def packed(data: np.ndarray, labels: np.ndarray, sizes: list[int]) -> list[bytes]:
    """`data` as records of `sizes` examples each."""
    bounds = np.cumsum([0, *sizes])
    return [encode_record(data[a:b], labels[a:b]) for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("sizes", [[1, 1, 1, 1, 1], [3, 2], [5]])
def test_uint8_records_round_trip_through_both_parsers(sizes):
    metadata = make_metadata()
    images = np.random.default_rng(1).integers(0, 256, size=(5, 4, 3, 2), dtype=np.uint8)
    labels = np.array([0, 1, 2, 0, 1])
    records = packed(images, labels, sizes)
    data, parsed_labels = parse_records(tf.constant(records), metadata)
    assert data.dtype == tf.uint8
    np.testing.assert_array_equal(data.numpy(), images)
    np.testing.assert_array_equal(parsed_labels.numpy(), labels)
    decoded = [decode_record(record, metadata) for record in records]
    np.testing.assert_array_equal(np.concatenate([d for d, _ in decoded]), images)
    np.testing.assert_array_equal(np.concatenate([y for _, y in decoded]), labels)


def test_packed_uint8_images_cost_little_more_than_their_bytes():
    images = np.zeros((64, 28, 28, 1), np.uint8)
    assert len(encode_record(images[:1], [7])) < 784 + 40
    assert len(encode_record(images, np.full(64, 7))) - 64 * (784 + 1) < 64  # under a byte an example


@pytest.mark.parametrize("sizes", [[1, 1, 1, 1], [3, 1]])
def test_float_records_round_trip_through_both_parsers(sizes):
    metadata = make_metadata(shape=(6,), dtype="float32")
    vectors = np.random.default_rng(2).normal(size=(4, 6)).astype(np.float32)
    labels = np.array([1, 0, 2, 1])
    records = packed(vectors, labels, sizes)
    data, parsed_labels = parse_records(tf.constant(records), metadata)
    assert data.dtype == tf.float32
    np.testing.assert_array_equal(data.numpy(), vectors)
    np.testing.assert_array_equal(parsed_labels.numpy(), labels)
    np.testing.assert_array_equal(np.concatenate([decode_record(r, metadata)[0] for r in records]), vectors)


def test_records_whose_data_and_labels_disagree_are_refused_by_both_parsers():
    metadata = make_metadata()
    images = np.zeros((3, 4, 3, 2), np.uint8)
    record = encode_record(images, np.array([0, 1]))  # three images, two labels
    with pytest.raises(tf.errors.InvalidArgumentError, match="different number of examples than it has labels"):
        parse_records(tf.constant([record]), metadata)
    with pytest.raises(UserError, match="holds 72 bytes, expected 48 for 2 label"):
        decode_record(record, metadata)


def test_serving_parse_takes_one_example_a_record_without_labels():
    metadata = make_metadata(shape=(2,), dtype="float32")
    example = tf.train.Example(
        features=tf.train.Features(feature={"features": tf.train.Feature(float_list=tf.train.FloatList(value=[1, 2]))})
    )
    np.testing.assert_array_equal(
        parse_examples(tf.constant([example.SerializeToString()]), metadata).numpy(), [[1, 2]]
    )
    data, labels = decode_record(example.SerializeToString(), metadata, labeled=False)
    assert labels is None
    np.testing.assert_array_equal(data, [[1, 2]])


def test_version_1_metadata_reads_as_one_example_a_record():
    raw = json.loads(make_metadata().to_json())
    raw["format_version"] = 1
    del raw["examples_per_record"]
    assert Metadata.from_json(json.dumps(raw), "m.json").examples_per_record == 1


def test_metadata_json_round_trip():
    metadata = make_metadata()
    assert Metadata.from_json(metadata.to_json(), "m.json") == metadata


@pytest.mark.parametrize(
    "change, message",
    [
        ({"dtype": "int16"}, "dtype 'int16'"),
        ({"class_names": ["only"]}, "at least 2"),
        ({"std": [1.0, 0.0]}, "std"),
        ({"mean": [0.0]}, "mean/std"),
        ({"format_version": 99}, "format version 99"),
        ({"num_classes": 4}, "num_classes 4 but 3 names"),
    ],
)
def test_inconsistent_metadata_is_refused_naming_the_file(change, message):
    raw = json.loads(make_metadata().to_json())
    raw.update(change)
    with pytest.raises(UserError, match=f"m.json: .*{message}"):
        Metadata.from_json(json.dumps(raw), "m.json")


@pytest.mark.parametrize("text", ["", "{", "[]", '{"shape": [1]}'])
def test_malformed_metadata_is_refused_naming_the_file(text):
    with pytest.raises(UserError, match="m.json: malformed metadata"):
        Metadata.from_json(text, "m.json")


@pytest.mark.parametrize(
    "x, labels",
    [
        (np.arange(784, dtype=np.uint8).reshape(1, 28, 28, 1), [7]),
        (np.zeros((1, 8, 8, 1), np.uint8), [0]),
        (np.arange(64 * 64, dtype=np.int64).astype(np.uint8).reshape(64, 8, 8, 1), list(range(64))),
        (np.linspace(-1, 1, 1024, dtype=np.float32).reshape(1, 1024), [1]),
        (np.array([[1e-30, 3.5, -0.0], [2, 3, 4]], np.float32), [300, 5]),  # a label of two varint bytes
    ],
)
def test_encoded_bytes_equal_tensorflows_own_serialization(x, labels):
    if x.dtype == np.uint8:
        feature = tf.train.Feature(bytes_list=tf.train.BytesList(value=[x.tobytes()]))
        key = "image"
    else:
        feature = tf.train.Feature(float_list=tf.train.FloatList(value=x.ravel().tolist()))
        key = "features"
    features = {key: feature, "label": tf.train.Feature(int64_list=tf.train.Int64List(value=labels))}
    expected = tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString(deterministic=True)
    assert encode_record(x, np.array(labels)) == expected
