import json

import numpy as np
import pytest
import tensorflow as tf

from preprocessing.errors import UserError
from preprocessing.schema import Metadata, ShardInfo, SplitInfo, encode_example, parse_examples


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


def test_uint8_examples_round_trip_through_tensorflows_parser():
    metadata = make_metadata()
    images = np.random.default_rng(1).integers(0, 256, size=(5, 4, 3, 2), dtype=np.uint8)
    serialized = tf.constant([encode_example(image, i % 3) for i, image in enumerate(images)])
    data, labels = parse_examples(serialized, metadata)
    assert data.dtype == tf.uint8
    np.testing.assert_array_equal(data.numpy(), images)
    np.testing.assert_array_equal(labels.numpy(), [0, 1, 2, 0, 1])


def test_uint8_images_are_stored_as_one_byte_per_value():
    image = np.zeros((28, 28, 1), np.uint8)
    assert 784 < len(encode_example(image, 7)) < 784 + 40


def test_float_examples_round_trip_through_tensorflows_parser():
    metadata = make_metadata(shape=(6,), dtype="float32")
    vectors = np.random.default_rng(2).normal(size=(4, 6)).astype(np.float32)
    serialized = tf.constant([encode_example(v, 1) for v in vectors])
    data, labels = parse_examples(serialized, metadata)
    assert data.dtype == tf.float32
    np.testing.assert_array_equal(data.numpy(), vectors)
    np.testing.assert_array_equal(labels.numpy(), [1, 1, 1, 1])


def test_unlabeled_parse_does_not_need_a_label():
    metadata = make_metadata(shape=(2,), dtype="float32")
    example = tf.train.Example(
        features=tf.train.Features(feature={"features": tf.train.Feature(float_list=tf.train.FloatList(value=[1, 2]))})
    )
    data, labels = parse_examples(tf.constant([example.SerializeToString()]), metadata, labeled=False)
    assert labels is None
    np.testing.assert_array_equal(data.numpy(), [[1, 2]])


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
    "x, label",
    [
        (np.arange(784, dtype=np.uint8).reshape(28, 28, 1), 7),
        (np.zeros((8, 8, 1), np.uint8), 0),
        (np.linspace(-1, 1, 1024, dtype=np.float32), 1),
        (np.array([1e-30, 3.5, -0.0], np.float32), 300),  # a label of two varint bytes
    ],
)
def test_encoded_bytes_equal_tensorflows_own_serialization(x, label):
    if x.dtype == np.uint8:
        feature = tf.train.Feature(bytes_list=tf.train.BytesList(value=[x.tobytes()]))
        key = "image"
    else:
        feature = tf.train.Feature(float_list=tf.train.FloatList(value=x.ravel().tolist()))
        key = "features"
    features = {key: feature, "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}
    expected = tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString(deterministic=True)
    assert encode_example(x, label) == expected
