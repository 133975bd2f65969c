"""The queue-backed input_fn, run in a real MonitoredSession with its queue runners."""

import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from queues import run_batches

from dataformat.errors import UserError
from dataformat.schema import Metadata, parse_records
from preprocessing.sources import SourceOptions, read_digits
from preprocessing.writer import build_dataset
from trainer.config import Config
from trainer.dataset import expand, locate
from trainer.input import StagingHook, _in_blocks, make_input_fn, stages_on_device, training_batches


def test_training_batches_have_the_metadata_shapes(digits_dir):
    config = Config(data_dir=digits_dir, batch_size=32, shuffle_buffer=100)
    data = locate(config)
    batches = run_batches(make_input_fn(data.train, data.metadata, config, training=True), limit=5)
    for features, labels in batches:
        assert features["image"].shape == (32, 8, 8, 1)
        assert features["image"].dtype == np.uint8
        assert labels.shape == (32,) and labels.dtype == np.int64
    # Shuffled: the first batch is not the first 32 records of either shard.
    assert len({labels.tobytes() for _, labels in batches}) == 5


def test_batch_size_that_the_block_does_not_divide_still_comes_whole(digits_dir):
    config = Config(data_dir=digits_dir, batch_size=36, shuffle_block=8, shuffle_buffer=100)
    data = locate(config)
    with tf.Graph().as_default():
        features, labels = make_input_fn(data.train, data.metadata, config, training=True)()
        assert features["image"].shape == (36, 8, 8, 1) and labels.shape == (36,)  # static, for XLA
    for features, labels in run_batches(make_input_fn(data.train, data.metadata, config, training=True), limit=40):
        assert features["image"].shape == (36, 8, 8, 1) and labels.shape == (36,)


def test_training_repeats_for_num_epochs_then_stops(digits_dir):
    config = Config(data_dir=digits_dir, batch_size=100, num_epochs=2, shuffle_buffer=10)
    data = locate(config)
    batches = run_batches(make_input_fn(data.train, data.metadata, config, training=True))
    images = np.concatenate([features["image"] for features, _ in batches])
    serialized = tf.constant(list(tf.data.TFRecordDataset(data.train).as_numpy_iterator()))
    once = parse_records(serialized, data.metadata)[0].numpy()
    assert sorted(image.tobytes() for image in images) == sorted(2 * [image.tobytes() for image in once])


def test_blocks_hold_back_the_examples_that_do_not_fill_one():
    with tf.Graph().as_default() as graph:
        read = tf.compat.v1.placeholder(tf.int64, [None])
        blocks = _in_blocks((tf.reshape(read * 10, [-1, 1]), read), block=4)
        held = graph.get_operation_by_name("held_back").outputs[0]
        held_count = tf.raw_ops.QueueSizeV2(handle=held)
        with tf.compat.v1.Session() as session:
            out = []
            for first, size in ((0, 5), (5, 7), (12, 3), (15, 64)):
                data, labels = session.run(blocks, {read: np.arange(first, first + size)})
                assert labels.shape[1] == 4 and data.shape[1:] == (4, 1)
                np.testing.assert_array_equal(data[..., 0], labels * 10)  # still paired
                out.append((labels.ravel(), session.run(held_count)))
            _, left = session.run(tf.raw_ops.QueueDequeueManyV2(handle=held, n=3, component_types=[tf.int64] * 2))
    assert [(len(labels), count) for labels, count in out] == [(4, 1), (8, 0), (0, 3), (64, 3)]
    assert sorted(np.concatenate([labels for labels, _ in out] + [left])) == list(range(79))  # none lost or repeated
    # Each read is shuffled: checked on the reads of 8 and 64 (a sorted order by chance: 1 in 40,320 or less).
    assert all(list(labels) != sorted(labels) for labels, _ in out if len(labels) >= 8)


def test_input_state_stays_on_the_worker_in_a_parameter_server_cluster(digits_dir):
    config = Config(data_dir=digits_dir)
    data = locate(config)
    with tf.Graph().as_default() as graph:
        setter = tf.compat.v1.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:1")
        with graph.device(setter):  # as the Estimator builds a worker's graph
            make_input_fn(data.train, data.metadata, config, training=True)()
    placed = {op.name: op.device for op in graph.get_operations()}
    assert placed["held_back"] == placed["input_producer"] == "/job:worker/task:1/device:CPU:0"
    assert not [name for name, device in placed.items() if "/job:ps" in device]


def test_evaluation_reads_every_example_exactly_once_in_order(digits_dir):
    config = Config(data_dir=digits_dir, eval_batch_size=100)
    data = locate(config)
    batches = run_batches(make_input_fn(data.eval, data.metadata, config, training=False))
    images = np.concatenate([features["image"] for features, _ in batches])
    labels = np.concatenate([labels for _, labels in batches])
    serialized = tf.constant(list(tf.data.TFRecordDataset(data.eval).as_numpy_iterator()))
    expected_images, expected_labels = parse_records(serialized, data.metadata)
    assert len(batches[-1][1]) == len(labels) % 100  # the smaller last batch is kept
    np.testing.assert_array_equal(labels, expected_labels.numpy())
    np.testing.assert_array_equal(images, expected_images.numpy())


def test_gzip_shards_feed_the_same_evaluation_batches(tmp_path, digits_dir):
    build_dataset(read_digits(None, SourceOptions()), str(tmp_path), source="digits", compression="GZIP")
    batches = {}
    for name, folder in (("plain", digits_dir), ("gzip", str(tmp_path))):
        config = Config(data_dir=folder, eval_batch_size=100)
        data = locate(config)
        batches[name] = run_batches(make_input_fn(data.eval, data.metadata, config, training=False))
    assert len(batches["plain"]) == len(batches["gzip"])
    for (plain, plain_labels), (packed, packed_labels) in zip(batches["plain"], batches["gzip"]):
        np.testing.assert_array_equal(plain["image"], packed["image"])
        np.testing.assert_array_equal(plain_labels, packed_labels)


def test_float_vectors_come_through_as_float32(vectors_dir):
    config = Config(data_dir=vectors_dir, batch_size=16, shuffle_buffer=0)
    data = locate(config)
    (features, labels), *_ = run_batches(make_input_fn(data.train, data.metadata, config, training=True), limit=1)
    assert features["features"].shape == (16, 16) and features["features"].dtype == np.float32


def test_glob_that_matches_nothing_fails_at_once_naming_it(tmp_path):
    (tmp_path / "a1").write_bytes(b"")
    assert expand(f"{tmp_path}/a*", "--train-files") == [f"{tmp_path}/a1"]
    with pytest.raises(UserError, match=r"--train-files .*nothing-\*: no file matches"):
        expand(f"{tmp_path}/a*,{tmp_path}/nothing-*", "--train-files")


def test_globs_use_the_metadata_beside_the_shards(digits_dir):
    config = Config(
        train_files=os.path.join(digits_dir, "train-*"),
        eval_files=os.path.join(digits_dir, "eval-*"),
        job_dir="unused",
    )
    data = locate(config)
    assert len(data.train) == 2 and len(data.eval) == 1
    assert data.metadata.shape == (8, 8, 1)


def test_a_tables_shards_of_another_run_than_its_metadata_are_refused_or_warned_of(tmp_path, digits_dir, caplog):
    """A table's shards with another dataset's --metadata trained silently: shard names repeat across datasets, and
    another run's vocabulary gives its values other indices. An image's shards read alike whatever run wrote them."""
    from preprocessing.tables import TableOptions, build_table_dataset

    rows = "".join(f"{i % 7},{'xyz'[i % 3]},{'ab'[i % 2]}\n" for i in range(300))
    (tmp_path / "t.csv").write_text("n,c,label\n" + rows)
    build_table_dataset(str(tmp_path / "t.csv"), str(tmp_path / "data"), TableOptions())
    data = tmp_path / "data"
    given = {"eval_files": f"{data}/eval-*", "metadata": f"{data}/metadata.json", "job_dir": "unused"}
    locate(Config(train_files=f"{data}/train-*", **given))  # its own shards
    shard = sorted(data.glob("train-*"))[0]
    shard.write_bytes(shard.read_bytes() + shard.read_bytes()[:100])  # another run's shard of that name
    with pytest.raises(UserError, match=rf"{shard.name}: \d+ bytes, but .*metadata.json records \d+ for"):
        locate(Config(train_files=f"{data}/train-*", **given))
    shard.rename(data / "more.tfrecord")
    locate(Config(train_files=f"{data}/train-*,{data}/more.tfrecord", **given))
    assert "1 file(s) that " in caplog.text and "more.tfrecord; shards of another preprocessing run" in caplog.text
    caplog.clear()
    images = {"eval_files": f"{data}/eval-*", "metadata": os.path.join(digits_dir, "metadata.json")}
    locate(Config(train_files=os.path.join(digits_dir, "train-*"), job_dir="unused", **images))
    assert not caplog.text  # a table's eval shards beside the digits: no vocabulary to read otherwise


def test_evaluation_files_that_are_training_files_are_refused(digits_dir):
    """--eval-files 'data/train-*' evaluated on the rows it trained on, and reported the figures as held out."""
    for train, evaluation in (("train-*", "train-*"), ("train-00000-*", "train-00001-*")):
        config = Config(
            train_files=os.path.join(digits_dir, train), eval_files=os.path.join(digits_dir, evaluation), job_dir="x"
        )
        with pytest.raises(UserError, match=r"--eval-files: .*train-0000\d-of-00002.tfrecord is a training file"):
            locate(config)


def test_a_data_dir_that_is_no_dataset_says_how_to_make_one(tmp_path, digits_dir):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "table.csv").write_text("x,label\n1,a\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".lease").write_text("")  # what a failed or stopped qt-preprocess leaves: no raw data
    table, metadata = tmp_path / "raw" / "table.csv", os.path.join(digits_dir, "metadata.json")
    for path, message in (
        (table, f"a file, not a dataset folder; make one with: qt-preprocess --input {table} --output data/NAME"),
        (tmp_path / "raw", f"not a dataset (no shards, no metadata.json); make one with: qt-preprocess --input "
                           f"{tmp_path / 'raw'} --output data/NAME"),
        (tmp_path / "empty", f"not a dataset (no shards, no metadata.json); make one with: qt-preprocess --input "
                             f"RAW_DATA --output {tmp_path / 'empty'}"),
        (tmp_path / "nothing", "no such folder; make one with: qt-preprocess --input RAW_DATA"),
        (metadata, f"a file of a dataset; pass its folder, --data-dir {digits_dir}"),
    ):  # fmt: skip
        with pytest.raises(UserError, match=re.escape(f"--data-dir {path}: {message}")):
            locate(Config(data_dir=str(path)))


def test_folder_without_metadata_is_refused(tmp_path):
    (tmp_path / "train-00000-of-00001.tfrecord").write_bytes(b"")
    with pytest.raises(UserError, match="metadata.json does not exist: the folder is not a finished dataset"):
        locate(Config(data_dir=str(tmp_path)))


def test_metadata_that_lists_a_missing_shard_is_refused(tmp_path, digits_dir):
    for name in os.listdir(digits_dir):
        if name != "train-00001-of-00002.tfrecord":
            shutil.copy(os.path.join(digits_dir, name), tmp_path / name)
    with pytest.raises(UserError, match="lists .*train-00001-of-00002.tfrecord, which does not exist"):
        locate(Config(data_dir=str(tmp_path)))


def test_shard_whose_size_differs_from_the_metadata_is_refused(tmp_path, digits_dir):
    shutil.copytree(digits_dir, tmp_path / "d")
    shard = tmp_path / "d" / "eval-00000-of-00001.tfrecord"
    size = shard.stat().st_size
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(
        UserError, match=f"eval-00000-of-00001.tfrecord: {size - 100} bytes, but .*records {size}: the shard was"
    ):
        locate(Config(data_dir=str(tmp_path / "d")))


def test_metadata_is_shared_with_the_writer(digits_dir):
    with open(os.path.join(digits_dir, "metadata.json")) as file:
        assert locate(Config(data_dir=digits_dir)).metadata == Metadata.from_json(file.read(), "m")


def test_staged_batches_are_the_previous_steps_batches(digits_dir):
    config = Config(data_dir=digits_dir, batch_size=16, shuffle_buffer=50, stage_on_device="on")
    data = locate(config)
    with tf.Graph().as_default():
        make_input_fn(data.train, data.metadata, config, training=True)()
        batches = training_batches(None, None, None)
        batch = batches.take(0)
        staging = batch.put.inputs[1]  # the labels that the step's put copies into the area
        with tf.compat.v1.train.MonitoredSession(hooks=[StagingHook(30)]) as session:
            steps = [session.run((batch.labels, staging, batch.put)) for _ in range(5)]
    for (_, staged_before, _), (trained_on, _, _) in zip(steps, steps[1:]):
        np.testing.assert_array_equal(trained_on, staged_before)
    assert len({staged.tobytes() for _, staged, _ in steps}) == 5  # a new batch each step


def test_no_staging_with_num_epochs_so_that_no_batch_is_left_behind(digits_dir):
    config = Config(data_dir=digits_dir, batch_size=100, num_epochs=1, stage_on_device="on")
    assert not stages_on_device(config)
