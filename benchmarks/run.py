"""`python -m benchmarks`: every benchmark, on data it prepares itself, into JSON, README.md and PNGs.

    python -m benchmarks [--size tiny|full] [--out benchmarks/results] [--only pipeline,training]
                         [--mnist DIR]

`full` took about 90 minutes in all on a 2-core machine (the results' own `seconds`): photos 46 (twelve
trainings over four folds, while other work ran), clicks and training 8 each (the training rows are read
per 100 steps: the CNN's windows last 15-60 s), text 8, the lifecycle and the tables 6 each, accuracy 5,
the rest 5; `tiny` is what the tests run. The README is rebuilt from every result file in --out, so a run
of one benchmark updates its own section.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads: keep its C++ start-up chatter out

import tensorflow as tf  # noqa: E402

from benchmarks import (  # noqa: E402
    accuracy,
    clicks,
    lifecycle,
    photos,
    pipeline,
    report,
    tables,
    text,
    training,
    wide,
    writing,
)  # noqa: E402
from benchmarks.common import MNIST_DIR, SIZES, Bench, environment  # noqa: E402

log = logging.getLogger("benchmarks")

BENCHMARKS = {
    "pipeline": pipeline,
    "training": training,
    "preprocessing": writing,
    "accuracy": accuracy,
    "tables": tables,
    "clicks": clicks,
    "wide": wide,
    "text": text,
    "lifecycle": lifecycle,
    "photos": photos,
}
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="full", help="how much to do (default: full)")
    parser.add_argument("--out", default=RESULTS, help="folder for the results (default: benchmarks/results)")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated benchmarks (default: all)")
    parser.add_argument("--mnist", default=MNIST_DIR, help="folder of the MNIST t10k .gz files (skipped if absent)")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(BENCHMARKS)
    if unknown:
        parser.error(f"--only: unknown benchmark(s) {', '.join(sorted(unknown))}; choose from {', '.join(BENCHMARKS)}")
    return args


def run_benchmark(name: str, bench: Bench, out: str) -> None:
    """Runs one benchmark and writes out/NAME.json."""
    log.info("Running the %s benchmark (%s)", name, bench.size.name)
    start = time.perf_counter()
    result = BENCHMARKS[name].run(bench)
    seconds = time.perf_counter() - start
    result = {"benchmark": name, "environment": environment(bench.size), "seconds": seconds, **result}
    with open(os.path.join(out, f"{name}.json"), "w") as file:
        json.dump(result, file, indent=2)
    log.info("The %s benchmark took %.0f s", name, seconds)


def write_report(out: str) -> str:
    """README.md and the plots from every NAME.json in `out`."""
    results = {}
    for name in BENCHMARKS:
        path = os.path.join(out, f"{name}.json")
        if os.path.exists(path):
            with open(path) as file:
                results[name] = json.load(file)
    sections, plots = [], []
    for name, result in results.items():
        sections.append(BENCHMARKS[name].section(result))
        plots += BENCHMARKS[name].plot(result, out)
    return report.write(out, header(results), results, sections, plots)


def header(results: dict[str, dict]) -> list[str]:
    machine = next(iter(results.values()))["environment"]
    rows = [
        [
            name,
            *(result["environment"][key] for key in ("size", "code", "date", "load_average")),
            report.number(result["seconds"]),
        ]
        for name, result in results.items()
    ]
    return [
        "# Benchmark results",
        "",
        "Written by `python -m benchmarks` (see `benchmarks/run.py`). Speeds are the median of the "
        "repeated windows or runs, with their min – max. Other work on the machine moves whole runs by "
        "20% or more (see the load average); within a table the feeds take their windows in turns, so "
        "the ratios between them hold better than the absolute figures.",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, no GPU in use; Python {machine['python']}, "
        f"TensorFlow {machine['tensorflow']}.",
        "",
        *report.table(["benchmark", "size", "code", "date (UTC)", "load average after", "seconds"], rows),
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    tf.get_logger().setLevel("ERROR")  # the Estimator's and queues' deprecation notices would bury the log
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="benchmarks-") as folder:
        bench = Bench(SIZES[args.size], folder, args.mnist)
        for name in args.only.split(","):
            run_benchmark(name, bench, args.out)
    log.info("Results: %s", write_report(args.out))
    return 0
