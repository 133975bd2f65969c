"""Tables as JSON lines and Parquet, BigQuery's export formats, as one JSON array of objects, as many tools and
APIs write them, and as Arrow files (Feather), as dataframes save themselves: read with the same column rules as
CSV, locally and on gs://, into the same dataset."""

from __future__ import annotations

import contextlib
import gzip
import json
import lzma
import re
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from test_tables import read_rows

import preprocessing.table_files
from dataformat import tables
from dataformat.errors import UserError
from preprocessing.table_files import dialect_of, iso_duration_text
from preprocessing.tables import TableOptions, build_table_dataset

ROWS = 300


def frame(rows: int = ROWS) -> dict[str, list]:
    rng = np.random.default_rng(0)
    return {
        "age": [int(n) if i % 10 else None for i, n in enumerate(rng.integers(18, 80, rows))],
        "city": [["Lyon", "Nantes", "Lille"][i % 3] for i in range(rows)],
        "joined": [f"20{10 + i % 10}-0{1 + i % 9}-1{i % 10}" for i in range(rows)],
        "member": [bool(i % 2) for i in range(rows)],
        "label": ["yes" if i % 4 == 0 else "no" for i in range(rows)],
    }


def as_csv(columns: dict[str, list]) -> str:
    def text(value) -> str:
        return "" if value is None else ("true" if value is True else "false" if value is False else str(value))

    lines = [",".join(columns)] + [",".join(text(v) for v in row) for row in zip(*columns.values())]
    return "\n".join(lines) + "\n"


def build(tmp_path, source, name="out", **options):
    return build_table_dataset(str(source), str(tmp_path / name), TableOptions(label_column="label", **options))


def summary(metadata) -> dict[str, tuple]:
    """Each column's kind and format, and a categorical column's vocabulary (a date's depends on the split)."""
    return {
        c.name: (c.kind, sorted(c.vocabulary) if c.kind == tables.CATEGORICAL else (), c.date_format)
        for c in metadata.columns
    }


def every_row(folder, metadata) -> list:
    rows = []
    for split in ("train", "eval"):
        instances, labels = read_rows(folder, metadata, split)
        for instance, label in zip(instances, labels):
            values = sorted((name, None if value != value else value) for name, value in instance.items())  # NaN
            rows.append((values, metadata.class_names[label]))
    return sorted(rows, key=repr)


def test_json_lines_parquet_and_feather_make_the_dataset_csv_makes(tmp_path):
    """The same columns, kinds and rows (the split differs: a CSV's first row is its line 2, a JSON line's
    line 1, and the split hashes lines)."""
    columns = frame()
    (tmp_path / "t.csv").write_text(as_csv(columns))
    rows = [{key: value for key, value in zip(columns, row) if value is not None} for row in zip(*columns.values())]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress((tmp_path / "t.jsonl").read_bytes()))
    (tmp_path / "bom.jsonl").write_text("\ufeff" + (tmp_path / "t.jsonl").read_text())  # as Windows tools write it
    (tmp_path / "t.json").write_text(json.dumps(rows, indent=2))  # pandas' to_json(orient="records", indent=2)
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(json.dumps(rows).encode()))  # ... and all on one line
    pq.write_table(pa.table(columns), tmp_path / "t.parquet", row_group_size=100)
    feather.write_feather(pa.table(columns), tmp_path / "t.feather", chunksize=100)  # pandas' to_feather writes this
    with pa.ipc.new_file(tmp_path / "t.arrow", pa.table(columns).schema) as writer:  # Arrow's file format, written
        writer.write_table(pa.table(columns), max_chunksize=70)  # uncompressed and in other batches
    with pa.ipc.new_stream(tmp_path / "t.arrows", pa.table(columns).schema) as writer:  # its stream format (Polars')
        writer.write_table(pa.table(columns), max_chunksize=70)
    with zipfile.ZipFile(tmp_path / "t.zip", "w", zipfile.ZIP_DEFLATED) as archive:  # a Kaggle download
        archive.writestr("data/t.csv", as_csv(columns))
        archive.writestr("README.md", "# The table\n")  # beside it: only the table file is read
        archive.writestr("__MACOSX/data/._t.csv", b"\0\5\26\7")  # macOS's Archive Utility adds these
    with zipfile.ZipFile(tmp_path / "rows.zip", "w") as archive:  # its one file's suffix tells its format
        archive.write(tmp_path / "t.jsonl", "t.jsonl")
    with zipfile.ZipFile(tmp_path / "tabs.zip", "w") as archive:  # ... and its delimiter
        archive.writestr("t.tsv", as_csv(columns).replace(",", "\t"))
    from_csv = build(tmp_path, tmp_path / "t.csv", "csv")
    assert [c.kind for c in from_csv.columns] == [tables.NUMERIC, tables.CATEGORICAL, tables.DATE, tables.CATEGORICAL]
    expected = every_row(tmp_path / "csv", from_csv)
    for name in (
        "t.jsonl",
        "t.jsonl.gz",
        "bom.jsonl",
        "t.json",
        "t.json.gz",
        "t.parquet",
        "t.feather",
        "t.arrow",
        "t.arrows",
        "t.zip",
        "rows.zip",
        "tabs.zip",
    ):
        found = build(tmp_path, tmp_path / name, f"out-{name}")
        assert summary(found) == summary(from_csv), name
        assert every_row(tmp_path / f"out-{name}", found) == expected, name


def each_refused(folder, expected: dict[str, str]) -> None:
    """Each file of the folder named in `expected` stops the conversion with a UserError matching its pattern."""
    for name, error in expected.items():
        with pytest.raises(UserError, match=error):
            build(folder, folder / name, f"out-{name}")


@pytest.mark.parametrize("name", ["t.parquet", "t.feather"])
def test_a_wide_typed_file_is_read_in_blocks_of_bounded_values(tmp_path, monkeypatch, name):
    """A 4,096-column Parquet file of 32,768 rows, read 65,536 rows at a time, took 8.7 GB (1.8 GB now). An
    Arrow file's batch (pandas writes 65,536 rows) is cut to the same bound."""
    monkeypatch.setattr(preprocessing.table_files.typed, "PARQUET_CELLS", 1000)
    columns = frame()
    pq.write_table(pa.table(columns), tmp_path / "t.parquet")
    feather.write_feather(pa.table(columns), tmp_path / "t.feather")  # one batch of all 300 rows
    dialect = dialect_of(str(tmp_path / name), TableOptions(label_column="label"))
    found = list(preprocessing.table_files.blocks(str(tmp_path / name), dialect))
    assert [batch.num_rows for batch, _ in found] == [200, 100]  # 1,000 values of 5 columns
    assert np.array_equal(np.concatenate([lines for _, lines in found]), np.arange(1, ROWS + 1))
    assert found[1][0].column("city").to_pylist() == columns["city"][200:]


def test_a_file_that_is_not_its_suffixs_format_is_named(tmp_path):
    """A .parquet or .feather file that is none (a CSV renamed, a download cut short) stops in one line; a
    broken .parquet file stopped with pyarrow's traceback."""
    (tmp_path / "t.csv").write_text(as_csv(frame()))
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    (tmp_path / "t.feather").write_text(as_csv(frame()))
    feather.write_feather(pa.table(frame()), tmp_path / "whole.feather")
    (tmp_path / "cut.feather").write_bytes((tmp_path / "whole.feather").read_bytes()[:-100])
    (tmp_path / "t.feather.gz").write_bytes(gzip.compress((tmp_path / "whole.feather").read_bytes()))
    feather.write_feather(pa.table(frame()), tmp_path / "old.feather", version=1)  # the R feather package's
    table = pa.table({**frame(), "every": pa.array([(1, 2, 3)] * ROWS, pa.month_day_nano_interval())})
    feather.write_feather(table, tmp_path / "offsets.feather")  # pandas' DateOffset objects
    expected = {
        "t.parquet": r"t.parquet: cannot read as Parquet \(Parquet file size is 4 bytes",
        "t.feather": r"t.feather: cannot read as an Arrow \(Feather\) file \(",
        "cut.feather": r"cut.feather: cannot read as an Arrow \(Feather\) file",
        "t.feather.gz": r"t.feather.gz: decompress it first \(an Arrow \(Feather\) file compresses within the file\)",
        "old.feather": r"old.feather: a Feather version 1 file: write it again as version 2",
        "offsets.feather": r"column .every. holds values that have no text \(month_day_nano_interval\); tables",
    }
    each_refused(tmp_path, expected)


def test_a_zip_archive_that_holds_no_one_table_to_read_is_refused_in_one_line(tmp_path):
    def archive(name: str, files: dict[str, bytes]) -> None:
        with zipfile.ZipFile(tmp_path / name, "w") as written:
            for member, data in files.items():
                written.writestr(member, data)

    table = as_csv(frame()).encode()
    archive("kaggle.zip", {"train.csv": table, "test.csv": table, "sample_submission.csv": b"id,label\n"})
    archive("photos.zip", {"a.png": b"\x89PNG", "b.png": b"\x89PNG"})
    archive("t.parquet.zip", {"t.parquet": b"PAR1"})
    archive("inner.zip", {"t.csv.gz": gzip.compress(table)})
    archive(
        "sheet.zip", {"t.ods": b"PK\x03\x04" + b"\0" * 26 + b"mimetypeapplication/vnd.oasis.opendocument.spreadsheet"}
    )
    (tmp_path / "cut.zip").write_bytes((tmp_path / "kaggle.zip").read_bytes()[:100])  # a download cut short
    expected = {
        "kaggle.zip": r"kaggle.zip: the ZIP archive holds 3 table files \(train.csv, test.csv, sample_submission"
        r".csv\); unzip it and pass --input the one to read",
        "photos.zip": r"photos.zip: the ZIP archive holds no table file \(a.png, b.png\)$",
        "t.parquet.zip": r"t.parquet.zip: holds t.parquet, which is read only unzipped: unzip it and pass --input",
        "inner.zip": r"inner.zip: holds t.csv.gz, which is read only unzipped",
        "cut.zip": r"cut.zip: cannot read as a ZIP archive \(",
        "sheet.zip": r"sheet.zip: holds t.ods, which is read only unzipped: unzip it and pass --input t.ods$",
    }
    each_refused(tmp_path, expected)


def test_a_zipped_or_compressed_files_shards_are_planned_by_the_text_it_holds(tmp_path):
    """A ZIP archive's directory gives its member's size (a 78 MB click log zipped to 25 MB, planned as 4x that,
    got 5 training shards where the file itself got 4); a compressed file's is guessed at a ratio."""
    from preprocessing.table_files import COMPRESSION_RATIO, text_bytes

    text = as_csv(frame()).encode()
    (tmp_path / "t.csv").write_bytes(text)
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(text))
    with zipfile.ZipFile(tmp_path / "t.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("t.csv", text)
    assert text_bytes(str(tmp_path / "t.csv")) == text_bytes(str(tmp_path / "t.zip")) == len(text)
    assert text_bytes(str(tmp_path / "t.csv.gz")) == (tmp_path / "t.csv.gz").stat().st_size * COMPRESSION_RATIO


def test_a_folders_zip_archive_is_read_where_its_name_gives_its_tables_format(tmp_path, caplog):
    """A folder's bare .zip may hold anything (an image folder's download of its photos): it is left out, in a
    warning that names it; NAME.csv.zip is read."""
    from preprocessing.table_files import input_files

    (tmp_path / "a.csv").write_text(as_csv(frame()))
    for name in ("b.csv.zip", "photos.zip"):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            archive.writestr("b.csv", as_csv(frame()))
    assert sorted(input_files(str(tmp_path))) == [str(tmp_path / "a.csv"), str(tmp_path / "b.csv.zip")]
    assert "leaves out photos.zip: in a folder, a ZIP archive is read where its name gives" in caplog.text


def test_json_lines_take_numbers_and_text_in_one_column_and_name_a_bad_line(tmp_path):
    lines = [json.dumps({"count": 7 if i % 2 else "7", "label": "ab"[i % 2]}) for i in range(50)]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    assert build(tmp_path, tmp_path / "t.jsonl").columns[0].kind == tables.NUMERIC
    lines[20] = '{"count": 3, "label": '
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"t.jsonl: line 21 is no whole JSON object: JSON lines hold one object a line"):
        build(tmp_path, tmp_path / "t.jsonl", "bad")
    lines[20] = '{"count": 3,, "label": "a"}'
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"t.jsonl: line 21 is not JSON \(Expecting property name"):
        build(tmp_path, tmp_path / "t.jsonl", "bad")
    (tmp_path / "one.json").write_text(json.dumps({"rows": 50, "note": "a document, not a table"}, indent=2))
    with pytest.raises(UserError, match=r"one.json: line 1 is no whole JSON object"):  # it was "not JSON"
        build(tmp_path, tmp_path / "one.json", "one")
    lines[20] = '{"count": [{"n": 1}], "label": "a"}'
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"t.jsonl: line 21, column 'count': a list of lists or objects.*--ignore-colu"):
        build(tmp_path, tmp_path / "t.jsonl", "nested")


def test_json_keys_that_the_first_objects_lack_are_columns_too(tmp_path, monkeypatch, caplog):
    """Sparse JSON (a null left out, a field added later): a key first seen past the objects the columns were
    taken from, in the first file or a later one, gives the dataset that declaring it in the first object would."""
    monkeypatch.setattr(preprocessing.table_files.locate, "SNIFF_BYTES", 256)  # the columns: the first few objects'
    caplog.set_level("INFO")
    rows = [{"x": i % 7, "label": "ab"[i % 2]} for i in range(200)]
    for i in range(120, 200, 3):
        rows[i]["late"] = "pq"[i % 2]
    for i in range(150, 200, 4):
        rows[i]["later"] = i / 10
    (tmp_path / "sparse").mkdir()
    (tmp_path / "declared").mkdir()
    for folder, first in (("sparse", {}), ("declared", {"late": None, "later": None})):
        objects = [{**rows[0], **first}, *rows[1:100]]
        (tmp_path / folder / "a.jsonl").write_text("".join(json.dumps(row) + "\n" for row in objects))
        (tmp_path / folder / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows[100:]))
    metadata = build(tmp_path, tmp_path / "sparse", "from_sparse")
    assert "b.jsonl: line 21 has a column 'late' that the first objects lack: finding every object's" in caplog.text
    declared = build(tmp_path, tmp_path / "declared", "from_declared")
    assert [column.name for column in metadata.columns] == ["x", "late", "later"]
    assert metadata.columns == declared.columns
    assert every_row(tmp_path / "from_sparse", metadata) == every_row(tmp_path / "from_declared", declared)
    unlabeled = [json.dumps({"x": i}) + "\n" for i in range(50)]  # the label itself first seen past them
    (tmp_path / "late_label.jsonl").write_text("".join(unlabeled) + (tmp_path / "sparse" / "b.jsonl").read_text())
    assert build(tmp_path, tmp_path / "late_label.jsonl", "late_label").splits["train"].examples == 80


def test_a_json_array_is_read_a_piece_at_a_time_and_errors_name_an_objects_line(tmp_path, monkeypatch):
    # blocks of 256 bytes, objects cut anywhere
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 64)
    monkeypatch.setattr(preprocessing.table_files.locate, "BLOCK_BYTES_A_COLUMN", 1)
    rows = [{"n": i, "note": "x" * (i % 7), "label": "ab"[i % 2]} for i in range(100)]
    text = "\ufeff [\n" + ",\n".join(json.dumps(row, indent=1) for row in rows) + "\n]\n"  # 5 lines an object
    (tmp_path / "t.json").write_text(text)
    dialect = dialect_of(str(tmp_path / "t.json"), TableOptions(label_column="label"))
    assert dialect.names == ("n", "note", "label")
    found = list(preprocessing.table_files.blocks(str(tmp_path / "t.json"), dialect))
    assert len(found) > 10 and sum(batch.num_rows for batch, _ in found) == 100
    assert np.array_equal(np.concatenate([lines for _, lines in found]), np.arange(2, 502, 5))
    assert [value for batch, _ in found for value in batch.column("n").to_pylist()] == [str(i) for i in range(100)]
    broken = {
        text.replace('"b"\n},', '"b"\n}', 1): r"line 12: expected ',' or ']' after the array's object, found '\{'",
        text.replace('"n": 2,', '"n": [[2]],'): r"line 12, column 'n': a list of lists or objects",
        text.replace('"n": 2,', '"n": 2,,'): r"line 13 is not JSON \(Expecting property name",
        text[: text.rindex("]")]: r"the JSON array is not closed",
        text + "[]": r"line 503: more after the end of the JSON array",
        "[1, 2]": r"line 1 is not a JSON object of column values$",
        "[[1, 2], [3, 4]]": r"line 1 is not a JSON object of column values \(an array of values names no columns: ",
        "\n [ ]": r"t.json: an empty JSON array",
    }
    for wrong, error in broken.items():
        (tmp_path / "t.json").write_text(wrong)
        with pytest.raises(UserError, match=error):
            build(tmp_path, tmp_path / "t.json", "broken")


def test_pandas_to_json_in_each_orient_makes_the_dataset_json_lines_make(tmp_path, caplog, monkeypatch):
    """DataFrame.to_json() writes one object of the whole table (orient="columns" by default); its other orients too.
    Each reads as its rows, the index left out, as pandas' read_json reads it."""
    columns = frame()
    rows = [{key: value for key, value in zip(columns, row) if value is not None} for row in zip(*columns.values())]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    expected = every_row(tmp_path / "jsonl", build(tmp_path, tmp_path / "t.jsonl", "jsonl"))
    table = pd.DataFrame(columns)
    for orient in ("columns", "index", "split", "table"):
        table.to_json(tmp_path / f"{orient}.json", orient=orient)
    table.to_json(tmp_path / "indented.json.gz", indent=2)  # many lines, compressed
    named = table.set_index(pd.Index([f"user {i}" for i in range(ROWS)], name="user"))  # row labels of words
    named.to_json(tmp_path / "named_columns.json")
    named.to_json(tmp_path / "named_index.json", orient="index")
    caplog.set_level("INFO")
    for name, orient in {**{f"{orient}.json": orient for orient in ("columns", "index", "split", "table")},
                         "indented.json.gz": "columns", "named_columns.json": "columns",
                         "named_index.json": "index"}.items():  # fmt: skip
        metadata = build(tmp_path, tmp_path / name, f"from_{name}")
        assert every_row(tmp_path / f"from_{name}", metadata) == expected, name
        assert f"{name}: one JSON object of 300 rows, as pandas' to_json(orient={orient!r})" in caplog.text
    # An object that holds one array of objects: an API's response, GeoJSON's features (their properties by path).
    (tmp_path / "api.json").write_text(json.dumps({"data": rows, "count": ROWS, "next": None}))
    features = [{"type": "Feature", "properties": row} for row in rows]
    (tmp_path / "geo.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}, indent=1))
    assert every_row(tmp_path / "api", build(tmp_path, tmp_path / "api.json", "api")) == expected
    assert "api.json: one JSON object of 300 rows, the array of objects under 'data'" in caplog.text
    options = TableOptions(label_column="properties.label", ignore=("type",))
    geo = build_table_dataset(str(tmp_path / "geo.geojson"), str(tmp_path / "geo"), options)
    named = sorted(column.name for column in geo.columns)
    assert named == ["properties.age", "properties.city", "properties.joined", "properties.member"]
    others = {
        json.dumps({"a": rows, "b": rows}, indent=1): "an object of a table",  # two arrays: which is the table?
        json.dumps({"data": [1, 2]}, indent=1): "an object of a table",
        json.dumps({"schema": {}, "data": [1, 2]}, indent=1): r"line 1 is not a JSON object of column values$",
        json.dumps({"columns": ["a"], "data": [[1]], "extra": 1}, indent=1): "line 1 is no whole JSON object",
        '{"a": {"0": 1},\n "b": {"0": 2},,}': r"line 2 is not JSON \(Expecting property name",
        '{\n "a": 1\n}\n{\n "a": 2\n}\n': r"line 4: another JSON value after the object of many lines above it: JSON",
    }
    for text, error in others.items():
        (tmp_path / "other.json").write_text(text)
        with pytest.raises(UserError, match=error):
            build(tmp_path, tmp_path / "other.json", "other")
    # JSON lines of nested objects, each a line, stay JSON lines however table-like the first object is.
    nested = [{"age": {"years": i}, "label": {"class": "ab"[i % 2]}} for i in range(30)]
    (tmp_path / "nested.jsonl").write_text("".join(json.dumps(row) + "\n" for row in nested))
    dialect = dialect_of(str(tmp_path / "nested.jsonl"), TableOptions(label_column="label.class"))
    assert dialect.names == ("age.years", "label.class") and dialect.format == "jsonl"
    # One line of one record: a row (an instance to predict), not a table, though it holds objects or an array of them.
    instances = {
        "one.json": {"address": {"city": "Oslo"}, "job": {"title": "dev", "level": 2}},  # no table: other keys
        "one.jsonl": {"age": 3, "visits": [{"day": 1}, {"day": 2}]},  # .jsonl: JSON lines, whatever a line holds
    }
    for name, instance in instances.items():
        (tmp_path / name).write_text(json.dumps(instance) + "\n")
        assert dialect_of(str(tmp_path / name), TableOptions()).format == "jsonl", name
    # pandas' split of a frame of numbered columns, of two columns of one name; its table orient's key as text.
    split = {"columns": [0, 0, "label"], "data": [[i, i % 3, "ab"[i % 2]] for i in range(30)]}
    (tmp_path / "split.json").write_text(json.dumps(split))
    assert [column.name for column in build(tmp_path, tmp_path / "split.json", "split-numbered").columns] == [
        "0",
        "0.1",
    ]
    (tmp_path / "long.json").write_text(json.dumps({"columns": ["a", "label"], "data": [[1, "x"], [2, "y", 3]]}))
    with pytest.raises(UserError, match=r"long.json: row 2 has 3 values; \"columns\" names 2"):
        build(tmp_path, tmp_path / "long.json", "long")
    keyed = {"schema": {"fields": [], "primaryKey": "rid"}, "data": [{"rid": i, "d": i % 3, "label": "ab"[i % 2]}
                                                                       for i in range(30)]}  # fmt: skip
    (tmp_path / "keyed.json").write_text(json.dumps(keyed))
    assert [column.name for column in build(tmp_path, tmp_path / "keyed.json", "keyed").columns] == ["d"]
    (tmp_path / "empty.json").write_text(json.dumps({"columns": ["a", "label"], "data": []}))
    with pytest.raises(UserError, match=r"empty.json: a JSON table of no rows"):
        build(tmp_path, tmp_path / "empty.json", "empty")
    # pandas' to_json of a large frame is one line longer than the head read to tell the format.
    monkeypatch.setattr(preprocessing.table_files.locate, "SNIFF_BYTES", 512)
    monkeypatch.setattr(preprocessing.table_files.locate, "MAX_FIRST_LINE", 1024)
    assert every_row(tmp_path / "cut", build(tmp_path, tmp_path / "columns.json", "cut")) == expected
    # The one object of a table is read whole: up to a bound, beyond which JSON lines are the way.
    monkeypatch.setattr(preprocessing.table_files.json_objects, "MAX_DOCUMENT_BYTES", 1000)
    with pytest.raises(UserError, match=r"columns.json: one JSON object of more than 0 MiB, which is read whole; "):
        build(tmp_path, tmp_path / "columns.json", "big")


def test_an_sqlite_databases_table_makes_the_dataset_csv_makes(tmp_path, caplog):
    """A table of an SQLite database (Kaggle hands out some data so): the one whose columns name the label, or
    --table's; its rows in the table's order, NULL missing. It was refused ("export a table as CSV")."""
    import sqlite3

    columns = frame()
    (tmp_path / "t.csv").write_text(as_csv(columns))
    expected = every_row(tmp_path / "csv", build(tmp_path, tmp_path / "t.csv", "csv"))
    text = {**columns, "member": [str(value).lower() for value in columns["member"]]}  # SQLite has no booleans
    with contextlib.closing(sqlite3.connect(tmp_path / "t.db")) as database, database:
        database.execute("CREATE TABLE notes (note TEXT)")
        database.execute('CREATE TABLE "the members" (age INTEGER, city TEXT, joined TEXT, member TEXT, label TEXT)')
        database.executemany('INSERT INTO "the members" VALUES (?, ?, ?, ?, ?)', zip(*text.values()))
        database.executemany("INSERT INTO notes VALUES (?)", [("a note",)] * 3)
    caplog.set_level("INFO")
    found = build(tmp_path, tmp_path / "t.db", "db")
    assert every_row(tmp_path / "db", found) == expected
    assert "t.db: the database's table 'the members' holds the data (--table names another)" in caplog.text
    from trainer.prediction_inputs import table_rows  # qt-predict reads it as preprocessing does

    read = list(table_rows(str(tmp_path / "t.db"), "label", ("age", "city"), TableOptions()))
    assert read[1] == (f"{tmp_path / 't.db'}:2", {"age": str(columns["age"][1]), "city": "Nantes"})
    wrong = {
        "nope": r"t.db: the database has no table 'nope' \(--table\); its tables: 'notes', 'the members'",
        "notes": r"t.db: --label-column: no column 'label'",
    }
    for table, error in wrong.items():
        with pytest.raises(UserError, match=error):
            build(tmp_path, tmp_path / "t.db", f"wrong-{table}", sheet=table)
    with pytest.raises(UserError, match=r"t.db: the database holds 2 tables \('notes', 'the members'\): --table names"):
        build_table_dataset(str(tmp_path / "t.db"), str(tmp_path / "unnamed"), TableOptions(label_column="-1"))
    with contextlib.closing(sqlite3.connect(tmp_path / "blobs.db")) as database, database:
        database.execute("CREATE TABLE t (photo BLOB, code BLOB, label TEXT)")
        database.executemany(
            "INSERT INTO t VALUES (?, ?, ?)", [(b"\x89PNG\xff", b"A1", "ab"[i % 2]) for i in range(20)]
        )
    with pytest.raises(UserError, match=r"blobs.db: row 1, column 'photo' holds binary data \(a BLOB\), no value to"):
        build(tmp_path, tmp_path / "blobs.db", "blobs")
    assert build(tmp_path, tmp_path / "blobs.db", "text-blobs", ignore=("photo",)).columns[0].vocabulary == ("A1",)
    (tmp_path / "a#b 100%.db").write_bytes((tmp_path / "t.db").read_bytes())  # a name that a URI must encode
    with contextlib.closing(sqlite3.connect(tmp_path / "a#b 100%.db")) as database, database:
        database.execute("CREATE VIEW broken AS SELECT * FROM notes")
        database.execute("DROP TABLE notes")  # the view now names a table that is gone
    assert every_row(tmp_path / "odd", build(tmp_path, tmp_path / "a#b 100%.db", "odd")) == expected
    (tmp_path / "db.csv").write_bytes((tmp_path / "t.db").read_bytes())
    (tmp_path / "damaged.db").write_bytes((tmp_path / "t.db").read_bytes()[:4096])
    (tmp_path / "t.db.gz").write_bytes(gzip.compress((tmp_path / "t.db").read_bytes()))
    refused = {
        "db.csv": r"db.csv: an SQLite database: name it .sqlite to read it",
        "damaged.db": r"damaged.db: cannot read as an SQLite database \(",
        "t.db.gz": r"t.db.gz: decompress it first",
    }
    for name, error in refused.items():
        with pytest.raises(UserError, match=error):
            build(tmp_path, tmp_path / name, f"refused-{name}")


def test_a_records_fields_are_columns_named_by_their_path(tmp_path):
    """BigQuery's RECORD columns, as its JSON and Parquet exports nest them: {"geo": {"city": ..., "at": {"zip":
    ...}}} gives the columns geo.city and geo.at.zip, read as those of a flat table; a request may nest them too."""
    columns = frame()
    flat = [{key: value for key, value in zip(columns, row) if value is not None} for row in zip(*columns.values())]
    nested = [{"age": row.get("age"), "geo": {"city": row["city"], "at": {"joined": row["joined"]}},
               "member": row["member"], "label": row["label"]} for row in flat]  # fmt: skip
    (tmp_path / "flat.jsonl").write_text("".join(json.dumps(row) + "\n" for row in flat))
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in nested))
    (tmp_path / "t.json").write_text(json.dumps(nested))
    pq.write_table(pa.Table.from_pylist(nested), tmp_path / "t.parquet")
    feather.write_feather(pa.Table.from_pylist(nested), tmp_path / "t.feather")
    expected = build(tmp_path, tmp_path / "flat.jsonl", "flat")
    renamed = {"city": "geo.city", "joined": "geo.at.joined"}
    rows = [(sorted((renamed.get(key, key), value) for key, value in values), label)
            for values, label in every_row(tmp_path / "flat", expected)]  # fmt: skip
    rows = sorted(rows, key=repr)
    for name in ("t.jsonl", "t.json", "t.parquet", "t.feather"):
        found = build(tmp_path, tmp_path / name, f"out-{name}")
        assert summary(found) == {renamed.get(key, key): value for key, value in summary(expected).items()}, name
        assert every_row(tmp_path / f"out-{name}", found) == rows, name
    request = tables.instance_columns([nested[0], {"geo.city": "Lille"}], found.columns, ["0", "1"])
    assert list(request["geo.city"]) == [nested[0]["geo"]["city"], "Lille"]
    nested[5]["geo"] = None  # BigQuery's NULL record: its fields are missing, and it is no column of its own
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in nested))
    assert [column.name for column in build(tmp_path, tmp_path / "t.jsonl", "null").columns][:3] == [
        "age", "geo.city", "geo.at.joined"
    ]  # fmt: skip
    (tmp_path / "t.jsonl").write_text(json.dumps({"geo.city": "A", "geo": {"city": "B"}, "label": "a"}) + "\n")
    with pytest.raises(UserError, match=r"t.jsonl: line 1: 'geo.city' is both a key and a nested record's field"):
        build(tmp_path, tmp_path / "t.jsonl", "both")
    dotted = [{"year": 1988 + i % 3, "year.rep": f"{1988 + i % 3}:{i % 2}", "label": "ab"[i % 2]} for i in range(40)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(row) + "\n" for row in dotted))  # R's names, by pandas
    assert [column.name for column in build(tmp_path, tmp_path / "r.jsonl", "dotted").columns] == ["year", "year.rep"]


def test_a_stata_file_is_read_as_its_labels_and_types_say(tmp_path):
    """Stata's .dta, the economists' and social scientists' format, read with pandas' reader a chunk at a time: the
    dataset the same table makes as Parquet (labelled values as their labels, dates as dates, missing values
    missing); a value no label names as its number; what pandas leaves as numbers it warns of; a column left out is
    never read; a compressed one is told to be decompressed."""
    import pandas as pd

    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "region": pd.Categorical(rng.choice(["north", "south", "east"], ROWS)),
            "age": rng.integers(18, 80, ROWS).astype(np.int16),
            "income": np.where(rng.random(ROWS) < 0.1, np.nan, rng.normal(50, 10, ROWS)),
            "born": pd.Timestamp("1990-01-01") + pd.to_timedelta(rng.integers(0, 9000, ROWS), unit="D"),
            "label": rng.choice(["yes", "no"], ROWS),
        }
    )
    table.to_stata(tmp_path / "t.dta", write_index=False, convert_dates={"born": "td"})
    table.to_parquet(tmp_path / "t.parquet")
    stata, parquet = build(tmp_path, tmp_path / "t.dta", "stata"), build(tmp_path, tmp_path / "t.parquet", "parquet")
    assert summary(stata) == summary(parquet) and stata.columns[2].missing > 0
    assert [(c.name, c.kind) for c in stata.columns] == [
        ("region", "categorical"), ("age", "numeric"), ("income", "numeric"), ("born", "date")
    ]  # fmt: skip
    assert every_row(tmp_path / "stata", stata) == every_row(tmp_path / "parquet", parquet)
    codes = pd.DataFrame({"code": np.array([1, 2, 3] * 100, np.int32), "label": ["a", "b"] * 150})
    codes.to_stata(tmp_path / "codes.dta", write_index=False, value_labels={"code": {1: "low", 2: "mid"}})
    assert set(build(tmp_path, tmp_path / "codes.dta", "codes").columns[0].vocabulary) == {"low", "mid", "3"}
    table.to_stata(tmp_path / "tc.dta", write_index=False, convert_dates={"born": "tc"})
    (tmp_path / "ms.dta").write_bytes((tmp_path / "tc.dta").read_bytes().replace(b"%tc", b"%tC"))  # pandas reads only
    with pytest.warns(UserWarning, match="Encountered %tC format"):  # pandas' own warning, as it gives it
        ms = build(tmp_path, tmp_path / "ms.dta", "ms", ignore=("income",))
    assert [(c.name, c.kind) for c in ms.columns] == [
        ("region", "categorical"),
        ("age", "numeric"),
        ("born", "numeric"),
    ]
    (tmp_path / "t.dta.gz").write_bytes(gzip.compress((tmp_path / "t.dta").read_bytes()))
    with pytest.raises(UserError, match=r"t.dta.gz: decompress it first \(a Stata file is read as it is"):
        build(tmp_path, tmp_path / "t.dta.gz", "gz")


def test_spss_and_sas_files_are_read_as_their_labels_and_types_say(tmp_path):
    """SPSS's .sav and SAS's transport .xpt, read with pyreadstat a chunk at a time: the dataset the same table makes
    as Parquet, an SPSS value's label in place of its code (a value no label names as its number), --encoding where
    a file's strings are not in the encoding it states."""
    import pandas as pd
    import pyreadstat

    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "region": rng.choice(["north", "south", "east"], ROWS),
            "age": rng.integers(18, 80, ROWS).astype(np.float64),
            "income": np.where(rng.random(ROWS) < 0.1, np.nan, rng.normal(50, 10, ROWS).round(2)),
            "born": pd.Timestamp("1990-01-01") + pd.to_timedelta(rng.integers(0, 9000, ROWS), unit="D"),
            "label": rng.choice(["yes", "no"], ROWS),
        }
    )
    table.to_parquet(tmp_path / "t.parquet")
    pyreadstat.write_sav(table, tmp_path / "t.sav")
    pyreadstat.write_xport(table, tmp_path / "t.xpt")
    pyreadstat.write_por(table, tmp_path / "t.por")  # SPSS's portable file: its names in capitals
    parquet = build(tmp_path, tmp_path / "t.parquet", "parquet")
    for name in ("t.sav", "t.xpt", "t.por"):
        found = build_table_dataset(str(tmp_path / name), str(tmp_path / f"out-{name}"), TableOptions())  # label -1
        assert summary(found) == {column.upper() if name == "t.por" else column: kind
                                  for column, kind in summary(parquet).items()}, name  # fmt: skip
        rows = [([(column.lower(), value) for column, value in values], y)
                for values, y in every_row(tmp_path / f"out-{name}", found)]  # fmt: skip
        assert rows == every_row(tmp_path / "parquet", parquet), name
    latin = build_table_dataset(str(tmp_path / "t.por"), str(tmp_path / "por-latin"), TableOptions(encoding="latin-1"))
    assert every_row(tmp_path / "por-latin", latin) == every_row(tmp_path / "out-t.por", found)  # its own characters
    codes = pd.DataFrame({"code": [1.0, 2.0, 3.0] * 100, "label": ["a", "b"] * 150})
    pyreadstat.write_sav(codes, tmp_path / "codes.sav", variable_value_labels={"code": {1.0: "low", 2.0: "mid"}})
    assert set(build(tmp_path, tmp_path / "codes.sav", "codes").columns[0].vocabulary) == {"low", "mid", "3"}
    cities = pd.DataFrame({"city": ["café", "lyon"] * 40, "label": ["a", "b", "b", "a"] * 20})
    pyreadstat.write_sav(cities, tmp_path / "utf8.sav")  # then its strings in Latin-1, where it says UTF-8
    latin = (tmp_path / "utf8.sav").read_bytes().replace("café".encode(), "café ".encode("latin-1"))
    (tmp_path / "latin.sav").write_bytes(latin)
    assert build(tmp_path, tmp_path / "latin.sav", "latin", encoding="latin-1").columns[0].vocabulary == (
        "café",
        "lyon",
    )


def test_a_partitioned_datasets_folders_give_columns(tmp_path, monkeypatch):
    """Spark's, Hive's and pandas' partitioned datasets (city=Lyon/label=yes/part-0.parquet): the folders' values are
    columns of their files' rows, %-escapes read and Hive's null folder a missing value. Before, such a folder held
    "no table file", and a glob of its files lost the columns the folders give."""
    import pandas as pd

    columns = frame()
    columns["city"] = [None if i % 17 == 0 else city.replace("Nantes", "Nantes Nord") for i, city in
                       enumerate(columns["city"])]  # fmt: skip
    table = pd.DataFrame(columns)
    table.to_parquet(tmp_path / "t.parquet")
    table.to_parquet(tmp_path / "parts", partition_cols=["city", "label"])
    assert (tmp_path / "parts" / "city=Nantes%20Nord").is_dir() and (
        tmp_path / "parts" / "city=__HIVE_DEFAULT_PARTITION__"
    ).is_dir()
    whole = build(tmp_path, tmp_path / "t.parquet", "whole")
    found = build(tmp_path, tmp_path / "parts", "from-parts")
    assert [c.name for c in found.columns] == ["age", "joined", "member", "city"]  # the folders' columns last
    assert summary(found) == summary(whole)
    assert every_row(tmp_path / "from-parts", found) == every_row(tmp_path / "whole", whole)
    from trainer.prediction_inputs import table_rows  # qt-predict on one partition's file: its folders' values too

    part = next((tmp_path / "parts" / "city=Nantes%20Nord").glob("label=no/*.parquet"))
    read = list(table_rows(str(part), "label", ("age", "city"), TableOptions()))
    expected = [i for i, city in enumerate(columns["city"]) if city == "Nantes Nord" and columns["label"][i] == "no"]
    assert {row["city"] for _, row in read} == {"Nantes Nord"} and len(read) == len(expected)
    for region in ("north", "south"):  # a Hive table of text files, partitioned by region
        (tmp_path / "csv" / f"region={region}").mkdir(parents=True)
        (tmp_path / "csv" / f"region={region}" / "000000_0.csv").write_text(as_csv(frame()))
    found = build(tmp_path, tmp_path / "csv", "from-csv")
    assert found.columns[-1].name == "region" and set(found.columns[-1].vocabulary) == {"north", "south"}
    globbed = build(tmp_path, str(tmp_path / "parts" / "*" / "*" / "*.parquet"), "globbed")  # below the glob's folder
    assert every_row(tmp_path / "globbed", globbed) == every_row(tmp_path / "whole", whole)
    monkeypatch.chdir(tmp_path / "parts")  # a glob of no folder: below the working folder (was a ValueError)
    assert every_row(tmp_path / "relative", build(tmp_path, "*/*/*.parquet", "relative")) == every_row(
        tmp_path / "whole", whole
    )
    for folder in (tmp_path / "parts").glob("*/*"):  # partitions' folders that are links, as shared data may be
        (tmp_path / "linked" / folder.parent.name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "linked" / folder.parent.name / folder.name).symlink_to(folder, target_is_directory=True)
    linked = build(tmp_path, tmp_path / "linked", "from-links")
    assert every_row(tmp_path / "from-links", linked) == every_row(tmp_path / "whole", whole)
    table.drop(columns="label").to_parquet(tmp_path / "no-label", partition_cols=["city"])  # the default label: -1
    default = build_table_dataset(str(tmp_path / "no-label"), str(tmp_path / "default"), TableOptions())
    assert [c.name for c in default.columns] == ["age", "joined", "city"]  # member, the files' last, not city
    (tmp_path / "no-label" / "stray.parquet").write_bytes((tmp_path / "t.parquet").read_bytes())
    with pytest.raises(UserError, match=r"stray.parquet lies below no partition folder and .* below city=...: every"):
        build(tmp_path, tmp_path / "no-label", "stray")
    (tmp_path / "both" / "city=Lyon").mkdir(parents=True)
    table.to_parquet(tmp_path / "both" / "city=Lyon" / "part.parquet")  # a column of its own by the folder's name
    with pytest.raises(UserError, match=r"part.parquet: column 'city' is both in the file and in its folder's name"):
        build(tmp_path, tmp_path / "both", "both")


def tagged_rows(count: int = 300) -> list[dict]:
    """Rows of a list of tags (a few of 8, two words in one, nulls among them), whose tag "red" gives the label, and
    a list of integer IDs."""
    rng = np.random.default_rng(0)
    tags = np.array(["red", "green", "blue", "big", "small", "new york", "old", "shiny"])
    rows = []
    for i in range(count):
        chosen = [str(tag) for tag in rng.choice(tags, rng.integers(0, 4), replace=False)]
        rows.append({"tags": chosen, "ids": [i % 7, i % 11], "n": i, "label": "yes" if "red" in chosen else "no"})
    rows[3]["tags"], rows[4]["tags"] = None, ["red", None]
    return rows


def every_row_in_words(folder, metadata) -> list:
    """every_row, with a text column's word IDs as their words (the IDs follow each split's counts)."""
    words = {
        column.name: ["", "", *(folder / column.vocabulary_file).read_text().splitlines()]
        for column in metadata.columns
        if column.kind == tables.TEXT
    }
    return sorted(
        ([(name, [words[name][i] for i in value] if name in words else value) for name, value in values], label)
        for values, label in every_row(folder, metadata)
    )


def test_lists_are_text_columns_whose_words_are_their_elements(tmp_path):
    """BigQuery's REPEATED columns, as JSON lines and as Parquet: each list column is text, a row's elements its
    words, into the same dataset from both; a flag's kind wins; a list of fractions, lists or records is refused
    in one line naming the column; a request's list is read as the records' were."""
    rows = tagged_rows()
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    found = {}
    for name in ("t.jsonl", "t.parquet"):
        folder = tmp_path / f"out-{name}"
        metadata = build(tmp_path, tmp_path / name, folder.name)
        columns = {column.name: column for column in metadata.columns}
        assert [(column.name, column.kind) for column in metadata.columns] == [
            ("tags", tables.TEXT), ("ids", tables.TEXT), ("n", tables.NUMERIC)
        ]  # fmt: skip
        words = (folder / columns["tags"].vocabulary_file).read_text().split()
        assert {"red", "new", "york", "shiny"} <= set(words) and "new york" not in words
        assert sorted(set((folder / columns["ids"].vocabulary_file).read_text().split()), key=int) == [
            str(n) for n in range(11)
        ]
        found[name] = every_row_in_words(folder, metadata)
        request = tables.instance_columns([{"tags": ["Red", None, "big"]}], metadata.columns, ["row 1"])
        assert list(request["tags"]) == ["Red big"] and list(request["ids"]) == [""]
    assert found["t.jsonl"] == found["t.parquet"]
    assert build(tmp_path, tmp_path / "t.parquet", "flag", categorical=("ids",)).columns[1].kind == tables.CATEGORICAL
    with pytest.raises(
        UserError, match=r"row 1: column 'tags': a list that holds a decimal number \(0.5\); a column's list"
    ):
        tables.instance_columns([{"tags": ["red", 0.5]}], metadata.columns, ["row 1"])
    rows[40]["ids"] = [1.5, 2.0]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    refused = {
        "t.jsonl": r"t.jsonl: line 41, column 'ids': a list that holds a decimal number \(1.5\); a column's list",
        "t.parquet": r"t.parquet: column 'ids' holds lists of double; a column's list may hold text, integers",
    }
    for name, message in refused.items():
        with pytest.raises(UserError, match=message + r".*\(--ignore-columns ids leaves it out\)$"):
            build(tmp_path, tmp_path / name, f"refused-{name}")


def test_a_list_seen_late_a_null_list_over_elements_and_lists_that_teach_nothing(tmp_path, monkeypatch):
    """JSON whose first objects hold no list in a column reads every object's lists, as Parquet's type says; a null
    list whose offsets still span elements (a null record's list field) is missing; a label of lists, and lists of
    timestamps, are refused in one line; a cut .jsonl.xz names the file."""
    monkeypatch.setattr(preprocessing.table_files.locate, "SNIFF_BYTES", 256)  # the lists: the first few objects'
    rows = tagged_rows()
    for row in rows[:100]:
        row["tags"] = None
    (tmp_path / "late.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "late.parquet")
    for name in ("late.jsonl", "late.parquet"):
        assert build(tmp_path, tmp_path / name, f"out-{name}").columns[0].kind == tables.TEXT
    offsets, words = pa.array(np.arange(61, dtype=np.int32) * 2), pa.array([f"w{i % 9}" for i in range(120)])
    held = pa.ListArray.from_arrays(offsets, words, mask=pa.array([i % 3 == 0 for i in range(60)]))  # 2 words each
    feather.write_feather(pa.table({"tags": held, "label": ["a", "b"] * 30}), tmp_path / "held.feather")
    found = build(tmp_path, tmp_path / "held.feather", "held")  # it stopped: "boolean index did not match"
    assert found.splits["train"].examples + found.splits["eval"].examples == 60 and found.columns[0].missing > 0
    labels = pa.table({"n": list(range(60)), "label": [["a"], ["b", "c"]] * 30})
    pq.write_table(labels, tmp_path / "labels.parquet")
    with pytest.raises(UserError, match=r"labels.parquet: --label-column label holds lists; this trainer gives a row"):
        build(tmp_path, tmp_path / "labels.parquet", "labels")
    times = pa.table({"seen": [[np.datetime64("2024-01-01T10:00", "s")]] * 60, "label": ["a", "b"] * 30})
    pq.write_table(times, tmp_path / "times.parquet")
    with pytest.raises(UserError, match=r"times.parquet: column 'seen' holds lists of timestamp\["):
        build(tmp_path, tmp_path / "times.parquet", "times")
    compressed = lzma.compress((tmp_path / "late.jsonl").read_bytes())
    (tmp_path / "cut.jsonl.xz").write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(UserError, match=r"cut.jsonl.xz: cannot read \(xz: Compressed file ended"):
        build(tmp_path, tmp_path / "cut.jsonl.xz", "cut")


def test_a_nested_column_left_out_is_never_read(tmp_path):
    """BigQuery's exports hold RECORD and REPEATED columns: --ignore-columns leaves them unread (a record's
    name, all its fields)."""
    rows = [{"tags": [[i], [i + 1]], "where": {"x": i}, "n": i, "label": "ab"[i % 2]} for i in range(40)]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    feather.write_feather(pa.Table.from_pylist(rows), tmp_path / "t.feather")
    photos, names = [b"\xff\xd8\xff", b"\x89PNG"] * 20, [b"Lyon", b"Lille"] * 20
    with_bytes = pa.table({"photo": photos, "name": names, "label": ["a", "b", "b", "a"] * 10})
    pq.write_table(with_bytes, tmp_path / "bytes.parquet")  # "name": strings as older Spark writes them, as bytes
    with pytest.raises(UserError, match=r"bytes.parquet: column .photo. holds bytes that are not UTF-8 text \(binary"):
        build(tmp_path, tmp_path / "bytes.parquet", "bytes")  # was "cannot read as Parquet (Invalid UTF8 payload)"
    assert build(tmp_path, tmp_path / "bytes.parquet", "names", ignore=("photo",)).columns[0].vocabulary
    for name in ("t.jsonl", "t.parquet", "t.feather"):
        with pytest.raises(UserError, match=r"column 'tags'.*(list|nested).*\(--ignore-columns tags leaves it out\)"):
            build(tmp_path, tmp_path / name, f"refused-{name}")
        found = build(tmp_path, tmp_path / name, f"out-{name}", ignore=("tags", "where"))
        assert [column.name for column in found.columns] == ["n"]
    (tmp_path / "t.csv").write_text(
        "price,price.eur,n,label\n" + "".join(f"{i},{i},{i},{'ab'[i % 2]}\n" for i in range(40))
    )
    found = build(tmp_path, tmp_path / "t.csv", "csv", ignore=("price",))  # a column's name: only that column
    assert [column.name for column in found.columns] == ["price.eur", "n"]


def write_workbook(path, columns: dict[str, list], title_rows: int = 0) -> None:
    """The columns as an Excel sheet (dates as Excel dates), below `title_rows` of a title and empty rows."""
    import datetime

    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    for row in range(title_rows):
        sheet.append(["Members, exported 2024-05-01"] if row == 0 else [])
    sheet.append(list(columns))
    dates = {name for name in columns if name == "joined"}
    for row in zip(*columns.values()):
        sheet.append([datetime.date.fromisoformat(v) if name in dates else v for name, v in zip(columns, row)])
    book.save(path)


def test_an_excel_workbook_makes_the_dataset_csv_makes(tmp_path):
    """The sheet Excel opens on, below its title and empty rows; its cells' values (numbers, dates, booleans),
    never what their formats show. Before, a workbook was read as CSV: a garbled header."""
    columns = frame()
    (tmp_path / "t.csv").write_text(as_csv(columns))
    write_workbook(tmp_path / "t.xlsx", columns, title_rows=2)
    from_csv = build(tmp_path, tmp_path / "t.csv", "csv")
    found = build(tmp_path, tmp_path / "t.xlsx", "xlsx")
    assert summary(found) == summary(from_csv)
    assert every_row(tmp_path / "xlsx", found) == every_row(tmp_path / "csv", from_csv)
    from trainer.prediction_inputs import table_rows  # qt-predict reads a workbook as preprocessing does

    read = list(table_rows(str(tmp_path / "t.xlsx"), "label", ("age", "city"), TableOptions()))
    assert read[:2] == [(f"{tmp_path / 't.xlsx'}:4", {"age": "", "city": "Lyon"}),  # row 4: below title and header
                        (f"{tmp_path / 't.xlsx'}:5", {"age": str(columns["age"][1]), "city": "Nantes"})]  # fmt: skip
    import openpyxl  # a workbook that opens on its notes: the sheet whose header names the label holds the table

    book = openpyxl.load_workbook(tmp_path / "t.xlsx")
    notes = book.create_sheet("Notes", 0)
    notes.append(["age: in years; city: where the member lives"])
    book.active = notes
    book.save(tmp_path / "notes_first.xlsx")
    assert every_row(tmp_path / "notes", build(tmp_path, tmp_path / "notes_first.xlsx", "notes")) == every_row(
        tmp_path / "xlsx", found
    )
    assert list(table_rows(str(tmp_path / "notes_first.xlsx"), "label", ("age", "city"), TableOptions()))[1] == (
        f"{tmp_path / 'notes_first.xlsx'}:5",
        read[1][1],
    )
    book = openpyxl.Workbook()  # two tables, no label named: the sheet Excel opens on (workbook.xml's activeTab)
    book.active.append(["old", "label"])
    book.create_sheet("2024").append(["price", "size", "label"])
    for i in range(20):
        book.worksheets[0].append([i, "ab"[i % 2]])
        book.worksheets[1].append([i, i % 3, "ab"[i % 2]])
    book.active = 1
    book.save(tmp_path / "second.xlsx")
    assert [c.name for c in build_table_dataset(str(tmp_path / "second.xlsx"), str(tmp_path / "second"),
                                                TableOptions()).columns] == ["price", "size"]  # fmt: skip
    with zipfile.ZipFile(tmp_path / "t.xlsx") as source, zipfile.ZipFile(tmp_path / "cut.xlsx", "w") as copy:
        for item in source.infolist():  # the sheet's XML cut in half: its workbook opens, its rows do not read
            data = source.read(item.filename)
            copy.writestr(item, data[: len(data) // 2] if "worksheets/" in item.filename else data)
    with pytest.raises(UserError, match=r"cut.xlsx: sheet 'Sheet': cannot read as a spreadsheet \("):
        build(tmp_path, tmp_path / "cut.xlsx", "cut")
    (tmp_path / "bad.xlsx").write_bytes(b"PK\x03\x04" + bytes(100))  # a ZIP that is no workbook
    with pytest.raises(UserError, match="bad.xlsx: cannot read as a spreadsheet"):
        build(tmp_path, tmp_path / "bad.xlsx", "bad")


def test_a_sheet_is_loaded_once_a_conversion_and_never_for_another_workbook(tmp_path, monkeypatch):
    """calamine loads a whole sheet to read a row: planning's header and pass 1's rows share one load (0.85 s of a
    200,000-row sheet's 3.8 s), let go once its rows are read. A workbook rewritten at the same path is read anew."""
    import python_calamine

    loads = []

    class CountingWorkbook:  # calamine's own, its sheets' loads counted
        def __init__(self, book):
            self.book = book

        @staticmethod
        def from_filelike(file):
            return CountingWorkbook(real.from_filelike(file))

        def __getattr__(self, name):
            return getattr(self.book, name)

        def get_sheet_by_name(self, name):
            loads.append(name)
            return self.book.get_sheet_by_name(name)

    real = python_calamine.CalamineWorkbook
    monkeypatch.setattr(python_calamine, "CalamineWorkbook", CountingWorkbook)
    columns = frame()
    write_workbook(tmp_path / "t.xlsx", columns)
    dialect_of(str(tmp_path / "t.xlsx"), TableOptions(label_column="label"))  # a header read: the sheet kept
    columns["city"] = ["Paris"] * len(columns["city"])
    write_workbook(tmp_path / "t.xlsx", columns)  # another workbook at the same path
    metadata = build(tmp_path, tmp_path / "t.xlsx")
    assert next(c.vocabulary for c in metadata.columns if c.name == "city") == ("Paris",)
    assert loads == ["Sheet"] * 2  # the first workbook's, then the second's for its header and rows alike
    assert preprocessing.table_files.workbooks._loaded_sheet == {}
    with pytest.raises(UserError, match="no column 'nosuch'"):  # planning keeps it, then fails: let go
        build_table_dataset(str(tmp_path / "t.xlsx"), str(tmp_path / "failed"), TableOptions(label_column="nosuch"))
    assert preprocessing.table_files.workbooks._loaded_sheet == {}


def test_a_sheets_header_of_two_columns_of_one_name_reads_as_pandas_reads_it(tmp_path, caplog):
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["score", "age", "score", "label"])
    for i in range(30):
        book.active.append([i, 20 + i, i * 2, "ab"[i % 2]])
    book.save(tmp_path / "t.xlsx")
    assert [column.name for column in build(tmp_path, tmp_path / "t.xlsx").columns] == ["score", "age", "score.1"]
    assert "t.xlsx: row 1: two columns of one name; read column 3 ('score', as column 1) as 'score.1'" in caplog.text


def write_xls(path, columns: dict[str, list], title_rows: int = 0) -> None:
    """The columns as an Excel 97-2003 sheet after a sheet of notes, below a title: as old exports are written."""
    import datetime

    import xlwt

    book = xlwt.Workbook()
    book.add_sheet("Notes").write(0, 0, "age: in years")
    sheet = book.add_sheet("Members")
    sheet.write(0, 0, "Members, exported 2024-05-01")
    as_date = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for number, row in enumerate([list(columns), *zip(*columns.values())]):
        for column, (name, value) in enumerate(zip(columns, row)):
            if value is None:
                continue
            if name == "joined" and number:
                sheet.write(title_rows + number, column, datetime.date.fromisoformat(value), as_date)
            else:
                sheet.write(title_rows + number, column, value)
    book.save(str(path))


def test_xls_and_ods_workbooks_make_the_dataset_csv_makes(tmp_path, caplog):
    """Excel 97-2003's and LibreOffice's formats, read with python-calamine: the sheet whose header names the label
    (an .xls's first is its notes), its dates as dates. Before, both were refused ("save it as .xlsx")."""
    import pandas as pd

    columns = frame()
    (tmp_path / "t.csv").write_text(as_csv(columns))
    from_csv = build(tmp_path, tmp_path / "t.csv", "csv")
    write_xls(tmp_path / "t.xls", columns, title_rows=2)
    dated = {**columns, "joined": pd.to_datetime(columns["joined"])}
    pd.DataFrame(dated).to_excel(tmp_path / "t.ods", engine="odf", index=False)
    for name in ("t.xls", "t.ods"):
        found = build(tmp_path, tmp_path / name, f"out-{name}")
        assert summary(found) == summary(from_csv)
        assert every_row(tmp_path / f"out-{name}", found) == every_row(tmp_path / "csv", from_csv)
    from trainer.prediction_inputs import table_rows  # qt-predict reads them as preprocessing does

    read = list(table_rows(str(tmp_path / "t.xls"), "label", ("age", "joined"), TableOptions()))
    assert read[1] == (f"{tmp_path / 't.xls'}:5", {"age": str(columns["age"][1]), "joined": columns["joined"][1]})
    at = TableOptions(sheet="Members", skip_rows=2)  # its header's row, below the title and an empty row
    with pd.ExcelWriter(tmp_path / "two.ods", engine="odf") as writer:  # two tables; no label named
        pd.DataFrame({"old": range(20), "label": ["ab"[i % 2] for i in range(20)]}).to_excel(
            writer, sheet_name="old", index=False
        )
        pd.DataFrame(columns).to_excel(writer, sheet_name="new", index=False)
    with zipfile.ZipFile(tmp_path / "two.ods", "a") as archive:  # the view LibreOffice saves: it opens on "new"
        archive.writestr("settings.xml", '<office:document-settings><config:config-item config:name="ActiveTable" '
                         'config:type="string">new</config:config-item></office:document-settings>')  # fmt: skip
    opened = build_table_dataset(str(tmp_path / "two.ods"), str(tmp_path / "two"), TableOptions())
    assert summary(opened) == summary(from_csv)  # the sheet it opens on, not its first
    named = build_table_dataset(str(tmp_path / "t.xls"), str(tmp_path / "named"), at)
    assert every_row(tmp_path / "named", named) == every_row(tmp_path / "out-t.xls", found)  # label -1 is "label"
    # No label's name to find the header by: the row of one value above a row of more is a title, not the header.
    caplog.set_level("INFO")
    titled = build_table_dataset(str(tmp_path / "t.xls"), str(tmp_path / "titled"), TableOptions(sheet="Members"))
    assert every_row(tmp_path / "titled", titled) == every_row(tmp_path / "out-t.xls", found)
    import openpyxl  # --column-names: a sheet without a header, whose first row of one value is a row, no title

    book = openpyxl.Workbook()
    for i in range(30):
        book.active.append(["ab"[i % 2]] if i == 0 else ["ab"[i % 2], i, i % 3])
    book.save(tmp_path / "headless.xlsx")
    options = TableOptions(column_names=("label", "x", "y"), label_column="label")
    headless = build_table_dataset(str(tmp_path / "headless.xlsx"), str(tmp_path / "headless"), options)
    assert headless.splits["train"].examples + headless.splits["eval"].examples == 30
    assert "t.xls: its header is row 3, below a title ('Members, exported 2024-05-01'); --skip-rows 2" in caplog.text
    with pytest.raises(UserError, match=r"t.xls: no feature column is left .*; if another worksheet holds the tab"):
        build_table_dataset(str(tmp_path / "t.xls"), str(tmp_path / "notes"), TableOptions())  # its first: 1 column
    with pytest.raises(UserError, match=r"t.xls: the workbook has no worksheet 'members' \(--sheet\); its worksheets:"
                       r" 'Notes', 'Members'$"):  # fmt: skip
        build(tmp_path, tmp_path / "t.xls", "lower", sheet="members")
    (tmp_path / "report.xls").write_text(as_csv(columns).replace(",", "\t"))  # text, as web applications export
    assert every_row(tmp_path / "out-report", build(tmp_path, tmp_path / "report.xls", "out-report")) == every_row(
        tmp_path / "csv", from_csv
    )
    pages = {
        "page.xls": "<!DOCTYPE html>\n<html><table><tr><td>age</td></tr></table></html>\n",
        "bom.xls": "\ufeff<html><table></table></html>\n",
        "comment.xls": "<!-- saved -->\n<html></html>\n",
    }
    for name, page in pages.items():
        (tmp_path / name).write_text(page, encoding="utf-8")
        with pytest.raises(UserError, match=rf"{name}: a web page \(HTML\), not a table of text: save its table as"):
            build(tmp_path, tmp_path / name, name)
    (tmp_path / "2003.xls").write_text('<?xml version="1.0"?>\n<Workbook xmlns="urn:schemas-microsoft-com:office:'
                                       'spreadsheet">\n</Workbook>\n')  # fmt: skip
    with pytest.raises(UserError, match=r"2003.xls: an Excel 2003 XML spreadsheet: save it as .xlsx"):
        build(tmp_path, tmp_path / "2003.xls", "2003")
    with pytest.raises(UserError, match=r"--sheet Members: .*t.csv is no spreadsheet nor database, and has no sheets"):
        build(tmp_path, tmp_path / "t.csv", "sheet-of-csv", sheet="Members")
    (tmp_path / "bad.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))  # cut short
    with pytest.raises(UserError, match=r"bad.xls: cannot read as a spreadsheet \("):
        build(tmp_path, tmp_path / "bad.xls", "bad")


def test_a_workbooks_odd_sheets_are_read_whole_or_refused_in_one_line(tmp_path, caplog):
    """A size the sheet states wrongly (read-only openpyxl trusts it: pandas resets it too), a chart sheet Excel
    opens on, durations, a header that --label-column -1 must not be looked for in (it is an index), and a value
    in a column the header does not name."""
    import datetime

    import openpyxl
    import openpyxl.chart

    book = openpyxl.Workbook()
    book.active.title = "data"
    sheet = book.active
    sheet.append(["temp", datetime.datetime(2020, 1, 1), "waited", "label"])  # a date as a column's name
    for i in range(40):
        sheet.append([20 + i % 7, -1 if i % 2 else 1, datetime.timedelta(minutes=90 + i), "ab"[i % 3 == 0]])
    chart = openpyxl.chart.BarChart()
    chart.add_data(openpyxl.chart.Reference(sheet, min_col=1, min_row=1, max_row=41))
    book.create_chartsheet("chart").add_chart(chart)
    book.active = 1  # saved with its chart on show
    book.save(tmp_path / "t.xlsx")
    with zipfile.ZipFile(tmp_path / "t.xlsx") as source, zipfile.ZipFile(tmp_path / "small.xlsx", "w") as copy:
        for item in source.infolist():  # the sheet's stated size: A1:B3, where it holds A1:D41
            data = source.read(item.filename)
            copy.writestr(item, re.sub(rb'<dimension ref="[^"]+"/>', b'<dimension ref="A1:B3"/>', data))
    metadata = build_table_dataset(str(tmp_path / "small.xlsx"), str(tmp_path / "small"), TableOptions())  # label -1
    assert [(c.name, c.kind) for c in metadata.columns] == [("temp", "numeric"), ("2020-01-01", "numeric"),
                                                           ("waited", "numeric")]  # fmt: skip
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 40
    waited = sorted(row["waited"] for row in every_row_values(tmp_path / "small", metadata))
    assert waited[:2] == [5400.0, 5460.0]  # 1:30:00 and 1:31:00, in seconds
    sheet = openpyxl.load_workbook(tmp_path / "t.xlsx")["data"]
    sheet["F7"] = "checked"  # a note beside the table: left out, as a CSV export's unnamed column is
    sheet["F9"] = 12
    sheet.parent.save(tmp_path / "stray.xlsx")
    caplog.clear()
    stray = build_table_dataset(str(tmp_path / "stray.xlsx"), str(tmp_path / "stray"), TableOptions())  # label -1
    assert sorted(map(repr, every_row_values(tmp_path / "stray", stray))) == sorted(map(repr, every_row_values(
        tmp_path / "small", metadata)))  # fmt: skip
    told = "stray.xlsx: row 7 has a value in column 6 ('checked'), beyond the 4 columns its header names: values"
    assert caplog.text.count(told) == 1  # once, though both passes read the sheet
    sheet = openpyxl.Workbook().active  # a formula a library wrote and nothing calculated: no value to read
    sheet.append(["price", "total", "label"])
    for i in range(20):
        sheet.append([i, f"=A{i + 2}*2", "ab"[i % 2]])
    sheet.parent.save(tmp_path / "formulas.xlsx")
    assert [column.name for column in build(tmp_path, tmp_path / "formulas.xlsx", "formulas").columns] == ["price"]
    assert "('total') are missing in every row and are left out (a workbook's formulas read as" in caplog.text


def every_row_values(folder, metadata) -> list[dict]:
    return [instance for split in ("train", "eval") for instance in read_rows(folder, metadata, split)[0]]


def test_durations_are_their_seconds_from_pandas_csv_json_parquet_and_feather(tmp_path):
    """pandas' to_csv writes a Timedelta as '0 days 00:12:34', its to_json as ISO 8601's 'P0DT0H12M34S'; Parquet and
    Feather keep a duration in a unit."""
    seconds = [754.0, -10.0, 176400.5, 0.0] * 10
    written = ["0 days 00:12:34", "-1 days +23:59:50", "2 days 01:00:00.500000", "0 days 00:00:00"] * 10
    labels = ["ab"[i % 3 == 0] for i in range(40)]
    (tmp_path / "t.csv").write_text("waited,label\n" + "".join(f"{w},{y}\n" for w, y in zip(written, labels)))
    frame = pd.DataFrame({"waited": pd.to_timedelta(seconds, unit="s"), "label": labels})
    frame.to_json(tmp_path / "t.jsonl", orient="records", lines=True, date_format="iso")
    assert '"P-1DT23H59M50S"' in (tmp_path / "t.jsonl").read_text()
    # As web APIs give a video's length; "PT" alone (Portugal's code) and P1M (a month: no fixed length) stay text.
    iso = ["PT12M34S", "PT4M13S", "P1DT2H", "PT0.5S"] * 10
    (tmp_path / "iso.csv").write_text("length,label\n" + "".join(f"{w},{y}\n" for w, y in zip(iso, labels)))
    metadata = build(tmp_path, tmp_path / "iso.csv", "out-iso")
    assert sorted({row["length"] for row in every_row_values(tmp_path / "out-iso", metadata)}) == [0.5, 253, 754, 93600]
    (tmp_path / "pt.csv").write_text(
        "country,label\n" + "".join(f"{c},{y}\n" for c, y in zip(["PT", "P1M"] * 20, labels))
    )
    assert build(tmp_path, tmp_path / "pt.csv", "out-pt").columns[0].vocabulary == ("P1M", "PT")
    durations = pa.array([int(s * 1000) for s in seconds], pa.duration("ms"))
    pq.write_table(pa.table({"waited": durations, "label": labels}), tmp_path / "t.parquet")
    feather.write_feather(
        pa.table({"waited": durations.cast(pa.duration("us")), "label": labels}), tmp_path / "t.arrow"
    )
    for name in ("t.csv", "t.jsonl", "t.parquet", "t.arrow"):
        metadata = build(tmp_path, tmp_path / name, f"out-{name}")
        assert [(c.name, c.kind) for c in metadata.columns] == [("waited", "numeric")]
        assert sorted(row["waited"] for row in every_row_values(tmp_path / f"out-{name}", metadata)) == sorted(seconds)


def test_a_json_categorical_columns_durations_are_the_text_qt_predict_reads_them_as(tmp_path):
    """A JSON column of durations among other text is categorical, its durations' seconds in the vocabulary; qt-predict
    reads an instance's duration to the same text, so it meets its vocabulary entry."""
    lengths = ["PT4M13S", "P0DT0H0M0.5S", "short", "long"] * 20  # each value in 10 or more training rows
    labels = ["ab"[i % 3 == 0] for i in range(80)]
    rows = "".join(json.dumps({"length": length, "label": y}) + "\n" for length, y in zip(lengths, labels))
    (tmp_path / "t.jsonl").write_text(rows)
    (column,) = build(tmp_path, tmp_path / "t.jsonl", "out").columns
    assert column.kind == "categorical" and sorted(column.vocabulary) == ["0.5", "253", "long", "short"]
    assert [iso_duration_text(length) for length in lengths[:4]] == ["253", "0.5", None, None]
    assert iso_duration_text("PT") is None and iso_duration_text("P1M") is None


def test_a_typed_formats_text_is_as_written_only_csv_reads_numbers_as_spreadsheets_format_them(tmp_path):
    """CSV has no types, so "$1,234.56" there is a spreadsheet's formatted number; in JSON or Parquet the writer chose
    text, which stays text: "(1)" a footnote, not -1; "404,500,301" a list of codes, not 404500301."""
    labels = ["ab"[i % 3 == 0] for i in range(40)]
    rows = [{"price": f"${i * 1234.5:,.2f}", "note": "(1)", "label": y} for i, y in enumerate(labels)]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text(
        "price,note,label\n" + "".join(f'"{r["price"]}",{r["note"]},{r["label"]}\n' for r in rows)
    )
    for name in ("t.jsonl", "t.parquet"):
        metadata = build(tmp_path, tmp_path / name, f"out-{name}")
        assert [(c.name, c.kind) for c in metadata.columns] == [("price", "categorical"), ("note", "categorical")]
        assert metadata.columns[1].vocabulary == ("(1)",)
    metadata = build(tmp_path, tmp_path / "t.csv", "out-csv")
    assert [(c.name, c.kind) for c in metadata.columns] == [("price", "numeric"), ("note", "numeric")]
    assert {row["note"] for row in every_row_values(tmp_path / "out-csv", metadata)} == {-1}


def test_arff_files_are_csv_named_by_their_attributes(tmp_path):
    """Weka's and OpenML's format: it was read as CSV whose header was '% a comment' (one column)."""
    header = [
        "% the 1988 survey, as Weka writes it",
        "@RELATION survey",
        "",
        "@ATTRIBUTE age NUMERIC",
        "@attribute 'home town' STRING",
        '@attribute "score" real',
        "@attribute class {yes,no}",
        "@DATA",
    ]
    rows = [f"{20 + i},  'Town {i}, North',{i % 5 if i != 7 else '?'},{'yes' if i % 3 else 'no'}" for i in range(40)]
    rows[30] = "50,'Far',3,?"  # no label, on line 40
    rows[10:10] = ["% a comment between rows"]  # ARFF's comments: no rows, still lines
    (tmp_path / "s.arff").write_text("\n".join(header + rows) + "\n")
    for parse_bytes in (1 << 20, 64):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", parse_bytes)
            metadata = build_table_dataset(
                str(tmp_path / "s.arff"), str(tmp_path / "out"), TableOptions(), overwrite=True
            )
    assert [column.name for column in metadata.columns] == ["age", "home town", "score"]  # the last is the label
    assert metadata.class_names == ("no", "yes") and metadata.columns[2].kind == tables.NUMERIC
    rows_read = read_rows(tmp_path / "out", metadata, "train")[0] + read_rows(tmp_path / "out", metadata, "eval")[0]
    assert len(rows_read) == 39 and np.isnan([row["score"] for row in rows_read if row["age"] == 27]).all()  # "?"
    read = list(
        preprocessing.table_files.blocks(str(tmp_path / "s.arff"), dialect_of(str(tmp_path / "s.arff"), TableOptions()))
    )
    batch, lines = read[0]
    assert batch.column("home town")[0].as_py() == "Town 0, North" and lines[30] == 40  # padded, quoted
    (tmp_path / "sparse.arff").write_text(
        "@relation r\n@attribute a numeric\n@attribute b numeric\n@data\n{0 1, 1 2}\n"
    )
    with pytest.raises(UserError, match=r"sparse.arff: a sparse ARFF file"):
        dialect_of(str(tmp_path / "sparse.arff"), TableOptions())
    relational = "@relation r\n@attribute bag relational\n  @attribute x numeric\n@end bag\n@attribute c {a,b}\n@data\n"
    (tmp_path / "bags.arff").write_text(relational)
    with pytest.raises(
        UserError, match=r"bags.arff: line 2: a relational attribute \(multi-instance ARFF\) is not read"
    ):
        dialect_of(str(tmp_path / "bags.arff"), TableOptions())
    (tmp_path / "cut.arff").write_text("@relation r\n@attribute a numeric\n")
    with pytest.raises(UserError, match=r"cut.arff: an ARFF file without a line @data"):
        dialect_of(str(tmp_path / "cut.arff"), TableOptions())


@pytest.mark.parametrize("name", ["t.jsonl", "t.json"])
def test_a_value_nested_too_deeply_for_pythons_parser_is_named_by_its_line(tmp_path, name):
    """One line of 100,000 nested lists ended in RecursionError and a traceback, in qt-preprocess and qt-predict."""
    from trainer.predict import _read_request

    rows = [json.dumps({"x": i * 0.5, "label": "ab"[i % 2]}) for i in range(40)]
    deep = '{"x": ' + "[" * 100_000 + "]" * 100_000 + ', "label": "a"}'
    text = "\n".join([*rows[:3], deep, *rows[3:]]) if name.endswith("l") else "[" + ",\n".join([*rows, deep]) + "]"
    (tmp_path / name).write_text(text + "\n")
    with pytest.raises(UserError, match=r"line (4|41) is not JSON \(nested too deeply"):
        build(tmp_path, tmp_path / name)
    (tmp_path / "request.json").write_text('{"instances": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(UserError, match="not JSON .*nested too deeply"):
        _read_request(str(tmp_path / "request.json"))


def test_a_pipe_as_input_is_refused_in_one_line(tmp_path):
    """`--input /dev/stdin` (or a shell's <(zcat ...)) ended in io.UnsupportedOperation and a traceback: a table is
    read more than once, and a pipe only once."""
    import os

    os.mkfifo(tmp_path / "rows.csv")
    with pytest.raises(UserError, match=r"rows.csv: a pipe or device, not a file; a table is read more than once"):
        build(tmp_path, tmp_path / "rows.csv")


def test_a_named_pipe_without_a_writer_is_refused_and_not_waited_on(tmp_path, caplog):
    """qt-preprocess opened a .csv FIFO to see whether it was an image list, and so waited for a writer for good."""
    import os

    from preprocessing.cli import main as preprocess

    os.mkfifo(tmp_path / "rows.csv")
    assert preprocess(["--input", str(tmp_path / "rows.csv"), "--output", str(tmp_path / "out")]) == 2
    assert "rows.csv: a pipe or device, not a file" in caplog.text


def test_a_dataset_folder_given_as_input_is_named_a_dataset(tmp_path):
    """Its metadata.json was read as a JSON table: '--label-column vocabulary holds lists'."""
    (tmp_path / "t.csv").write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(40)))
    build(tmp_path, tmp_path / "t.csv")
    with pytest.raises(UserError, match=r"out: a dataset qt-preprocess wrote .*: train on it with qt-train --data-dir"):
        build(tmp_path, tmp_path / "out", name="again")


def test_an_output_that_is_the_input_folder_is_refused(tmp_path):
    """The dataset went among the tables it was read from, and the next run read its metadata.json as a table."""
    from preprocessing.cli import main as preprocess

    (tmp_path / "t.csv").write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(40)))
    assert preprocess(["--source", "csv", "--input", str(tmp_path), "--output", f"{tmp_path}/", "--overwrite"]) == 2
    assert not (tmp_path / "metadata.json").exists()
