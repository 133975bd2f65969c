"""Tables: CSV files with named, numeric and categorical columns and missing values, streamed
into shards, read back by the input pipeline and served with named inputs."""

from __future__ import annotations

import dataclasses
import json
import logging
import lzma
import re

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import preprocessing.table_files
from dataformat import tables, wire
from dataformat.categorical import OOV_INDEX
from dataformat.errors import UserError
from dataformat.numeric import NUMERIC_KEY
from dataformat.schema import LABEL_KEY, Metadata, decode_record, parse_records
from preprocessing.tables import TableOptions, build_table_dataset

HEADER = "age,workclass,education_num,hours,income"
ROWS = [
    "39, State-gov,13,40,<=50K",
    "50, Self-emp-not-inc,13,13,<=50K",
    "38, Private,9,40,<=50K",
    "53, Private,7,40,<=50K",
    "28, Private,13,40,>50K",
    "37, Private,14,40,>50K",
    "49, ?,5,16,<=50K",
    "52, Self-emp-not-inc,9,45,>50K",
    "31, Private,14,50,>50K",
    "42, Private,13,NA,>50K",
]


def write_table(path, rows=ROWS, header=HEADER, copies=20, compress=""):
    """The rows as CSV, compressed with pyarrow's `compress` codec ("gzip", "bz2", "zstd") or xz where one is named."""
    text = "\n".join([header, *(rows * copies)]) + "\n"
    if compress == "xz":  # no codec of pyarrow's
        path.write_bytes(lzma.compress(text.encode()))
    elif compress:
        with pa.CompressedOutputStream(str(path), compress) as file:
            file.write(text.encode())
    else:
        path.write_text(text)
    return path


def build(tmp_path, source, name="out", **flags):
    options = TableOptions(**{"label_column": "income", **flags.pop("options", {})})
    return build_table_dataset(str(source), str(tmp_path / name), options, **flags)


def read_rows(folder, metadata: Metadata, split="train"):
    """Every row of a split, decoded, as (instances, labels)."""
    instances, labels = [], []
    for shard in metadata.splits[split].shards:
        for record in tf.data.TFRecordDataset(str(folder / shard.file)).as_numpy_iterator():
            rows, row_labels = decode_record(record, metadata)
            instances += rows
            labels += list(row_labels)
    return instances, np.array(labels)


def test_types_missing_values_and_vocabularies_come_from_the_data(tmp_path):
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"))
    columns = {column.name: column for column in metadata.columns}
    assert [column.name for column in metadata.columns] == ["age", "workclass", "education_num", "hours"]
    assert [column.kind for column in metadata.columns] == ["numeric", "categorical", "numeric", "numeric"]
    assert columns["workclass"].vocabulary == ("Private", "Self-emp-not-inc", "State-gov")  # by frequency
    assert columns["workclass"].missing > 0 and columns["hours"].missing > 0 and columns["age"].missing == 0
    train_ages = [39, 50, 38, 53, 28, 37, 49, 52, 31, 42]
    assert abs(columns["age"].mean - np.mean(train_ages)) < 2  # the training rows' mean, near the table's
    assert metadata.class_names == ("<=50K", ">50K") and metadata.label_column == "income"
    assert metadata.shape == (4,) and metadata.is_table
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 200
    assert Metadata.from_json(metadata.to_json(), "m") == metadata


def test_rows_keep_their_values_and_missing_ones_are_marked(tmp_path):
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"))
    instances, labels = read_rows(tmp_path / "out", metadata, "train")
    instances_eval, _ = read_rows(tmp_path / "out", metadata, "eval")
    assert len(instances) + len(instances_eval) == 200
    by_age = {row["age"]: row for row in instances + instances_eval}
    assert by_age[39.0]["workclass"] == "State-gov"  # trimmed
    assert by_age[49.0]["workclass"] == ""  # '?' is missing
    assert np.isnan(by_age[42.0]["hours"])  # 'NA' is missing
    classes = dict(zip(metadata.class_names, range(2)))
    expected = {float(row.split(",")[0]): classes[row.split(",")[-1]] for row in ROWS}
    assert all(expected[row["age"]] == label for row, label in zip(instances, labels))


def test_records_are_tensorflows_own_serialization(tmp_path):
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"), examples_per_record=3)
    shard = tmp_path / "out" / metadata.splits["train"].shards[0].file
    for record in tf.data.TFRecordDataset(str(shard)).as_numpy_iterator():
        example = tf.train.Example.FromString(record)
        assert example.SerializeToString(deterministic=True) == record
        assert len(example.features.feature[LABEL_KEY].int64_list.value) <= 3


def test_record_encoding_matches_tensorflow_with_long_values_and_large_labels():
    """Varints of more than one byte: strings of 200 bytes, labels from 0 to 299, word IDs up to 272,
    records of up to 70 rows (lengths past 16,383 bytes), and a last record that is short; two numeric
    columns in one block, row by row, and a float feature of its own (the weights)."""
    rows, per_record = 150, 70
    words = [("w" * (i % 3 * 100)).encode() for i in range(rows)]  # '', 100 and 200 bytes
    offsets = np.concatenate([[0], np.cumsum([len(word) for word in words])])
    numbers = np.linspace(-1, 1, rows * 2, dtype=np.float32).reshape(rows, 2)
    weights = np.linspace(0, 5, rows, dtype=np.float32)
    labels = np.arange(rows) * 2
    ids = [list(range(i % 4 * 90, i % 4 * 90 + i % 4)) for i in range(rows)]  # 0 to 3 word IDs, up to 272
    splits = np.concatenate([[0], np.cumsum([len(row) for row in ids])])
    text = {"review": (np.concatenate(ids).astype(np.int64), splits)}
    strings = {"word": (offsets, np.frombuffer(b"".join(words), np.uint8))}
    records = list(tables.encode_table_records(numbers, {"w": weights}, strings, text, labels, per_record, LABEL_KEY))
    assert len(records) == 3
    for index, record in enumerate(records):
        chosen = slice(index * per_record, (index + 1) * per_record)
        feature = {
            NUMERIC_KEY: tf.train.Feature(float_list=tf.train.FloatList(value=numbers[chosen].ravel())),
            "w": tf.train.Feature(float_list=tf.train.FloatList(value=weights[chosen])),
            "word": tf.train.Feature(bytes_list=tf.train.BytesList(value=words[chosen])),
            LABEL_KEY: tf.train.Feature(int64_list=tf.train.Int64List(value=labels[chosen])),
            "review": tf.train.Feature(int64_list=tf.train.Int64List(value=sum(ids[chosen], []))),
            "review" + tables.LENGTHS: tf.train.Feature(
                int64_list=tf.train.Int64List(value=[len(row) for row in ids[chosen]])
            ),
        }
        expected = tf.train.Example(features=tf.train.Features(feature=feature))
        assert record == expected.SerializeToString(deterministic=True)


def test_the_input_pipeline_and_serving_encode_a_row_alike(tmp_path):
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"), examples_per_record=1)
    shard = tmp_path / "out" / metadata.splits["train"].shards[0].file
    records = list(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())
    instances = [decode_record(record, metadata)[0][0] for record in records]
    with tf.Graph().as_default():
        from_records, _ = parse_records(tf.constant(records), metadata)
        named = {column.name: tf.constant([row[column.name] for row in instances]) for column in metadata.columns}
        from_names = tables.to_vector(named, metadata.columns)
        lines = [",".join(str(row[c.name]) for c in metadata.columns) for row in instances]
        from_lines = tables.to_vector(tables.parse_csv_lines(tf.constant(lines), metadata.columns), metadata.columns)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            a, b, c = session.run([from_records, from_names, from_lines])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    workclass = a[:, 1]
    assert set(np.unique(workclass)) <= {0, 2, 3, 4}  # missing, then the three values of the vocabulary


def test_records_of_version_6_with_a_feature_a_numeric_column_still_read_alike(tmp_path):
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"), examples_per_record=4)
    shard = tmp_path / "out" / metadata.splits["train"].shards[0].file
    records = list(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())
    old_records = []
    for record in records:
        example = tf.train.Example.FromString(record)
        features = example.features.feature
        block = np.array(features[NUMERIC_KEY].float_list.value).reshape(-1, 3)
        del features[NUMERIC_KEY]
        for j, name in enumerate(["age", "education_num", "hours"]):
            features[name].float_list.value.extend(block[:, j])
        old_records.append(example.SerializeToString())
    old = dataclasses.replace(metadata, format_version=6)
    decoded = [str(decode_record(record, metadata)) for record in records]  # str: NaN equals NaN
    assert [str(decode_record(record, old)) for record in old_records] == decoded
    with tf.Graph().as_default():
        new_rows, new_labels = parse_records(tf.constant(records), metadata)
        old_rows, old_labels = parse_records(tf.constant(old_records), old)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            found = session.run([new_rows, new_labels, old_rows, old_labels])
    np.testing.assert_array_equal(found[0], found[2])
    np.testing.assert_array_equal(found[1], found[3])


def test_a_numeric_block_of_another_length_than_its_rows_is_refused(tmp_path):
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"), examples_per_record=2)
    shard = tmp_path / "out" / metadata.splits["train"].shards[0].file
    records = list(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())[:2]
    shifted = [tf.train.Example.FromString(record) for record in records]
    moved = shifted[0].features.feature[NUMERIC_KEY].float_list.value.pop()  # 2 rows of 3, less one value
    shifted[1].features.feature[NUMERIC_KEY].float_list.value.append(moved)  # and one more: 12 in all
    with tf.Graph().as_default():
        rows, _ = parse_records(tf.constant([example.SerializeToString() for example in shifted]), metadata)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="different number of examples"):
                session.run(rows)
    with pytest.raises(UserError, match="float_list of 3 values a row"):
        decode_record(shifted[0].SerializeToString(), metadata)


@pytest.mark.parametrize("name", [LABEL_KEY, NUMERIC_KEY, "review" + tables.LENGTHS, "hired" + tables.DAY])
def test_a_column_named_as_the_records_features_is_refused(tmp_path, name):
    source = write_table(tmp_path / "t.csv", header=HEADER.replace("hours", name))
    with pytest.raises(UserError, match=f"a column is named '{name}', a name the records reserve"):
        build(tmp_path, source)
    as_key = f"a column is named '{name}', a name the records reserve|named as the records' labels"
    with pytest.raises(UserError, match=as_key):  # as the key column too
        build(tmp_path, source, options={"key": name})


def test_the_default_label_is_the_column_named_label_else_the_last(tmp_path):
    named = write_table(tmp_path / "named.csv", header="label,workclass,education_num,hours,age")
    metadata = build(tmp_path, named, "a", options={"label_column": TableOptions().label_column})
    assert metadata.label_column == LABEL_KEY and [c.name for c in metadata.columns][-1] == "age"
    last = build(
        tmp_path, write_table(tmp_path / "last.csv"), "b", options={"label_column": TableOptions().label_column}
    )
    assert last.label_column == "income"


def test_unseen_and_rare_values_share_the_out_of_vocabulary_index(tmp_path):
    rows = [*ROWS, "45, Never-worked,10,40,<=50K"]
    metadata = build(tmp_path, write_table(tmp_path / "t.csv", rows=rows, copies=1), options={"min_frequency": 2})
    workclass = next(column for column in metadata.columns if column.name == "workclass")
    assert "Never-worked" not in workclass.vocabulary  # seen once, under --min-frequency
    with tf.Graph().as_default():
        values = {"age": [1.0, 1.0], "workclass": ["Never-worked", "Astronaut"], "education_num": [1.0] * 2}
        vector = tables.to_vector({**values, "hours": [np.nan, 1.0]}, metadata.columns)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            encoded = session.run(vector)
    assert list(encoded[:, 1]) == [OOV_INDEX, OOV_INDEX]
    assert np.isnan(encoded[0, 3])


def test_flags_choose_column_kinds_and_leave_columns_out(tmp_path):
    options = {"categorical": ("education_num",), "ignore": ("hours",)}
    metadata = build(tmp_path, write_table(tmp_path / "census.csv"), options=options)
    kinds = {column.name: column.kind for column in metadata.columns}
    assert kinds == {"age": "numeric", "workclass": "categorical", "education_num": "categorical"}
    education = next(column for column in metadata.columns if column.name == "education_num")
    assert set(education.vocabulary) == {"13", "9", "7", "14", "5"}


def test_a_glob_a_folder_and_compressed_parts_make_one_dataset(tmp_path, caplog):
    """gzip, bzip2, Zstandard and xz, as pandas' to_csv writes a .csv.gz, .csv.bz2, .csv.zst or .csv.xz."""
    (tmp_path / "parts").mkdir()
    write_table(tmp_path / "parts" / "a.csv", copies=10)
    write_table(tmp_path / "parts" / "b.csv.gz", copies=10, compress="gzip")
    write_table(tmp_path / "parts" / "c.csv.bz2", copies=10, compress="bz2")
    write_table(tmp_path / "parts" / "d.csv.zst", copies=10, compress="zstd")
    write_table(tmp_path / "parts" / "e.csv.xz", copies=10, compress="xz")
    (tmp_path / "parts" / "notes.txt").write_text("not a table")
    whole = build(tmp_path, tmp_path / "parts", name="folder")
    globbed = build(tmp_path, tmp_path / "parts" / "[abc].csv*", name="glob")
    assert whole.splits["train"].examples + whole.splits["eval"].examples == 500
    assert whole.extra["files"] == 5 and globbed.extra["files"] == 3
    assert [(c.name, c.kind) for c in whole.columns] == [(c.name, c.kind) for c in globbed.columns]
    (tmp_path / "parts" / "~$a.csv").write_bytes(b"\x00" * 162)  # an editor's lock file: no table
    assert build(tmp_path, tmp_path / "parts", name="again").extra["files"] == 5
    # A sub-folder's table files (no partition's) are not read, as Spark and BigQuery read a folder: said, not silent.
    (tmp_path / "parts" / "2024").mkdir()
    write_table(tmp_path / "parts" / "2024" / "f.csv", copies=10)
    with caplog.at_level(logging.WARNING):
        assert build(tmp_path, tmp_path / "parts", name="nested").extra["files"] == 5
    assert "parts: leaves out the table files 1 in its sub-folders (2024/f.csv): a folder's own files" in caplog.text
    (tmp_path / "top" / "2024").mkdir(parents=True)
    write_table(tmp_path / "top" / "2024" / "g.csv", copies=10)
    with pytest.raises(UserError, match=r"holds no table file .*; it leaves 1 in its sub-folders \(2024/g.csv\) to a"):
        build(tmp_path, tmp_path / "top", name="top")
    (tmp_path / "fake.csv.bz2").write_text(HEADER + "\n")
    with pytest.raises(UserError, match="fake.csv.bz2: cannot read .bz2 decompress failed"):
        build(tmp_path, tmp_path / "fake.csv.bz2", name="fake")
    compressed = (tmp_path / "parts" / "e.csv.xz").read_bytes()
    (tmp_path / "cut.csv.xz").write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(UserError, match=r"cut.csv.xz: cannot read \(xz: Compressed file ended before the end"):
        build(tmp_path, tmp_path / "cut.csv.xz", name="cut")
    (tmp_path / "xz.csv").write_bytes(compressed)  # named for what it holds, not how it is compressed
    with pytest.raises(UserError, match=r"xz.csv: an xz-compressed file: name it .xz to read it"):
        build(tmp_path, tmp_path / "xz.csv", name="unnamed")
    tabs = write_table(tmp_path / "t.tsv.bz2", [row.replace(",", "\t") for row in ROWS], "\t".join(HEADER.split(",")),
                       compress="bz2")  # fmt: skip
    assert preprocessing.table_files.dialect_of(str(tabs), TableOptions()).delimiter == "\t"  # .tsv, compressed


@pytest.mark.parametrize(
    "first_bytes, named",
    [
        (b"PK\x03\x04\x14\x00", "a ZIP archive: name it .zip to read the one table it holds, or unzip it"),
        (b"PK\x03\x04\x14\x00xl/workbook.xml", "an Excel workbook: name it .xlsx to read it"),  # it said .zip
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an Excel 97-2003 workbook: name it .xls to read it"),
        (b"ARROW1\x00\x00", "an Arrow or Feather file: name it .feather (or .arrow) to read it as one"),
    ],
)
def test_a_workbook_or_archive_is_named_for_what_it_is(tmp_path, first_bytes, named):
    """Read as CSV, its bytes were a garbled header: no column 'income' (its columns: PK ...)."""
    (tmp_path / "sales.csv").write_bytes(first_bytes + bytes(range(256)) * 4)
    with pytest.raises(UserError, match=re.escape(f"sales.csv: {named}")):
        build(tmp_path, tmp_path / "sales.csv")


def test_a_statistics_packages_file_or_other_binary_data_is_refused_for_what_it_is(tmp_path):
    """Statistics packages' files (Stata's, SPSS's and SAS's, before they were read) were read as CSV: 'no feature
    column is left besides the label'."""
    stata = b"\x72\x02\x01\x00\x14\x00X\x02" + bytes(120) + b"20 Mar 2017 10:26" + bytes(range(256)) * 4
    (tmp_path / "survey.rds").write_bytes(stata)
    with pytest.raises(UserError, match=re.escape("survey.rds: an R object file: save the data frame as CSV (in R,")):
        build(tmp_path, tmp_path / "survey.rds")
    (tmp_path / "survey.dta").write_bytes(stata)  # Stata's, SPSS's and SAS's are read (test_table_formats): not these
    with pytest.raises(UserError, match=re.escape("survey.dta: cannot read as a Stata file (damaged, or of another")):
        build(tmp_path, tmp_path / "survey.dta")
    (tmp_path / "survey.sav").write_bytes(stata)
    with pytest.raises(UserError, match=re.escape("survey.sav: cannot read as an SPSS file (Invalid file")):
        build(tmp_path, tmp_path / "survey.sav")
    (tmp_path / "survey.bin").write_bytes(stata)
    with pytest.raises(UserError, match=r"survey.bin: binary data, not a table of text \(if it is UTF-16"):
        build(tmp_path, tmp_path / "survey.bin")
    noise = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes().replace(b"\x00", b"")
    (tmp_path / "noise.csv").write_bytes(noise)  # no NUL byte, but control bytes no text holds
    with pytest.raises(UserError, match=r"noise.csv: binary data, not a table of text"):
        build(tmp_path, tmp_path / "noise.csv")
    rows = "n,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(40))
    (tmp_path / "wide.txt").write_bytes(rows.encode("utf-16-le"))  # NUL bytes, and text
    options = {"label_column": "label", "encoding": "utf-16-le"}
    assert build(tmp_path, tmp_path / "wide.txt", name="wide", options=options).class_names == ("a", "b")
    (tmp_path / "stray.csv").write_text(rows + "7\x00,a\n")  # a stray NUL is no binary file
    stray = build(tmp_path, tmp_path / "stray.csv", name="stray", options={"label_column": "label"})
    assert stray.class_names == ("a", "b")
    note = "a staff member\x1as car was stolen from the office parking lot"  # an apostrophe an encoding lost
    lost = "n,note,label\n" + "".join(f"{i},{note},{'ab'[i % 2]}\n" for i in range(40))
    (tmp_path / "lost.csv").write_text(lost)  # 1.4% of its bytes control bytes, and text (refused at 1%)
    assert build(tmp_path, tmp_path / "lost.csv", name="lost", options={"label_column": "label"}).num_classes == 2


def test_the_split_does_not_depend_on_other_files_or_the_order_of_rows(tmp_path):
    write_table(tmp_path / "one.csv")
    first = build(tmp_path, tmp_path / "one.csv", name="a")
    again = build(tmp_path, tmp_path / "one.csv", name="b")
    for split in ("train", "eval"):
        assert [s.bytes for s in first.splits[split].shards] == [s.bytes for s in again.splits[split].shards]
    for shard in first.splits["train"].shards:
        assert (tmp_path / "a" / shard.file).read_bytes() == (tmp_path / "b" / shard.file).read_bytes()


BAD_TABLES = {
    "ragged row": (
        f"{HEADER}\n39,Private,13,40,<=50K\n40,Private,13,40,<=50K,more\n",
        {},
        r"t.csv: line 3 has 6 columns; expected 5",
    ),
    "no label": (
        f"{HEADER}\n39,Private,13,40,\n40,Private,13,40,NA\n",
        {},
        r"t.csv: the label \(column 5 \('income'\)\) is missing in every row",
    ),
    "every feature missing": (
        f"{HEADER}\n,,,NA,a\nNA,,?,,b\n",
        {},
        r"t.csv: every feature column is missing in every row",
    ),
    "not a number": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,b\n",
        {"numeric": ("workclass",)},
        r"t.csv: line 2, column 2 \('workclass'\): 'Private' is not a finite number, nor are 1 more of its 2 values, "
        r"more than 50% \(--numeric-columns workclass\)",
    ),
    "unknown column": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,b\n",
        {"ignore": ("salary",)},
        r"--ignore-columns: .*t.csv: no column 'salary' \(its columns: age, workclass, education_num, hours, income\)",
    ),
    "a label of another case": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,b\n",
        {"label_column": "Income"},
        r"t.csv: --label-column: no column 'Income' \(did you mean 'income'\?\)",
    ),
    "a misspelt column": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,b\n",
        {"categorical": ("work_class",)},
        r"--categorical-columns: .*t.csv: no column 'work_class' \(did you mean 'workclass'\?\)",
    ),
    "the label as a feature": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,b\n",
        {"categorical": ("income",)},
        r"--categorical-columns names 'income', the label column \(--label-column\): leave it out of",
    ),
    "the label left out": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,b\n",
        {"ignore": ("income",)},
        r"--ignore-columns names 'income', the label column",
    ),
    "one label": (
        f"{HEADER}\n39,Private,13,40,a\n40,x,13,40,a\n",
        {},
        r"--label-column income: every labeled row has the same value, 'a'; a classifier needs at least 2 classes",
    ),
    "empty file": ("", {}, r"t.csv: empty file"),
}


@pytest.mark.parametrize("text, options, message", BAD_TABLES.values(), ids=BAD_TABLES)
def test_bad_tables_name_the_file_line_and_column(tmp_path, text, options, message):
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(UserError, match=message):
        build(tmp_path, tmp_path / "t.csv", options=options)


def test_a_split_that_leaves_a_side_empty_is_refused_before_a_shard_is_written(tmp_path):
    """--eval-fraction 0.99 --shards 50 on 40 rows wrote 5,000 empty shards, then was refused."""
    source = write_table(tmp_path / "t.csv", copies=4)  # 40 rows
    with pytest.raises(UserError, match=r"--eval-fraction 0.999 leaves 0 training and 40 evaluation rows out of 40"):
        build(tmp_path, source, eval_fraction=0.999, shards=5)
    assert not list((tmp_path / "out").glob("*.tfrecord"))
    metadata = build(tmp_path, source, eval_fraction=0.99, shards=5)  # evaluation's shards: 495 in proportion
    assert len(metadata.splits["train"].shards) == len(metadata.splits["eval"].shards) == 5


@pytest.mark.parametrize("bad", ["ragged row", "no label"])  # refused while reading, and once read
def test_a_refused_table_leaves_the_dataset_it_would_overwrite(tmp_path, bad):
    build(tmp_path, write_table(tmp_path / "good.csv"))
    before = {path.name: path.read_bytes() for path in (tmp_path / "out").iterdir()}
    (tmp_path / "t.csv").write_text(BAD_TABLES[bad][0])
    with pytest.raises(UserError, match=BAD_TABLES[bad][2]):
        build(tmp_path, tmp_path / "t.csv", overwrite=True)
    assert {path.name: path.read_bytes() for path in (tmp_path / "out").iterdir()} == before


def test_a_whole_number_written_as_a_fraction_is_the_integers_class(tmp_path):
    """Files of one table, one written by pandas where the label column lacked a value (1.0), one not (1)."""
    rows = "".join(f"{i},{['1', '1.0', '0', '0.00'][i % 4]}\n" for i in range(40))
    (tmp_path / "t.csv").write_text("x,y\n" + rows + "41,2.5\n")
    metadata = build(tmp_path, tmp_path / "t.csv", options={"label_column": "y"})
    assert metadata.class_names == ("0", "1", "2.5") and metadata.class_counts == (20, 20, 1)


def test_columns_missing_in_every_row_are_left_out_with_one_warning(tmp_path, caplog):
    """As an export of a database holds a field nobody filled: nothing to learn, so no reason to stop."""
    rows = "".join(f"{20 + i},,{i % 7},,{'ab'[i % 2]}\n" for i in range(40))
    (tmp_path / "t.csv").write_text(f"{HEADER}\n{rows}")
    metadata = build(tmp_path, tmp_path / "t.csv")
    assert [column.name for column in metadata.columns] == ["age", "education_num"]
    assert "t.csv: column(s) 2 ('workclass'), 4 ('hours') are missing in every row and are left out" in caplog.text


def test_files_whose_columns_are_in_another_order_are_read_by_name(tmp_path):
    """Exports of one table by different tools: the same dataset, byte for byte, as files of one order."""
    reordered = [4, 2, 0, 3, 1]  # income,education_num,age,hours,workclass
    for folder, order in (("same", range(5)), ("reordered", reordered)):
        (tmp_path / folder).mkdir()
        write_table(tmp_path / folder / "a.csv")
        fields = [line.split(",") for line in [HEADER, *ROWS]]
        moved = [",".join(row[i] for i in order) for row in fields]
        write_table(tmp_path / folder / "b.csv", rows=moved[1:], header=moved[0])
    same = build(tmp_path, tmp_path / "same", name="from_same")
    metadata = build(tmp_path, tmp_path / "reordered", name="from_reordered")
    assert metadata.columns == same.columns
    for shard in metadata.splits["train"].shards + metadata.splits["eval"].shards:
        assert (tmp_path / "from_reordered" / shard.file).read_bytes() == (
            tmp_path / "from_same" / shard.file
        ).read_bytes()


@pytest.mark.parametrize(
    "header, message",
    [
        (HEADER.replace("hours", "hours_per_week"), r"b.csv: it lacks column 'hours'; every file must be"),
        (HEADER + ",note", r"b.csv: it has a column 'note' that the first file lacks"),
    ],
)
def test_files_with_another_header_are_named(tmp_path, header, message):
    (tmp_path / "parts").mkdir()
    write_table(tmp_path / "parts" / "a.csv")
    rows = ROWS if header.count(",") == HEADER.count(",") else [row + ",x" for row in ROWS]
    write_table(tmp_path / "parts" / "b.csv", rows=rows, header=header)
    with pytest.raises(UserError, match=message):
        build(tmp_path, tmp_path / "parts")


def test_files_of_another_format_or_encoding_are_named(tmp_path):
    """A folder of a CSV and JSON lines of the same columns, or of UTF-8 and UTF-16 CSV (Excel's "Unicode
    text"), stopped with a traceback (StopIteration): their headers are alike."""
    (tmp_path / "mixed").mkdir()
    write_table(tmp_path / "mixed" / "a.csv")
    lines = (tmp_path / "mixed" / "a.csv").read_text().splitlines()
    names = lines[0].split(",")
    rows = [dict(zip(names, line.split(","))) for line in lines[1:]]
    (tmp_path / "mixed" / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(UserError, match=r"b.jsonl: it is JSON lines, the first file CSV; every file must be written"):
        build(tmp_path, tmp_path / "mixed", name="formats")
    (tmp_path / "mixed" / "b.jsonl").unlink()
    (tmp_path / "mixed" / "b.csv").write_text("\n".join(lines) + "\n", encoding="utf-16")
    with pytest.raises(UserError, match=r"b.csv: its encoding is utf-16, the first file's utf-8"):
        build(tmp_path, tmp_path / "mixed", name="encodings")


def test_a_headerless_file_names_its_columns_by_position(tmp_path):
    write_table(tmp_path / "t.csv", header=ROWS[0])
    metadata = build_table_dataset(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions())
    assert metadata.label_column == "column_5" and metadata.columns[0].name == "column_1"


def eval_counts(folder, metadata: Metadata) -> dict[str, int]:
    _, labels = read_rows(folder, metadata, "eval")
    return {name: int(np.sum(labels == index)) for index, name in enumerate(metadata.class_names)}


def test_the_split_is_stratified_by_class(tmp_path):
    labels = ["a"] * 900 + ["b"] * 100 + ["c"] * 10
    rows = [f"{i},{label}" for i, label in enumerate(labels)]
    (tmp_path / "t.csv").write_text("\n".join(["x,y", *rows]) + "\n")
    metadata = build_table_dataset(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions())
    assert eval_counts(tmp_path / "out", metadata) == {"a": 180, "b": 20, "c": 2}  # a fifth of each, exactly


def test_a_class_seen_once_a_block_still_reaches_evaluation(tmp_path, monkeypatch):
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 256)  # blocks of about 100 rows
    rows = [f"{i},{'rare' if i % 100 == 0 else 'common'}" for i in range(10_000)]
    (tmp_path / "t.csv").write_text("\n".join(["x,y", *rows]) + "\n")
    metadata = build_table_dataset(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions())
    counts = eval_counts(tmp_path / "out", metadata)
    assert 8 <= counts["rare"] <= 35  # about a fifth of 100, where rounding each block's 0.2 would give 0
    assert counts["common"] + counts["rare"] == metadata.splits["eval"].examples


def test_rows_without_a_label_are_left_out_and_counted(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 256)  # blocks of about 40 rows
    unlabeled = [f"2020-01-{1 + i % 28:02d},{i}," for i in range(200)]  # whole blocks first: dates still found
    rows = [f"2020-02-{1 + i % 28:02d},{i},{'NA' if i % 10 == 3 else 'ab'[i % 2]}" for i in range(400)]
    (tmp_path / "t.csv").write_text("\n".join(["day,x,y", *unlabeled, *rows]) + "\n")
    metadata = build_table_dataset(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions())
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 360
    assert metadata.columns[0].kind == tables.DATE and metadata.class_counts == (200, 160)
    assert "t.csv: line 2, column 3 ('y'): the label is missing; rows without a label are left out" in caplog.text
    assert "Left out 240 of 600 rows: their label is missing" in caplog.text
    # Missing in most rows, the last column is no label but a column of notes: it trained on the few rows with one.
    notes = [f"{i},{['late', 'ok'][i % 2] if i % 25 == 0 else ''}" for i in range(400)]
    (tmp_path / "notes.csv").write_text("\n".join(["x,comment", *notes]) + "\n")
    guessed = r"the label \(by default the last column: column 2 \('comment'\)\) is missing in 384 of 400 rows"
    with pytest.raises(UserError, match=rf"notes.csv: {guessed}; name the label column with --label-column"):
        build_table_dataset(str(tmp_path / "notes.csv"), str(tmp_path / "n"), TableOptions())
    named = build_table_dataset(str(tmp_path / "notes.csv"), str(tmp_path / "m"), TableOptions(label_column="comment"))
    assert sum(split.examples for split in named.splits.values()) == 16  # named, it is the label


def test_splits_hash_rows_so_that_rows_in_order_still_spread(tmp_path):
    rows = [f"{i},{'ab'[i >= 500]}" for i in range(1000)]  # sorted by label
    (tmp_path / "t.csv").write_text("\n".join(["x,y", *rows]) + "\n")
    metadata = build_table_dataset(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions(), shards=4)
    assert 150 < metadata.splits["eval"].examples < 250
    for shard in metadata.splits["train"].shards:
        records = tf.data.TFRecordDataset(str(tmp_path / "out" / shard.file)).as_numpy_iterator()
        decoded = [decode_record(record, metadata) for record in records]
        labels = np.concatenate([labels for _, labels in decoded])
        xs = [row["x"] for rows, _ in decoded for row in rows]
        assert 0.3 < labels.mean() < 0.7
        assert xs != sorted(xs)  # each shard in a random order


def test_the_vectorized_string_encoder_writes_protobuf_fields():
    for values in (["", "a", "é" * 100, "x" * 20000], ["", "a", "bc" * 63]):  # varints of 1-3 bytes, or all of 1
        data = "".join(values).encode()
        offsets = np.cumsum([0] + [len(v.encode()) for v in values])
        out, starts = wire.string_fields(offsets, np.frombuffer(data, np.uint8))
        expected = tf.train.BytesList(value=[v.encode() for v in values]).SerializeToString()
        assert out.tobytes() == expected
        assert list(starts[:3]) == [0, 2, 5] and starts[-1] == len(expected)
    assert list(starts) == [0, 2, 5, 5 + 2 + 126]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet='0123456789.,-e \nxyNA?"', max_size=300))
def test_random_text_converts_or_says_why(tmp_path, text):
    (tmp_path / "random.csv").write_text(text)
    try:
        metadata = build_table_dataset(
            str(tmp_path / "random.csv"), str(tmp_path / "out"), TableOptions(), overwrite=True
        )
    except UserError:
        return
    assert metadata.splits["train"].examples and metadata.splits["eval"].examples
    assert json.loads((tmp_path / "out" / "metadata.json").read_text())["columns"]


def test_a_number_beyond_float32_is_a_bad_cell_not_an_overflow(tmp_path, caplog):
    """Hypothesis found '1e200,0': its square overflowed the standard deviation's sums. The records hold float32,
    where such a number is infinite: it is a bad cell, read as missing and named, as 'inf' is."""
    rows = "".join(f"{i % 40},{'ab'[i % 2]}\n" for i in range(200))
    (tmp_path / "t.csv").write_text("x,income\n1e200,a\n-inf,b\n" + rows)
    (x,) = [column for column in build(tmp_path, tmp_path / "t.csv").columns if column.name == "x"]
    assert x.kind == tables.NUMERIC and 0 < x.std < 20 and 0 <= x.mean < 40
    assert "2 value(s) are not numbers and are read as missing" in caplog.text and "line 2 '1e200'" in caplog.text


def test_an_unknown_column_of_a_wide_table_lists_only_its_first_names():
    names = [f"x{i}" for i in range(4096)]
    assert tables.no_such_column("weight", names) == (
        f"no column 'weight' (its columns: {', '.join(names[:20])}, ... (4096 in all))"
    )
    assert tables.no_such_column("X17", names) == "no column 'X17' (did you mean 'x17'?)"


def test_more_shards_than_open_files_allowed_names_the_flag(tmp_path):
    """--shards 100000 said to set TMPDIR to a folder with room, for errno 24 (too many open files)."""
    import resource
    import subprocess
    import sys

    (tmp_path / "t.csv").write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(2000)))
    command = [sys.executable, "-m", "preprocessing", "--input", str(tmp_path / "t.csv"), "--shards", "1000"]

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    done = subprocess.run([*command, "--output", str(tmp_path / "out")], capture_output=True, text=True,
                          preexec_fn=few_files, timeout=300)  # fmt: skip
    assert done.returncode == 2 and "--shards: 1250 shards in all, more files than this system lets" in done.stderr
