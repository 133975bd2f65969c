"""Bad shards and records: the trainer names the file and record, exits 2, and never hangs."""

import dataclasses
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataformat.errors import UserError, tensorflow_error_line
from dataformat.schema import (
    METADATA_FILE,
    Metadata,
    ShardInfo,
    SplitInfo,
    decode_record,
    encode_record,
    parse_records,
)
from dataformat.tfrecord import frame
from trainer.dataset import first_problem

DIGITS_LIKE = Metadata(
    shape=(8, 8, 1),
    dtype="uint8",
    class_names=tuple(str(i) for i in range(10)),
    splits={},
    mean=(5.0,),
    std=(6.0,),
)


def example(**features) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def image_feature(size=64):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(size)]))


def label_feature(value=3):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


BAD_RECORDS = {
    "missing image": (example(label=label_feature()), "feature 'image' is missing"),
    "missing label": (example(image=image_feature()), "feature 'label' is missing"),
    "wrong type": (
        example(image=tf.train.Feature(float_list=tf.train.FloatList(value=[1.0])), label=label_feature()),
        "feature 'image' is a float_list, expected a bytes_list",
    ),
    "wrong shape": (example(image=image_feature(63), label=label_feature()), "holds 63 bytes, expected 64"),
    "two byte strings": (
        example(image=tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(64)] * 2)), label=label_feature()),
        "holds 2 byte strings, expected 1",
    ),
    "label too big": (example(image=image_feature(), label=label_feature(10)), "label 10 is outside the 10 classes"),
    "negative label": (example(image=image_feature(), label=label_feature(-1)), "label -1 is outside"),
    "not an example": (b"\x08\x96\x01garbage", "not a serialized tf.train.Example"),
}


def write_dataset(folder, train_records, eval_records) -> str:
    """A dataset folder whose metadata matches its shards, whatever the records hold."""
    os.makedirs(folder, exist_ok=True)
    splits = {}
    for split, records in (("train", train_records), ("eval", eval_records)):
        name = f"{split}-00000-of-00001.tfrecord"
        data = b"".join(frame(r) for r in records)
        with open(os.path.join(folder, name), "wb") as file:
            file.write(data)
        splits[split] = SplitInfo(len(records), len(data), (ShardInfo(name, len(records), len(data)),))
    with open(os.path.join(folder, METADATA_FILE), "w") as file:
        file.write(dataclasses.replace(DIGITS_LIKE, splits=splits).to_json())
    return str(folder)


def good_records(n=300, per_record=1):
    """`n` records of `per_record` random digits-like examples each."""
    rng = np.random.default_rng(0)
    return [
        encode_record(rng.integers(0, 17, (per_record, 8, 8, 1), dtype=np.uint8), np.arange(per_record) % 10)
        for _ in range(n)
    ]


def test_tensorflow_error_line_is_the_line_that_says_what_went_wrong():
    gather = tf.function(lambda x: tf.gather(x, [5]), input_signature=[tf.TensorSpec([None])], autograph=False)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        gather(tf.zeros([4]))
    assert tensorflow_error_line(raised.value) == "indices[0] = 5 is not in [0, 4)"
    # As a training step's session.run reports it: a header, then where the failing op was defined.
    traced = (
        "Graph execution error:\n\nDetected at node 'GatherV2' defined at (most recent call last):\n"
        '    File "/job/trainer/model.py", line 100, in model_fn\n'
        "Node: 'GatherV2'\nindices[0] = 5 is not in [0, 4)\n\t [[{{node GatherV2}}]]"
    )
    assert (
        tensorflow_error_line(tf.errors.InvalidArgumentError(None, None, traced)) == "indices[0] = 5 is not in [0, 4)"
    )


def run_task(*args):
    return subprocess.run([sys.executable, "-m", "trainer.task", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", sorted(BAD_RECORDS))
def test_decode_record_says_what_is_wrong(name):
    record, message = BAD_RECORDS[name]
    with pytest.raises(UserError, match=message):
        decode_record(record, DIGITS_LIKE)


@pytest.mark.slow
# One of each place where training meets a bad record: parsing it, decoding its image, checking its label (every
# kind's message is checked above, without training).
@pytest.mark.parametrize("name", ["wrong type", "wrong shape", "label too big"])
def test_training_on_a_bad_record_names_file_and_record(tmp_path, name):
    record, message = BAD_RECORDS[name]
    data_dir = write_dataset(tmp_path / "data", good_records(50) + [record] + good_records(50), good_records(20))
    result = run_task("--data-dir", data_dir, "--job-dir", str(tmp_path / "job"), "--train-steps", "50")
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert re.search(f"train-00000-of-00001.tfrecord, record 50: .*{message}", last)
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_corrupt_shard_is_named_and_can_be_skipped(tmp_path):
    data_dir = write_dataset(tmp_path / "data", good_records(300), good_records(60))
    shard = tmp_path / "data" / "train-00000-of-00001.tfrecord"
    damaged = bytearray(shard.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # same size, so only reading it finds the damage
    shard.write_bytes(bytes(damaged))
    assert "damaged or cut short after" in first_problem(str(shard), DIGITS_LIKE)

    # A second, good training shard, so that something is left after skipping.
    extra = b"".join(frame(r) for r in good_records(100))
    (tmp_path / "data" / "train-extra.tfrecord").write_bytes(extra)
    args = ["--train-files", f"{data_dir}/train-*", "--eval-files", f"{data_dir}/eval-*", "--train-steps", "30"]
    failed = run_task(*args, "--job-dir", str(tmp_path / "job1"))
    assert failed.returncode == 2
    assert "train-00000-of-00001.tfrecord: damaged or cut short after" in failed.stderr.strip().splitlines()[-1]
    assert "--skip-corrupt" in failed.stderr.strip().splitlines()[-1]

    skipped = run_task(*args, "--job-dir", str(tmp_path / "job2"), "--skip-corrupt")
    assert skipped.returncode == 0, skipped.stderr[-2000:]
    assert "Leaving out 300 examples: " in skipped.stderr
    assert "--skip-corrupt: 1 of 2 train shard(s) left out" in skipped.stderr


@pytest.mark.slow
def test_a_starved_queue_stops_the_job_instead_of_hanging(tmp_path):
    data_dir = write_dataset(tmp_path / "data", [], [])
    result = run_task(
        "--train-files",
        f"{data_dir}/train-*",
        "--eval-files",
        f"{data_dir}/eval-*",
        "--job-dir",
        str(tmp_path / "job"),
        "--input-timeout-secs",
        "3",
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert "no batch reached the model for 3 s (--input-timeout-secs)" in last
    assert "for training, all 1 file(s) are empty" in last


def test_a_stall_over_files_some_of_them_empty_names_those(tmp_path):
    """A cluster's worker whose share was an empty shard was told "is the storage unreachable?"."""
    from trainer.dataset import describe_stall

    (tmp_path / "train-0").write_bytes(b"x" * 100)
    (tmp_path / "train-1").write_bytes(b"")
    said = describe_stall([str(tmp_path / "train-0"), str(tmp_path / "train-1")])
    assert said == "1 of the 2 file(s) are empty (train-1); a task that reads only those starves"
    assert "unreachable" in describe_stall([str(tmp_path / "train-0")])


def test_a_ctrl_c_noted_during_a_step_that_failed_is_raised_in_place_of_its_error():
    """A Ctrl-C noted while a session was open, whose step then failed (a bad record, the closed queues as a
    session started), came after the error's handling (a scan of every shard) or was lost; afterwards no session
    of the run counted as open, so the next Ctrl-C is raised at once."""
    from trainer import stuck

    coordinator = tf.train.Coordinator()
    stuck._sessions.add(coordinator)  # a session that failed as it started: never closed
    stuck._noted.set()
    with pytest.raises(KeyboardInterrupt), stuck.ctrl_c_between_steps():
        raise tf.errors.InvalidArgumentError(None, None, "a bad record")
    assert not stuck._noted.is_set() and not stuck._open()
    with pytest.raises(tf.errors.InvalidArgumentError), stuck.ctrl_c_between_steps():  # no Ctrl-C: the error
        raise tf.errors.InvalidArgumentError(None, None, "a bad record")
    with pytest.raises(KeyboardInterrupt):
        stuck._on_ctrl_c(2, None)  # no session open: raised, as Python's own handler does


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_decode_record_on_random_bytes_parses_or_says_why(record):
    try:
        images, labels = decode_record(record, DIGITS_LIKE)
    except UserError:
        return  # a clean error; anything else fails the test
    assert images.shape == (len(labels), 8, 8, 1) and all(0 <= label < 10 for label in labels)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_decode_record_on_mutated_records_agrees_with_tensorflow(data):
    record = bytearray(good_records(1, per_record=3)[0])
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        at = data.draw(st.integers(0, max(len(record) - 1, 0)))
        if action == "flip" and record:
            record[at] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del record[at : at + data.draw(st.integers(1, 8))]
        else:
            record[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    try:
        images, labels = decode_record(bytes(record), DIGITS_LIKE)
    except UserError:
        return
    # Whatever the Python decoder accepts, TensorFlow's parser reads to the same values.
    tf_images, tf_labels = parse_records(tf.constant([bytes(record)]), DIGITS_LIKE)
    np.testing.assert_array_equal(tf_images.numpy(), images)
    np.testing.assert_array_equal(tf_labels.numpy(), labels)


def test_skipped_shards_leave_the_counts_that_plan_the_steps(tmp_path):
    """--skip-corrupt left a shard of 1,259 examples out, then logged and planned 2,400 (19 steps for 9)."""
    from preprocessing.sources import from_arrays
    from preprocessing.writer import build_dataset
    from trainer.config import Config
    from trainer.dataset import locate

    rng = np.random.default_rng(0)
    data_dir = str(tmp_path / "data")
    build_dataset(from_arrays(rng.normal(size=(500, 4)).astype(np.float32), rng.integers(0, 2, 500), "n"), data_dir,
                  source="npz", workers=1, shards=2)  # fmt: skip
    data = locate(Config(data_dir=data_dir, job_dir=str(tmp_path / "job")))
    first, second = data.metadata.splits["train"].shards
    damaged = bytearray((tmp_path / "data" / first.file).read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    (tmp_path / "data" / first.file).write_bytes(bytes(damaged))
    left = locate(Config(data_dir=data_dir, job_dir=str(tmp_path / "job"), skip_corrupt=True))
    assert [os.path.basename(path) for path in left.train] == [second.file]
    assert left.metadata.splits["train"].examples == second.examples < data.metadata.splits["train"].examples
    assert left.metadata.splits["eval"] == data.metadata.splits["eval"]
