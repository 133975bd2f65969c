"""The queue-backed input_fn: shards -> filename queue -> readers -> parse -> shuffle queue -> batch.

    filenames --> string_input_producer (shuffled file order, num_epochs)
                      |            |
                  reader 1 ... reader N      TFRecordReader.read_up_to, parse_example and
                      |            |         unpack, shuffle the read, cut it into blocks
                      v            v         of --shuffle-block examples; one thread each
                 shuffle_batch_join queue  (min_after_dequeue = --shuffle-buffer examples,
                      |                     moved as whole blocks)
                      |
                      v
                 prefetch FIFO             3 whole batches of --batch-size per tower, one
                      |                     thread per tower
                      v
                 staging area on each GPU  (--stage-on-device: the next batch is copied
                      |                     while the step runs)
                      v
                 model_fn                  takes a batch per tower and per step (QueueBatches)

While the model computes step N, the reader threads are already filling the queue for the
steps after it. The Estimator's MonitoredSession starts the queue runners and initializes
the local variable that `num_epochs` creates. Everything before the staging area is pinned
to the CPU: these ops have no GPU kernels, and the device should only ever see ready batches.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import NamedTuple

import tensorflow as tf

from dataformat.schema import WEIGHT, Metadata, parse_records
from trainer.config import Config
from trainer.devices import has_gpu, resolve_towers, tower_device

QUEUE_MARGIN = 3  # extra batches of room in the shuffle queue above min_after_dequeue
PREFETCH_BATCHES = 3  # ready batches waiting for the training step
STAGING_AREA = "input_staging_area"  # the staging areas' names, and the collection of the ops that first fill them
# Each graph's QueueBatches, for model_fn. Not a graph collection: a Python object there cannot go
# into the MetaGraph that every checkpoint writes (TensorFlow warns each time).
_TRAINING_BATCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _read_batch(filename_queue, metadata: Metadata, read_batch_size: int) -> tuple[tf.Tensor, ...]:
    """One reader: about `read_batch_size` examples at a time (whole records), parsed and checked: a
    batch's parts, (data, labels) or (data, labels, weights) as parse_records gives them."""
    options = tf.io.TFRecordOptions(compression_type=metadata.compression)
    records = metadata.records_holding(read_batch_size)
    _, serialized = tf.compat.v1.TFRecordReader(options=options).read_up_to(filename_queue, records)
    data, labels, *weights = parse_records(serialized, metadata)
    in_range = tf.debugging.assert_less(
        labels,
        tf.constant(metadata.num_classes, tf.int64),
        message=f"a label is outside the {metadata.num_classes} classes of the metadata",
    )
    with tf.control_dependencies([in_range, tf.debugging.assert_non_negative(labels, message="a label is negative")]):
        return data, tf.identity(labels), *weights


def shuffle_block(config: Config) -> int:
    """Examples per element of the shuffle queue: the largest number that divides both
    --shuffle-block and the batch size. Always 1 with --num-epochs, where the examples a
    reader holds back for its next block would be lost at the end of the last pass."""
    return 1 if config.num_epochs is not None else math.gcd(config.shuffle_block, config.batch_size)


def _in_blocks(parts: tuple[tf.Tensor, ...], block: int) -> tuple[tf.Tensor, ...]:
    """A read's examples in random order, cut into blocks of `block` ([n, block, ...]).

    The shuffle queue splits what is enqueued into elements and gathers a batch element by
    element, about 3 µs each: moving blocks divides that work by `block`. Blocks still mix
    well because the writer already stored every shard in a random order. The examples left
    over after the last whole block wait in a small queue for this reader's next read, so
    none is dropped or repeated and every batch has exactly --batch-size examples. Only this
    reader's thread touches that queue. (A queue, not a variable: in a parameter-server
    cluster the Estimator would place a variable on a parameter server, shared by every
    worker.)
    """
    held = tf.queue.FIFOQueue(block, [p.dtype for p in parts], [p.shape[1:] for p in parts], name="held_back")
    parts = [tf.concat([earlier, part], 0) for earlier, part in zip(held.dequeue_many(held.size()), parts)]
    order = tf.random.shuffle(tf.range(tf.shape(parts[0])[0]))
    parts = [tf.gather(part, order) for part in parts]
    whole = tf.shape(parts[0])[0] // block * block
    with tf.control_dependencies([held.enqueue_many([part[whole:] for part in parts])]):
        return tuple(tf.reshape(part[:whole], [-1, block, *part.shape[1:]]) for part in parts)


def prefetch_queue(parts: tuple[tf.Tensor, ...], towers: int) -> PrefetchQueue:
    """A small FIFO of whole batches that `towers` threads fill from a batch's `parts`.

    Taking a batch out of the shuffle queue gathers it element by element (and runs the readers'
    waiting enqueues), which the training step would otherwise wait for. From this queue a step
    takes ready batches, one per tower: one thread per tower keeps it full.
    """
    capacity = PREFETCH_BATCHES * towers
    prefetch = tf.queue.FIFOQueue(capacity, [part.dtype for part in parts], name="prefetch_queue")
    enqueue = prefetch.enqueue(list(parts))  # whole batches: one queue element each
    tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(prefetch, [enqueue] * towers))
    tf.compat.v1.summary.scalar("queue/prefetch_queue/fraction_of_capacity", prefetch.size() / capacity)
    return PrefetchQueue(prefetch, tuple(part.shape for part in parts))


class PrefetchQueue(NamedTuple):
    queue: tf.queue.FIFOQueue
    shapes: tuple[tf.TensorShape, ...]  # a batch's parts': the queue keeps no shapes (the last batch may be smaller)

    def dequeue(self) -> tuple[tf.Tensor, ...]:
        return self.shaped(self.queue.dequeue())

    def shaped(self, parts) -> tuple[tf.Tensor, ...]:
        for part, shape in zip(parts, self.shapes):
            part.set_shape(shape)
        return tuple(parts)


def _unblocked(blocks: tf.Tensor) -> tf.Tensor:
    """[n, block, ...] as [n * block, ...]."""
    return tf.reshape(blocks, [-1, *blocks.shape[2:]])


def stages_on_device(config: Config) -> bool:
    """Whether to stage batches on the towers' devices. Not with --num-epochs: the batches staged
    last would never be trained on."""
    wanted = config.stage_on_device == "on" or (config.stage_on_device == "auto" and has_gpu())
    return wanted and config.num_epochs is None


class Batch(NamedTuple):
    data: tf.Tensor
    labels: tf.Tensor
    weights: tf.Tensor | None  # each example's weight in the loss (a table's --weight-column), or None
    put: tf.Operation | None  # stages the tower's next batch; the step must run it

    @classmethod
    def of(cls, parts: tuple[tf.Tensor, ...], put: tf.Operation | None = None) -> Batch:
        data, labels, *weights = parts
        return cls(data, labels, weights[0] if weights else None, put)


class QueueBatches:
    """The training batches, taken inside model_fn: a new one each time `take` runs, so that
    every step of the in-graph loop (--steps-per-run) and every tower trains on its own batch.

    With staging, each tower's batches pass through a staging area on its device: a step
    trains on the batch copied there during the step before, and stages the next one (the
    host-to-device copy leaves the step's critical path). StagingHook fills each area once
    when the session starts.
    """

    def __init__(self, prefetch: PrefetchQueue, staging_devices: list[str] | None):
        self._prefetch, self._devices = prefetch, staging_devices
        for tower in range(len(staging_devices or [])):
            tf.compat.v1.add_to_collection(STAGING_AREA, self._stage(tower))

    def take(self, tower: int) -> Batch:
        if self._devices is None:
            return Batch.of(self._prefetch.dequeue())
        with tf.device(self._devices[tower]):
            parts = tf.raw_ops.Unstage(dtypes=self._prefetch.queue.dtypes, shared_name=f"{STAGING_AREA}_{tower}")
        return Batch.of(self._prefetch.shaped(parts), self._stage(tower))

    def _stage(self, tower: int) -> tf.Operation:
        """Copies the next ready batch into tower `tower`'s staging area. The dequeue stays beside its queue, on
        the CPU: a queue has no GPU kernels (placed on the GPU, it ran there only by soft placement)."""
        batch = self._prefetch.dequeue()
        with tf.device(self._devices[tower]):
            return tf.raw_ops.Stage(values=batch, shared_name=f"{STAGING_AREA}_{tower}")


class FixedBatches:
    """The batch model_fn was given, for every step and tower: what trains when the features do
    not come from this module's queue (a fed or constant batch)."""

    def __init__(self, data: tf.Tensor, labels: tf.Tensor, weights: tf.Tensor | None):
        self._batch = Batch(data, labels, weights, None)

    def take(self, tower: int) -> Batch:
        return self._batch


def use_for_training(batches: QueueBatches) -> None:
    """Makes `batches` where model_fn takes the training batches of the default graph."""
    _TRAINING_BATCHES[tf.compat.v1.get_default_graph()] = batches


def training_batches(features: dict, labels: tf.Tensor, metadata: Metadata) -> QueueBatches | FixedBatches:
    """Where model_fn takes its training batches: the queue's, when the training input_fn built one,
    else the batch it was given."""
    queued = _TRAINING_BATCHES.get(tf.compat.v1.get_default_graph())
    return queued or FixedBatches(features[metadata.feature_key], labels, features.get(WEIGHT))


class StagingHook(tf.estimator.SessionRunHook):
    """Stages one batch per tower when the session starts (no-op when the input_fn stages nothing);
    every step then stages its own next one."""

    def __init__(self, timeout_secs: int):
        self._options = tf.compat.v1.RunOptions(timeout_in_ms=timeout_secs * 1000)

    def begin(self):
        self._puts = tf.compat.v1.get_collection(STAGING_AREA)

    def after_create_session(self, session, coord):
        if self._puts:  # the queue runners have started; a starved queue times out like a step
            session.run(self._puts, options=self._options)


def shuffle_capacity(config: Config) -> int:
    return config.shuffle_buffer + (config.reader_threads + QUEUE_MARGIN) * config.batch_size


def eval_capacity(config: Config) -> int:
    return 2 * config.eval_batch_size + config.read_batch_size


class InputTimeoutHook(tf.estimator.SessionRunHook):
    """Gives every step a deadline, so that a queue that can never fill raises
    DeadlineExceededError instead of blocking the job forever."""

    def __init__(self, seconds: int):
        self._options = tf.compat.v1.RunOptions(timeout_in_ms=seconds * 1000)

    def before_run(self, run_context):
        return tf.estimator.SessionRunArgs(fetches=[], options=self._options)


def make_input_fn(files: list[str], metadata: Metadata, config: Config, training: bool) -> Callable:
    """An Estimator input_fn over `files`.

    Training: shuffled, repeated (`num_epochs` passes, or forever), `reader_threads` parallel
    readers. Evaluation and prediction: every example exactly once, in file order, with the
    smaller last batch kept.
    """

    def training_input_fn():
        towers = resolve_towers(config.num_towers)
        with tf.device("/cpu:0"):
            filename_queue = tf.compat.v1.train.string_input_producer(
                files, num_epochs=config.num_epochs, shuffle=True, seed=config.seed
            )
            block = shuffle_block(config)
            readers = [
                _in_blocks(_read_batch(filename_queue, metadata, config.read_batch_size), block)
                for _ in range(config.reader_threads)
            ]
            parts = tf.compat.v1.train.shuffle_batch_join(
                readers,
                batch_size=config.batch_size // block,
                capacity=shuffle_capacity(config) // block,
                min_after_dequeue=config.shuffle_buffer // block,
                seed=config.seed,
                enqueue_many=True,
                allow_smaller_final_batch=config.num_epochs is not None,
            )
            prefetch = prefetch_queue(tuple(map(_unblocked, parts)), towers)
        staging = [tower_device(tower) for tower in range(towers)] if stages_on_device(config) else None
        use_for_training(QueueBatches(prefetch, staging))
        batch = Batch.of(prefetch.dequeue())  # model_fn takes its batches from the QueueBatches; this one is for others
        return _features(batch, metadata), batch.labels

    def evaluation_input_fn():
        with tf.device("/cpu:0"):
            filename_queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
            parts = tf.compat.v1.train.batch(
                _read_batch(filename_queue, metadata, config.read_batch_size),
                batch_size=config.eval_batch_size,
                num_threads=1,  # one thread keeps file order
                capacity=eval_capacity(config),
                enqueue_many=True,
                allow_smaller_final_batch=True,
            )
        batch = Batch.of(parts)
        return _features(batch, metadata), batch.labels

    return training_input_fn if training else evaluation_input_fn


def _features(batch: Batch, metadata: Metadata) -> dict[str, tf.Tensor]:
    """The input_fn's features: the data, and the weights where the dataset has them."""
    return {metadata.feature_key: batch.data, **({WEIGHT: batch.weights} if batch.weights is not None else {})}
