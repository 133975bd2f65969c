"""Writes a RawData as sharded TFRecord files plus `metadata.json`, in parallel over shards.

Order of events, so that a reader never sees a half-written dataset:
  1. clear what an earlier (finished or interrupted) run left in the output folder;
  2. write every shard under a temporary name, renaming it when complete;
  3. write `metadata.json` last: its presence means the dataset is whole.
"""

from __future__ import annotations

import contextlib
import ctypes
import gzip
import logging
import math
import multiprocessing
import os
import posixpath
import queue
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
from tqdm import tqdm

from dataformat import lease, storage
from dataformat.errors import UserError
from dataformat.schema import (
    EXAMPLES_PER_RECORD,
    METADATA_FILE,
    SHARD_SUFFIXES,
    Metadata,
    ShardInfo,
    SplitInfo,
    encode_record,
)
from dataformat.tfrecord import frame
from preprocessing.sources import BROKEN_FLOOR, MAX_BROKEN_SHARE, BrokenImage, RawData
from preprocessing.split import FREE, shard_name, split_indices

log = logging.getLogger(__name__)

TARGET_SHARD_BYTES = 100 * 2**20  # big enough to read efficiently, small enough to parallelize
MIN_TRAIN_SHARDS = 2  # so that two reader threads can read different files
# A worker process takes ~0.3 s to start and import the writer: worth it from this many files
# to decode per process.
EXAMPLES_PER_WORKER = 50_000
STATS_BLOCK = 1024  # examples a shard writer loads and sums at a time
SHOWN_BROKEN = 3  # skipped images named in the log (sources.BrokenImage)
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
# Shards, metadata, text columns' vocabularies (tables.vocabulary_name), their temporary names while being written
# (see storage.temporary_name), and the Beam runner's statistics of each shard.
OUR_FILES = re.compile(
    r"^\.?((train|eval)-\d{5}-of-\d{5}\.tfrecord(\.gz)?|metadata\.json|\.table\.json|[\w.-]+\.vocabulary\.txt)"
    r"(\.partial-\d+|\.stats\.json)?$"
)


@dataclass(frozen=True)
class ShardTask:
    path: str
    items: Sequence  # arrays, or references that `load` decodes
    labels: np.ndarray
    load: Callable[[object], np.ndarray] | None
    compression: str = ""  # "" or "GZIP"
    examples_per_record: int = EXAMPLES_PER_RECORD
    keys: Sequence[str] = ()  # with key_name: each example's key, stored beside it
    key_name: str = ""


class _CountingFile:
    """Counts the bytes that reach the file, after any compression."""

    def __init__(self, file: BinaryIO):
        self.file = file
        self.bytes = 0

    def write(self, data: bytes) -> int:
        self.bytes += len(data)
        return self.file.write(data)

    def flush(self) -> None:
        self.file.flush()


@dataclass(frozen=True)
class ShardResult:
    path: str
    examples: int
    bytes: int
    # Per-channel sums over every value, for the normalization statistics.
    sums: np.ndarray
    squares: np.ndarray
    count: int
    broken: tuple[str, ...] = ()  # the images skipped as broken (sources.BrokenImage), each named in one line
    broken_labels: tuple[int, ...] = ()  # their labels


@contextlib.contextmanager
def shard_output(path: str, compression: str) -> Iterator[tuple[BinaryIO, _CountingFile]]:
    """(where to write the shard's framed records, the count of bytes that reach the file) for a
    shard that appears at `path`, atomically, when the block ends without error."""
    with storage.atomic_writer(path) as file:
        counted = _CountingFile(file)
        if not compression:
            yield counted, counted
            return
        # mtime=0 keeps compressed shards byte-identical from run to run.
        with gzip.GzipFile(fileobj=counted, mode="wb", compresslevel=6, mtime=0) as out:
            yield out, counted


def write_shard(task: ShardTask, report: Callable[[int], object]) -> ShardResult:
    """Writes one shard atomically, `task.examples_per_record` examples a record; calls
    `report(n)` as examples are written."""
    sums = squares = 0
    count = written = 0
    broken, broken_labels = [], []
    per_record = task.examples_per_record
    block = per_record * max(1, STATS_BLOCK // per_record)  # examples loaded and counted together
    with shard_output(task.path, task.compression) as (out, counted):
        for start in range(0, len(task.labels), block):
            data, kept = _load(task, start, start + block, broken)
            labels = task.labels[start : start + block]
            broken_labels += labels[np.setdiff1d(np.arange(len(labels)), kept)].tolist()
            report(len(labels))
            if not len(kept):
                continue
            labels, keys = labels[kept], [task.keys[start + i] for i in kept] if task.keys else ()
            for at in range(0, len(labels), per_record):
                record = encode_record(
                    data[at : at + per_record], labels[at : at + per_record], keys[at : at + per_record], task.key_name
                )
                out.write(frame(record))
            # Integers sum exactly, so every runner and worker count gets the same statistics.
            values = data.reshape(-1, data.shape[-1]).astype(np.int64 if data.dtype == np.uint8 else np.float64)
            sums, squares = sums + values.sum(0), squares + np.einsum("ij,ij->j", values, values)
            count, written = count + len(values), written + len(labels)
    sums, squares = np.asarray(sums), np.asarray(squares)
    return ShardResult(task.path, written, counted.bytes, sums, squares, count, tuple(broken), tuple(broken_labels))


def _load(task: ShardTask, start: int, stop: int, broken: list[str]) -> tuple[np.ndarray | None, np.ndarray]:
    """(items start:stop decoded, None if none decodes; which of them those are). Each broken image adds its
    line to `broken`, the shard's so far."""
    items = task.items[start:stop]
    if not task.load:
        return np.asarray(items), np.arange(len(items))
    decoded, kept = [], []
    for i, item in enumerate(items):
        try:
            decoded.append(task.load(item))
            kept.append(i)
        except BrokenImage as error:
            broken.append(str(error))
            tried = start + i + 1
            check_broken(broken, tried, limit=max(BROKEN_FLOOR, tried / 2))  # mostly broken: a wrong path
    return (np.stack(decoded) if decoded else None), np.array(kept, dtype=np.int64)


def check_broken(broken: Sequence[str], tried: int, limit: float) -> None:
    """Stops, naming the first broken image, once more than `limit` of the `tried` images are broken."""
    if len(broken) > limit:
        raise UserError(
            f"{broken[0]}; and {len(broken) - 1} more of {tried} images could not be read (more than "
            f"{math.floor(limit)} stop the run): are the paths right?"
        )


_progress: multiprocessing.Queue | None = None


def _start_worker(progress: multiprocessing.Queue) -> None:
    global _progress
    _progress = progress
    _die_with_parent()


def _die_with_parent() -> None:
    """Asks Linux to kill this worker when its parent dies, so that a worker orphaned by a
    killed run cannot finish a shard into a folder that a rerun is already writing."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _write_shard_in_worker(task: ShardTask) -> ShardResult:
    return write_shard(task, _progress.put)


@contextlib.contextmanager
def _worker_pool(workers: int, in_memory: bool) -> Iterator[tuple[Callable[[ShardTask], Future], object]]:
    """(submit a shard, its progress queue) for `workers` parallel shard writers.

    Threads for arrays in memory: they share the arrays, start at once, and numpy, hashing,
    CRC-32C, zlib and uploads run outside the GIL. Processes for files to decode, where
    per-image Python work holds the GIL (measured: two threads wrote 28x28 PNGs at 0.7x one
    process).
    """
    if in_memory:
        progress = queue.SimpleQueue()
        with ThreadPoolExecutor(workers) as pool:
            yield (lambda task: pool.submit(write_shard, task, progress.put)), progress
        return
    # spawn, not fork: forking a process that has TensorFlow's threads running is unsafe.
    context = multiprocessing.get_context("spawn")
    progress = context.Queue()
    with ProcessPoolExecutor(workers, context, initializer=_start_worker, initargs=(progress,)) as pool:
        yield (lambda task: pool.submit(_write_shard_in_worker, task)), progress


def write_shards(tasks: list[ShardTask], workers: int) -> list[ShardResult]:
    """Writes every shard, `workers` at a time, with one progress bar over all examples."""
    total = sum(len(task.labels) for task in tasks)
    with tqdm(total=total, unit="ex", desc="writing shards", disable=None) as bar:
        if workers <= 1:
            return [write_shard(task, bar.update) for task in tasks]
        with _worker_pool(workers, in_memory=tasks[0].load is None) as (submit, progress):
            futures = [submit(task) for task in tasks]
            try:
                _wait_for(futures, progress, bar)
            except BaseException:  # a failed shard or Ctrl-C: start no further shard
                for future in futures:
                    future.cancel()
                raise
            return [future.result() for future in futures]


def _wait_for(futures: list[Future], progress, bar: tqdm) -> None:
    """Returns when every shard is written, moving the workers' progress to the bar; raises the
    first shard's error."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
        _drain(progress, bar)
        for future in done:
            if future.exception():
                raise future.exception()


def _drain(progress, bar: tqdm) -> None:
    try:
        while True:
            bar.update(progress.get_nowait())
    except queue.Empty:
        pass


def check_output(output: str, overwrite: bool) -> list[str]:
    """Refuses to mix old and new data silently; returns the names in `output` that clear_output removes."""
    names = [name for name in storage.list_names(output) if name != lease.LEASE_NAME]  # this run's own lease
    ours = [name for name in names if OUR_FILES.match(name)]
    others = sorted(set(names) - set(ours))
    if METADATA_FILE in names and not overwrite:
        raise UserError(f"--output {output} already holds a dataset; pass --overwrite to replace it")
    if others and not overwrite:
        raise UserError(
            f"--output {output} is not empty (it holds {others[0]}); pass --overwrite or use an empty folder"
        )
    return ours


def clear_output(output: str, overwrite: bool) -> None:
    """Makes `output` ready for a new dataset (check_output first)."""
    ours = check_output(output, overwrite)
    if ours and METADATA_FILE not in ours:
        log.info("Removing %d file(s) left by an earlier run that did not finish in %s", len(ours), output)
    # The metadata goes first, so that a crash from here on leaves no dataset that looks whole.
    for name in sorted(ours, key=lambda name: name != METADATA_FILE):
        storage.remove(storage.join(output, name))
    storage.make_folder(output)


def shard_counts(train: int, evaluation: int, shards: int | None, example_bytes: int) -> tuple[int, int]:
    """(train, eval) shard counts: `shards` for train, or enough for ~100 MB each; eval in proportion."""
    train_shards = shards or max(MIN_TRAIN_SHARDS, math.ceil(train * example_bytes / TARGET_SHARD_BYTES))
    train_shards = max(1, min(train_shards, train))
    eval_shards = max(1, min(evaluation, round(train_shards * evaluation / train)))
    return train_shards, eval_shards


def usable_cores() -> int:
    """The cores this process may run on: a container's or `taskset`'s limit, not the machine's count."""
    if hasattr(os, "sched_getaffinity"):  # Linux
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_workers(data: RawData) -> int:
    """A thread per core for arrays in memory; for files to decode, processes (see _worker_pool)."""
    cores = usable_cores()
    if data.load is None:
        return cores
    return max(1, min(cores, len(data.labels) // EXAMPLES_PER_WORKER))


def _normalization(results: list[ShardResult]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and standard deviation of the given shards' values."""
    count = sum(r.count for r in results)
    mean = sum(r.sums for r in results) / count
    variance = np.maximum(sum(r.squares for r in results) / count - mean**2, 0.0)
    std = np.sqrt(variance)
    std[std < 1e-6] = 1.0  # a constant channel carries no information; leave it unscaled
    return tuple(float(v) for v in mean), tuple(float(v) for v in std)


def build_dataset(
    data: RawData,
    output: str,
    *,
    source: str,
    eval_fraction: float = 0.2,
    seed: int = 0,
    shards: int | None = None,
    workers: int | None = None,
    overwrite: bool = False,
    compression: str = "",
    examples_per_record: int = EXAMPLES_PER_RECORD,
) -> Metadata:
    """Splits `data`, writes its shards and then `metadata.json` into `output`."""
    start = time.time()
    clear_output(output, overwrite)
    parts = shard_parts(data, eval_fraction, seed, shards)
    tasks = [
        ShardTask(
            path=storage.join(output, shard_name(split, i, len(parts[split]), SHARD_SUFFIXES[compression])),
            items=take(data.items, part),
            labels=data.labels[part],
            load=data.load,
            compression=compression,
            examples_per_record=examples_per_record,
            **key_fields(data, part),
        )
        for split in ("train", "eval")
        for i, part in enumerate(parts[split])
    ]
    workers = workers or default_workers(data)
    log.info("Writing with %d %s", workers, "thread(s)" if data.load is None else "process(es)")
    results = write_shards(tasks, workers)
    by_split = {"train": results[: len(parts["train"])], "eval": results[len(parts["train"]) :]}
    return write_metadata(
        data,
        output,
        by_split,
        source=source,
        seed=seed,
        eval_fraction=eval_fraction,
        start=start,
        compression=compression,
        examples_per_record=examples_per_record,
    )


def shard_parts(data: RawData, eval_fraction: float, seed: int, shards: int | None) -> dict[str, list[np.ndarray]]:
    """Each split's shards' example indices: the split's examples in their seeded order, cut into runs of
    near-equal size, none empty. The local writer and Beam both write these shards."""
    train, evaluation = split_indices(data.keys, data.labels, eval_fraction, seed, data.fixed)
    counts = plan_shards(data, len(train), len(evaluation), eval_fraction, shards)
    return {
        split: np.array_split(indices, counts[split]) for split, indices in (("train", train), ("eval", evaluation))
    }


def plan_shards(data: RawData, train: int, evaluation: int, eval_fraction: float, shards: int | None) -> dict[str, int]:
    """Shard counts per split, after checking that both splits have examples."""
    if train == 0 or evaluation == 0:
        cause = f"--eval-fraction {eval_fraction}"
        if data.fixed is not None and np.all(data.fixed != FREE):  # every image's ML_USE decided its split
            cause = "the list's ML_USE (every image has one)"
        raise UserError(
            f"{cause} leaves {train} training and {evaluation} "
            f"evaluation examples out of {len(data.labels)}; both need at least one"
        )
    example_bytes = int(np.prod(data.shape)) * (1 if data.dtype == "uint8" else 4)
    counts = dict(zip(("train", "eval"), shard_counts(train, evaluation, shards, example_bytes)))
    log.info(
        "%d training and %d evaluation examples into %d + %d shards", train, evaluation, counts["train"], counts["eval"]
    )
    return counts


def write_metadata(
    data: RawData,
    output: str,
    by_split: dict[str, list[ShardResult]],
    *,
    source: str,
    seed: int,
    eval_fraction: float,
    start: float,
    compression: str,
    examples_per_record: int,
) -> Metadata:
    """Writes `metadata.json` for the written shards, last: from now on the dataset is whole."""
    report_broken(by_split, len(data.labels))
    mean, std = _normalization(by_split["train"])
    results = [result for split in by_split.values() for result in split]
    skipped = _skipped_per_class(results, len(data.class_names))
    counts = np.bincount(data.labels, minlength=len(data.class_names)) - skipped
    _refuse_emptied_classes(counts, skipped, results, data.class_names)
    metadata = Metadata(
        shape=data.shape,
        dtype=data.dtype,
        class_names=data.class_names,
        class_counts=tuple(counts.tolist()),
        splits={
            split: SplitInfo(
                examples=sum(r.examples for r in results),
                bytes=sum(r.bytes for r in results),
                shards=tuple(ShardInfo(posixpath.basename(r.path), r.examples, r.bytes) for r in results),
            )
            for split, results in by_split.items()
        },
        mean=mean,
        std=std,
        source=source,
        compression=compression,
        examples_per_record=examples_per_record,
        key_column=data.key_name,
        extra={"seed": seed, "eval_fraction": eval_fraction, "seconds": round(time.time() - start, 3)},
    )
    storage.write_text_atomically(storage.join(output, METADATA_FILE), metadata.to_json())
    return metadata


def report_broken(by_split: dict[str, list[ShardResult]], total: int) -> None:
    """Stops if more than BROKEN_FLOOR and MAX_BROKEN_SHARE of the `total` images are broken, or if a split
    was left with none; otherwise logs the skipped ones, if any."""
    broken = [line for results in by_split.values() for result in results for line in result.broken]
    check_broken(broken, total, limit=max(BROKEN_FLOOR, MAX_BROKEN_SHARE * total))
    for split, results in by_split.items():
        lines = [line for result in results for line in result.broken]
        if lines and not sum(result.examples for result in results):
            raise UserError(f"{lines[0]}; and every other {split} image is missing or does not decode")
    if broken:
        shown = "; ".join(broken[:SHOWN_BROKEN]) + ("; ..." if len(broken) > SHOWN_BROKEN else "")
        log.warning("Skipped %d of %d images, missing or not decodable: %s", len(broken), total, shown)


def _refuse_emptied_classes(counts: np.ndarray, skipped: np.ndarray, results: list[ShardResult], names) -> None:
    """A UserError where every image of a class was skipped as broken: its class was kept, of no example, and
    training on the others reported accuracy 1.0."""
    for label in np.flatnonzero((counts == 0) & (skipped > 0)):
        first = next(line for r in results for line, of in zip(r.broken, r.broken_labels) if of == label)
        raise UserError(f"class {names[label]!r}: none of its {skipped[label]} image(s) reads ({first})")


def _skipped_per_class(results: list[ShardResult], classes: int) -> np.ndarray:
    """How many images of each class were skipped as broken."""
    labels = [label for result in results for label in result.broken_labels]
    return np.bincount(np.array(labels, dtype=np.int64), minlength=classes)


def key_fields(data: RawData, indices: np.ndarray) -> dict:
    """A shard task's keys and their name, where the dataset stores keys (--key-column)."""
    return {"keys": take(data.keys, indices), "key_name": data.key_name} if data.key_name else {}


def take(items: Sequence, indices: np.ndarray) -> Sequence:
    if isinstance(items, np.ndarray):
        return items[indices]
    return [items[i] for i in indices]
