"""The ways a batch reaches the model, all from the same shards, and the loop that runs them.

- queue: this project's input_fn (filename queue, TFRecordReader.read_up_to, shuffle_batch_join);
- tf.data: a tuned tf.data pipeline with the same outputs;
- feed_dict: the queue-era tutorials' way, Python reads and decodes every record and feeds placeholders;
- constant: one real batch held in the graph, the limit with no input cost at all;
- constant via FIFO: that batch handed to the step through the queue feed's last stage, the cost of
  one queue handoff per step with no reading, parsing or shuffling.

Outside FEEDS, since it reads other files: the seeds' own pipeline (int64_list_feed), over the same
images stored as the seeds stored them.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from dataformat.schema import Metadata, decode_record, parse_records
from trainer.config import Config
from trainer.input import make_input_fn, prefetch_queue

# The queue fill is fetched with every FILL_EVERY-th step only: the Estimator records summaries
# every 100 steps, and one more fetch with every step cost the queue feeds 5-9% of the small
# models' steps/s, a cost no training run pays.
FILL_EVERY = 10


@dataclass(frozen=True)
class Feed:
    features: dict[str, tf.Tensor]
    labels: tf.Tensor
    next_feed: Callable[[], dict] | None = None  # feed_dict only: the next batch, read in Python


def queue_feed(files: list[str], metadata: Metadata, config: Config) -> Feed:
    features, labels = make_input_fn(files, metadata, config, training=True)()
    return Feed(features, labels)


def tf_data_batches(files: list[str], metadata: Metadata, config: Config) -> tf.data.Dataset:
    """Files read in parallel, records parsed a read at a time, examples shuffled and batched."""
    autotune = tf.data.AUTOTUNE
    records = metadata.records_holding(config.read_batch_size)  # as the queue's readers read
    return (
        tf.data.Dataset.from_tensor_slices(files)
        .shuffle(len(files), seed=config.seed)
        .repeat(config.num_epochs)
        # A read's worth of records at a time, as read_up_to does: a parallel interleave of single
        # records spends ~10 µs on each in thread hand-offs on 2 cores.
        .interleave(
            lambda path: tf.data.TFRecordDataset(path, metadata.compression).batch(records),
            cycle_length=config.reader_threads,
            num_parallel_calls=autotune,
            deterministic=False,
        )
        .map(lambda serialized: parse_records(serialized, metadata), num_parallel_calls=autotune)
        .unbatch()
        .shuffle(config.shuffle_buffer, seed=config.seed)
        .batch(config.batch_size, drop_remainder=True)
        .prefetch(autotune)
    )


def tf_data_feed(files: list[str], metadata: Metadata, config: Config) -> Feed:
    data, labels, *_ = tf.compat.v1.data.make_one_shot_iterator(tf_data_batches(files, metadata, config)).get_next()
    return Feed({metadata.feature_key: data}, labels)


def python_batches(files: list[str], metadata: Metadata, batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The tutorials' reader: records read in Python, each decoded with tf.train.Example.FromString and
    numpy, examples gathered into batches."""
    records = itertools.chain.from_iterable(tf.compat.v1.io.tf_record_iterator(path) for path in itertools.cycle(files))
    examples = itertools.chain.from_iterable(zip(*decode_record(record, metadata)) for record in records)
    while True:
        batch = list(itertools.islice(examples, batch_size))
        yield np.stack([data for data, _ in batch]), np.array([label for _, label in batch])


def feed_dict_feed(files: list[str], metadata: Metadata, config: Config) -> Feed:
    data = tf.compat.v1.placeholder(tf.as_dtype(metadata.dtype), [None, *metadata.shape])
    labels = tf.compat.v1.placeholder(tf.int64, [None])
    batches = python_batches(files, metadata, config.batch_size)

    def next_feed() -> dict:
        x, y = next(batches)
        return {data: x, labels: y}

    return Feed({metadata.feature_key: data}, labels, next_feed)


def constant_feed(files: list[str], metadata: Metadata, config: Config) -> Feed:
    x, y = next(python_batches(files, metadata, config.batch_size))
    return Feed({metadata.feature_key: tf.constant(x)}, tf.constant(y))


def fifo_constant_feed(files: list[str], metadata: Metadata, config: Config) -> Feed:
    """The constant batch through the prefetch FIFO and its runner thread, as the queue feed's
    batches reach the step."""
    constant = constant_feed(files, metadata, config)
    with tf.device("/cpu:0"):
        data, labels = prefetch_queue((constant.features[metadata.feature_key], constant.labels), towers=1).dequeue()
    return Feed({metadata.feature_key: data}, labels)


FEEDS: dict[str, Callable[[list[str], Metadata, Config], Feed]] = {
    "queue": queue_feed,
    "tf.data": tf_data_feed,
    "feed_dict": feed_dict_feed,
    "constant": constant_feed,
    "constant via FIFO": fifo_constant_feed,
}


def int64_list_feed(path: str, metadata: Metadata, config: Config, threads: int) -> Feed:
    """The seeds' own pipeline: records of one tf.train.Example per image, every pixel an int64
    (benchmarks.writing's int64_list_writer), read one at a time by TFRecordReader.read, parsed by
    parse_single_example, shuffled and batched by shuffle_batch with `threads` threads."""
    schema = {
        "image": tf.io.FixedLenFeature([math.prod(metadata.shape)], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    with tf.device("/cpu:0"):
        filename_queue = tf.compat.v1.train.string_input_producer([path], seed=config.seed)
        _, record = tf.compat.v1.TFRecordReader().read(filename_queue)
        example = tf.io.parse_single_example(record, schema)
        image = tf.reshape(tf.cast(example["image"], metadata.dtype), metadata.shape)
        data, labels = tf.compat.v1.train.shuffle_batch(
            [image, example["label"]],
            config.batch_size,
            capacity=config.shuffle_buffer + 3 * config.batch_size,  # the tutorials' room: 3 batches
            min_after_dequeue=config.shuffle_buffer,
            num_threads=threads,
            seed=config.seed,
        )
    return Feed({metadata.feature_key: data}, labels)


def queue_fill() -> tf.Tensor | None:
    """The value behind the summary shuffle_batch_join records: the fraction of the queue's room
    above min_after_dequeue that is full (None in a graph without that queue)."""
    for summary in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES):
        if "fraction_over_" in summary.op.name:
            return summary.op.inputs[1]
    return None


class Loop:
    """Runs one step's fetches again and again in a session, sampling the queue fill."""

    def __init__(self, session: tf.compat.v1.train.MonitoredSession, step: object, next_feed: Callable | None):
        self._session = session
        self._fetches = {"step": step}
        fill = queue_fill()
        self._fetches_with_fill = {**self._fetches, "fill": fill} if fill is not None else self._fetches
        self._next_feed = next_feed
        self._runs = 0
        self.fills: list[float] = []

    def __call__(self, steps: int) -> float:
        """Runs `steps` steps; returns their seconds."""
        start = time.perf_counter()
        for _ in range(steps):
            fetches = self._fetches_with_fill if self._runs % FILL_EVERY == 0 else self._fetches  # the first too
            self._runs += 1
            values = self._session.run(fetches, feed_dict=self._next_feed() if self._next_feed else None)
            if "fill" in values:
                self.fills.append(float(values["fill"]))
        return time.perf_counter() - start


@contextlib.contextmanager
def session_loop(build: Callable[[], tuple[object, Callable | None]], hooks: tuple = ()) -> Iterator[Loop]:
    """A Loop over what `build()` returns (step fetches, next_feed) in a graph of its own, with `hooks`.

    The MonitoredSession initializes the variables and starts the queue runners, as the Estimator's
    does. The graph is not left as the default one, so that several loops, and Keras in eager mode,
    can be open at once.
    """
    with tf.Graph().as_default():
        step, next_feed = build()
        session = tf.compat.v1.train.MonitoredSession(hooks=list(hooks))
        loop = Loop(session, step, next_feed)
    try:
        yield loop
    finally:
        session.close()


def mean_fill(loop: Loop, timed_steps: int) -> float | None:
    """Mean queue fill sampled over the last `timed_steps` steps (the timed windows), None without a queue."""
    samples = max(1, timed_steps // FILL_EVERY)
    return float(np.mean(loop.fills[-samples:])) if loop.fills else None
