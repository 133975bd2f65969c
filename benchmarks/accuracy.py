"""Benchmark 4: accuracy and wall time of the project's trainer against scikit-learn's SVC, same split.

The built-in digits use the project's own split (split_indices, as build_dataset does); the shared
MNIST test set, where this clone has it, trains on its first images and evaluates on its last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from sklearn.svm import SVC

from benchmarks import report
from benchmarks.common import Bench, read_mnist, stats, target, timed, write_dataset
from preprocessing.sources import SourceOptions, read_digits
from preprocessing.split import split_indices
from trainer import experiment
from trainer.config import Config

EVAL_FRACTION = 0.2  # build_dataset's default
SEED = 0


@dataclass(frozen=True)
class Case:
    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_eval: np.ndarray
    y_eval: np.ndarray
    svc: dict  # SVC's parameters
    steps: int  # our training steps


def digits_case(steps: int) -> Case:
    raw = read_digits(None, SourceOptions())
    train, evaluation = split_indices(raw.keys, raw.labels, EVAL_FRACTION, SEED)
    x, y = raw.items, raw.labels
    return Case("digits", x[train], y[train], x[evaluation], y[evaluation], {"gamma": 0.001}, steps)


def mnist_case(mnist_dir: str, split: tuple[int, int], steps: int) -> Case | None:
    mnist = read_mnist(mnist_dir)
    if mnist is None:
        return None
    (x, y), (train, evaluation) = mnist, split
    return Case("MNIST t10k", x[:train], y[:train], x[-evaluation:], y[-evaluation:], {}, steps)


def train_ours(case: Case, folder: str, runs: int) -> dict:
    """trainer.experiment.run on the case's split, once per seed 0..runs-1. The training set and the
    evaluation set are each a dataset of their own, every shard of which goes to one side."""
    if set(case.y_train) != set(case.y_eval):
        raise ValueError(f"{case.name}: the training and evaluation sets hold different classes")
    for part, x, y in (("train", case.x_train, case.y_train), ("eval", case.x_eval, case.y_eval)):
        write_dataset(x, y, os.path.join(folder, part))
    accuracies, seconds = [], []
    for seed in range(runs):
        config = Config(
            train_files=os.path.join(folder, "train", "*.tfrecord"),
            eval_files=os.path.join(folder, "eval", "*.tfrecord"),
            job_dir=os.path.join(folder, f"job-{seed}"),
            train_steps=case.steps,
            save_checkpoints_steps=case.steps,  # one evaluation, at the end
            seed=seed,
        )
        run_seconds, metrics = timed(lambda config=config: experiment.run(config))
        # The metric is a float32 ratio: as correct examples over all it compares exactly with SVC's.
        accuracies.append(round(metrics["accuracy"] * len(case.y_eval)) / len(case.y_eval))
        seconds.append(run_seconds)
    return {"accuracy": stats(accuracies), "seconds": stats(seconds), "steps": case.steps}


def train_svc(case: Case) -> dict:
    def fit_and_score() -> float:
        flat = [x.reshape(len(x), -1).astype(np.float64) for x in (case.x_train, case.x_eval)]
        return SVC(**case.svc).fit(flat[0], case.y_train).score(flat[1], case.y_eval)

    seconds, accuracy = timed(fit_and_score)
    return {"accuracy": accuracy, "seconds": seconds, "params": case.svc}


def run(bench: Bench) -> dict:
    size = bench.size
    cases = [digits_case(size.digits_steps), mnist_case(bench.mnist_dir, size.mnist_split, size.mnist_steps)]
    rows, targets = [], []
    for case in filter(None, cases):
        ours = train_ours(case, os.path.join(bench.folder, "accuracy", case.name), size.accuracy_runs)
        svc = train_svc(case)
        rows.append(
            {"dataset": case.name, "train": len(case.y_train), "eval": len(case.y_eval), "ours": ours, "svc": svc}
        )
        margin = ours["accuracy"]["median"] - svc["accuracy"]
        targets.append(target(f"accuracy ({case.name}): ours (median) − SVC ≥ 0", margin, 0.0))
    skipped = [] if cases[1] else [f"MNIST t10k: no {bench.mnist_dir}, skipped"]
    return {"rows": rows, "skipped": skipped, "targets": targets}


def section(result: dict) -> list[str]:
    headers = [
        "dataset",
        "train / eval",
        "ours: accuracy (median)",
        "min – max",
        "ours: s (median)",
        "ours: steps",
        "SVC: accuracy",
        "SVC: s",
        "SVC",
    ]
    rows = [
        [
            row["dataset"],
            f"{row['train']:,} / {row['eval']:,}",
            f"{row['ours']['accuracy']['median']:.4f}",
            f"{row['ours']['accuracy']['min']:.4f} – {row['ours']['accuracy']['max']:.4f}",
            report.number(row["ours"]["seconds"]["median"]),
            f"{row['ours']['steps']:,}",
            f"{row['svc']['accuracy']:.4f}",
            report.number(row["svc"]["seconds"]),
            f"SVC({', '.join(f'{k}={v}' for k, v in row['svc']['params'].items())})",
        ]
        for row in result["rows"]
    ]
    runs = len(result["rows"][0]["ours"]["accuracy"]["values"]) if result["rows"] else 0
    lines = [
        "## 4. Accuracy",
        "",
        f"Ours: `trainer.experiment.run` (train_and_evaluate with the queue pipeline and the default model, "
        f"one evaluation and the exports at the end), {runs} run(s) with seeds 0, 1, ...; its seconds are "
        "that whole call. SVC (deterministic): fit and score on the same split, once. The target rows show "
        "our median accuracy minus SVC's.",
        "",
        *report.table(headers, rows),
    ]
    for line in result["skipped"]:
        lines += ["", line]
    return lines


def plot(result: dict, folder: str) -> list[str]:
    labels = [f"{row['dataset']}: {who}" for row in result["rows"] for who in ("ours", "SVC")]
    values = [value for row in result["rows"] for value in (row["ours"]["accuracy"]["median"], row["svc"]["accuracy"])]
    return report.bar_chart(folder, "accuracy.png", "Accuracy on the evaluation split", labels, values, "accuracy")
