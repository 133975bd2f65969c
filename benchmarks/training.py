"""Benchmark 2: training steps per second of the project's model: `python -m trainer.task` as users
run it, bare loops fed each way, Keras, and the seeds' own pipeline, each against a constant batch.

The bare loops call `model_fn` in a graph and run its train_op, one step per session.run, inside a
MonitoredSession with no hooks (which starts the queue runners, as the Estimator's does): graph
building, session start-up and the first steps stay out of the timed windows, and so do the
Estimator's hooks, checkpoints and summaries. `python -m trainer.task` has all of those: it runs
in a child process (benchmarks/trainer_process.py) that takes its windows in the same turns.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import tensorflow as tf

from benchmarks import report, step_costs
from benchmarks.common import Bench, extra_microseconds, measure, paired_ratio, probe, target
from benchmarks.feeds import FEEDS, Feed, int64_list_feed, mean_fill, session_loop, tf_data_batches
from benchmarks.trainer_process import SUMMARY_STEPS, TrainerProcess, as_flags, lists_flag
from benchmarks.writing import INT64_LIST_FILE, int64_list_writer
from dataformat.schema import Metadata
from trainer import model
from trainer.config import Config
from trainer.dataset import DataFiles
from trainer.devices import TOWERS_ON_CPUS
from trainer.experiment import model_params

KERAS = "keras fit, tf.data, steps_per_execution={}"
SEEDS = "seeds' int64 records, shuffle_batch, {} thread(s)"
SEEDS_MODEL = "dense"  # the model the seeds' pipeline feeds
SEEDS_THREADS = (1, 4)
TRAINER = "python -m trainer.task"
STEPS_PER_RUN = "--steps-per-run"
# The targets for trainer.task's defaults, per model: at least this times each row.
GOALS = {
    "default": {"constant": 0.95},
    "dense": {"constant": 1.0, "keras": 1.2, "seeds": 3.0},
    "linear": {"constant": 1.0, "keras": 1.2},
}


def train_graph(feed: Callable[[], Feed], metadata: Metadata, config: Config) -> tuple[object, Callable | None]:
    """model_fn's train_op fed by `feed()`, with the feed's next_feed."""
    tf.compat.v1.train.create_global_step()
    made = feed()
    params = model_params(config, metadata)
    return model.model_fn(made.features, made.labels, tf.estimator.ModeKeys.TRAIN, params).train_op, made.next_feed


class SteadyTimer(tf.keras.callbacks.Callback):
    """The seconds of an epoch after its first execution. Each fit() starts the tf.data pipeline
    anew (about 0.1 s here), which a user's one long fit pays once: the first execution waits for it."""

    def on_epoch_begin(self, epoch, logs=None):
        self.start = None

    def on_train_batch_end(self, batch, logs=None):
        if self.start is None:
            self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start


def keras_loop(data: DataFiles, config: Config, steps_per_execution: int) -> Callable[[int], float]:
    """run(steps) for the same layers (build_network) in Keras Model.fit on the tf.data pipeline."""
    metadata = data.metadata
    tf.keras.backend.clear_session()
    inputs = tf.keras.Input(metadata.shape, dtype=tf.as_dtype(metadata.dtype))
    settings = model.ModelSettings.of(config, metadata)
    network = model.build_network(settings, metadata)
    keras_model = tf.keras.Model(inputs, network(inputs))
    keras_model.compile(
        optimizer=tf.keras.optimizers.Adam(settings.learning_rate),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=steps_per_execution,
    )
    batches = tf_data_batches(data.train, metadata, config)
    timer = SteadyTimer()

    def run(steps: int) -> float:
        """The seconds of `steps` steps, timed after a first execution of untimed ones."""
        keras_model.fit(batches, epochs=1, steps_per_epoch=steps_per_execution + steps, verbose=0, callbacks=[timer])
        return timer.seconds

    return run


def bare_feeds(name: str, bench: Bench, config: Config) -> dict[str, Callable[[], Feed]]:
    """Every feed of FEEDS, and for SEEDS_MODEL the seeds' pipeline, over the same images."""
    data = bench.data
    feeds = {feed: partial(make, data.train, data.metadata, config) for feed, make in FEEDS.items()}
    if name == SEEDS_MODEL:
        folder = os.path.join(bench.folder, "int64-list")
        int64_list_writer(bench.images.x, bench.images.y, folder)
        path = os.path.join(folder, INT64_LIST_FILE)
        for threads in SEEDS_THREADS:
            feeds[SEEDS.format(threads)] = partial(int64_list_feed, path, data.metadata, config, threads)
    return feeds


class TrainerRow(NamedTuple):
    flags: list[str]
    towers: int = 1


def trainer_rows(name: str, fields: dict, bench: Bench, has_steps_per_run: bool) -> dict[str, TrainerRow]:
    """Row name -> trainer.task's flags: its defaults, the size's --steps-per-run values where it has
    them, and its --num-towers values, run on virtual CPU devices (2 cores are 2 cores: these rows
    show what the replication costs, not a speed-up)."""
    flags = as_flags({**bench.size.base, **fields})
    rows = {TRAINER: TrainerRow(flags)}
    if has_steps_per_run:
        for steps in bench.size.steps_per_run.get(name, ()):
            rows[f"{TRAINER} {STEPS_PER_RUN} {steps}"] = TrainerRow([*flags, STEPS_PER_RUN, steps])
    for towers in bench.size.towers.get(name, ()):
        rows[f"{TRAINER} --num-towers {towers} (virtual CPU devices)"] = TrainerRow(
            [*flags, "--num-towers", str(towers)], towers
        )
    return rows


def _trainer(bench: Bench, job_dir: str, row: TrainerRow) -> TrainerProcess:
    env = {TOWERS_ON_CPUS: "1"} if row.towers > 1 else None
    return TrainerProcess(bench.data_dir, job_dir, row.flags, env)


def train_model(name: str, fields: dict, bench: Bench, has_steps_per_run: bool) -> dict:
    """Every row for one network, measured in turns; each as a ratio to the constant batch."""
    size, data = bench.size, bench.data
    config = Config(**size.base, **fields, steps_per_run="1")  # the bare loops: one step per session.run
    with contextlib.ExitStack() as stack:
        # The trainers start while this process builds its graphs; all are paused before any window.
        rows = trainer_rows(name, fields, bench, has_steps_per_run)
        trainers = {
            row: stack.enter_context(_trainer(bench, os.path.join(bench.folder, f"{name}-{i}"), rows[row]))
            for i, row in enumerate(rows)
        }
        loops = {
            feed: stack.enter_context(session_loop(partial(train_graph, make, data.metadata, config)))
            for feed, make in bare_feeds(name, bench, config).items()
        }
        runs = {**loops, **{KERAS.format(n): keras_loop(data, config, n) for n in size.keras_steps_per_execution}}
        for trainer in trainers.values():
            trainer.pause_when_warm(size.trainer_warmup_seconds)
        # Two of the trainer's summary intervals at half the constant batch's pace. An interval is 100
        # steps rounded up to whole session.runs (of up to 32 steps), and a window that spans two of
        # them holds two summaries, so one whole interval, in any phase, for a trainer that fast.
        interval = SUMMARY_STEPS + model.AUTO_STEPS_PER_RUN
        seconds = max(size.trainer_window_seconds, 2 * interval / (0.5 * probe(loops["constant"], size)))
        windows = [partial(trainer.window, seconds) for trainer in trainers.values()]
        rates = dict(zip(runs, measure(list(runs.values()), 1, size, others=windows)))
        fills = {feed: mean_fill(loop, size.repeats * rates[feed]["steps_per_window"]) for feed, loop in loops.items()}
        for row, trainer in trainers.items():
            trainer.stop()
            rates[row] = trainer.measurement()
    rows = [
        {
            "feed": row,
            "steps_per_second": rate,
            "ratio_to_constant": paired_ratio(rate, rates["constant"]),
            "fill": fills.get(row),
            "towers": rows[row].towers if row in rows else 1,
        }
        for row, rate in rates.items()
    ]
    described = {
        "conv_filters": list(config.conv_filters),
        "hidden_units": list(config.hidden_units),
        "batch_size": config.batch_size,
    }
    return {"model": name, "config": described, "rows": rows, "trainer_seconds_per_window": seconds}


def best_keras(rows: dict[str, dict]) -> str:
    """The Keras row with the highest median steps/s: steps_per_execution tuned."""
    keras = [row for row in rows if row.startswith(KERAS.format(""))]
    return max(keras, key=lambda row: rows[row]["steps_per_second"]["median"])


def compared_rows(trained: dict) -> dict[str, str]:
    """What trainer.task's defaults are held against: the constant batch, the best Keras, the seeds' 4 threads."""
    rows = {row["feed"]: row for row in trained["rows"]}
    return {"constant": "constant", "keras": best_keras(rows), "seeds": SEEDS.format(max(SEEDS_THREADS))}


def targets_of(trained: dict) -> list[dict]:
    rows = {row["feed"]: row["steps_per_second"] for row in trained["rows"]}
    name = trained["model"]
    found = [
        target(
            f"training ({name} model): queue ≥ 0.95× constant batch (the constant batch through the "
            f"queue's last FIFO: {paired_ratio(rows['constant via FIFO'], rows['constant']):.2f}×)",
            paired_ratio(rows["queue"], rows["constant"]),
            0.95,
        )
    ]
    compared = compared_rows(trained)
    for key, goal in GOALS.get(name, {}).items():
        found.append(
            target(
                f"training ({name} model): {TRAINER} ≥ {goal:g}× {compared[key]}, steady steps/s",
                paired_ratio(rows[TRAINER], rows[compared[key]]),
                goal,
            )
        )
    return found


def per_step_costs(trained: dict) -> dict[str, float]:
    """µs per step that each trainer.task row, and the queue handoff, add to the constant batch's step."""
    rows = {row["feed"]: row["steps_per_second"] for row in trained["rows"]}
    added = {
        f"{row} beyond constant": extra_microseconds(rows[row], rows["constant"])
        for row in rows
        if row.startswith(TRAINER)
    }
    added["the queue handoff (constant via FIFO beyond constant)"] = extra_microseconds(
        rows["constant via FIFO"], rows["constant"]
    )
    return added


def run(bench: Bench) -> dict:
    has_steps_per_run = lists_flag(STEPS_PER_RUN)
    models = [train_model(name, fields, bench, has_steps_per_run) for name, fields in bench.size.models.items()]
    for trained in models:
        trained["per_step_microseconds"] = per_step_costs(trained)
        trained["best_keras"] = compared_rows(trained)["keras"]
    return {
        "data": bench.describe(),
        "models": models,
        "step_costs_microseconds": step_costs.run(bench),
        "targets": [item for trained in models for item in targets_of(trained)],
    }


def section(result: dict) -> list[str]:
    lines = [
        "## 2. Training",
        "",
        f"Steps per second of training, each row against one real batch held in the graph (`constant`). "
        f"`{TRAINER}` is the product as users run it, in a child process with its defaults (hooks, "
        "summaries every 100 steps, a checkpoint every 500; `--eval-throttle-secs` so long that it "
        "evaluates once, at its first checkpoint, before any window), paused between its windows; its "
        "steady steps/s come from the global step and wall time that TensorFlow's StepCounterHook "
        "writes every 100 steps, over the intervals inside its windows that hold no evaluation. The "
        "other rows run `trainer.model.model_fn`'s train_op, one step per session.run, in a "
        "loop in a MonitoredSession with no hooks, fed from the same shards five ways; `constant via "
        "FIFO` hands the constant batch to the step through the queue feed's last stage (a FIFO of "
        "ready batches and its runner thread), so it shows what the handoff alone costs. The seeds' "
        "pipeline reads the same images stored as one int64-list `tf.train.Example` each (TFRecordReader."
        "read, parse_single_example, shuffle_batch). Keras: the same layers (`build_network`) in "
        "`Model.fit` on the tf.data pipeline. Start-up and the first steps are never timed; the rows "
        "take their timed windows in turns, and a ratio is the median of the per-round ratios. Cores: "
        f"the process's CPU time over wall time in the windows ({result['environment']['cores']} = the "
        f"whole machine). Queue fill: as in table 1. A `--num-towers 2` row runs two towers on virtual "
        "CPU devices of these same cores: each of its steps trains two batches, so its examples/s, not its "
        "steps/s, compare with the others, and it shows what the replication itself costs, not a speed-up. "
        f"Data: {result['data']}.",
    ]
    headers = ["row", "steps/s (median)", "min – max", "examples/s", "ratio to constant", "cores", "queue fill"]
    for trained in result["models"]:
        config = trained["config"]
        rows = [
            [
                row["feed"],
                *report.spread(row["steps_per_second"]),
                report.number(row["steps_per_second"]["median"] * config["batch_size"] * row.get("towers", 1)),
                f"{row['ratio_to_constant']:.3f}",
                report.number(row["steps_per_second"]["cores"]),
                report.number(row["fill"]),
            ]
            for row in trained["rows"]
        ]
        costs = [[what, report.number(us)] for what, us in trained["per_step_microseconds"].items()]
        lines += [
            "",
            f"**{trained['model']} model**: convolution filters {config['conv_filters'] or 'none'}, "
            f"dense units {config['hidden_units']}, batch {config['batch_size']}. Keras's best: "
            f"{trained['best_keras']}. {TRAINER}'s windows: {trained['trainer_seconds_per_window']:.1f} s.",
            "",
            *report.table(headers, rows),
            "",
            *report.table(["per step", "µs (median of per-round differences)"], costs),
        ]
    costs = [[what, report.number(us)] for what, us in result["step_costs_microseconds"].items()]
    lines += [
        "",
        "**Fixed costs of a session.run**, each timed alone on a graph with no model (a MonitoredSession "
        "unless said otherwise), in turns; the additions are medians of per-round differences (a few µs "
        "is within this machine's noise). Every training session.run pays the call, the MonitoredSession "
        "and its hooks once, however many steps it runs (a step 1/K of them with `--steps-per-run K`); "
        "every step pays its own handoff.",
        "",
        *report.table(["cost", "µs"], costs),
    ]
    return lines


def plot(result: dict, folder: str) -> list[str]:
    labels = [f"{trained['model']}: {row['feed']}" for trained in result["models"] for row in trained["rows"]]
    values = [row["ratio_to_constant"] for trained in result["models"] for row in trained["rows"]]
    title = "Training steps/s as a ratio to a constant batch"
    return report.bar_chart(folder, "training.png", title, labels, values, "ratio")
