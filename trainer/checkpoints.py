"""Resume from the newest checkpoint that reads whole, not from the newest one named.

A preemption while a checkpoint is being written (on gs:// above all) can leave its .data file
truncated or missing, its .index missing, or the `checkpoint` state file naming a checkpoint
that was never finished or holding garbage. The Estimator restores `tf.train.latest_checkpoint`
without looking, and stops with `Read less bytes than requested`, naming no file; with a garbage
state file it starts again from scratch without a word.

newest_intact() checks the candidates newest first, logs one warning for each damaged one,
and rewrites the state file to point at the first intact one before the Estimator reads it.
Everything goes through tf.io.gfile and tf.train, so it works the same on local paths and gs://.

TrainingExecutor keeps a cluster's evaluator going when training removes the checkpoint it is reading.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from dataclasses import dataclass

import tensorflow as tf
from google.protobuf import text_format
from tensorflow.python.training.checkpoint_state_pb2 import CheckpointState
from tensorflow_estimator.python.estimator import training as estimator_training

from dataformat.errors import UserError, tensorflow_error_line

log = logging.getLogger("trainer")

STATE_FILE = "checkpoint"  # the state file tf.train.latest_checkpoint reads
_STEP = re.compile(r"-(\d+)$")
_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")
# What reading a damaged checkpoint raises: TensorFlow's OpError subclasses, and the Python
# exceptions its C++ reader turns a status into (OUT_OF_RANGE, which a truncated file gives,
# becomes IndexError; INVALID_ARGUMENT ValueError; the other codes RuntimeError).
_READ_ERRORS = (tf.errors.OpError, ValueError, IndexError, RuntimeError)
# Why a cluster's evaluator may find its checkpoint gone, and what to do about it.
REMOVED_WHY = (
    "training keeps --keep-checkpoint-max checkpoints; raise it, or --save-checkpoints-steps, where evaluations "
    "take longer than training takes to write that many"
)


@dataclass(frozen=True)
class Damage:
    """What is wrong with one checkpoint: a short problem, and TensorFlow's own line if any."""

    prefix: str
    problem: str
    detail: str = ""
    exists: bool = True  # False: a name in the state file, with no file at all

    def describe(self) -> str:
        return f"{self.problem}: {self.detail}" if self.detail else self.problem


def newest_intact(job_dir: str) -> str | None:
    """The newest checkpoint in job_dir that reads whole (its prefix), after repairing the `checkpoint`
    state file to point at it; None when there is no checkpoint at all (a state file naming only
    checkpoints none of whose files exist counts as none). UserError when there are checkpoints but
    none is intact.

    Call it on the chief only, before the Estimator is built: it may rewrite the state file.
    """
    state, state_problem = read_state(job_dir)
    candidates = _candidates(job_dir, state)
    if not candidates:
        if state_problem:
            log.warning("%s is damaged (%s); no checkpoint to resume from", _state_path(job_dir), state_problem)
        return None
    intact, damaged = _first_intact(candidates)
    if intact is None and not any(damage.exists for damage in damaged):  # the model.ckpt-* files were deleted
        names = ", ".join(_name(damage.prefix) for damage in damaged)
        log.warning("%s names %s, but none of their files exist; no checkpoint to resume from", STATE_FILE, names)
        return None
    if intact is None:
        found = "; ".join(f"{_name(damage.prefix)}: {damage.problem}" for damage in damaged)
        raise UserError(
            f"--job-dir {job_dir}: no intact checkpoint ({found}); "
            "delete the damaged model.ckpt-* files to start over, or use a new --job-dir"
        )
    for damage in damaged:
        log.warning("%s is damaged (%s); resuming from %s", _name(damage.prefix), damage.describe(), _name(intact))
    _repair_state(job_dir, state, state_problem, intact, candidates)
    # The damaged files stay where they are: the next save at their step overwrites them.
    return intact


def _first_intact(candidates: list[str]) -> tuple[str | None, list[Damage]]:
    """The first intact prefix of candidates (None if none is), and the damaged ones before it."""
    damaged = []
    for prefix in candidates:
        damage = find_damage(prefix)
        if damage is None:
            return prefix, damaged
        damaged.append(damage)
    return None, damaged


def _repair_state(
    job_dir: str, state: CheckpointState | None, state_problem: str | None, intact: str, candidates: list[str]
) -> None:
    """Points the state file at intact unless it already does, saying why when it is not damage to a
    checkpoint (already logged) that moves it."""
    named = _resolve(job_dir, state.model_checkpoint_path) if state else None
    if named == intact:
        return
    if state_problem:
        log.warning("%s is damaged (%s); resuming from %s", _state_path(job_dir), state_problem, _name(intact))
    elif named is None:
        log.warning("%s is missing; resuming from %s", _state_path(job_dir), _name(intact))
    elif _step(named) < _step(intact):  # a checkpoint saved whole, but the state file never updated
        log.info("%s names %s, but %s is newer and intact; resuming from it", STATE_FILE, _name(named), _name(intact))
    older = candidates[candidates.index(intact) :]
    _write_state(job_dir, intact, [prefix for prefix in older if prefix == intact or _has_index(prefix)])


def read_state(job_dir: str) -> tuple[CheckpointState | None, str | None]:
    """The `checkpoint` state file of job_dir, and what is wrong with it: (None, None) when there is none.

    Parsed here rather than by tf.train.get_checkpoint_state, which logs a garbage file as ignored
    (and raises UnicodeDecodeError on a binary one) instead of saying what is wrong with it.
    """
    path = _state_path(job_dir)
    try:
        if not tf.io.gfile.exists(path):
            return None, None
        with tf.io.gfile.GFile(path, "rb") as file:
            content = file.read()
    except tf.errors.OpError as error:
        return None, f"unreadable: {tensorflow_error_line(error)}"
    state = CheckpointState()
    try:
        text_format.Merge(content.decode("utf-8"), state)
    except (text_format.ParseError, UnicodeDecodeError) as error:
        return None, f"not a checkpoint state: {_first_line(error)}"
    if not state.model_checkpoint_path:
        return None, "it names no checkpoint"
    return state, None


def find_damage(prefix: str) -> Damage | None:
    """What is wrong with the checkpoint at prefix, or None when it is intact: its .index and every
    .data shard exist, and every tensor reads in full (which also verifies their checksums)."""
    shards = _data_shards(prefix)
    if not _has_index(prefix):
        if not shards:
            return Damage(prefix, f"the {STATE_FILE} state file names it, but none of its files exist", exists=False)
        return Damage(prefix, "its index file is missing")
    missing = _missing_shard(prefix, shards)
    if missing:
        return Damage(prefix, f"its data file {posixpath.basename(missing)} is missing")
    return _read_damage(prefix)


def _read_damage(prefix: str) -> Damage | None:
    """Reads every tensor of the checkpoint; the first failure, or None.

    This costs one read of the whole checkpoint, which is fine for this trainer's models; a very large
    model would want to compare the sizes of the data files with the offsets in the index instead.
    """
    try:
        reader = tf.train.load_checkpoint(prefix)
        names = sorted(reader.get_variable_to_shape_map())
    except _READ_ERRORS as error:
        _raise_a_ctrl_c_inside(error)
        return Damage(prefix, "its index file is unreadable", _error_line(error))
    for name in names:
        try:
            reader.get_tensor(name)
        except _READ_ERRORS as error:
            _raise_a_ctrl_c_inside(error)
            return Damage(prefix, _read_problem(error), _error_line(error))
    return None


def _raise_a_ctrl_c_inside(error: Exception) -> None:
    """A Ctrl-C that lands while TensorFlow's C++ code turns an error into Python's (load_checkpoint looks for a
    folder that way inside) comes as a RuntimeError that names it: raised as what it was. Taken for damage, it
    made an intact checkpoint look damaged, rewrote the state file to an older one, and the Ctrl-C was lost."""
    if isinstance(error, RuntimeError) and "REPLACED BY KeyboardInterrupt" in str(error):
        raise KeyboardInterrupt from None


def _read_problem(error: Exception) -> str:
    """What a failed read says about the data file. A short file reads as OUT_OF_RANGE: locally
    `Read less bytes than requested`, on gs:// `EOF reached. Requested to read N bytes from M.`"""
    message = _error_line(error)
    if isinstance(error, (IndexError, tf.errors.OutOfRangeError)) or "Read less bytes" in message or "EOF" in message:
        return "its data file is truncated"
    if isinstance(error, tf.errors.NotFoundError) or "No such file" in message or "not found" in message.lower():
        return "a data file is missing"
    return "its data file is corrupted"


def _candidates(job_dir: str, state: CheckpointState | None) -> list[str]:
    """The prefixes the state file names and those with an .index in job_dir, newest step first
    (at one step, the one in job_dir first)."""
    prefixes = set()
    if state is not None:
        named = [state.model_checkpoint_path, *state.all_model_checkpoint_paths]
        prefixes.update(_resolve(job_dir, path) for path in named)
    try:
        indexes = tf.io.gfile.glob(_join(job_dir, "model.ckpt-*.index"))
    except tf.errors.OpError:  # no such folder yet
        indexes = []
    prefixes.update(index[: -len(".index")] for index in indexes)
    here = _join(job_dir, "")
    return sorted(prefixes, key=lambda prefix: (_step(prefix), prefix.startswith(here)), reverse=True)


def _write_state(job_dir: str, intact: str, prefixes_newest_first: list[str]) -> None:
    """Points the state file at intact; the older checkpoints are listed so that the Saver's
    max_to_keep still deletes them in time (they are checked for their .index, not read)."""
    # Full paths: TensorFlow writes them relative to a gs:// job dir (as the Estimator's Saver does), and
    # as they are for a local absolute one; relative names would be taken relative to the current folder.
    everything = list(reversed(prefixes_newest_first))
    tf.compat.v1.train.update_checkpoint_state(job_dir, intact, all_model_checkpoint_paths=everything)


def _data_shards(prefix: str) -> list[str]:
    try:
        return tf.io.gfile.glob(prefix + ".data-*-of-*")
    except tf.errors.OpError:
        return []


def _missing_shard(prefix: str, shards: list[str]) -> str | None:
    """A .data shard the others imply (data-0000K-of-0000M for every K < M) that does not exist, or None."""
    if not shards:
        return f"{prefix}.data-00000-of-00001"
    present = set(shards)
    counts = sorted({int(match.group(2)) for match in map(_SHARD.search, shards) if match})
    missing = None
    for count in counts:  # files of an older save at this step may linger: one complete set will do
        expected = [f"{prefix}.data-{k:05d}-of-{count:05d}" for k in range(count)]
        absent = [shard for shard in expected if shard not in present]
        if not absent:
            return None
        missing = missing or absent[0]
    return missing


EVALUATOR_PAUSE_SECS = 1  # a cluster's evaluator looks for a new checkpoint at most this often


class TrainingExecutor(estimator_training._TrainingExecutor):
    """tf.estimator.train_and_evaluate's executor, whose cluster evaluator goes on when training removed the
    checkpoint it was evaluating before it could read it: training keeps --keep-checkpoint-max checkpoints and
    removes older ones while the evaluator builds its graph (seconds; a fast GPU writes checkpoints that
    often). tf.estimator's evaluator would stop with `The passed save_path is not a valid checkpoint`, and
    the job with it; this one warns and evaluates the newest checkpoint next."""

    def _execute_evaluator_once(self, evaluator, continuous_eval_listener, throttle_secs):
        # At --eval-throttle-secs 0 tf.estimator's evaluator looked for a new checkpoint without a pause, warning
        # each time: 2,202 warnings in a 60 s run, and 453 MB of log in 6 minutes of a stalled chief.
        throttle_secs = max(throttle_secs, EVALUATOR_PAUSE_SECS)
        checkpoint = self._estimator.latest_checkpoint()  # the one the evaluator is about to evaluate
        try:
            return super()._execute_evaluator_once(evaluator, continuous_eval_listener, throttle_secs)
        except _READ_ERRORS:
            if not checkpoint or not removed(checkpoint):
                raise
            log.warning("%s was removed before it could be evaluated (%s); evaluating the newest next",
                        _name(checkpoint), REMOVED_WHY)  # fmt: skip
            return None, False  # no evaluation: the evaluator's loop goes on


def removed(prefix) -> bool:
    """Whether a checkpoint (its prefix, str or bytes) is gone: its .index is, which the Saver removes first."""
    return not _has_index(prefix.decode() if isinstance(prefix, bytes) else str(prefix))


def _has_index(prefix: str) -> bool:
    try:
        return tf.io.gfile.exists(prefix + ".index")
    except tf.errors.OpError:
        return False


def _resolve(job_dir: str, path: str) -> str:
    """A path from the state file as a full one: relative ones are relative to job_dir."""
    if "://" in path or os.path.isabs(path):
        return path
    return _join(job_dir, path)


def _join(job_dir: str, name: str) -> str:
    return job_dir.rstrip("/") + "/" + name


def _state_path(job_dir: str) -> str:
    return _join(job_dir, STATE_FILE)


def step_of(prefix: str | None) -> int:
    """A checkpoint's global step, by its name (0 for no checkpoint)."""
    return max(_step(prefix), 0) if prefix else 0


def _step(prefix: str) -> int:
    match = _STEP.search(prefix)
    return int(match.group(1)) if match else -1


def _name(prefix: str) -> str:
    return posixpath.basename(prefix)


def _error_line(error: Exception) -> str:
    if isinstance(error, tf.errors.OpError):
        return tensorflow_error_line(error)
    return _first_line(error)


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
