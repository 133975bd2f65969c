"""A table from CSV to predictions: train, export, then every serving input (named columns, tf.Example,
CSV lines, the predict CLI's tables and JSON lines) against Estimator.predict on the same rows."""

from __future__ import annotations

import base64
import csv
import dataclasses
import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from dataformat import dates, tables
from dataformat.errors import UserError
from dataformat.numeric import NUMERIC_KEY, numbers
from dataformat.schema import METADATA_FILE, decode_record
from preprocessing.table_files import reading_options
from preprocessing.tables import TableOptions, build_table_dataset
from trainer import averaging, experiment, networks
from trainer.config import Config, served_export
from trainer.dataset import locate
from trainer.export import latest_export
from trainer.exported_model import Model
from trainer.input import make_input_fn
from trainer.input_warnings import bad_numbers_as_missing
from trainer.instances import respond
from trainer.predict import main as predict_main
from trainer.predict import parse_args as predict_args
from trainer.predict import predict_files
from trainer.prediction_inputs import _json_lines, in_utf8_if_so, table_rows
from trainer.task import main as task_main


def census_like(rows: int, seed: int = 0) -> str:
    """A table whose label depends on a number, a category, a date and a missing value; with a column of
    badges, hundreds of them, most too rare for the vocabulary (they hash)."""
    rng = np.random.default_rng(seed)
    work = rng.choice(["Private", "Self-emp", "State-gov", "?"], rows)
    age = rng.integers(18, 80, rows)
    hours = np.where(rng.random(rows) < 0.1, "NA", rng.integers(10, 60, rows).astype(str))
    hired = np.datetime64("2000-01-01") + rng.integers(0, 40, rows)  # 40 days: each its own category too
    when = [str(day) + (" 09:30" if i % 3 else "") if i % 17 else "" for i, day in enumerate(hired)]
    badge = [f"b-{n}" for n in rng.zipf(1.3, rows) % 500]
    seen_at = rng.integers(1_400_000_000, 1_700_000_000, rows)  # Unix times, read as dates by their name
    rich = (age > 40) & (work != "State-gov") | (hours == "NA") | (hired < np.datetime64("2000-01-06"))
    lines = [",".join(map(str, row)) for row in zip(age, work, hours, when, badge, seen_at)]
    lines = [f"{line},{'>50K' if r else '<=50K'}" for line, r in zip(lines, rich)]
    return "\n".join(["age,workclass,hours,hired,badge,seen_at,income", *lines]) + "\n"


@pytest.fixture(scope="module")
def table_job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("table")
    (folder / "census.csv").write_text(census_like(800))
    # A vocabulary too small for every badge seen thrice: the rest of those hash.
    options = TableOptions(label_column="income", max_categories=20, min_frequency=3)
    build_table_dataset(str(folder / "census.csv"), str(folder / "data"), options, examples_per_record=1)
    config = Config(
        data_dir=str(folder / "data"),
        job_dir=str(folder / "job"),
        train_steps=300,
        save_checkpoints_steps=300,
        crosses="workclass:age,badge:hired:hours",  # categorical with numeric, and a date's values among three
    )
    metrics = experiment.run(config)
    return config, metrics, folder


def test_a_table_ends_with_its_averaged_weights(table_job):
    """--average-weights auto is on for tables: at the last step each weight took its mean's value."""
    config, _, _ = table_job
    reader = tf.train.load_checkpoint(config.job_dir)
    weights = [name for name, _ in tf.train.list_variables(config.job_dir) if name.startswith("classifier/")]
    weights = [name for name in weights if "Adam" not in name]
    assert len(weights) > 10
    for name in weights:
        mean = reader.get_tensor(f"{averaging.SCOPE}/{name}")
        np.testing.assert_array_equal(reader.get_tensor(name), mean, err_msg=name)


def test_a_job_trained_without_averaged_weights_resumes_only_without_them(table_job, tmp_path):
    config, _, _ = table_job
    plain = Config(data_dir=config.data_dir, job_dir=str(tmp_path), train_steps=4, average_weights="off")
    experiment.run(plain)
    with pytest.raises(UserError, match="holds no averaged weights .* rerun with --average-weights off to resume it"):
        experiment.run(dataclasses.replace(plain, train_steps=8, average_weights="auto"))
    assert experiment.run(dataclasses.replace(plain, train_steps=8))["global_step"] == 8


def test_a_model_dir_may_be_an_export_its_folder_the_job_dir_or_its_export_folder(table_job, caplog):
    """qt-predict --model-dir: a version folder, latest/ or best/, the job dir (its best), or JOB_DIR/export (its
    best; it was refused as no export)."""
    config, _, _ = table_job
    best = latest_export(config, "best")
    job = Path(config.job_dir)
    for model_dir in (best, job / "export" / "best", job, job / "export", f"{job}/export/"):
        assert served_export(str(model_dir)) == best, model_dir
    assert served_export(str(job / "eval")) is None
    # And a job dir that is the data dir: refused (its checkpoints went among the shards).
    assert task_main(["--data-dir", config.data_dir, "--job-dir", config.data_dir + "/", "--train-steps", "1"]) == 2
    assert f"--job-dir {config.data_dir}/: it is --data-dir, whose shards the checkpoints would mix with" in caplog.text
    elsewhere = ["--job-dir", config.job_dir + "-other", "--export-dir", config.data_dir, "--train-steps", "1"]
    assert task_main(["--data-dir", config.data_dir, *elsewhere]) == 2  # its best/ and latest/ went among them
    assert f"--export-dir {config.data_dir}: it is --data-dir, whose shards the exports would mix with" in caplog.text


def test_a_job_resumes_only_with_the_model_its_checkpoint_holds_crosses_and_all(table_job):
    """A rerun without --crosses (or with --model table after wide_deep) trained on without the cross weights,
    silently: a smaller model is refused as a larger one is, before anything is saved."""
    config, _, _ = table_job
    with pytest.raises(
        UserError, match=r"is of another model \(classifier/.*cross_0/.* is there, and not in the model"
    ):
        experiment.check_checkpoint_fits(dataclasses.replace(config, crosses=""), table_job_metadata(config))
    experiment.check_checkpoint_fits(config, table_job_metadata(config))  # the same flags resume


def test_a_table_trains_with_the_wide_and_deep_network(table_job):
    config, metrics, _ = table_job
    assert metrics["global_step"] == 300 and metrics["accuracy"] > 0.85
    variables = [name for name, _ in tf.train.list_variables(config.job_dir)]
    assert any("wide_logits" in name for name in variables)
    assert any("/wide_categories/" in name for name in variables)  # the categorical columns' linear weights
    assert any("/cross_0/" in name for name in variables) and any("/cross_1/" in name for name in variables)
    assert any("/wide_buckets/" in name for name in variables)
    labels = networks.row_labels(table_job_metadata(config), config.hidden_units)
    embedded = [name for name in labels if "/embeddings_of_width_" in name]  # a table a width
    assert embedded and all(name in variables for name in embedded)
    every = {label[1:].split("> ")[0] for name in embedded for label in labels[name]}  # their columns
    assert {"hired/day", "badge"} <= every and "workclass" not in every  # 3 workclass values: one-hot, no embedding
    columns = {column.name: column for column in table_job_metadata(config).columns}
    assert columns["hired"].kind == tables.DATE and columns["hired"].date_format == "%Y-%m-%d"
    assert columns["hired"].day_count == 40 and columns["hired"].first_day == 10957  # 2000-01-01 to 02-09
    assert columns["badge"].hash_buckets > 0
    assert columns["seen_at"].kind == tables.DATE and columns["seen_at"].date_format == dates.UNIX
    report = (Path(config.job_dir) / "report.md").read_text()  # a binary label: its curves and thresholds
    assert "## Thresholds (the positive class: >50K)" in report and "roc_and_precision_recall.png" in report
    assert (
        0.5 < metrics["auc"] <= 1
        and metrics["auc_precision_recall"] > 0
        and len(metrics["curve/true_positives"]) == 101
    )


def table_job_metadata(config):
    return locate(config).metadata


def test_every_serving_input_agrees_with_estimator_predict(table_job):
    config, _, _ = table_job
    data = locate(config)
    expected = list(
        experiment.make_estimator(config, data.metadata).predict(
            make_input_fn(data.eval, data.metadata, config, training=False)
        )
    )
    records = [record for path in data.eval for record in tf.data.TFRecordDataset(path).as_numpy_iterator()]
    rows = [decode_record(record, data.metadata, labeled=False)[0][0] for record in records]
    model = Model(latest_export(config, "latest"))
    names = [column.name for column in data.metadata.columns]
    instances = [{name: (None if _missing(row[name]) else row[name]) for name in names} for row in rows]
    lines = [",".join("" if value is None else str(value) for value in instance.values()) for instance in instances]
    for outputs in (
        model.predict("serving_default", instances),
        model.predict("examples:serving_default", records),
        model.predict("csv_lines:serving_default", lines),
        _as_tf_serving_runs_it(latest_export(config, "latest"), instances),
    ):
        np.testing.assert_array_equal([o["class_ids"] for o in outputs], [p["class_ids"] for p in expected])
        np.testing.assert_allclose(
            [o["probabilities"] for o in outputs], [p["probabilities"] for p in expected], atol=1e-5
        )
    # A request body as a server takes it: "" for a missing text; a missing number it cannot carry (JSON has no NaN).
    numeric = {column.name for column in tables.columns_of(data.metadata.columns, tables.NUMERIC)}
    sent = [i for i, instance in enumerate(instances) if all(instance[name] is not None for name in numeric)]
    body = {"instances": [{k: "" if v is None else v for k, v in instances[i].items()} for i in sent]}
    answered = respond(model, json.loads(json.dumps(body)))["predictions"]
    assert len(sent) > 10
    np.testing.assert_allclose(
        [a["probabilities"] for a in answered], [expected[i]["probabilities"] for i in sent], atol=1e-5
    )


def _as_tf_serving_runs_it(export: str, instances: list[dict]) -> list[dict]:
    """serving_default in a TF1 session, each input fed by its tensor's name, as TF Serving (and Vertex AI's
    prebuilt container) runs a signature: the column inputs are outputs of one op, not placeholders."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        signature = tf.compat.v1.saved_model.load(session, ["serve"], export).signature_def["serving_default"]
        feeds = {
            info.name: [np.nan if row[name] is None and info.dtype == tf.float32.as_datatype_enum else
                        "" if row[name] is None else row[name] for row in instances]
            for name, info in signature.inputs.items()
        }  # fmt: skip
        fetched = session.run({name: info.name for name, info in signature.outputs.items()}, feeds)
    return [{name: values[i] for name, values in fetched.items()} for i in range(len(instances))]


# One instance of census_like's columns as a server takes it: every input, a number or a string each.
SENT = {"age": 50, "workclass": "Private", "hours": 40, "hired": "2000-01-20", "badge": "b-1", "seen_at": "1500000000"}


def test_a_request_is_refused_as_a_server_refuses_it(table_job):
    """--instances-json answered requests that TF Serving (Vertex AI's prebuilt image) refuses: an input left out
    or added, null, a number for a string input. It prints what a server returns, so it refuses them too."""
    config, _, _ = table_job
    model = Model(latest_export(config, "latest"))
    signature = model.signatures["serving_default"].structured_input_signature[1]  # what the checks go by is so
    taken = {name: spec.dtype == tf.string for name, spec in signature.items()}
    assert tables.request_inputs(model.metadata.columns, model.metadata.key_column) == dict(sorted(taken.items()))
    inputs = "age, badge, hired, hours, seen_at, workclass"
    without = {name: value for name, value in SENT.items() if name != "hours"}
    for instance, said in (
        (without, f"lacks 'hours': a server takes exactly the signature's inputs, {inputs}"),
        ({**SENT, "income": ">50K"}, "has 'income', no input of the model's: a server takes exactly"),
        ({**SENT, "badge": None}, "'badge' is null, which a server refuses; send \"\" for a missing value"),
        ({**SENT, "age": None}, "'age' is null, which a server refuses, and JSON has no NaN for a missing number"),
        ({**SENT, "badge": 7}, "'badge': a server takes a string there, not 7"),
        ({**SENT, "age": True}, "'age': a server takes a number there, not true"),
        ({**SENT, "age": {"b64": "AAAA"}}, '\'age\': a server takes a number there, not {"b64": "AAAA"}'),
        ({**SENT, "age": [50]}, "'age': a server takes a number there, not [50]"),
        ([50, "Private"], f"expected an object of the signature's inputs ({inputs})"),
    ):
        with pytest.raises(UserError) as raised:
            respond(model, {"instances": [SENT, instance]})
        assert str(raised.value).startswith("--instances-json: instance 1: ") and said in str(raised.value)
    assert len(respond(model, {"instances": [SENT, {**SENT, "badge": "", "age": 1.5e3}]})["predictions"]) == 2
    b64 = {"b64": base64.b64encode(b"Private").decode()}  # a string input's bytes, as TF Serving decodes them
    as_text, as_b64 = respond(model, {"instances": [SENT, {**SENT, "workclass": b64}]})["predictions"]
    assert as_b64 == as_text
    # A tf.Example whose integer column is an int64_list, as TFX writes one: refused, naming the rule.
    age = tf.train.Feature(int64_list=tf.train.Int64List(value=[50]))
    example = tf.train.Example(features=tf.train.Features(feature={"age": age})).SerializeToString()
    with pytest.raises(UserError, match="Key: age.*takes a numeric column as a float_list feature"):
        model.predict("examples:serving_default", [example], ["row 1"])


def _missing(value) -> bool:
    return value == "" or (isinstance(value, float) and np.isnan(value))


def test_a_missing_key_an_unseen_category_and_a_null_are_missing_values_not_errors(table_job):
    config, _, _ = table_job
    model = Model(latest_export(config, "latest"))
    full = {"age": 60, "workclass": "Private", "hours": 40, "hired": "2000-01-20T10:00:00Z", "badge": "b-1"}
    never_seen = {"age": 60, "workclass": "Astronaut", "hired": "1 May 2020", "badge": "b-never-seen"}
    answers = model.predict(
        "serving_default", [full, never_seen, {"age": None, "workclass": "NA", "hours": "?", "hired": None}]
    )
    assert all(set(answer) == {"class_ids", "classes", "probabilities", "logits"} for answer in answers)
    assert answers[0]["classes"] == ">50K"
    with pytest.raises(UserError, match=r"instance 0: 'age': a server takes a number there, not \"old\""):
        respond(model, {"instances": [{**SENT, "age": "old"}]})
    # A number beyond float32's range is missing, as preprocessing reads it (preprocessing/columns/numeric.py).
    huge, none = model.predict("serving_default", [{**full, "age": "1e200"}, {**full, "age": None}])
    assert huge["probabilities"] == pytest.approx(none["probabilities"])
    names = [column.name for column in locate(config).metadata.columns]  # csv_lines: the columns in order
    line = {**{name: "" for name in names}, **full, "age": "1e200"}
    (by_line,) = model.predict("csv_lines:serving_default", [",".join(str(line[name]) for name in names)])
    assert by_line["probabilities"] == pytest.approx(
        model.predict("serving_default", [{**line, "age": None}])[0]["probabilities"]
    )


def test_a_table_files_values_that_are_not_numbers_are_missing_as_preprocessing_reads_them(table_job, tmp_path, caplog):
    """A request that sends 'old' for a number is refused (above); a file's bad cell (a table's or JSON lines') is
    read as preprocessing read its table's, missing and said so: such a cell once stopped predictions from the
    file the model had trained on. A Stata export's '.' is a missing value, and not counted among them."""
    config, _, _ = table_job
    model = Model(latest_export(config, "latest"))
    rows = "".join(f"{age},Private,40\n" for age in ("", "old", ".", "x", "y", "z", "60"))
    (tmp_path / "rows.csv").write_text("age,workclass,hours\n" + rows)
    lines = list(predict_files(model, [str(tmp_path / "rows.csv")], batch_size=4))
    assert len(lines) == 7
    assert all(line["probabilities"] == pytest.approx(lines[0]["probabilities"]) for line in lines[1:6])
    assert lines[6]["probabilities"] != pytest.approx(lines[0]["probabilities"])
    assert "rows.csv:3: column 'age': 'old' is not a number; read as missing" in caplog.text
    assert "rows.csv:7" not in caplog.text and "rows.csv: 4 values in all are not numbers" in caplog.text
    assert "'.' is not a number" not in caplog.text
    # JSON lines too; the output echoes the instance predicted for.
    (tmp_path / "rows.jsonl").write_text('{"age": "old", "workclass": "Private", "hours": 40}\n')
    (answer,) = predict_files(model, [str(tmp_path / "rows.jsonl")], batch_size=4)
    assert answer["instance"] == {"age": None, "workclass": "Private", "hours": 40}
    assert answer["prediction"]["probabilities"] == pytest.approx(lines[0]["probabilities"])
    assert "rows.jsonl:1: column 'age': 'old' is not a number; read as missing" in caplog.text
    # An ISO 8601 duration is its seconds, as preprocessing reads a JSON file's (pandas' to_json writes a Timedelta so).
    (tmp_path / "rows.jsonl").write_text('{"age": "PT60S", "workclass": "Private", "hours": 40}\n')
    (answer,) = predict_files(model, [str(tmp_path / "rows.jsonl")], batch_size=4)
    assert answer["instance"]["age"] == 60
    assert answer["prediction"]["probabilities"] == pytest.approx(lines[6]["probabilities"])  # other batches: 1e-8
    # A categorical column's: the text of its seconds, as its vocabulary holds it (test_table_formats).
    (tmp_path / "rows.jsonl").write_text('{"age": 60, "workclass": "PT1M30S", "hours": 40}\n')
    (answer,) = predict_files(model, [str(tmp_path / "rows.jsonl")], batch_size=4)
    assert answer["instance"]["workclass"] == "90"
    # A file of nothing to predict for: refused, as an empty CSV file is (it printed nothing and exited 0).
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("none.json", "[]")):
        (tmp_path / name).write_text(text)
        with pytest.raises(UserError, match=rf"{name}: nothing to predict for in it \(no rows, no instances\)$"):
            list(predict_files(model, [str(tmp_path / name)], batch_size=4))


def test_a_table_files_dates_in_another_format_are_named_and_read_as_missing_dates(table_job, tmp_path, caplog):
    """Preprocessing reads a value of a date column that is no date as a missing date and says so; so does
    qt-predict, by line: the model reads it as one (it trained on such values as such)."""
    config, _, _ = table_job
    model = Model(latest_export(config, "latest"))
    hired = ("2000-01-20", "20/01/2000", "soon", "", "2000-01-20 09:30", "01/20/2000", "2000-01-20T09:30:00Z")
    seen_at = ("1500000000", "yesterday", "", "1500000000.5", "", "", "")  # Unix times
    rows = "".join(f"50,Private,{day},{time}\n" for day, time in zip(hired, seen_at))
    (tmp_path / "rows.csv").write_text("age,workclass,hired,seen_at\n" + rows)
    lines = list(predict_files(model, [str(tmp_path / "rows.csv")], batch_size=4))
    assert len(lines) == len(hired)
    assert lines[1]["probabilities"] != pytest.approx(lines[0]["probabilities"])  # not the date it was meant to be
    warned = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert [message.split(": ", 1)[1] for message in warned if "is no date" in message] == [
        "column 'hired': '20/01/2000' is no date in '%Y-%m-%d'; read as missing",
        "column 'seen_at': 'yesterday' is no date in '%s' nor ISO 8601; read as missing",  # as every format reads
        "column 'hired': 'soon' is no date in '%Y-%m-%d'; read as missing",
    ]  # the first three, in line order
    assert [message.split(":")[1] for message in warned if "is no date" in message] == ["3", "3", "4"]
    assert f"{tmp_path / 'rows.csv'}: 4 values in all are no dates" in caplog.text  # and 01/20/2000, line 7
    # A request body's instances too (--instances-json): they were read as missing dates without a word.
    caplog.clear()
    respond(model, {"instances": [{**SENT, "hired": "03/05/2000"}]})
    assert "--instances-json: instance 0: column 'hired': '03/05/2000' is no date in '%Y-%m-%d'; read as missing" in (
        caplog.text
    )


def test_dates_far_from_the_training_rows_are_predicted_and_warned_of(table_job, tmp_path, caplog):
    """A signup date of 2999-01-01 among the 2000s gave extreme logits, silently, where a far number is warned of."""
    config, _, _ = table_job
    model = Model(latest_export(config, "latest"))
    hired = ("2000-01-20", "2999-01-01", "1850-06-01", "2000-03-01")  # the training rows': 40 days from 2000-01-01
    rows = "".join(f"50,Private,{day},1500000000\n" for day in hired)
    (tmp_path / "rows.csv").write_text("age,workclass,hired,seen_at\n" + rows)
    assert len(list(predict_files(model, [str(tmp_path / "rows.csv")], batch_size=4))) == 4
    far = [
        record.getMessage() for record in caplog.records if "far from the training rows' dates" in record.getMessage()
    ]
    assert [message.split(": ")[0].rsplit(":", 1)[1] for message in far] == ["3", "4"]  # lines 3 and 4
    assert "column 'hired': '2999-01-01' is far from the training rows' dates (their mean 2000-01-" in far[0]
    assert " days; it is over 6 times that from the mean); the model extrapolates" in far[0]
    caplog.clear()
    respond(model, {"instances": [{**SENT, "seen_at": "4102444800"}]})  # 2100-01-01, among 2014 to 2023
    assert "--instances-json: instance 0: column 'seen_at': '4102444800' is far from the training rows' dates" in (
        caplog.text
    )


def test_a_far_dates_warning_names_its_columns_mean_and_deviation_in_hours_for_times_of_day():
    """It named the bounds of six deviations as where "nearly all" training dates lie (2012 to 2021 for 2016 to
    2018), and a column of times of day's as "1970-01-01 to 1970-01-01"."""
    from trainer.input_warnings import _date_span

    times = tables.Column("CaptureTime", tables.DATE, date_format="%H:%M", mean=0.5625, std=0.05)
    assert (
        _date_span(times)
        == "their mean time of day 13:30, give or take 1.2 hours; it is over 6 times that from the mean"
    )
    days = tables.Column("stopped", tables.DATE, date_format="%Y-%m-%d", mean=17100.4, std=250.0)
    assert _date_span(days) == "their mean 2016-10-26, give or take 250 days; it is over 6 times that from the mean"


@pytest.mark.slow
def test_numbers_far_outside_the_training_rows_are_predicted_and_warned_of(table_job, tmp_path, caplog):
    """A number beyond the training split's least or greatest by more than their difference (ages in months for
    years) is predicted as it is, and warned of, from a file and a request: it predicted silently."""
    config, _, _ = table_job
    model = Model(latest_export(config, "latest"))
    age = next(column for column in model.metadata.columns if column.name == "age")
    lowest, highest = age.span
    assert 15 <= lowest < highest <= 100 and lowest < age.mean < highest
    far, near = int(2 * highest - lowest + 1), int(2 * highest - lowest - 1)
    rows = "".join(f"{value},Private,40\n" for value in (near, far, 12 * 40, 12 * 50, 12 * 60, lowest))
    (tmp_path / "rows.csv").write_text("age,workclass,hours\n" + rows)
    assert len(list(predict_files(model, [str(tmp_path / "rows.csv")], batch_size=4))) == 6
    shown = f"({lowest:g} to {highest:g}); the model extrapolates"
    assert f"rows.csv:3: column 'age': '{far}' is far outside the training rows' numbers {shown}" in caplog.text
    assert "rows.csv:2:" not in caplog.text and "rows.csv:6:" not in caplog.text and "rows.csv:7" not in caplog.text
    assert "rows.csv: 4 values in all are far outside the training rows' numbers" in caplog.text
    respond(model, {"instances": [{**SENT, "age": 480}]})
    assert "--instances-json: instance 0: column 'age': 480 is far outside" in caplog.text


def test_the_predict_cli_reads_tables_as_preprocessing_does_and_json_lines(table_job, tmp_path):
    config, _, _ = table_job
    (tmp_path / "rows.csv").write_text("hours,workclass,age,income\n40,Private,60,?\n,Self-emp,30,\n")
    (tmp_path / "rows.jsonl").write_text('{"age": 60, "workclass": "Private", "hours": 40}\n{"age": 30}\n')
    # As a spreadsheet in Europe writes it: semicolons, decimal commas, cp1252, a quoted newline.
    europe = 'note;hours;workclass;age\n"café\nau lait";40,0;Private;60\n'
    (tmp_path / "rows.txt").write_bytes(europe.encode("cp1252"))
    (tmp_path / "rows.json").write_text('[\n  {"age": 60, "workclass": "Private", "hours": 40}\n]\n')  # one array
    # pandas' DataFrame.to_json() of the same row: one object of columns, each an object of rows by the index
    (tmp_path / "frame.json").write_text('{"age":{"7":60},"workclass":{"7":"Private"},"hours":{"7":40}}')
    export = latest_export(config, "latest")
    result = subprocess.run(
        [sys.executable, "-m", "trainer.predict", "--model-dir", export, "--encoding", "cp1252", "--input",
         *(str(tmp_path / name) for name in ("rows.csv", "rows.jsonl", "rows.txt", "rows.json", "frame.json"))],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line.get("input") for line in lines[:2]] == [f"{tmp_path}/rows.csv:2", f"{tmp_path}/rows.csv:3"]
    assert lines[2] == {
        "instance": {"age": 60, "workclass": "Private", "hours": 40},
        "prediction": lines[2]["prediction"],
    }
    assert lines[0]["classes"] == lines[2]["prediction"]["classes"]  # the same row, by name and by position
    assert set(lines[3]["prediction"]) == {"class_ids", "classes", "probabilities", "logits"}
    assert lines[4]["input"] == f"{tmp_path}/rows.txt:2"
    assert lines[4]["probabilities"] == pytest.approx(lines[0]["probabilities"])  # 40,0 is 40
    # An array's row: the same prediction, to float precision (a batch of one rounds apart from a batch of two).
    assert lines[5]["instance"] == lines[2]["instance"] and set(lines[5]) == {"instance", "prediction"}
    assert lines[5]["prediction"]["classes"] == lines[2]["prediction"]["classes"]
    assert lines[5]["prediction"]["probabilities"] == pytest.approx(lines[2]["prediction"]["probabilities"])
    assert lines[6]["instance"] == lines[2]["instance"]
    assert lines[6]["prediction"]["probabilities"] == pytest.approx(lines[2]["prediction"]["probabilities"])


def test_rows_to_predict_are_read_in_the_encoding_of_the_training_files(table_job, tmp_path, capsys, caplog):
    """A model whose training files were cp1252 (a spreadsheet's, in much of Europe) reads new cp1252 files without
    --encoding, which still decides where it is given."""
    config, _, _ = table_job
    assert table_job_metadata(config).extra["encoding"] == "utf-8"
    export = tmp_path / "export"
    shutil.copytree(latest_export(config, "latest"), export)
    metadata_file = export / "assets.extra" / METADATA_FILE
    metadata = json.loads(metadata_file.read_text())
    metadata_file.write_text(json.dumps({**metadata, "extra": {**metadata["extra"], "encoding": "cp1252"}}))
    (tmp_path / "rows.csv").write_bytes("workclass,age\nPrivé €,60\n".encode("cp1252"))
    flags = ["--model-dir", str(export), "--input", str(tmp_path / "rows.csv")]
    assert predict_main(flags) == 0
    assert json.loads(capsys.readouterr().out)["input"] == f"{tmp_path}/rows.csv:2"
    assert predict_main([*flags, "--encoding", "utf-8"]) == 2  # "line 2 is not utf-8 text"
    # The same rows saved again in UTF-8 are read so (cp1252 read München as MÃ¼nchen, silently), unless --encoding.
    (tmp_path / "again.csv").write_bytes("workclass,age\nPrivé €,60\n".encode())
    again = ["--model-dir", str(export), "--input", str(tmp_path / "again.csv")]
    with caplog.at_level(logging.WARNING):
        assert predict_main(again) == 0 and predict_main([*again, "--encoding", "cp1252"]) == 0
    assert caplog.text.count("again.csv: read as UTF-8, which it is, not as cp1252, the training files'") == 1
    options = TableOptions(encoding="cp1252")
    assert in_utf8_if_so(str(tmp_path / "again.csv"), options).encoding == "utf-8"
    assert in_utf8_if_so(str(tmp_path / "rows.csv"), options).encoding == "cp1252"


def test_a_table_to_predict_from_needs_its_header_and_may_be_parquet_or_feather(tmp_path, caplog):
    names = ("age", "workclass", "hours")
    (tmp_path / "rows.csv").write_text("40,Private,60\n")
    said = r"rows.csv: line 1 is not a header \(it holds a number\); name the file's columns with --column-names "
    with pytest.raises(UserError, match=said + r"\(the model's are age,workclass,hours\)"):
        list(table_rows(str(tmp_path / "rows.csv"), "income", names, TableOptions()))
    # A model of a table without a header: its columns are named by their place, and so are the file's.
    by_place = ("column_1", "column_2")
    assert list(table_rows(str(tmp_path / "rows.csv"), "column_3", by_place, TableOptions())) == [
        (f"{tmp_path}/rows.csv:1", {"column_1": "40", "column_2": "Private"})
    ]
    with pytest.raises(UserError, match=r"rows.csv: line 1 is not a header"):  # too narrow for column_4
        list(table_rows(str(tmp_path / "rows.csv"), "column_5", (*by_place, "column_4"), TableOptions()))
    # Or named by --column-names, as qt-predict takes it (a headerless TSV of Criteo's kind).
    (tmp_path / "rows.tsv").write_text("60\t40\tPrivate\n")
    args = predict_args(
        ["--model-dir", "m", "--input", "x", "--column-names", "age,hours,workclass", "--delimiter", "tab"]
    )
    assert list(table_rows(str(tmp_path / "rows.tsv"), "income", names, TableOptions(**reading_options(args)))) == [
        (f"{tmp_path}/rows.tsv:1", {"age": "60", "hours": "40", "workclass": "Private"})
    ]
    (tmp_path / "named.tsv").write_text("age\thours\tworkclass\n60\t40\tPrivate\n")  # the flag's names: a header
    assert list(table_rows(str(tmp_path / "named.tsv"), "income", names, TableOptions(**reading_options(args)))) == [
        (f"{tmp_path}/named.tsv:2", {"age": "60", "hours": "40", "workclass": "Private"})
    ]
    (tmp_path / "other.csv").write_text("x,y\n1,2\n")
    with pytest.raises(UserError, match=r"other.csv: no column of the model's \(age, workclass, hours\) is in its"):
        list(table_rows(str(tmp_path / "other.csv"), "income", names, TableOptions()))
    (tmp_path / "years.csv").write_text("A title\n2019,2020\n1,2\n")  # a header of numbers, the model's names
    assert list(table_rows(str(tmp_path / "years.csv"), "income", ("2019", "2020"), TableOptions(skip_rows=1))) == [
        (f"{tmp_path}/years.csv:3", {"2019": "1", "2020": "2"})
    ]
    (tmp_path / "sheet.csv").write_text("age,,workclass,,\n60,,Private,,\n")  # a spreadsheet's empty columns
    assert list(table_rows(str(tmp_path / "sheet.csv"), "income", names, TableOptions())) == [
        (f"{tmp_path}/sheet.csv:2", {"age": "60", "workclass": "Private"})
    ]
    assert f"{tmp_path}/sheet.csv: no column 'hours'; read as missing in every row" in caplog.text  # a wrong file?
    (tmp_path / "sparse.jsonl").write_text('{"age": 60}\n' * 3000 + '{"hours": 40}\n')  # past the first objects
    assert list(table_rows(str(tmp_path / "sparse.jsonl"), "income", names, TableOptions()))[-1] == (
        f"{tmp_path}/sparse.jsonl:3001",
        {"age": "", "workclass": "", "hours": "40"},
    )
    (tmp_path / "rows.jsonl").write_bytes('{"age": 60}\n{"workclass": "Privé"}\n'.encode("latin-1"))
    with pytest.raises(UserError, match=r"rows.jsonl: line 2 is not UTF-8 text, which JSON must be"):
        list(_json_lines(str(tmp_path / "rows.jsonl"), table=True))  # was a UnicodeDecodeError's traceback
    nested = pa.array([[1], []])  # a column the model does not take may hold what a table cannot
    rows = pa.table({"age": [60, None], "tags": nested, "workclass": ["Private", "?"]})
    pq.write_table(rows, tmp_path / "rows.parquet")
    feather.write_feather(rows, tmp_path / "rows.feather")
    for name in ("rows.parquet", "rows.feather"):
        assert list(table_rows(str(tmp_path / name), "income", names, TableOptions())) == [
            (f"{tmp_path}/{name}:1", {"age": "60", "workclass": "Private"}),
            (f"{tmp_path}/{name}:2", {"age": "", "workclass": "?"}),
        ]
    said = f"{tmp_path}/rows.feather: no column 'hours'; read as missing in every row (the file's other columns: tags)"
    assert said in caplog.text
    (tmp_path / "typo.csv").write_text("age,workclass,hour,income\n60,Private,40,>50K\n")  # a misspelt column
    list(table_rows(str(tmp_path / "typo.csv"), "income", names, TableOptions()))
    assert "typo.csv: no column 'hours'; read as missing in every row (did you mean 'hour' for 'hours'?)" in caplog.text


def test_a_columns_missing_spelling_is_missing_in_every_serving_signature():
    """A column read as numbers beside a few other spellings ("-", "T") takes those spellings as missing in a request,
    a CSV line and a file to predict, as preprocessing read it; any other text is still no number. Metadata written
    before holds one `missing_spelling`."""
    columns = (
        tables.Column("rain", tables.NUMERIC, missing_spellings=("-", "T")),
        tables.Column("hours", tables.NUMERIC),
    )
    arrays = tables.instance_columns([{"rain": " - ", "hours": 2}, {"rain": "1.5"}], columns, ["row 1", "row 2"])
    assert np.isnan(arrays["rain"][0]) and arrays["rain"][1] == 1.5
    with pytest.raises(Exception, match="row 1: column 'hours': '-' is not a number"):
        tables.instance_columns([{"rain": "-", "hours": "-"}], columns, ["row 1"])
    with tf.Graph().as_default():
        block = tables.parse_csv_lines(tf.constant(["-,2", "0.5,", " T ,3"]), columns)[NUMERIC_KEY]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            found = session.run(block)
    np.testing.assert_array_equal(found, [[np.nan, 2], [0.5, np.nan], [np.nan, 3]])
    assert tables.Column.from_json({"name": "r", "kind": "numeric", "missing_spelling": "-"}).missing_spellings == (
        "-",
    )
    assert tables.Column.from_json(columns[0].to_json()) == columns[0]
    rows = [("f.csv:2", {"rain": "-", "hours": "x"}), ("f.csv:3", {"rain": "y", "hours": "1"})]
    assert [row for _, row in bad_numbers_as_missing(iter(rows), "f.csv", columns)] == [
        {"rain": None, "hours": None},
        {"rain": None, "hours": "1"},
    ]


def test_csv_lines_read_numbers_as_preprocessing_reads_a_tables_and_bad_cells_as_missing():
    """The csv_lines signature failed a whole request on "$2,374.64", a value its own training file held and
    preprocessing read as 2374.64, and on a bad cell that preprocessing read as missing. Its graph now reads them
    with the same patterns (dataformat/number_patterns.py) as preprocessing's reading."""
    import re

    from dataformat.number_patterns import NUMBER
    from preprocessing.table_files.number_text import plain_number_texts

    formatted = ["$2,374.64", "2,063.19", "12.5%", "(1,234.56)", "($5)", "\u22127.5", "$ -", "1'234.5", "1,00,000"]
    others = ["12,345", "\u20ac 7", "7 \u20ac", "(3%)", "-$5", " 3.5 ", "1e5", "abc", "1.5.6", "", "NA", "-", "."]
    durations = ["0 days 00:12:34", "-1 days +23:59:50", "PT4M13S", "P1DT2H", "PT", "P1M"]  # 754, -10, 253, 93600
    texts = formatted + others + durations
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        read = numbers(tf.constant(texts))
        session.run(tf.compat.v1.tables_initializer())
        found = session.run(read)
    plain = plain_number_texts(pa.array(texts), ".").to_pylist()
    expected = [float(text) if re.fullmatch(NUMBER, text.strip()) else np.nan for text in plain]
    np.testing.assert_allclose(found, expected, rtol=1e-6)
    assert found[0] == pytest.approx(2374.64) and np.isnan(found[texts.index("abc")])


def test_table_columns_of_instances_say_which_row_is_wrong():
    columns = (tables.Column("age", tables.NUMERIC), tables.Column("kind", tables.CATEGORICAL, vocabulary=("a",)))
    arrays = tables.instance_columns([{"age": "3", "kind": None}, {}], columns, ["row 1", "row 2"])
    assert arrays["age"][0] == 3 and np.isnan(arrays["age"][1]) and list(arrays["kind"]) == ["", ""]
    with pytest.raises(Exception, match="row 2: column 'age': True is not a number"):
        tables.instance_columns([{"age": 1}, {"age": True}], columns, ["row 1", "row 2"])
    # A row whose keys are none of the model's columns (another case, or another table's) was predicted for as a row
    # of missing values, silently; a key the model lacks beside its columns is a column it does not use.
    with pytest.raises(Exception, match=r"^row 2: no column 'Age' \(did you mean 'age'\?\)$"):
        tables.instance_columns([{"age": 1}, {"Age": 1, "kind": "a"}], columns, ["row 1", "row 2"])
    with pytest.raises(Exception, match=r"^row 1: none of its keys is a column of the model's: no column 'size'"):
        tables.instance_columns([{"size": 1, "color": "red"}], columns, ["row 1"])
    arrays = tables.instance_columns([{"age": 2, "id": "x7"}], columns, ["row 1"])
    assert arrays["age"][0] == 2 and list(arrays["kind"]) == [""]


def test_predictions_to_a_csv_file_are_a_table_of_each_inputs_class_and_probabilities(table_job, tmp_path, caplog):
    """--output NAME.csv: a table a spreadsheet opens, where it held JSON lines under a .csv name."""
    config, _, folder = table_job
    export = latest_export(config, "latest")
    rows = folder / "census.csv"
    assert predict_main(["--model-dir", export, "--input", str(rows), "--output", str(tmp_path / "p.csv")]) == 0
    with open(tmp_path / "p.csv", newline="") as file:
        table = list(csv.reader(file))
    classes = Model(export).metadata.class_names
    assert table[0] == ["input", "class", *(f"probability_{name}" for name in classes)]
    lines = list(predict_files(Model(export), [str(rows)], batch_size=128))
    assert len(table) == 801 and f"Wrote 800 prediction(s) to {tmp_path / 'p.csv'}" in caplog.text
    assert [row[:2] for row in table[1:]] == [[line["input"], line["classes"]] for line in lines]
    assert [[float(p) for p in row[2:]] for row in table[1:]] == [line["probabilities"] for line in lines]
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"instances": [{"age": 60, "workclass": "Private", "hours": 40}]}))
    flags = ["--model-dir", export, "--instances-json", str(request), "--output", str(tmp_path / "r.csv")]
    assert predict_main(flags) == 2 and "a response body, which is JSON; name a .json" in caplog.text
