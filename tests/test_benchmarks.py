"""The benchmarks at their tiny size, all in one `python -m benchmarks` run, as a user runs them.

Each must write its result file, its section of README.md and, with matplotlib, its plot; its figures
must be there, positive and finite. Speed is never asserted: it belongs to the machine, not the code.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import clicks, tables, text, training, writing
from benchmarks.common import SIZES

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines

ROOT = Path(__file__).resolve().parents[1]
FEEDS = {"queue", "tf.data", "feed_dict"}


@pytest.fixture(scope="module")
def benchmarks_run(tmp_path_factory) -> Path:
    """Every benchmark at the tiny size in one `python -m benchmarks` run (with no MNIST, as in a user's
    clone): one process, not one a benchmark, since each start costs seconds of imports."""
    out = tmp_path_factory.mktemp("benchmarks")
    command = [sys.executable, "-m", "benchmarks", "--size", "tiny", "--out", str(out)]
    command += ["--mnist", str(out / "no-mnist")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=800)  # below pytest's 900
    assert done.returncode == 0, done.stderr[-3000:]
    assert "## Targets" in (out / "README.md").read_text()
    return out


def read_result(out: Path, name: str) -> dict:
    """One benchmark's result from the shared run, with its plot where matplotlib draws one."""
    if importlib.util.find_spec("matplotlib"):
        assert (out / f"{name}.png").stat().st_size > 0
    return json.loads((out / f"{name}.json").read_text())


def positive(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def assert_measurement(measurement: dict) -> None:
    """A repeated measurement: every value, and its median, min and max, positive and finite."""
    assert measurement["values"]
    assert all(positive(measurement[key]) for key in ("median", "min", "max"))
    assert all(positive(value) for value in measurement["values"])


def assert_targets(result: dict) -> None:
    assert result["targets"]
    for item in result["targets"]:
        assert math.isfinite(item["measured"]) and isinstance(item["passed"], bool)


def assert_fill(fill: float | None, queued: bool) -> None:
    assert (0 <= fill <= 1) if queued else fill is None


def test_pipeline_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "pipeline")
    assert {row["feed"] for row in result["rows"]} == FEEDS
    assert {row["shards"] for row in result["rows"]} == {"uncompressed", "GZIP"}
    for row in result["rows"]:
        assert_measurement(row["examples_per_second"])
        assert_fill(row["fill"], row["feed"] == "queue")
    assert all(positive(ratio) for ratio in result["ratios"].values())
    assert_targets(result)
    assert "## 1. Input pipeline alone" in (benchmarks_run / "README.md").read_text()


def test_training_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "training")
    keras = {training.KERAS.format(steps) for steps in SIZES["tiny"].keras_steps_per_execution}
    seeds = {training.SEEDS.format(threads) for threads in training.SEEDS_THREADS}
    for trained in result["models"]:
        rows = {row["feed"]: row for row in trained["rows"]}
        assert trained["model"] == training.SEEDS_MODEL  # the tiny size's one model, which the seeds' rows feed
        assert set(rows) == FEEDS | {"constant", "constant via FIFO", training.TRAINER} | keras | seeds
        for feed, row in rows.items():
            assert_measurement(row["steps_per_second"])
            assert positive(row["ratio_to_constant"])
            assert_fill(row["fill"], feed in {"queue", *seeds})
        assert rows["constant"]["ratio_to_constant"] == 1
        assert trained["best_keras"] in keras
        assert all(math.isfinite(us) for us in trained["per_step_microseconds"].values())
    assert all(math.isfinite(us) for us in result["step_costs_microseconds"].values())
    assert_targets(result)
    assert "## 2. Training" in (benchmarks_run / "README.md").read_text()


def test_preprocessing_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "preprocessing")
    beam_missing = importlib.util.find_spec("apache_beam") is None
    assert set(result["rows"]) == set(writing.WRITERS) - ({writing.BEAM} if beam_missing else set())
    for row in result["rows"].values():
        assert_measurement(row["examples_per_second"])
        for seconds in row["seconds"].values():
            assert_measurement(seconds)
        # The steady rate is a difference of two small timings: too noisy at this size to require.
        assert row["steady_examples_per_second"] is None or positive(row["steady_examples_per_second"])
        assert positive(row["bytes_per_example"]) and positive(row["payload_ratio"])
        assert positive(row["speedup"])
    assert_targets(result)
    assert "## 3. Preprocessing" in (benchmarks_run / "README.md").read_text()


def test_accuracy_benchmark_skips_a_missing_mnist(benchmarks_run):
    result = read_result(benchmarks_run, "accuracy")
    (digits,) = result["rows"]
    assert digits["dataset"] == "digits"
    assert_measurement(digits["ours"]["seconds"])
    assert all(0 < accuracy <= 1 for accuracy in digits["ours"]["accuracy"]["values"] + [digits["svc"]["accuracy"]])
    assert positive(digits["svc"]["seconds"])
    assert result["skipped"] and "MNIST" in result["skipped"][0]
    assert_targets(result)
    assert "## 4. Accuracy" in (benchmarks_run / "README.md").read_text()


def test_tables_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "tables")
    reading = result["reading"]
    small, large = reading["sizes"]
    runs = {(row["reader"], row["rows"]) for row in reading["rows"]}
    pandas = {(tables.PANDAS, small), (tables.PANDAS, large)} if importlib.util.find_spec("pandas") else set()
    assert runs == {(tables.NEW, small), (tables.NEW, large), (tables.OLD, small)} | pandas
    for row in reading["rows"]:
        for key in ("seconds", "rows_per_second", "peak_rss_mib"):
            assert_measurement(row[key])
        assert positive(row["file_mib"]) and positive(row["rss_over_file"])
    # Each public table is trained on where its package is installed, and named as skipped where not.
    accuracy = result["accuracy"]
    tried = [table for table in tables.TABLES if table.name in SIZES["tiny"].public_tables]
    for table in tried:
        rows = [row for row in accuracy["rows"] if row["dataset"] == table.name]
        skipped = [line for line in accuracy["skipped"] if line.startswith(f"{table.name} (")]
        assert len(rows) + len(skipped) == 1, table.name
    assert len(accuracy["rows"]) + len(accuracy["skipped"]) == len(tried)
    for row in accuracy["rows"]:
        assert row["train"] > 0 and row["eval"] > 0 and row["numeric"] + row["categorical"] > 0
        for key in ("ours", "logistic_regression", "gradient_boosting"):
            assert 0 <= row[key]["accuracy"] <= 1
        assert positive(row["ours"]["train_seconds"]) and positive(row["gradient_boosting"]["seconds"])
    assert_targets(result)
    assert "## 5. Tables" in (benchmarks_run / "README.md").read_text()


def test_clicks_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "clicks")
    small, large = result["sizes"]
    runs = {(row["reader"], row["rows"]) for row in result["rows"]}
    assert runs == {(reader, rows) for reader in (clicks.NEW, clicks.PYARROW) for rows in (small, large)}
    for row in result["rows"]:
        for key in ("seconds", "rows_per_second", "peak_rss_mib"):
            assert_measurement(row[key])
    assert "i1 (numeric" in result["columns"] and "c1 (categorical: " in result["columns"]
    assert_targets(result)
    assert "## 6. A click log" in (benchmarks_run / "README.md").read_text()


def test_wide_tables_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "wide")
    runs = {(row["columns"], row["kind"]) for row in result["rows"]}
    assert runs == {(columns, kind) for columns in SIZES["tiny"].wide_columns for kind in ("table", "vector")}
    for row in result["rows"]:
        assert all(positive(row[key]) for key in ("first_step_seconds", "steps_per_second", "export_seconds"))
        assert row["first_step_seconds"] < row["total_seconds"]
        assert len(row["runs"]) == result["repeats"] == 1  # each figure the median of the runs (REPEATS at full size)
        assert row["steps_per_second"] == row["runs"][0]["steps_per_second"]
    assert_targets(result)
    assert "## 7. Wide tables" in (benchmarks_run / "README.md").read_text()


def test_an_unknown_benchmark_stops_with_a_message(tmp_path):
    command = [sys.executable, "-m", "benchmarks", "--out", str(tmp_path), "--only", "pipeline,nonsense"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown benchmark(s) nonsense" in done.stderr


def test_text_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "text")
    accuracy = result["accuracy"]
    tried = [text_set for text_set in text.SETS if text_set.name in SIZES["tiny"].text_sets]
    assert len(accuracy["rows"]) + len(accuracy["skipped"]) == len(tried)
    for row in accuracy["rows"]:
        assert row["train"] > 0 and row["eval"] > 0 and row["columns"].get("text") == 1
        for key in ("ours", "tfidf_logistic_regression"):
            assert 0 <= row[key]["accuracy"] <= 1 and 0 <= row[key]["auc"] <= 1  # the reviews' label is binary
    runs = {(row["tool"], row["documents"]) for row in result["preprocessing"]["rows"]}  # real or made-up reviews
    sizes = SIZES["tiny"].text_documents
    assert runs == {(tool, n) for tool in ("python -m preprocessing", "Keras TextVectorization") for n in sizes}
    for row in result["preprocessing"]["rows"]:
        assert all(positive(row[key]) for key in ("seconds", "documents_per_second", "peak_rss_mib"))
    trained = result["training"]
    assert positive(trained["ours_examples_per_second"]) and positive(trained["keras_examples_per_second"])
    assert_targets(result)
    assert "## 8. Text" in (benchmarks_run / "README.md").read_text()


def test_lifecycle_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "lifecycle")
    steps, every = SIZES["tiny"].lifecycle_train_steps, SIZES["tiny"].lifecycle_eval_steps
    for run in [result["older"], *result["scratch"], *result["warm"], result["early"]]:
        assert 0 <= run["auc"] <= 1 and [point["step"] for point in run["curve"]][:2] == [every, 2 * every]
    assert len(result["scratch"]) == len(result["warm"]) == SIZES["tiny"].lifecycle_seeds
    assert result["rows"]["newer"]["train"] > 0 and result["train_steps"] == steps
    assert_targets(result)
    assert "## 9. A model's life" in (benchmarks_run / "README.md").read_text()


def test_photos_benchmark(benchmarks_run):
    result = read_result(benchmarks_run, "photos")
    scores = result["accuracy"]
    assert len(scores["folds"]) == SIZES["tiny"].photo_folds
    for fold in scores["folds"]:
        assert fold["train"] > 2 * fold["eval"] > 0  # a quarter of each class in evaluation, rounded up
        assert all(0 <= fold[run] <= 1 for run in ("shift", "crop", "none", "logistic_regression"))
    assert scores["pooled"]["none"] == pytest.approx(scores["folds"][0]["none"])  # one fold: its own figure
    assert result["gflops"]["ResNet-50"] == pytest.approx(7.8, rel=0.05)  # its published 3.9 G multiply-adds
    assert 0 < result["gflops"]["default CNN"] < result["gflops"]["ResNet-50"]
    assert [row["feed"].split(",")[0] for row in result["speed"]["rows"]] == ["queue", "queue", "tf.data", "tf.data"]
    assert all(positive(row["images_per_second"]) for row in result["speed"]["rows"])
    assert result["speed"]["pixel_bytes_per_image"] > result["speed"]["jpeg_bytes_per_image"] > 0
    assert_targets(result)
    assert "## 10. Photos" in (benchmarks_run / "README.md").read_text()
