"""Benchmark 3: preprocessing, the project's shard writer against a per-example int64-list writer (the
queue-era tutorials' way).

Each writer runs at two sizes. Its examples per second at the larger size include any start-up
(the Beam pipeline's, for instance); the difference between the two sizes gives the steady
rate, and start-up is what the larger run took beyond it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from benchmarks import report
from benchmarks.common import Bench, Size, stats, target, timed
from preprocessing.sources import from_arrays
from preprocessing.writer import build_dataset

BASELINE = "per-example int64-list writer"
GZIP = "build_dataset, workers=1, gzip"
BEAM = "Beam pipeline, DirectRunner"
LOCAL = ("build_dataset, workers=1", "build_dataset, workers=2")  # the writers held to the targets
INT64_LIST_FILE = "int64-list.tfrecord"


def project_writer(x: np.ndarray, y: np.ndarray, folder: str, workers: int, compression: str = "") -> int:
    """build_dataset with `workers` processes; returns the bytes of every shard."""
    raw = from_arrays(x, y, folder)
    metadata = build_dataset(raw, folder, source="npz", workers=workers, overwrite=True, compression=compression)
    return sum(split.bytes for split in metadata.splits.values())


def beam_writer(x: np.ndarray, y: np.ndarray, folder: str) -> int:
    """The same conversion as a Beam pipeline on the DirectRunner (this machine)."""
    from preprocessing.beam import build_dataset_with_beam

    raw = from_arrays(x, y, folder)
    metadata = build_dataset_with_beam(
        raw, folder, source="npz", pipeline_args=["--runner", "DirectRunner"], overwrite=True
    )
    return sum(split.bytes for split in metadata.splits.values())


def int64_list_writer(x: np.ndarray, y: np.ndarray, folder: str) -> int:
    """The queue-era tutorials' way: one tf.train.Example per image, every pixel an int64, one TFRecordWriter."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, INT64_LIST_FILE)
    with tf.io.TFRecordWriter(path) as writer:
        for image, label in zip(x, y):
            feature = {
                "image": tf.train.Feature(int64_list=tf.train.Int64List(value=image.ravel().tolist())),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return os.path.getsize(path)


WRITERS: dict[str, Callable[[np.ndarray, np.ndarray, str], int]] = {
    "build_dataset, workers=1": functools.partial(project_writer, workers=1),
    "build_dataset, workers=2": functools.partial(project_writer, workers=2),
    GZIP: functools.partial(project_writer, workers=1, compression="GZIP"),
    BEAM: beam_writer,
    BASELINE: int64_list_writer,
}


def measure_writer(write: Callable, x: np.ndarray, y: np.ndarray, folder: str, size: Size) -> dict:
    """Seconds at both sizes, examples/s at the larger, the steady rate and start-up, bytes/example."""
    seconds = {}
    for examples in size.write_sizes:
        runs = [timed(functools.partial(write, x[:examples], y[:examples], folder)) for _ in range(size.repeats)]
        seconds[examples] = stats([run_seconds for run_seconds, _ in runs])
        written = runs[-1][1]
    small, large = size.write_sizes
    extra_seconds = seconds[large]["median"] - seconds[small]["median"]
    steady = (large - small) / extra_seconds if extra_seconds > 0 else None
    return {
        "seconds": {str(n): s for n, s in seconds.items()},
        "examples_per_second": stats([large / s for s in seconds[large]["values"]]),
        "steady_examples_per_second": steady,
        "startup_seconds": seconds[large]["median"] - large / steady if steady else None,
        "bytes_per_example": written / large,
    }


def run(bench: Bench) -> dict:
    images, size = bench.images, bench.size
    payload = images.x[0].size + 1  # the pixels and one label byte
    rows = {}
    for name, write in WRITERS.items():
        if name == BEAM and importlib.util.find_spec("apache_beam") is None:
            continue  # the beam extra is not installed
        rows[name] = measure_writer(write, images.x, images.y, os.path.join(bench.folder, "writing"), size)
        rows[name]["payload_ratio"] = rows[name]["bytes_per_example"] / payload
    baseline_rate = rows[BASELINE]["examples_per_second"]["median"]
    for row in rows.values():
        row["speedup"] = row["examples_per_second"]["median"] / baseline_rate
    payload_targets = [
        target(f"preprocessing: bytes/example ≤ 1.05× raw payload ({name})", rows[name]["payload_ratio"], 1.05, False)
        for name in (LOCAL[0], GZIP)
    ]
    return {
        "data": images.origin,
        "payload_bytes": payload,
        "write_sizes": list(size.write_sizes),
        "rows": rows,
        "targets": [
            target(f"preprocessing: {name} ≥ 10× the int64-list writer, examples/s", rows[name]["speedup"], 10.0)
            for name in LOCAL
        ]
        + payload_targets,
    }


def section(result: dict) -> list[str]:
    small, large = result["write_sizes"]
    headers = [
        f"writer ({large:,} examples)",
        "examples/s (median)",
        "min – max",
        "× int64-list writer",
        "steady examples/s",
        "start-up s",
        f"s at {small:,}",
        f"s at {large:,}",
        "bytes/example",
        "× payload",
    ]
    rows = [
        [
            name,
            *report.spread(row["examples_per_second"]),
            f"{row['speedup']:.2f}",
            report.number(row["steady_examples_per_second"]),
            report.number(row["startup_seconds"]),
            report.number(row["seconds"][str(small)]["median"]),
            report.number(row["seconds"][str(large)]["median"]),
            report.number(row["bytes_per_example"]),
            f"{row['payload_ratio']:.3f}",
        ]
        for name, row in result["rows"].items()
    ]
    return [
        "## 3. Preprocessing",
        "",
        f"Data: {result['data']}. Examples/s is whole runs at {large:,} examples, start-up included "
        "(build_dataset writes these arrays in memory with threads, which start at once). The steady rate "
        f"is ({large:,} − {small:,}) / (difference of the median times); start-up is the rest of the larger "
        f"run. Raw payload: {result['payload_bytes']} bytes/example (the pixels and one label byte). "
        "build_dataset also splits, shuffles and computes the normalization statistics. gzip and the Beam "
        "pipeline (the DirectRunner, on this machine; the same shards as build_dataset) are reported, "
        "not held to the 10× target.",
        "",
        *report.table(headers, rows),
    ]


def plot(result: dict, folder: str) -> list[str]:
    names = list(result["rows"])
    labels = [f"{name}: {kind}" for name in names for kind in ("whole run", "steady")]
    values = [
        value or 0.0
        for row in result["rows"].values()
        for value in (row["examples_per_second"]["median"], row["steady_examples_per_second"])
    ]
    return report.bar_chart(folder, "preprocessing.png", "Preprocessing speed", labels, values, "examples / s")
