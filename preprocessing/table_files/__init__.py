"""A table's files: which they are, how they are written, and their rows in blocks of text.

The formats, told by the file's suffix (compressed or not; a ZIP archive of one table file is read as that file, as
pandas reads one), each read by a module of its own:
- CSV in any dialect (`.csv`, `.tsv`, anything else; ARFF's `.arff`, CSV rows under a header of @attribute lines):
  sniffing.py reads its dialect from its first lines, delimited.py its rows; rewrites.py rewrites the lines of
  whitespace-separated, padded and commented files as they stream, number_text.py makes plain the numbers that
  spreadsheets and locales decorate;
- JSON lines (`.jsonl`, `.ndjson`, `.json`; a `.json` file may also hold one array of objects): json_objects.py;
- Parquet (`.parquet`) and Arrow's file format (`.feather`, `.arrow`: what pandas' to_feather and R's arrow package
  write): typed.py;
- spreadsheets (Excel's `.xlsx`, `.xlsm`, `.xls` and `.xlsb`, LibreOffice's `.ods`): workbooks.py;
- statistics packages' files (Stata's `.dta`, SPSS's `.sav` and `.por`, SAS's `.sas7bdat` and `.xpt`): packages.py;
- SQLite databases (`.sqlite`, `.sqlite3`, `.db`, `.db3`), a table of one: databases.py;
- `--source text`, a folder of texts with one sub-folder of `.txt` files per class, as Keras's
  text_dataset_from_directory reads: a table of two columns, TEXT_COLUMNS, a file a row: text_folders.py.
locate.py finds the files (folders, globs, partitioned datasets) and tells their format and compression; dialect.py
holds what the first file says of all of them (the Dialect); headers.py the rules for column names.

Whatever the format, a block is a RecordBatch of the table's columns as text (a missing value empty), with each
row's line (CSV: the record's first line; JSON: the line its object starts on; Parquet and Arrow: its row, from 1; a
workbook: its sheet's row; a text folder: the file's place among the folder's files, from 1), so that the rest of
preprocessing reads every format alike and errors name where a row is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from dataformat.errors import UserError
from dataformat.number_patterns import NUMBER
from preprocessing.table_files.databases import database_blocks, database_dialect
from preprocessing.table_files.delimited import csv_rows
from preprocessing.table_files.dialect import (
    Dialect,
    add_reading_flags,
    reading_options,
    with_model_partition_columns,
    with_partition_columns,
)
from preprocessing.table_files.json_objects import LateColumn, every_json_column, json_blocks, json_dialect
from preprocessing.table_files.locate import (
    COMPRESSION_RATIO,
    CSV,
    FORMAT_NAMES,
    JSON_LINES,
    OBJECTS,
    PACKAGE,
    SQLITE,
    SUFFIXES,
    TEXT_FOLDER,
    TYPED,
    WORKBOOK,
    encoding_of,
    file_format,
    input_files,
    input_root,
    is_table_input,
    plain_name,
    read_head,
    refuse_binary,
    table_name,
    text_bytes,
)
from preprocessing.table_files.number_text import iso_duration_text, plain_numbers
from preprocessing.table_files.packages import package_blocks, package_dialect
from preprocessing.table_files.sniffing import (
    WHITESPACE,
    arff_dialect,
    csv_dialect,
    line_naming,
    splits_none,
    table_below_notes,
    uneven_lines,
)
from preprocessing.table_files.text_folders import TEXT_COLUMNS, text_files, text_folder_blocks
from preprocessing.table_files.typed import typed_blocks, typed_dialect
from preprocessing.table_files.workbooks import forget_kept_sheet, workbook_blocks, workbook_dialect

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions

__all__ = [
    "COMPRESSION_RATIO",
    "CSV",
    "FORMAT_NAMES",
    "NUMBER",
    "OBJECTS",
    "SQLITE",
    "SUFFIXES",
    "TEXT_COLUMNS",
    "WHITESPACE",
    "WORKBOOK",
    "Dialect",
    "LateColumn",
    "add_reading_flags",
    "blocks",
    "dialect_of",
    "every_json_column",
    "file_format",
    "forget_kept_sheet",
    "input_files",
    "input_root",
    "is_table_input",
    "iso_duration_text",
    "line_naming",
    "reading_options",
    "splits_none",
    "table_below_notes",
    "text_bytes",
    "text_files",
    "uneven_lines",
    "with_model_partition_columns",
    "with_partition_columns",
]


def dialect_of(path: str, options: TableOptions, known: tuple[str, ...] = ()) -> Dialect:
    """The file's dialect, which its format's module reads: JSON lines, the keys of its first objects; Parquet and
    Arrow, their schema's fields; a workbook, its sheet's header; CSV, its delimiter and header (csv_dialect)."""
    if options.text_folder:
        return Dialect(TEXT_COLUMNS, False, "", options.encoding, TEXT_FOLDER)
    kind = file_format(path)
    label = () if re.fullmatch(r"[+-]?\d+", options.label_column) else (options.label_column,)  # not an index
    if kind == SQLITE:
        return database_dialect(path, options.sheet, (*known, *label))
    if options.sheet and kind != WORKBOOK:
        raise UserError(f"--sheet {options.sheet}: {path} is no spreadsheet nor database, and has no sheets or tables")
    if kind != WORKBOOK:
        _refuse_line_flags(path, kind, options)
    if kind in TYPED:
        return typed_dialect(path, kind, options.encoding)
    if kind == PACKAGE:
        return package_dialect(path, options.encoding)
    if kind == WORKBOOK:
        return workbook_dialect(path, options, (*known, *label))
    head = read_head(path, options.skip_rows + 4)  # the header and the lines under it (Orange's), Excel's sep= above
    refuse_binary(path, head, options.encoding)
    encoding = encoding_of(head, options.encoding)
    if kind == JSON_LINES:
        return json_dialect(path, head, encoding)  # JSON is UTF-8 unless --encoding or a byte-order mark says otherwise
    if _is_arff(path):
        return arff_dialect(path, encoding)
    return csv_dialect(path, head, encoding, options, known)


def _refuse_line_flags(path: str, kind: str, options: TableOptions) -> None:
    """--delimiter, --skip-rows and --column-names, which a file of lines of text takes: ignored silently for a file
    that names its own columns in another way (JSON lines' keys, Parquet's schema, a database's table)."""
    arff = _is_arff(path)
    if kind == CSV and not arff:
        return
    for flag, given in (("--delimiter", options.delimiter), ("--skip-rows", options.skip_rows),
                        ("--column-names", ",".join(options.column_names))):  # fmt: skip
        if given:
            raise UserError(f"{flag} {given}: {path} is no delimited text (it is {'ARFF' if arff else kind}), "
                            f"and names its columns itself; {flag} is for CSV files and spreadsheets")  # fmt: skip


def _is_arff(path: str) -> bool:
    """Whether the file is ARFF, which file_format reads as CSV (its rows are CSV under a header of its own)."""
    return plain_name(table_name(path)).endswith(".arff")


def blocks(
    path: str, dialect: Dialect, wanted: tuple[str, ...] = (), verbatim: str = "", every_column: bool = False
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """The file's rows in blocks, every value as text, each block with its rows' lines. A block holds at least
    the `wanted` columns (all when none are named); JSON lines, Parquet and Arrow convert only those, so that a
    column left out (--ignore-columns) may hold what a table cannot (nested values). The `verbatim` column (the key)
    keeps its text as written, decimal commas and all: it is handed back, never read as a number. With
    `every_column`, a JSON object with a value under a key that is none of the dialect's columns is a LateColumn."""
    if dialect.partitions:
        yield from _partitioned_blocks(path, dialect, wanted or dialect.names, verbatim, every_column)
    elif dialect.format == TEXT_FOLDER:
        yield from text_folder_blocks(path, dialect)
    elif dialect.format in TYPED:
        yield from typed_blocks(path, dialect, wanted or dialect.names)
    elif dialect.format == WORKBOOK:
        yield from workbook_blocks(path, dialect, wanted or dialect.names)
    elif dialect.format == PACKAGE:
        yield from package_blocks(path, wanted or dialect.names, dialect.encoding)
    elif dialect.format == SQLITE:
        yield from database_blocks(path, dialect, wanted or dialect.names)
    elif dialect.format in OBJECTS:
        yield from json_blocks(path, dialect, wanted or dialect.names, every_column, verbatim)
    else:
        for batch, lines in csv_rows(path, dialect):
            yield plain_numbers(batch, dialect.decimal, verbatim), lines


def _partitioned_blocks(
    path: str, dialect: Dialect, wanted: tuple[str, ...], verbatim: str, every_column: bool
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """A partitioned dataset's file's blocks, with the columns its folders give: their value in every row."""
    keys = {key for key, _ in dialect.partitions}
    inner = replace(dialect, names=tuple(name for name in dialect.names if name not in keys), partitions=())
    own = tuple(name for name in wanted if name not in keys)
    for batch, lines in blocks(path, inner, own, verbatim, every_column):
        for key, value in dialect.partitions:
            if key in wanted:
                batch = batch.append_column(key, pa.array([value] * batch.num_rows, pa.string()))  # missing: ""
        yield batch, lines
