"""Benchmark 2: training steps per second of the project's model, fed each way, against a constant batch.

The steady state is measured by calling `model_fn` in a graph and running its train_op in a loop
inside a MonitoredSession (which starts the queue runners, as the Estimator's does): graph building,
session start-up and the first steps stay out of the timed windows, and so do the Estimator's
checkpoints and summaries, which would cost every feed the same.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import partial

import tensorflow as tf

from benchmarks import report
from benchmarks.common import Bench, measure, paired_ratio, target
from benchmarks.feeds import FEEDS, mean_fill, session_loop, tf_data_batches
from trainer import model
from trainer.config import Config
from trainer.dataset import DataFiles
from trainer.experiment import model_params

KERAS = "keras fit, tf.data"


def train_graph(feed: str, data: DataFiles, config: Config) -> tuple[object, Callable | None]:
    """model_fn's train_op fed by `feed`, with the feed's next_feed."""
    tf.compat.v1.train.create_global_step()
    made = FEEDS[feed](data.train, data.metadata, config)
    params = model_params(config, data.metadata)
    return model.model_fn(made.features, made.labels, tf.estimator.ModeKeys.TRAIN, params).train_op, made.next_feed


class EpochTimer(tf.keras.callbacks.Callback):
    """The seconds of the last epoch, from its start to its end (not fit's own set-up)."""

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start


def keras_loop(data: DataFiles, config: Config) -> Callable[[int], float]:
    """run(steps) for the same layers (build_network) in Keras Model.fit on the tf.data pipeline."""
    metadata = data.metadata
    tf.keras.backend.clear_session()
    inputs = tf.keras.Input(metadata.shape, dtype=tf.as_dtype(metadata.dtype))
    network = model.build_network(model.ModelSettings.of(config, metadata), metadata)
    keras_model = tf.keras.Model(inputs, network(inputs))
    keras_model.compile(
        optimizer=tf.keras.optimizers.Adam(config.learning_rate),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    batches = tf_data_batches(data.train, metadata, config)
    timer = EpochTimer()

    def run(steps: int) -> float:
        keras_model.fit(batches, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[timer])
        return timer.seconds

    return run


def train_model(name: str, fields: dict, bench: Bench) -> dict:
    """Every feed, and Keras, for one network, measured in turns; each as a ratio to the constant batch."""
    config = Config(**bench.size.base, **fields)
    with contextlib.ExitStack() as stack:
        loops = [stack.enter_context(session_loop(partial(train_graph, feed, bench.data, config))) for feed in FEEDS]
        rates = measure([*loops, keras_loop(bench.data, config)], 1, bench.size)
        fills = [mean_fill(loop, bench.size.repeats * rate["steps_per_window"]) for loop, rate in zip(loops, rates)]
    constant = rates[list(FEEDS).index("constant")]
    rows = [
        {"feed": feed, "steps_per_second": rate, "ratio_to_constant": paired_ratio(rate, constant), "fill": fill}
        for feed, rate, fill in zip([*FEEDS, KERAS], rates, [*fills, None])
    ]
    described = {
        "conv_filters": list(config.conv_filters),
        "hidden_units": list(config.hidden_units),
        "batch_size": config.batch_size,
    }
    return {"model": name, "config": described, "rows": rows}


def run(bench: Bench) -> dict:
    models = [train_model(name, fields, bench) for name, fields in bench.size.models.items()]
    targets = []
    for trained in models:
        rate = {row["feed"]: row["steps_per_second"] for row in trained["rows"]}
        name = trained["model"]
        targets += [
            target(
                f"training ({name} model): queue ≥ 2× feed_dict, steps/s (the ceiling, a constant batch: "
                f"{paired_ratio(rate['constant'], rate['feed_dict']):.2f}×)",
                paired_ratio(rate["queue"], rate["feed_dict"]),
                2.0,
            ),
            target(
                f"training ({name} model): queue ≥ 0.95× constant batch (the constant batch through the "
                f"queue's last FIFO: {paired_ratio(rate['constant via FIFO'], rate['constant']):.2f}×)",
                paired_ratio(rate["queue"], rate["constant"]),
                0.95,
            ),
        ]
    return {"data": bench.describe(), "models": models, "targets": targets}


def section(result: dict) -> list[str]:
    lines = [
        "## 2. Training",
        "",
        "Steps per second of `trainer.model.model_fn`'s train_op run in a loop in a MonitoredSession "
        "(steady state: start-up, checkpoints and summaries excluded), fed five ways from the same shards, "
        "and the same layers (`build_network`) in Keras `Model.fit` on the tf.data pipeline. `constant` "
        "is one real batch held in the graph: the limit, with no input cost; `constant via FIFO` hands "
        "that batch to the step through the queue feed's last stage (a FIFO of ready batches and its "
        "runner thread), so it shows what the handoff alone costs. The feeds take their timed "
        "windows in turns; a ratio is the median of the per-round ratios. Cores: the process's CPU "
        f"time over wall time in the windows ({result['environment']['cores']} = the whole "
        f"machine). Queue fill: as in table 1. Data: {result['data']}.",
    ]
    headers = ["feed", "steps/s (median)", "min – max", "examples/s", "ratio to constant", "cores", "queue fill"]
    for trained in result["models"]:
        config = trained["config"]
        rows = [
            [
                row["feed"],
                *report.spread(row["steps_per_second"]),
                report.number(row["steps_per_second"]["median"] * config["batch_size"]),
                f"{row['ratio_to_constant']:.3f}",
                report.number(row["steps_per_second"]["cores"]),
                report.number(row["fill"]),
            ]
            for row in trained["rows"]
        ]
        lines += [
            "",
            f"**{trained['model']} model**: convolution filters {config['conv_filters'] or 'none'}, "
            f"dense units {config['hidden_units']}, batch {config['batch_size']}.",
            "",
            *report.table(headers, rows),
        ]
    return lines


def plot(result: dict, folder: str) -> list[str]:
    labels = [f"{trained['model']}: {row['feed']}" for trained in result["models"] for row in trained["rows"]]
    values = [row["ratio_to_constant"] for trained in result["models"] for row in trained["rows"]]
    title = "Training steps/s as a ratio to a constant batch"
    return report.bar_chart(folder, "training.png", title, labels, values, "ratio")
