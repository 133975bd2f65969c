"""Finds a dataset's shards and metadata, for --data-dir or for --train-files/--eval-files globs.

Reads through TensorFlow's file layer, so the same code serves local paths and gs://.
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import tensorflow as tf

from dataformat import gcs, lease, tfrecord
from dataformat.errors import UserError, tensorflow_error_line
from dataformat.schema import METADATA_FILE, Metadata, SplitInfo, decode_record
from trainer.config import Config

STAT_THREADS = 16

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DataFiles:
    metadata: Metadata
    metadata_path: str  # travels with every export, for the serving side
    train: list[str]
    eval: list[str]


def read_metadata(path: str) -> Metadata:
    if not tf.io.gfile.exists(path):
        raise UserError(
            f"{path} does not exist: the folder is not a finished dataset "
            "(preprocessing writes metadata.json last; rerun it if it was interrupted)"
        )
    with tf.io.gfile.GFile(path) as file:
        return Metadata.from_json(file.read(), path).located(posixpath.dirname(path))


def expand(patterns: str, flag: str) -> list[str]:
    """Every file matching the comma-separated globs, sorted; UserError if one matches nothing.

    An empty filename queue would block the trainer forever, so this must never return [].
    """
    files = []
    for pattern in filter(None, (p.strip() for p in patterns.split(","))):
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise UserError(f"{flag} {pattern}: no file matches")
        files.extend(matches)
    if not files:
        raise UserError(f"{flag} {patterns!r}: no file pattern given")
    return sorted(set(files))


def _sizes(files: list[str]) -> list[int | None]:
    with ThreadPoolExecutor(STAT_THREADS) as pool:  # one round trip each on gs://: overlap them
        return list(pool.map(_size, files))


def _size(path: str) -> int | None:
    try:
        return tf.io.gfile.stat(path).length
    except tf.errors.NotFoundError:
        return None


def _listed_shards(data_dir: str, metadata: Metadata, split: str, where: str) -> list[str]:
    """The split's shard paths, each checked to exist with the size the metadata records."""
    if split not in metadata.splits or not metadata.splits[split].shards:
        raise UserError(f"{where}: has no {split} shards")
    shards = metadata.splits[split].shards
    files = [posixpath.join(data_dir, shard.file) for shard in shards]
    sizes = _sizes(files)
    for path, shard, size in zip(files, shards, sizes):
        if size is None:
            raise UserError(f"{where}: lists {path}, which does not exist")
        if size != shard.bytes:
            raise UserError(
                f"{path}: {size} bytes, but {where} records {shard.bytes}: the shard was truncated or "
                "replaced; rerun preprocessing"
            )
    return files


def locate(config: Config) -> DataFiles:
    """The metadata and the training and evaluation files the config points at; with --skip-corrupt, less the
    shards with a bad record, and the counts with them (the steps a table trains are planned by the counts)."""
    found = _pointed_at(config)
    return leave_out_bad_shards(found) if config.skip_corrupt else found


def _pointed_at(config: Config) -> DataFiles:
    if config.data_dir:
        try:
            check_data_dir(config.data_dir)
        except tf.errors.PermissionDeniedError:
            raise UserError(f"--data-dir {config.data_dir}: permission denied; check the account's roles") from None
        except tf.errors.OpError as error:  # gs:// out of reach: TensorFlow's own words, and no flag
            raise UserError(f"--data-dir {config.data_dir}: cannot read it ({tensorflow_error_line(error)})") from None
        where = posixpath.join(config.data_dir, METADATA_FILE)
        metadata = read_metadata(where)
        return DataFiles(
            metadata,
            where,
            _listed_shards(config.data_dir, metadata, "train", where),
            _listed_shards(config.data_dir, metadata, "eval", where),
        )
    train = expand(config.train_files, "--train-files")
    evaluation = expand(config.eval_files, "--eval-files")
    metadata_path = config.metadata or posixpath.join(posixpath.dirname(train[0]), METADATA_FILE)
    metadata = read_metadata(metadata_path)
    _check_listed(train + evaluation, metadata, metadata_path)
    _check_held_out(train, evaluation, metadata, metadata_path)
    return DataFiles(metadata, metadata_path, train, evaluation)


def _check_held_out(train: list[str], evaluation: list[str], metadata: Metadata, where: str) -> None:
    """--eval-files that are training files, or the training split's shards beside the metadata: evaluated on
    the rows it learned, its figures were reported as held out, silently."""
    shards = metadata.splits["train"].shards if "train" in metadata.splits else ()
    trained = set(train) | {posixpath.join(posixpath.dirname(where), shard.file) for shard in shards}
    both = [path for path in evaluation if path in trained]
    if both:
        raise UserError(f"--eval-files: {both[0]} is a training file ({len(both)} in all); evaluation needs rows "
                        "that training never saw, such as the eval-* shards")  # fmt: skip


def _check_listed(files: list[str], metadata: Metadata, where: str) -> None:
    """A table's --train-files and --eval-files against the shards their metadata lists: one of a listed name but
    another size is another preprocessing run's (shard names repeat across datasets), whose values this metadata
    would read otherwise (a vocabulary's indices, a column's place), silently: refused; one not listed is warned of.
    An image's or a vector's shards read alike whatever run wrote them."""
    if not metadata.is_table:
        return
    shards = [shard for split in metadata.splits.values() for shard in split.shards]
    listed = {posixpath.basename(shard.file): shard.bytes for shard in shards}
    sizes = _sizes(files)
    unlisted = []
    for path, size in zip(files, sizes):
        recorded = listed.get(posixpath.basename(path))
        if recorded is None:
            unlisted.append(path)
        elif size != recorded:
            raise UserError(
                f"{path}: {size} bytes, but {where} records {recorded} for {posixpath.basename(path)}: a shard of "
                "another preprocessing run, or truncated; pass the metadata.json written beside it (--metadata)"
            )
    if unlisted:
        log.warning("--train-files, --eval-files: %d file(s) that %s does not list, the first %s; shards of "
                    "another preprocessing run are read as if they were its own", len(unlisted), where,
                    unlisted[0])  # fmt: skip


def check_data_dir(folder: str) -> None:
    """UserError for a --data-dir that is no dataset at all: missing, a file (a raw table, often), or a
    folder of no shards; a folder with shards but no metadata.json is an unfinished one (read_metadata)."""
    from_raw = f"make one with: qt-preprocess --input {folder} --output data/NAME"  # a raw table, or a folder of them
    if not tf.io.gfile.isdir(folder):
        if gcs.is_gcs(folder):  # a missing bucket, which the advice below would not make
            gcs.check_bucket(folder, "--data-dir")
        if not tf.io.gfile.exists(folder):
            raise UserError(f"--data-dir {folder}: no such folder; make one with: qt-preprocess --input RAW_DATA "
                            f"--output {folder}")  # fmt: skip
        name = posixpath.basename(folder)
        if name == METADATA_FILE or ".tfrecord" in name:
            raise UserError(f"--data-dir {folder}: a file of a dataset; pass its folder, --data-dir "
                            f"{posixpath.dirname(folder) or '.'}")  # fmt: skip
        raise UserError(f"--data-dir {folder}: a file, not a dataset folder; {from_raw}")
    names = [name for name in tf.io.gfile.listdir(folder) if name != lease.LEASE_NAME]  # a failed qt-preprocess's
    if not any(".tfrecord" in name for name in names) and METADATA_FILE not in names:
        empty = f"make one with: qt-preprocess --input RAW_DATA --output {folder}"
        raise UserError(
            f"--data-dir {folder}: not a dataset (no shards, no {METADATA_FILE}); {from_raw if names else empty}"
        )


def first_problem(path: str, metadata: Metadata) -> str | None:
    """What is wrong with the first bad record of a shard, or None if every record reads.

    Used after TensorFlow stopped on bad data (its errors name no file) and by --skip-corrupt.
    """
    good = 0  # records, not examples: a record may pack many
    try:
        for record in tfrecord.records(path, metadata.compression):
            decode_record(record, metadata)
            good += 1
    except tfrecord.DamagedFile as error:
        return str(error)
    except UserError as error:
        return f"{path}, record {good}: {error}"
    except tf.errors.OpError as error:  # the file gone, or out of reach, since it was listed
        return f"{path}: cannot be read after {good} record(s) ({tensorflow_error_line(error)})"
    return None


def first_bad_shard(files: list[str], metadata: Metadata) -> str | None:
    for path in files:
        problem = first_problem(path, metadata)
        if problem:
            return problem
    return None


def leave_out_bad_shards(data: DataFiles) -> DataFiles:
    """--skip-corrupt: the same files less those with a bad record, each logged with what it held."""

    def good(files: list[str], split: str) -> list[str]:
        kept = []
        for path in files:
            problem = first_problem(path, data.metadata)
            if problem:
                log.warning("Leaving out %s: %s", _examples_in(path, data.metadata, split), problem)
            else:
                kept.append(path)
        if not kept:
            raise UserError(f"--skip-corrupt: every {split} shard has a bad record; nothing is left to read")
        log.info("--skip-corrupt: %d of %d %s shard(s) left out", len(files) - len(kept), len(files), split)
        return kept

    train, evaluation = good(data.train, "train"), good(data.eval, "eval")
    kept = {
        split: {posixpath.basename(path) for path in files} for split, files in (("train", train), ("eval", evaluation))
    }
    # The splits' counts without the shards left out: the steps a table trains, and the log, are planned by them.
    splits = {name: _only(split, kept[name]) if name in kept else split for name, split in data.metadata.splits.items()}
    return DataFiles(dataclasses.replace(data.metadata, splits=splits), data.metadata_path, train, evaluation)


def _only(split: SplitInfo, files: set[str]) -> SplitInfo:
    """A split's record of its shards, less those not among `files` (as it was where it records none of them)."""
    shards = tuple(shard for shard in split.shards if shard.file in files)
    if not shards:
        return split
    return SplitInfo(sum(shard.examples for shard in shards), sum(shard.bytes for shard in shards), shards)


def _examples_in(path: str, metadata: Metadata, split: str) -> str:
    """How many examples leaving out `path` loses, as the metadata records it."""
    name = posixpath.basename(path)
    for shard in metadata.splits.get(split, SplitInfo(0, 0, ())).shards:
        if shard.file == name:
            return f"{shard.examples} examples"
    return "examples not recorded"


def describe_stall(files: list[str]) -> str:
    """Why the readers of `files` may have produced nothing."""
    sizes = [_size(path) or 0 for path in files]
    if not any(sizes):
        return f"all {len(files)} file(s) are empty"
    empty = [posixpath.basename(path) for path, size in zip(files, sizes) if not size]
    if empty:  # a cluster's task reads its own share of the files: it may hold only empty ones
        shown = ", ".join(empty[:3]) + (", ..." if len(empty) > 3 else "")
        return f"{len(empty)} of the {len(files)} file(s) are empty ({shown}); a task that reads only those starves"
    return f"the readers made no progress on {len(files)} file(s) of {sum(sizes)} bytes: is the storage unreachable?"
