"""--key-column: each row's key is stored beside it, is never a feature, and every serving input and
qt-predict return it untouched, so predictions join back to their rows."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf
from test_text import review_rows, write_csv

from dataformat.errors import UserError
from preprocessing.tables import TableOptions, build_table_dataset
from trainer import experiment
from trainer.config import Config
from trainer.export import latest_export
from trainer.exported_model import Model

HEADER = ("order", "channel", "review", "price", "label")


def keyed_rows(count: int) -> list[list[str]]:
    return [[f"order-{i}", *row] for i, row in enumerate(review_rows(count))]


def build(tmp_path, **options):
    source = write_csv(tmp_path / "orders.csv", keyed_rows(300), header=HEADER)
    flags = {"label_column": "label", "key": "order", **options}
    return build_table_dataset(str(source), str(tmp_path / "data"), TableOptions(**flags), examples_per_record=1)


def test_the_key_is_stored_beside_the_row_and_is_no_feature(tmp_path):
    metadata = build(tmp_path)
    assert metadata.key_column == "order" and [c.name for c in metadata.columns] == ["channel", "review", "price"]
    shard = tmp_path / "data" / metadata.splits["train"].shards[0].file
    record = next(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())
    key = tf.train.Example.FromString(record).features.feature["order"].bytes_list.value[0].decode()
    assert key.startswith("order-")
    with pytest.raises(UserError, match="--key-column label: it is the label column"):
        build(tmp_path, key="label")
    for flags in ({"categorical": ("order",)}, {"ignore": ("order",)}):  # ignored, it was the key all the same
        with pytest.raises(UserError, match="--key-column order: a key is kept beside each row and is never a feature"):
            build(tmp_path, **flags)


def test_rows_without_a_key_are_named_in_one_warning_a_file(tmp_path, caplog):
    """An empty key passed without a word, and its row's prediction came back with a key that joins to no row."""
    rows = keyed_rows(300)
    for i in (40, 41, 250):
        rows[i][0] = "" if i != 41 else " "
    rows[60][0] = "NA"  # a key is stored as written: this one is a key
    source = write_csv(tmp_path / "orders.csv", rows, header=HEADER)
    options = TableOptions(label_column="label", key="order")
    build_table_dataset(str(source), str(tmp_path / "data"), options, examples_per_record=1)
    warned = [record.getMessage() for record in caplog.records if "the key is missing" in record.getMessage()]
    assert warned == [f"{source}: line 42, column 1 ('order'): the key is missing (--key-column), in 3 row(s) of "
                      "this file"]  # fmt: skip


def test_keys_that_repeat_are_named_in_one_warning_a_file_within_a_block_and_across_blocks(
    tmp_path, caplog, monkeypatch
):
    """A key that an earlier row has passed without a word, and both rows' predictions came back under it."""
    import preprocessing.table_files.locate

    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)  # blocks of about 800 rows
    rows = keyed_rows(1200)
    rows[5][0] = rows[3][0]  # within a block
    rows[1000][0] = rows[1100][0] = rows[10][0]  # across blocks, twice
    rows[150][0] = ""  # missing, not a repeat
    rows[151][0] = rows[152][0] = "NA"  # a key is stored as written: "NA" twice is a repeat
    source = write_csv(tmp_path / "orders.csv", rows, header=HEADER)
    options = TableOptions(label_column="label", key="order")
    build_table_dataset(str(source), str(tmp_path / "data"), options, examples_per_record=1)
    warned = [record.getMessage() for record in caplog.records if "(--key-column)" in record.getMessage()]
    assert warned == [
        f"{source}: line 152, column 1 ('order'): the key is missing (--key-column), in 1 row(s) of this file",
        f"{source}: line 7, column 1 ('order'): the key 'order-3' is an earlier row's (--key-column), as 4 row(s) of "
        "this file repeat one: their predictions come back under the same key",
    ]
    caplog.clear()
    build_table_dataset(str(write_csv(tmp_path / "unique.csv", keyed_rows(300), header=HEADER)),
                        str(tmp_path / "unique"), options, examples_per_record=1)  # fmt: skip
    assert "(--key-column)" not in caplog.text


def test_qt_predict_of_a_shard_gives_each_row_its_stored_key(tmp_path):
    """A shard's rows carry the keys stored beside them into the request, as a file's rows carry their key column."""
    from trainer.prediction_inputs import _shard_requests

    metadata = build(tmp_path, ignore=("review",))  # a text table's shards hold word IDs, which qt-predict refuses
    shard = str(tmp_path / "data" / metadata.splits["eval"].shards[0].file)
    model = types.SimpleNamespace(metadata=metadata, numbers_signature="serving_default")  # what a shard's rows need
    requests = list(_shard_requests(shard, model))
    stored = [
        key.decode()
        for record in tf.data.TFRecordDataset(shard).as_numpy_iterator()
        for key in tf.train.Example.FromString(record).features.feature["order"].bytes_list.value
    ]
    assert [row["order"] for _, _, row in requests] == stored and stored[0].startswith("order-")
    assert [name for name, _, _ in requests][:2] == [f"{shard}#0", f"{shard}#1"]


def _example(values: dict) -> bytes:
    feature = {
        name: tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
        if isinstance(value, float)
        else tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
        for name, value in values.items()
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_every_serving_input_and_qt_predict_return_the_key(tmp_path):
    build(tmp_path)
    config = Config(data_dir=str(tmp_path / "data"), job_dir=str(tmp_path / "job"), train_steps=100)
    experiment.run(config)
    export = latest_export(config, "latest")
    model = Model(export)
    rows = [
        {"order": "A-1", "channel": "web", "review": "Great and wonderful!", "price": 3.0},
        {"order": "B-2", "channel": "app", "review": "awful, boring", "price": 5.0},
    ]
    lines = ['A-1,web,"Great and wonderful!",3', 'B-2,app,"awful, boring",5']  # the key, then the columns
    answers = [
        model.predict("serving_default", rows),
        model.predict("csv_lines:serving_default", lines),
        model.predict("examples:serving_default", [_example(row) for row in rows]),
    ]
    for answer in answers:
        assert [prediction["key"] for prediction in answer] == ["A-1", "B-2"]
        assert [p["classes"] for p in answer] == [p["classes"] for p in answers[0]]
    write_csv(tmp_path / "new.csv", [["web", "x-9", "loved it", "1"]], header=("channel", "order", "review", "price"))
    done = subprocess.run(
        [sys.executable, "-m", "trainer.predict", "--model-dir", export, "--input", str(tmp_path / "new.csv")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.splitlines()[0])
    assert line["key"] == "x-9" and line["input"].endswith("new.csv:2")


def test_an_image_lists_keys_are_its_uris_through_every_input(tmp_path):
    """Images: --key-column names each image's key, its path as listed; stored beside it, and taken and returned
    by every signature (a request without keys gets "" each). A key named with a space ("image uri") stopped
    the export: the name was its op's."""
    from PIL import Image

    from preprocessing.cli import main as preprocess

    lines = []
    for i in range(24):
        name = f"img{i}.png"
        Image.new("RGB", (8, 8), (200, 30, 30) if i % 2 else (30, 30, 200)).save(tmp_path / name)
        lines.append(f"{name},{'red' if i % 2 else 'blue'}")
    (tmp_path / "list.csv").write_text("\n".join(lines) + "\n")
    argv = ["--source", "images", "--input", str(tmp_path / "list.csv"), "--output", str(tmp_path / "data")]
    assert preprocess([*argv, "--key-column", "image uri", "--workers", "1"]) == 0
    config = Config(data_dir=str(tmp_path / "data"), job_dir=str(tmp_path / "job"), train_steps=20, batch_size=8)
    experiment.run(config)
    export = latest_export(config, "latest")
    model = Model(export)
    assert model.metadata.key_column == "image uri"
    shard = tmp_path / "data" / model.metadata.splits["train"].shards[0].file
    record = tf.train.Example.FromString(next(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator()))
    assert record.features.feature["image uri"].bytes_list.value[0].decode() in {line.split(",")[0] for line in lines}

    pixels = [np.asarray(Image.open(tmp_path / f"img{i}.png"), np.float32) for i in (0, 1)]
    encoded = [(tmp_path / f"img{i}.png").read_bytes() for i in (0, 1)]
    examples = [_image_example(p.astype(np.uint8).tobytes(), key) for p, key in zip(pixels, ["a", "b"])]
    answers = [
        model.predict("serving_default", pixels, keys=["a", "b"]),
        model.predict("image_bytes:serving_default", encoded, keys=["a", "b"]),
        model.predict("examples:serving_default", examples),
    ]
    for answer in answers:
        assert [p["key"] for p in answer] == ["a", "b"] and [p["classes"] for p in answer] == ["blue", "red"]
    assert [p["key"] for p in model.predict("serving_default", pixels, keys=[])] == ["", ""]
    done = subprocess.run(
        [sys.executable, "-m", "trainer.predict", "--model-dir", export, "--input", str(tmp_path / "img3.png")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert json.loads(done.stdout)["key"] == str(tmp_path / "img3.png")
    # qt-predict takes the list itself, each image by its path as listed, and WebP (which TensorFlow does not decode).
    Image.open(tmp_path / "img5.png").save(tmp_path / "img5.webp", lossless=True)
    (tmp_path / "dict.jsonl").write_text('{"image_bytes": {"b64": "iVBORw0KGgo="}}\n')
    runs = [
        subprocess.run(
            [sys.executable, "-m", "trainer.predict", "--model-dir", export, "--input", *inputs],
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        for inputs in (
            [str(tmp_path / "list.csv"), str(tmp_path / "img5.webp"), str(shard)],
            [str(tmp_path / "dict.jsonl")],
        )
    ]
    lines = [json.loads(line) for line in runs[0].stdout.splitlines()]
    listed = [line.split(",")[0] for line in lines_of(tmp_path)]
    assert [line["key"] for line in lines[:25]] == listed + [str(tmp_path / "img5.webp")]
    assert len(lines) > 25 and {line["key"] for line in lines[25:]} <= set(listed)  # a shard's images: stored keys
    assert [line["classes"] for line in lines[:4]] == ["blue", "red", "blue", "red"] and lines[24]["classes"] == "red"
    assert (
        runs[1].returncode == 2
        and "dict.jsonl:1: an object; this model takes a list of numbers a line" in runs[1].stderr
    )
    assert "Traceback" not in runs[0].stderr + runs[1].stderr


def lines_of(folder) -> list[str]:
    return (folder / "list.csv").read_text().splitlines()


def _image_example(pixels: bytes, key: str) -> bytes:
    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels])),
        "image uri": tf.train.Feature(bytes_list=tf.train.BytesList(value=[key.encode()])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
