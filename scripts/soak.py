"""Kill soak: SIGKILL training, preprocessing and a local cluster at random moments, rerun the same
command each time, and check that nothing was lost beyond what the README promises.

    python scripts/soak.py --kills 20 --preprocess-kills 10 --cluster

What it does, and why each part matters:

1. Training. The built-in digits are preprocessed once; then `python -m trainer.task` runs and is
   killed with SIGKILL (no chance to save anything) at a random moment, uniform in --kill-window
   seconds after the run printed its first progress line, --kills times, each time rerunning the
   same command, which resumes from the newest checkpoint; the last run goes to the end. A kill
   comes earlier when a run is within one checkpoint interval of --train-steps, so that every kill
   interrupts training. For each kill it records the newest checkpoint before the kill, the
   checkpoint the rerun resumes from (tf.train.latest_checkpoint, read back before relaunching),
   the steps lost (the killed run's last progress line minus that checkpoint: a lower bound, as
   the run may have gone on for up to --progress-secs after its last line) and the time to resume
   (relaunch to the rerun's first progress line). Checks: every kill lost at most one checkpoint
   interval, every rerun started from its checkpoint, eval_metrics.json's global_step is
   --train-steps, and the newest export loads and answers serving_default.
2. Preprocessing. An npz of --preprocess-examples float32 vectors is preprocessed cleanly into one
   folder, then into another with runs killed at random moments while they write (no --overwrite:
   a rerun clears a killed run's leftovers) and a last run to the end. Check: every shard and
   metadata.json (but its timings) is byte-identical to the clean run's, and a killed run never
   left a metadata.json.
3. Cluster (--cluster). A chief, a worker, a parameter server and an evaluator on 127.0.0.1, each
   with its own TF_CONFIG, started with scripts/local_cluster.py's helpers. The parameter server
   is killed mid-run and restarted --ps-restart-secs later; once the worker trains again, the
   worker is killed and restarted. Check: every task ends with exit code 0 and the chief's
   checkpoint reaches --train-steps.

Every log stays under --work (default: a new temporary folder). The figures come last on stdout,
one line each, plus a table of the training kills; the exit code is 0 only if every check passed,
1 otherwise, with one line saying which failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import local_cluster  # noqa: E402

log = logging.getLogger("soak")

PROGRESS = re.compile(r"\bstep ([\d,]+)/[\d,]+ \(")
WRITING = re.compile(r"Writing with \d+")
CLEARED = re.compile(r"Removing (\d+) file\(s\) left by an earlier run that did not finish")
MARKER = ".soak"  # marks a --work folder as the soak's own, so that a rerun may clear it
PARTS = ("digits", "train", "preprocess", "cluster")
POLL_SECS = 0.05
# Preprocessing runs tried for each kill that must land: a run writes for 0.2 s at the short soak's size, and
# on a loaded machine the kill, timed from when its log's line is seen, came after three runs in a row ended.
KILL_TRIES = 10
START_TIMEOUT_SECS = 600  # a run that has not printed progress by then is stuck
RUN_TIMEOUT_SECS = 1800
SERVING_EXAMPLES = 16


class Failure(Exception):
    """A check that failed: one line saying which and why."""


# ---------------------------------------------------------------- processes and their logs


@dataclass
class Run:
    """One command, its log file and when it started."""

    process: subprocess.Popen
    log_path: str
    started: float


def launch(command: list[str], log_path: str) -> Run:
    with open(log_path, "w") as log_file:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    return Run(process, log_path, time.monotonic())


def read_log(path: str) -> str:
    try:
        with open(path, errors="replace") as file:
            return file.read()
    except FileNotFoundError:
        return ""


def progress_steps(text: str) -> list[int]:
    """The steps of every progress line ("step 1,200/3,000 (40%), ...") in a trainer's log."""
    return [int(step.replace(",", "")) for step in PROGRESS.findall(text)]


def tail(path: str, lines: int = 15) -> str:
    return "\n".join(read_log(path).rstrip().splitlines()[-lines:])


def kill(run: Run) -> None:
    run.process.send_signal(signal.SIGKILL)
    run.process.wait()


def wait_for_progress(run: Run, after_lines: int = 0, timeout: float = START_TIMEOUT_SECS) -> tuple[float, int]:
    """Waits for RUN's log to hold more than `after_lines` progress lines: (when, the step of the
    first new one). Failure if the run exits or the timeout passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        steps = progress_steps(read_log(run.log_path))
        if len(steps) > after_lines:
            return time.monotonic(), steps[after_lines]
        if run.process.poll() is not None:
            raise Failure(
                f"{run.log_path} ended with exit code {run.process.returncode} before any progress:\n"
                f"{tail(run.log_path)}"
            )
        time.sleep(POLL_SECS)
    raise Failure(f"{run.log_path}: no progress line in {timeout:.0f} s")


def wait_for_line(run: Run, pattern: re.Pattern, timeout: float = START_TIMEOUT_SECS) -> float | None:
    """When a line matching `pattern` appeared in RUN's log; None if the run ended without one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pattern.search(read_log(run.log_path)):
            return time.monotonic()
        if run.process.poll() is not None:
            return None
        time.sleep(POLL_SECS / 5)  # preprocessing writes for a second or so: time the kills finely
    raise Failure(f"{run.log_path}: no line matching {pattern.pattern!r} in {timeout:.0f} s")


def stop(run: Run) -> None:
    """Kills RUN if it still runs (a soak that fails leaves no process behind)."""
    if run.process.poll() is None:
        kill(run)


def finish(run: Run, timeout: float = RUN_TIMEOUT_SECS) -> int:
    try:
        return run.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(run)
        raise Failure(f"{run.log_path} did not end in {timeout:.0f} s") from None


# ---------------------------------------------------------------- the work folder


def prepare_work(work: str | None) -> str:
    """--work, made ready: a new temporary folder, an empty one, or a previous soak's (cleared)."""
    if work is None:
        work = tempfile.mkdtemp(prefix="soak-")
    os.makedirs(work, exist_ok=True)
    names = set(os.listdir(work))
    if names and MARKER not in names:
        raise Failure(f"--work {work} holds files of something else; give an empty folder or a previous soak's")
    for part in PARTS:
        shutil.rmtree(os.path.join(work, part), ignore_errors=True)
    open(os.path.join(work, MARKER), "w").close()
    return work


def preprocess_digits(output: str) -> str:
    """The built-in digits, preprocessed once for the training and the cluster parts."""
    command = [sys.executable, "-m", "preprocessing", "--source", "digits", "--output", output]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise Failure(f"preprocessing the digits failed:\n{result.stdout}{result.stderr[-2000:]}")
    return output


# ---------------------------------------------------------------- 1. training


@dataclass
class Kill:
    """One training kill and the rerun after it."""

    number: int
    after_secs: float  # after the killed run's first progress line
    checkpoint_before: int  # the newest checkpoint's step just before the kill
    last_progress: int  # the step of the killed run's last progress line
    resumed_from: int  # the newest checkpoint after the kill: where the rerun starts
    resume_secs: float | None = None  # the rerun's relaunch to its first progress line
    rerun_first_step: int | None = None

    @property
    def steps_lost(self) -> int:
        return max(0, self.last_progress - self.resumed_from)


@dataclass
class TrainingResult:
    kills: list[Kill] = field(default_factory=list)
    first_start_secs: float | None = None  # the first (fresh) run's launch to its first progress line
    global_step: int | None = None
    accuracy: float | None = None
    export: str = ""
    problems: list[str] = field(default_factory=list)


def checkpoint_step(job_dir: str) -> int:
    """The step of the newest checkpoint tf.train.latest_checkpoint names (0: none yet)."""
    import tensorflow as tf

    path = tf.train.latest_checkpoint(job_dir)
    return int(path.rsplit("-", 1)[1]) if path else 0


def verify_checkpoint(job_dir: str) -> int:
    """The newest checkpoint's step, read back from the checkpoint itself (Failure if it does not read)."""
    import tensorflow as tf

    path = tf.train.latest_checkpoint(job_dir)
    if path is None:
        return 0
    try:
        stored = int(tf.train.load_checkpoint(path).get_tensor("global_step"))
    except Exception as error:  # noqa: BLE001 - whatever the reader raises, the checkpoint is damaged
        raise Failure(f"the newest checkpoint {path} does not read: {error}") from None
    if stored != int(path.rsplit("-", 1)[1]):
        raise Failure(f"the newest checkpoint {path} holds global_step {stored}")
    return stored


def train_command(args: argparse.Namespace, data_dir: str, job_dir: str) -> list[str]:
    return [
        sys.executable, "-m", "trainer.task", "--data-dir", data_dir, "--job-dir", job_dir,
        "--train-steps", str(args.train_steps), "--save-checkpoints-steps", str(args.save_checkpoints_steps),
        "--progress-secs", "1",
    ]  # fmt: skip


def kill_moment(run: Run, first_progress: float, seconds: float, last_safe_step: int) -> None:
    """Waits until `seconds` after the first progress line, or until the run's progress passes
    `last_safe_step` (so that the kill lands in training, not after it); Failure if the run ends."""
    moment = first_progress + seconds
    while time.monotonic() < moment:
        steps = progress_steps(read_log(run.log_path))
        if steps and steps[-1] >= last_safe_step:
            return
        if run.process.poll() is not None:
            raise Failure(
                f"{run.log_path} ended with exit code {run.process.returncode} before its kill:\n{tail(run.log_path)}"
            )
        time.sleep(POLL_SECS)


def kill_training(run: Run, number: int, first_progress: float, seconds: float, args: argparse.Namespace) -> Kill:
    """SIGKILLs RUN at its moment and reads back, in its --job-dir, where a rerun resumes."""
    job_dir = run.process.args[run.process.args.index("--job-dir") + 1]
    # Kill three checkpoints before the end at the latest: a small model runs a checkpoint's worth
    # of steps in less than the second between two progress lines, and a kill after the last
    # checkpoint would land in the final evaluation, not in training.
    last_safe_step = max(args.save_checkpoints_steps, args.train_steps - 3 * args.save_checkpoints_steps)
    kill_moment(run, first_progress, seconds, last_safe_step)
    before = checkpoint_step(job_dir)
    after_secs = time.monotonic() - first_progress
    kill(run)
    steps = progress_steps(read_log(run.log_path))
    resumed = verify_checkpoint(job_dir)
    if resumed < before:
        raise Failure(f"kill {number}: the newest checkpoint went back from step {before} to {resumed}")
    return Kill(number, after_secs, before, steps[-1], resumed)


def note_resume(kill_record: Kill, run: Run, when: float, step: int) -> None:
    """Times the rerun after a kill and checks that it started from the kill's checkpoint."""
    kill_record.resume_secs, kill_record.rerun_first_step = when - run.started, step
    if step < kill_record.resumed_from:
        raise Failure(
            f"the rerun after kill {kill_record.number} started at step {step}, not at its checkpoint "
            f"{kill_record.resumed_from}: it did not resume; see {run.log_path}"
        )


def soak_training(args: argparse.Namespace, data_dir: str, folder: str, result: TrainingResult) -> None:
    """Part 1, filling RESULT as it goes (so that a failure still shows the kills before it)."""
    job_dir = os.path.join(folder, "job")
    command = train_command(args, data_dir, job_dir)
    rng = random.Random(f"{args.seed}-training")
    previous: Kill | None = None
    for number in range(1, args.kills + 2):
        run = launch(command, os.path.join(folder, f"run-{number:02d}.log"))
        try:
            when, step = wait_for_progress(run)
            if previous is None:
                result.first_start_secs = when - run.started
            else:
                note_resume(previous, run, when, step)
            if number > args.kills:
                break
            previous = kill_training(run, number, when, rng.uniform(*args.kill_window), args)
        except BaseException:
            stop(run)
            raise
        result.kills.append(previous)
        log.info(
            "training kill %d/%d: %.1f s into training, at step %d; checkpoint %d; resumes from %d",
            number,
            args.kills,
            previous.after_secs,
            previous.last_progress,
            previous.checkpoint_before,
            previous.resumed_from,
        )
    log.info("training: the last run goes to the end (%s)", run.log_path)
    code = finish(run)
    if code != 0:
        raise Failure(f"the last run ended with exit code {code}:\n{tail(run.log_path)}")
    check_training_end(args, job_dir, run, result)


def check_training_end(args: argparse.Namespace, job_dir: str, run: Run, result: TrainingResult) -> None:
    """eval_metrics.json at --train-steps, the export answering, and no kill beyond one interval."""
    with open(os.path.join(job_dir, "eval_metrics.json")) as file:
        metrics = json.load(file)
    result.global_step, result.accuracy = metrics["global_step"], metrics["accuracy"]
    if result.global_step != args.train_steps:
        result.problems.append(f"eval_metrics.json's global_step is {result.global_step}, not {args.train_steps}")
    result.export = check_export(job_dir)
    for kill_record in result.kills:
        if kill_record.steps_lost > args.save_checkpoints_steps:
            result.problems.append(
                f"kill {kill_record.number} lost {kill_record.steps_lost} steps, more than one "
                f"checkpoint interval ({args.save_checkpoints_steps})"
            )
    if not re.search(rf"the global step is {args.train_steps}\b", read_log(run.log_path)):
        result.problems.append(f"the last run did not report global step {args.train_steps}; see {run.log_path}")


def check_export(job_dir: str) -> str:
    """Loads the newest export of the "latest" exporter and asks serving_default about a few digits."""
    import numpy as np
    import tensorflow as tf
    from sklearn.datasets import load_digits

    from trainer.config import Config
    from trainer.export import latest_export

    path = latest_export(Config(job_dir=job_dir), "latest")
    if path is None:
        raise Failure(f"no export in {job_dir}/export/latest")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    ((name, spec),) = serve.structured_input_signature[1].items()
    digits = load_digits()
    images = digits.images[:SERVING_EXAMPLES, :, :, None].astype(spec.dtype.as_numpy_dtype)
    probabilities = serve(**{name: tf.constant(images)})["probabilities"].numpy()
    if probabilities.shape != (SERVING_EXAMPLES, 10) or not np.allclose(probabilities.sum(axis=1), 1, atol=1e-3):
        raise Failure(f"{path}: serving_default answered probabilities of shape {probabilities.shape}")
    right = int((probabilities.argmax(axis=1) == digits.target[:SERVING_EXAMPLES]).sum())
    return f"{os.path.relpath(path, job_dir)} answered {SERVING_EXAMPLES} digits, {right} right"


# ---------------------------------------------------------------- 2. preprocessing


@dataclass
class PreprocessKill:
    number: int
    after_secs: float  # after the run's "Writing with" line (or its launch, without one)
    shards_done: int  # finished shard files in the folder when it was killed
    cleared: int | None = None  # leftovers the rerun removed


@dataclass
class PreprocessResult:
    kills: list[PreprocessKill] = field(default_factory=list)
    clean_secs: float = 0.0
    late: int = 0  # runs that finished before their kill
    files_compared: int = 0
    matched: bool = False
    problems: list[str] = field(default_factory=list)


def write_npz(path: str, examples: int, features: int, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(examples, features)).astype(np.float32)
    np.savez(path, x=x, y=rng.integers(0, 10, examples))


def preprocess_command(npz: str, output: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "preprocessing",
        "--source",
        "npz",
        "--input",
        npz,
        "--output",
        output,
        "--workers",
        "2",
        "--shards",
        "8",
    ]


def dataset_files(folder: str) -> list[str]:
    """A dataset's own files: the shards and metadata.json (not the lease or a killed run's .partial files)."""
    return sorted(name for name in os.listdir(folder) if not name.startswith("."))


def clean_run(npz: str, output: str, log_path: str) -> float:
    """The reference dataset; returns the seconds from its "Writing with" line to its last shard and
    metadata.json: the window in which the other runs are killed."""
    run = launch(preprocess_command(npz, output), log_path)
    writing = wait_for_line(run, WRITING) or run.started
    while run.process.poll() is None and not os.path.exists(os.path.join(output, "metadata.json")):
        time.sleep(POLL_SECS / 5)
    written = time.monotonic()
    if finish(run) != 0:
        raise Failure(f"the clean preprocessing run failed:\n{tail(log_path)}")
    return written - writing


def kill_preprocessing(npz: str, output: str, clean: str, log_path: str, seconds: float) -> PreprocessKill | None:
    """One run killed `seconds` after it began writing; None if it finished first (then its dataset
    must be the clean run's)."""
    run = launch(preprocess_command(npz, output), log_path)
    try:
        writing = wait_for_line(run, WRITING) or run.started
        while time.monotonic() < writing + seconds and run.process.poll() is None:
            time.sleep(POLL_SECS / 5)
    finally:
        stop(run)
    after = time.monotonic() - writing
    if run.process.returncode not in (0, -signal.SIGKILL):
        raise Failure(f"a preprocessing run failed before its kill:\n{tail(log_path)}")
    if os.path.exists(os.path.join(output, "metadata.json")):  # it wrote its last file before the kill came
        problems = compare_datasets(clean, output)
        if problems:
            raise Failure(f"a run killed {after:.2f} s into writing left a metadata.json, but {problems[0]}")
        return None
    shards = sum(".tfrecord" in name for name in dataset_files(output)) if os.path.isdir(output) else 0
    return PreprocessKill(0, after, shards)


def compare_datasets(clean: str, other: str) -> list[str]:
    """What differs between two datasets: file names, shard bytes, metadata.json but its timings."""
    names = dataset_files(clean)
    if dataset_files(other) != names:
        return [f"files differ: {dataset_files(other)} vs {names}"]
    leftovers = [name for name in os.listdir(other) if ".partial" in name]
    problems = [f"leftovers of a killed run remain: {leftovers}"] if leftovers else []
    for name in names:
        if name == "metadata.json":
            if untimed_metadata(os.path.join(clean, name)) != untimed_metadata(os.path.join(other, name)):
                problems.append("metadata.json differs (beyond its timings)")
        elif file_digest(os.path.join(clean, name)) != file_digest(os.path.join(other, name)):
            problems.append(f"{name} differs")
    return problems


def untimed_metadata(path: str) -> dict:
    with open(path) as file:
        metadata = json.load(file)
    extra = metadata.get("extra") or {}
    metadata["extra"] = {key: value for key, value in extra.items() if not re.search("sec|time", key)}
    return metadata


def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def soak_preprocessing(args: argparse.Namespace, folder: str, result: PreprocessResult) -> None:
    """Part 2, filling RESULT as it goes."""
    npz = os.path.join(folder, "input.npz")
    write_npz(npz, args.preprocess_examples, args.preprocess_features, args.seed)
    clean, killed = os.path.join(folder, "clean"), os.path.join(folder, "killed")
    result.clean_secs = clean_run(npz, clean, os.path.join(folder, "clean.log"))
    rng = random.Random(f"{args.seed}-preprocessing")
    attempt = 0
    while len(result.kills) < args.preprocess_kills:
        attempt += 1
        if attempt > KILL_TRIES * args.preprocess_kills:
            raise Failure(f"only {len(result.kills)} of {args.preprocess_kills} kills landed before the runs ended")
        log_path = os.path.join(folder, f"run-{attempt:02d}.log")
        record = kill_preprocessing(npz, killed, clean, log_path, rng.uniform(0, result.clean_secs))
        if result.kills and result.kills[-1].cleared is None:
            result.kills[-1].cleared = cleared_count(log_path)
        if record is None:  # it finished first: start again from an empty folder
            log.info("preprocessing run %d finished before its kill (not counted)", attempt)
            result.late += 1
            shutil.rmtree(killed)
            continue
        record.number = len(result.kills) + 1
        result.kills.append(record)
        log.info(
            "preprocessing kill %d/%d: %.2f s into writing, %d shard(s) done",
            record.number,
            args.preprocess_kills,
            record.after_secs,
            record.shards_done,
        )
    final_log = os.path.join(folder, "final.log")
    final = launch(preprocess_command(npz, killed), final_log)
    if finish(final) != 0:
        raise Failure(f"the last preprocessing run failed:\n{tail(final_log)}")
    if result.kills:
        result.kills[-1].cleared = cleared_count(final_log)
    result.problems = compare_datasets(clean, killed)
    result.files_compared, result.matched = len(dataset_files(clean)), not result.problems


def cleared_count(log_path: str) -> int:
    found = CLEARED.findall(read_log(log_path))
    return int(found[-1]) if found else 0


# ---------------------------------------------------------------- 3. cluster


@dataclass
class ClusterTask:
    task_type: str
    index: int
    run: Run
    restarts: int = 0

    @property
    def name(self) -> str:
        return f"{self.task_type}-{self.index}"


@dataclass
class ClusterResult:
    restarts: dict[str, int] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)
    global_step: int | None = None
    problems: list[str] = field(default_factory=list)


class Cluster:
    """Chief, one worker, one parameter server and an evaluator, started with local_cluster's helpers."""

    ORDER = (("chief", 0), ("worker", 0), ("ps", 0), ("evaluator", 0))  # as local_cluster.main starts them

    def __init__(self, trainer_args: list[str], job_dir: str):
        self.trainer_args, self.job_dir = trainer_args, job_dir
        self.log_dir = os.path.join(job_dir, "cluster-logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.spec = local_cluster.cluster_spec(workers=1, ps=1)
        self.tasks = {f"{kind}-{index}": self._start(kind, index) for kind, index in self.ORDER}

    def _start(self, kind: str, index: int) -> ClusterTask:
        process = local_cluster.start(kind, index, self.spec, self.trainer_args, self.log_dir)
        return ClusterTask(
            kind, index, Run(process, os.path.join(self.log_dir, f"{kind}-{index}.log"), time.monotonic())
        )

    def kill(self, name: str) -> None:
        kill(self.tasks[name].run)
        log.info("cluster: killed %s", name)

    def restart(self, name: str) -> None:
        """Starts the task again with the same TF_CONFIG; its previous log moves to NAME.run-N.log."""
        task = self.tasks[name]
        os.replace(task.run.log_path, os.path.join(self.log_dir, f"{name}.run-{task.restarts + 1}.log"))
        restarted = self._start(task.task_type, task.index)
        restarted.restarts = task.restarts + 1
        self.tasks[name] = restarted
        log.info("cluster: restarted %s", name)

    def progress_lines(self, name: str) -> int:
        return len(progress_steps(read_log(self.tasks[name].run.log_path)))

    def check_alive(self, but: str = "") -> None:
        for task in self.tasks.values():
            if task.name != but and task.run.process.poll() == 0 and task.task_type in ("chief", "worker"):
                raise Failure(f"cluster: {task.name} finished before the kills were done; give more --train-steps")
            if task.name != but and task.run.process.poll() is not None:
                raise Failure(
                    f"cluster: {task.name} ended with exit code {task.run.process.returncode} "
                    f"mid-run:\n{tail(task.run.log_path)}"
                )

    def wait_progress(self, name: str, after_lines: int, timeout: float = START_TIMEOUT_SECS) -> tuple[float, int]:
        """(when, step) of NAME's next progress line, while every task must stay up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            steps = progress_steps(read_log(self.tasks[name].run.log_path))
            if len(steps) > after_lines:
                return time.monotonic(), steps[after_lines]
            self.check_alive()
            time.sleep(POLL_SECS)
        raise Failure(f"cluster: {name} printed no progress for {timeout:.0f} s")

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check_alive()
            time.sleep(POLL_SECS)

    def finish(self) -> dict[str, int]:
        """Waits for the chief, the worker and then the evaluator; stops the parameter server."""
        codes = {}
        for name in ("chief-0", "worker-0", "evaluator-0"):
            codes[name] = finish(self.tasks[name].run)
        self.stop()
        return codes

    def stop(self) -> None:
        for task in self.tasks.values():
            if task.run.process.poll() is None:
                task.run.process.terminate()
                try:
                    task.run.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    kill(task.run)


def soak_cluster(args: argparse.Namespace, data_dir: str, folder: str, result: ClusterResult) -> None:
    """Part 3, filling RESULT as it goes."""
    job_dir = os.path.join(folder, "job")
    trainer_args = train_command(args, data_dir, job_dir)[3:]
    rng = random.Random(f"{args.seed}-cluster")
    cluster = Cluster(trainer_args, job_dir)
    try:
        kill_parameter_server(cluster, args, rng, result)
        kill_worker(cluster, args, rng, result)
        codes = cluster.finish()
    finally:
        cluster.stop()
        result.restarts = {name: task.restarts for name, task in cluster.tasks.items()}
    failed = [f"{name} exited with {code}" for name, code in codes.items() if code != 0]
    if failed:
        result.problems.append(f"{', '.join(failed)}; see {cluster.log_dir}")
    result.global_step = verify_checkpoint(job_dir)
    if result.global_step < args.train_steps:
        result.problems.append(f"the chief's checkpoint is at step {result.global_step}, short of {args.train_steps}")


def kill_parameter_server(cluster: Cluster, args: argparse.Namespace, rng: random.Random, result: ClusterResult):
    """Kills ps-0 a random moment into training, restarts it --ps-restart-secs later, and times the
    chief's and the worker's return to training."""
    cluster.wait_progress("chief-0", 0)
    cluster.sleep(rng.uniform(*args.kill_window))
    checkpoint = checkpoint_step(cluster.job_dir)
    last = progress_steps(read_log(cluster.tasks["chief-0"].run.log_path))[-1]
    cluster.kill("ps-0")
    time.sleep(args.ps_restart_secs)  # the others may stall or retry meanwhile; none may exit
    cluster.check_alive(but="ps-0")
    lines = {name: cluster.progress_lines(name) for name in ("chief-0", "worker-0")}
    cluster.restart("ps-0")
    restarted = time.monotonic()
    when, step = cluster.wait_progress("chief-0", lines["chief-0"])
    result.events.append(
        f"ps-0 SIGKILLed at global step {last} (newest checkpoint {checkpoint}: {max(0, last - checkpoint)} steps "
        f"lost), restarted {args.ps_restart_secs:g} s later; the chief trained again {when - restarted:.1f} s after "
        f"the restart, from step {step}"
    )
    when, step = cluster.wait_progress("worker-0", lines["worker-0"])
    result.events.append(f"the worker trained again {when - restarted:.1f} s after the restart, at step {step}")


def kill_worker(cluster: Cluster, args: argparse.Namespace, rng: random.Random, result: ClusterResult) -> None:
    """Kills worker-0 a random moment later and restarts it at once."""
    cluster.sleep(rng.uniform(*args.kill_window))
    last = progress_steps(read_log(cluster.tasks["chief-0"].run.log_path))[-1]
    cluster.kill("worker-0")
    cluster.restart("worker-0")
    when, step = cluster.wait_progress("worker-0", 0)
    result.events.append(
        f"worker-0 SIGKILLed at global step {last} and restarted at once; it trained again "
        f"{when - cluster.tasks['worker-0'].run.started:.1f} s later, at step {step}"
    )


# ---------------------------------------------------------------- figures


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_training(result: TrainingResult, args: argparse.Namespace) -> None:
    kills = result.kills
    lost = [k.steps_lost for k in kills]
    resumes = [k.resume_secs for k in kills if k.resume_secs is not None]
    print(
        f"training kills:        {len(kills)} (--train-steps {args.train_steps}, a checkpoint every "
        f"{args.save_checkpoints_steps} steps, SIGKILL {args.kill_window[0]:g}-{args.kill_window[1]:g} s after "
        f"a run's first progress line)"
    )
    if kills:
        print(
            f"steps lost per kill:   median {statistics.median(lost):g}, max {max(lost)} "
            f"(at most {args.save_checkpoints_steps}, one checkpoint interval, may be lost)"
        )
    if result.first_start_secs is not None:
        print(f"fresh start:           {result.first_start_secs:.1f} s from launch to the first progress line")
    if resumes:
        print(
            f"time to resume:        median {statistics.median(resumes):.1f} s, max {max(resumes):.1f} s "
            "(relaunch to the first progress line; start-up included)"
        )
    if result.global_step is not None:
        print(
            f"final run:             global step {result.global_step} of {args.train_steps}, accuracy "
            f"{result.accuracy:.4f}; export {result.export}"
        )
    if kills:
        print_kill_table(kills)


def print_kill_table(kills: list[Kill]) -> None:
    print(
        f"  {'kill':>4}  {'at s':>5}  {'ckpt before':>11}  {'last step':>9}  {'resumed at':>10}  {'lost':>4}  "
        f"{'resume s':>8}"
    )
    for k in kills:
        print(
            f"  {k.number:>4}  {k.after_secs:>5.1f}  {k.checkpoint_before:>11}  {k.last_progress:>9}  "
            f"{k.resumed_from:>10}  {k.steps_lost:>4}  {seconds(k.resume_secs):>8}"
        )


def print_preprocessing(result: PreprocessResult, args: argparse.Namespace) -> None:
    size = f"{args.preprocess_examples:,} x {args.preprocess_features} float32, --workers 2 --shards 8"
    late = f"; {result.late} more run(s) finished before their kill, not counted" if result.late else ""
    print(
        f"preprocessing kills:   {len(result.kills)} ({size}; SIGKILL during the {result.clean_secs:.2f} s a clean "
        f"run writes{late})"
    )
    verdict = "yes" if result.matched else "NO"
    print(
        f"bytes match:           {verdict} ({result.files_compared} files, every shard and metadata.json but its "
        "timings, against a clean run's)"
    )
    if result.kills:
        print(f"  {'kill':>4}  {'at s':>5}  {'shards done':>11}  {'leftovers the rerun cleared':>27}")
        for k in result.kills:
            cleared = "-" if k.cleared is None else k.cleared
            print(f"  {k.number:>4}  {k.after_secs:>5.2f}  {k.shards_done:>11}  {cleared:>27}")


def print_cluster(result: ClusterResult, args: argparse.Namespace) -> None:
    restarts = ", ".join(f"{name} {count}" for name, count in result.restarts.items())
    reached = "reached" if result.global_step is not None and result.global_step >= args.train_steps else "NOT reached"
    print(
        f"cluster:               chief checkpoint at global step {result.global_step} ({reached} "
        f"{args.train_steps}); restarts: {restarts}"
    )
    for event in result.events:
        print(f"  {event}")


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="training runs to SIGKILL (default: 20)")
    parser.add_argument("--preprocess-kills", type=int, default=10, help="preprocessing runs to SIGKILL (default: 10)")
    parser.add_argument(
        "--cluster",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also kill a local cluster's parameter server and worker (default: on; ~3 minutes)",
    )
    parser.add_argument("--work", help="folder for datasets, jobs and logs (default: a new temporary folder)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments and the npz (default: 0)")
    parser.add_argument("--train-steps", type=int, default=3000, help="the job's --train-steps (default: 3000)")
    parser.add_argument(
        "--save-checkpoints-steps", type=int, default=200, help="the job's --save-checkpoints-steps (default: 200)"
    )
    parser.add_argument(
        "--kill-window",
        type=float,
        nargs=2,
        default=(1.0, 6.0),
        metavar=("MIN", "MAX"),
        help="a kill comes uniformly MIN to MAX seconds after a run's first progress line (default: 1 6)",
    )
    parser.add_argument(
        "--preprocess-examples",
        type=int,
        default=400_000,
        help="rows of the npz to preprocess (default: 400,000, 100 MB: a run writes for a second or two)",
    )
    parser.add_argument("--preprocess-features", type=int, default=64, help="columns of the npz (default: 64)")
    parser.add_argument(
        "--ps-restart-secs",
        type=float,
        default=5.0,
        help="seconds between killing the parameter server and restarting it (default: 5)",
    )
    args = parser.parse_args(argv)
    if min(args.kills, args.preprocess_kills) < 0:
        parser.error("--kills and --preprocess-kills must not be negative")
    if not 0 < args.save_checkpoints_steps < args.train_steps:
        parser.error("--save-checkpoints-steps must be positive and less than --train-steps")
    if not 0 <= args.kill_window[0] <= args.kill_window[1]:
        parser.error("--kill-window: give MIN <= MAX, both 0 or more")
    return args


def run_part(name: str, part, result, failures: list[str]) -> None:
    """Runs one part of the soak into RESULT; a Failure, and each of RESULT's problems, become lines of `failures`."""
    try:
        part(result)
    except Failure as failure:
        log.error("%s: %s", name, failure)
        result.problems.append(str(failure).splitlines()[0])
    failures.extend(f"{name}: {problem}" for problem in result.problems)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        work = prepare_work(args.work)
    except Failure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 2
    log.info("soak in %s; loading TensorFlow", work)
    import tensorflow as tf  # now, not in the middle of a kill

    for chatty in (tf.get_logger(), logging.getLogger("absl")):  # TensorFlow's INFO lines, e.g. on loading
        chatty.setLevel(logging.WARNING)
    started, failures = time.monotonic(), []
    folders = {part: os.path.join(work, part) for part in PARTS}
    for folder in folders.values():
        os.makedirs(folder, exist_ok=True)
    training, preprocessing, cluster = TrainingResult(), PreprocessResult(), ClusterResult()
    try:
        data_dir = preprocess_digits(folders["digits"])
    except Failure as failure:
        log.error("%s", failure)
        failures.append(f"digits: {str(failure).splitlines()[0]}")
        data_dir = None
    if data_dir:
        run_part("training", lambda result: soak_training(args, data_dir, folders["train"], result), training, failures)
    run_part("preprocessing", lambda result: soak_preprocessing(args, folders["preprocess"], result), preprocessing,
             failures)  # fmt: skip
    if args.cluster and data_dir:
        run_part("cluster", lambda result: soak_cluster(args, data_dir, folders["cluster"], result), cluster, failures)
    print(f"\nsoak figures ({(time.monotonic() - started) / 60:.1f} minutes; logs in {work})")
    print_training(training, args)
    print_preprocessing(preprocessing, args)
    if args.cluster:
        print_cluster(cluster, args)
    if failures:
        print(f"FAILED: {'; '.join(failures)}")
        return 1
    print("PASSED: every check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
