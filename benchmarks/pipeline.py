"""Benchmark 1: the input pipeline alone, in examples per second delivered as ready batches, no model."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import tensorflow as tf

from benchmarks import report
from benchmarks.common import Bench, Size, measure, paired_ratio, target
from benchmarks.feeds import FEEDS, FILL_EVERY, mean_fill, session_loop
from trainer.config import Config
from trainer.dataset import DataFiles

SWEPT = ("reader_threads", "batch_size", "read_batch_size")


def sweep(size: Size) -> list[Config]:
    """The reference config, then each swept field changed alone."""
    base = Config(**size.base)
    values = dict(zip(SWEPT, (size.reader_threads, size.batch_sizes, size.read_batch_sizes)))
    return [base] + [
        replace(base, **{name: value}) for name in SWEPT for value in values[name] if value != getattr(base, name)
    ]


def cases(size: Size) -> list[tuple[str, Config, str]]:
    """(feed, config, shard compression): the queue over the sweep and on gzip shards, then tf.data
    and feed_dict at each batch size."""
    base = Config(**size.base)
    queue = [("queue", config, "") for config in sweep(size)] + [("queue", base, "GZIP")]
    others = [
        (feed, replace(base, batch_size=batch), "") for batch in size.batch_sizes for feed in ("tf.data", "feed_dict")
    ]
    return queue + others


def batch_graph(feed: str, data: DataFiles, config: Config) -> tuple[object, Callable | None]:
    made = FEEDS[feed](data.train, data.metadata, config)
    # identity: a fed placeholder must go through the session like any other batch.
    return tf.nest.map_structure(tf.identity, (made.features, made.labels)), made.next_feed


def deliver(group: list[tuple[str, Config, str]], bench: Bench) -> list[dict]:
    """Examples per second that each case of one batch size hands over as numpy batches."""
    with contextlib.ExitStack() as stack:
        loops = [
            stack.enter_context(
                session_loop(partial(batch_graph, feed, bench.gzip_data if gzip else bench.data, config))
            )
            for feed, config, gzip in group
        ]
        rates = measure(loops, group[0][1].batch_size, bench.size)
        return [
            {
                **{name: getattr(config, name) for name in SWEPT},
                "feed": feed,
                "shards": gzip or "uncompressed",
                "examples_per_second": rate,
                "fill": mean_fill(loop, bench.size.repeats * rate["steps_per_window"]),
            }
            for (feed, config, gzip), loop, rate in zip(group, loops, rates)
        ]


def run(bench: Bench) -> dict:
    rows = []
    for batch_size in bench.size.batch_sizes:
        rows += deliver([case for case in cases(bench.size) if case[1].batch_size == batch_size], bench)
    base = Config(**bench.size.base)
    rate = {row["feed"]: row["examples_per_second"] for row in rows if _is_base(row, base)}
    ratios = {
        "queue / tf.data": paired_ratio(rate["queue"], rate["tf.data"]),
        "queue / feed_dict": paired_ratio(rate["queue"], rate["feed_dict"]),
    }
    return {
        "data": bench.describe(),
        "rows": rows,
        "ratios": ratios,
        "targets": [target("input alone: queue ≥ 1.0× tf.data, examples/s", ratios["queue / tf.data"], 1.0)],
    }


def _is_base(row: dict, base: Config) -> bool:
    return row["shards"] == "uncompressed" and all(row[name] == getattr(base, name) for name in SWEPT)


def section(result: dict) -> list[str]:
    rows = [
        [
            row["feed"],
            row["shards"],
            row["batch_size"],
            row["reader_threads"] if row["feed"] != "feed_dict" else "-",
            row["read_batch_size"] if row["feed"] != "feed_dict" else "-",
            *report.spread(row["examples_per_second"]),
            report.number(row["examples_per_second"]["cores"]),
            report.number(row["fill"]),
        ]
        for row in result["rows"]
    ]
    headers = [
        "feed",
        "shards",
        "batch",
        "reader threads",
        "read_up_to",
        "examples/s (median)",
        "min – max",
        "cores",
        "queue fill",
    ]
    ratios = ", ".join(f"{name}: {value:.2f}×" for name, value in result["ratios"].items())
    return [
        "## 1. Input pipeline alone",
        "",
        "Examples per second handed to Python as ready numpy batches, no model, all reading the same "
        "training shards (one queue row reads them written with `--compression gzip`); the feeds of one "
        "batch size take their timed windows in turns. tf.data: a parallel interleave over `reader threads` "
        "files, `read_up_to` examples (in whole records) at a time, a parallel parse_records, unbatch, "
        "an example shuffle as big as the queue's, batch and prefetch (AUTOTUNE). Cores: the process's CPU "
        f"time over wall time in the windows ({result['environment']['cores']} = the whole machine). "
        f"Queue fill: the mean, over every {FILL_EVERY}th step in the timed windows, of the fraction of "
        "the shuffle queue's room above `min_after_dequeue` that is "
        f"full (0: the consumer waits for the readers). Data: {result['data']}.",
        "",
        *report.table(headers, rows),
        "",
        f"At the reference config (medians of the per-round ratios): {ratios}.",
    ]


def plot(result: dict, folder: str) -> list[str]:
    labels = [
        f"{row['feed']}{' gzip' if row['shards'] == 'GZIP' else ''} b{row['batch_size']}"
        + (f" t{row['reader_threads']} r{row['read_batch_size']}" if row["feed"] != "feed_dict" else "")
        for row in result["rows"]
    ]
    values = [row["examples_per_second"]["median"] for row in result["rows"]]
    return report.bar_chart(folder, "pipeline.png", "Input pipeline alone", labels, values, "examples / s")
