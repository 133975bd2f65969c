"""A table's files: which they are, how they are written, and their rows in blocks of text.

The formats, told by the file's suffix (compressed or not: COMPRESSIONS; a ZIP archive of one table file is read
as that file, as pandas reads one): CSV in any dialect (`.csv`, `.tsv`,
anything else), JSON lines (`.jsonl`, `.ndjson`, `.json`; a `.json` file may also hold one array of
objects), Parquet (`.parquet`), Arrow's file format (`.feather`, `.arrow`: what pandas' to_feather and R's
arrow package write) and spreadsheets (Excel's `.xlsx`, `.xlsm`, `.xls` and `.xlsb`, LibreOffice's `.ods`), the export
formats of spreadsheets, dataframes, databases, APIs and BigQuery; ARFF (`.arff`, Weka's and OpenML's:
CSV rows under a header of @attribute lines, read as CSV named by them); and statistics packages' files
(Stata's `.dta`, SPSS's `.sav` and `.por`, SAS's `.sas7bdat` and `.xpt`).
Whatever the format, a block is a RecordBatch of the table's columns as text (a missing value empty),
with each row's line (CSV: the record's first line; JSON: the line its object starts on; Parquet and
Arrow: its row, from 1; a workbook: its sheet's row), so that the rest of preprocessing reads every format
alike and errors name where a row is.

Another, `--source text`, is a folder of texts with one sub-folder of `.txt` files per class, as
Keras's text_dataset_from_directory reads: a table of two columns, TEXT_COLUMNS, a file a row (its
"line" is its place among the folder's files, from 1).
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import csv
import datetime
import functools
import hashlib
import html
import importlib
import io
import itertools
import json
import logging
import lzma
import os
import posixpath
import re
import shutil
import tempfile
import urllib.parse
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from dataformat import commandline, gcs, storage, tables
from dataformat.errors import UserError
from preprocessing.sources import TEXT_SUFFIX

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions

log = logging.getLogger(__name__)

CSV, JSON_LINES, JSON_ARRAY, PARQUET, ARROW, WORKBOOK = "csv", "jsonl", "json array", "parquet", "arrow", "workbook"
PACKAGE = "package"  # a statistics package's file: Stata's, SPSS's, SAS's
SUFFIXES = {".csv": CSV, ".tsv": CSV, ".arff": CSV, ".jsonl": JSON_LINES, ".ndjson": JSON_LINES, ".json": JSON_LINES}
SUFFIXES.update({".parquet": PARQUET, ".feather": ARROW, ".arrow": ARROW, ".arrows": ARROW})
SUFFIXES.update({".xlsx": WORKBOOK, ".xlsm": WORKBOOK, ".xls": WORKBOOK, ".xlsb": WORKBOOK, ".ods": WORKBOOK})
XLSX = (".xlsx", ".xlsm")  # Office Open XML workbooks, which name the sheet they open on
ACTIVE_TAB = re.compile(rb"<(?:\w+:)?workbookView\b[^>]*\bactiveTab=\"(\d+)\"")  # in an .xlsx's workbook.xml
ACTIVE_TABLE = re.compile(rb"config:name=\"ActiveTable\"[^>]*>([^<]*)<")  # in an .ods file's settings.xml
WORKBOOK_MAGIC = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")  # a workbook's first bytes: a ZIP archive's, or OLE's (.xls)


HEAD_BYTES = 1 << 20  # a gs:// statistics package's file's bytes copied to read its names: its header and first row


class PackageFile(NamedTuple):
    """A statistics package's file that is read: what it is, and pyreadstat's reader of it ("": pandas' read_stata)."""

    what: str
    reader: str = ""
    labels: bool = False  # whether its values' labels are applied (SAS keeps its formats in a catalog file beside it)
    # A portable file (.por) translates its characters with a table of its own, so --encoding does not apply; and,
    # holding no count of its rows, it is read whole: pyreadstat reads each chunk of one from its start again.
    portable: bool = False
    named_first: bool = True  # whether its first bytes hold its columns' names (a .zsav's compressed ones do not read)


PACKAGE_FILES = {
    ".dta": PackageFile("a Stata file"),
    ".sav": PackageFile("an SPSS file", "read_sav", labels=True),
    ".zsav": PackageFile("an SPSS file", "read_sav", labels=True, named_first=False),
    ".por": PackageFile("an SPSS portable file", "read_por", labels=True, portable=True),
    ".sas7bdat": PackageFile("a SAS file", "read_sas7bdat"),
    ".xpt": PackageFile("a SAS transport file", "read_xport"),
}
SUFFIXES.update(dict.fromkeys(PACKAGE_FILES, PACKAGE))
TYPED = (PARQUET, ARROW)  # files of typed columns
OBJECTS = (JSON_LINES, JSON_ARRAY)  # files of JSON objects, read by key: any object may lack any column
TEXT_FOLDER = "text folder"
FORMAT_NAMES = {
    CSV: "CSV",
    JSON_LINES: "JSON lines",
    JSON_ARRAY: "a JSON array",
    PARQUET: "Parquet",
    ARROW: "an Arrow (Feather) file",
    WORKBOOK: "a spreadsheet",
    PACKAGE: "a statistics package's file",
    TEXT_FOLDER: "a folder of texts",
}
# A compressed file's suffix, and pyarrow's codec for it: gzip, bzip2 and Zstandard, as pandas' to_csv and
# command-line tools write them.
XZ = "xz"  # no codec of pyarrow's: Python's lzma reads it (XzFile)
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".xz": XZ}
COMPRESSION_RATIO = 4  # a compressed file's text is about this many times its size, for planning shards
ZIP = ".zip"  # an archive of one table, as Kaggle and many portals hand out a CSV: read as the one file it holds
NUMBERS = ".numbers"  # Apple's spreadsheets, which no library here reads: a ZIP archive too
# Files a folder holds beside its tables: Excel's lock file of an open workbook, macOS's resource forks.
HIDDEN_FILES = ("~$", "._")
PARTITION = re.compile(r"([^=/]+)=([^/]*)")  # a partitioned dataset's folder: key=value
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # the folder of a partition column's missing values
# The first bytes of files that are no table of text, and what to do instead.
NOT_TABLES = {
    b"PK\x03\x04": "a ZIP archive: name it .zip to read the one table it holds, or unzip it (an Excel workbook is "
    "read under its .xlsx, .xlsb or .ods name)",
    b"\xd0\xcf\x11\xe0": "an Excel 97-2003 workbook: name it .xls to read it",
    b"ARROW1": "an Arrow or Feather file: name it .feather (or .arrow) to read it as one",
    b"FEA1": "a Feather version 1 file: write it again as version 2 (pandas' to_feather) and name it .feather",
    b"SQLite format 3\x00": "an SQLite database: export a table as CSV (sqlite3 -csv -header db 'select ...')",
    b"\xfd7zXZ\x00": "an xz-compressed file: name it .xz to read it",
}
# The first bytes of a web page, in any case, after blanks: an HTML table saved under a table's name (a "report.xls"
# that web applications export, a download that was a login page).
HTML = re.compile(
    rb"(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*(?:<!doctype html|<html|<table\b)", re.IGNORECASE | re.DOTALL
)
# Excel 2003's XML spreadsheet (SpreadsheetML), which some applications still export under a .xls name.
SPREADSHEET_XML = re.compile(
    rb"(?:\xef\xbb\xbf)?\s*<\?xml[^>]*>\s*(?:<\?mso-application[^>]*>\s*)?<(?:\w+:)?Workbook\b"
)
# Other packages' own files, refused by suffix: what each is, and how to save it as a table that is read.
R_SAVED = "save the data frame as CSV (in R, write.csv(df, 'table.csv', row.names = FALSE))"
PANDAS_SAVED = "save it as CSV or Parquet (pandas.{}(path).to_parquet('table.parquet'))"
REFUSED_FILES = {
    (".rds",): f"an R object file: {R_SAVED}",
    (".rda", ".rdata"): f"an R workspace: {R_SAVED}",
    (".pkl", ".pickle"): "a Python pickle: " + PANDAS_SAVED.format("read_pickle"),
    (".h5", ".hdf5"): "an HDF5 file: " + PANDAS_SAVED.format("read_hdf"),
}
# A head with more control bytes (NUL, or any but tab, newline, form feed and carriage return) than this share is no
# text in an ASCII-based encoding. Random bytes hold 11%; the heads of gzip, pickle, NumPy, MATLAB, PNG and SPSS
# files at least 7% (the least of 600 here). Text may hold a few: Ecdat's HHSCyberSecurityBreaches, 1.1% of its
# bytes the SUB (\x1a) of apostrophes lost to an encoding, was refused at 1%.
BINARY_SHARE = 0.05
CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f]")
TEXT_COLUMNS = ("text", "label")  # a text folder's columns
TEXTS_A_BLOCK = 1024  # text files read into one block
READING_THREADS = 16  # text files read at once: on gs:// each is a request
# A row cut short at a carriage return: pandas' to_csv writes a text's lone \r unquoted (its lines end in \n), and
# every CSV reader (pyarrow's, pandas' own) ends a row there.
LONE_CR = (
    " (a carriage return, \\r, ends it inside a field that is not quoted, as pandas' to_csv writes a text that holds "
    "one: quote the field, or replace the \\r)"
)
BLANK_LINE = re.compile(rb"\n(?=\r?\n)")  # a newline that ends the line before a blank one
LONE_CR_BYTE = re.compile(rb"\r(?!\n)")
PARSE_BYTES = 2**20  # text parsed at a time; pyarrow's CSV reader reads up to 32 of these ahead
PARSES_A_BLOCK = 4  # parsed pieces counted and placed together, at least: fewer, larger steps for Python
# ... and more for a table of hundreds of columns, since Python's steps cost per block and column (4,096
# columns: 30 rows a MiB): a block takes this much text a column, up to MAX_BLOCK_BYTES.
BLOCK_BYTES_A_COLUMN = 16 * 1024
MAX_BLOCK_BYTES = 64 * PARSE_BYTES
DELIMITERS = ",;\t|"  # what delimiter sniffing chooses from
WHITESPACE = commandline.WHITESPACE  # fields apart by runs of spaces and tabs (tabbed), a tab-separated file once read
BACKSLASH, ESCAPED_QUOTE = "\\", '\\"'  # a quote escaped by a backslash (sniff_escape)
SNIFF_LINES = 50  # ... from this many lines at most
SHOWN_RENAMES = 3  # a header's renamed columns a warning names at most
HEADER_MARKS = " \t\ufeff"  # what a repeated header line may hold around a name: blanks, a byte-order mark
EXCEL_SEPARATOR = re.compile(r"sep=(.)\r?\n")  # a first line Excel reads (and writes) to say the delimiter: sep=;
NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"  # what a number looks like once written plainly
COMMA_NUMBER = r"(\s*[+-]?\d*),(\d+(?:[eE][+-]?\d+)?\s*)"  # a number with a decimal comma: 3,14 -0,5 1,5E+03
POINT_NUMBER = r"[+-]?\d*\.\d+(?:[eE][+-]?\d+)?"
THOUSANDS = r"[+-]?\d{1,3}(?:,\d{3}){2,}"  # 1,234,567: commas between thousands, so no decimal comma
POINT_THOUSANDS = r"[+-]?\d{1,3}(?:\.\d{3}){2,}"  # 1.234.567: points between thousands, so no decimal point
# 1.234, 12.345.678 or 1 234: points or spaces (French, Excel's no-break ones too) between thousands, beside a decimal
# comma.
GROUPED = "\\s*[+-]?[1-9]\\d{0,2}(?:(?:\\.\\d{3})+|(?:[\u00a0\u202f ]\\d{3})+)"
THOUSANDS_MARKS = "[.\u00a0\u202f ]"
# 1,234.56 or 12,345: commas between thousands beside a decimal point (US and UK spreadsheets' formatted cells,
# quoted in a comma-separated file), or India's lakhs and crores (1,00,000 or 12,34,567.89).
POINT_GROUPED = r"\s*[+-]?(?:[1-9]\d{0,2}(?:,\d{3})+|[1-9]\d?(?:,\d{2})+,\d{3})(?:\.\d+)?\s*"
# 1'234.56: apostrophes between thousands (Swiss spreadsheets' formatted cells, beside a decimal point).
APOSTROPHE_GROUPED = "\\s*[+-]?[1-9]\\d{0,2}(?:['\u2019]\\d{3})+(?:\\.\\d+)?\\s*"
CURRENCIES = "$\u20ac\u00a3\u00a5\u20b9"  # $ € £ ¥ ₹: what spreadsheets write before or after an amount
# The bytes that say a column may hold such symbols: single ones, found at memchr's speed (€ and ₹ start with E2,
# £ and ¥ with C2).
DECORATION_BYTES = (b"$", b"%", b"\xe2", b"\xc2")
# A number with a currency symbol before it, or one or a percent sign after it ($1,234.56, -$5, $-5, 1.234,56 €,
# 12.5%): the sign and the number (\1 and \2 or \3) are kept. A value without a symbol is left as it is.
NUMBER_TEXT = "([+-]?[\\d.][\\d.,\u00a0\u202f ]*?)"
DECORATED = (
    f"^\\s*([+-]?)\\s*(?:[{CURRENCIES}]\\s*{NUMBER_TEXT}\\s*[{CURRENCIES}%]?|{NUMBER_TEXT}\\s*[{CURRENCIES}%])\\s*$"
)
# A negative amount as accounting formats write it, in parentheses, a currency symbol inside or outside them:
# (1,234.56), ($5), $(5), (1.234,56 €). It becomes the number after a minus (-1,234.56, -$5, -$5, -1.234,56 €).
PARENTHESIZED = (
    f"^\\s*([{CURRENCIES}]?)\\s*\\(\\s*([{CURRENCIES}]?\\s*(?:\\d|\\.\\d)[\\d.,\u00a0\u202f '\u2019]*?"
    f"(?:\\s*[{CURRENCIES}%])?)\\s*\\)\\s*([{CURRENCIES}]?)\\s*$"
)
# A number after the minus sign U+2212 (as typeset tables, Wikipedia's among them, write negatives): its number,
# after a hyphen-minus. A text that starts with the sign stays as written.
MINUS_SIGN = "^\\s*\u2212\\s*([\\d.][\\d.,\u00a0\u202f '\u2019]*?(?:\\s*[%])?)\\s*$"
# Zero as accounting formats show it: a dash beside a currency symbol ($ -, - €). A dash alone stays as written.
ACCOUNTING_ZERO = f"^\\s*(?:[{CURRENCIES}]\\s*[-\u2013\u2014]|[-\u2013\u2014]\\s*[{CURRENCIES}])\\s*$"
# A duration as pandas' to_csv writes a Timedelta: 0 days 00:12:34, 2 days 01:00:00.5, -1 days +23:59:50 (-10 s).
PANDAS_DURATION = (
    r"^\s*(?P<days>[+-]?\d+) days? \+?(?P<hours>\d{1,2}):(?P<minutes>\d{2}):(?P<seconds>\d{2}(?:\.\d+)?)\s*$"
)
# An ISO 8601 duration of days and a time (P0DT0H12M34S, as pandas' to_json writes a Timedelta, P-1DT23H59M50S a
# negative one; PT4M13S, as web APIs give a video's length); one of months or years (P1M) has no fixed length, and
# stays as written.
ISO_DURATION = (
    r"^\s*P(?:(?P<days>[+-]?\d+)D)?T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?\s*$"
)
DURATION_PARTS = (86400.0, 3600.0, 60.0, 1.0)  # the seconds of a duration's days, hours, minutes and seconds
UNIT_SECONDS = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}  # Arrow's duration units, in a second
SNIFF_BYTES = 1 << 16  # the start of a file that its header and delimiter are read from ...
MAX_FIRST_LINE = 1 << 24  # ... or more, to the end of its first line (a 10,000-column header), up to this
MAX_PARSE_BYTES = 1 << 30  # the largest block a record may need (a field of up to about this size)
# The csv module, which sniffs the delimiter and reads the header, refuses fields over 128 KiB by default:
# a 10,000-column header split by a delimiter it does not hold is one such field.
csv.field_size_limit(MAX_PARSE_BYTES)
PARQUET_ROWS = 65_536  # rows of a Parquet or Arrow file converted to text at a time ...
PARQUET_CELLS = 1 << 23  # ... or fewer, to hold at most this many values (MAX_BLOCK_BYTES of 8-byte numbers)


def input_files(path: str) -> list[str]:
    """The table files of --input: a file, a glob, or a folder's files of the known suffixes, with those of its
    partitions' folders (year=2020/) where it is a partitioned dataset."""
    if any(char in path for char in "*?["):
        files = storage.matching(path)
        if not files:
            raise UserError(f"--input {path}: no file matches")
        _check_partitions(path, files, input_root(path))
        return files
    if storage.is_folder(path):
        listed = storage.list_names(path)
        names = _table_names(listed) + _files_in_partitions(path, listed)
        if not names:
            kinds = ", ".join(SUFFIXES)
            raise UserError(f"--input {path}: the folder holds no table file ({kinds}, compressed or not)")
        archives = [name for name in listed if _zipped(name) and name not in names]
        if archives:  # a ZIP archive may hold anything (the photos of an image folder): its name must say
            log.warning("--input %s: leaves out %s: in a folder, a ZIP archive is read where its name gives the "
                        "format of the table it holds (NAME.csv.zip)", path, _listed(archives))  # fmt: skip
        files = [storage.join(path, name) for name in names]
        _check_partitions(path, files, path)
        return files
    if not storage.exists(path):
        raise UserError(f"--input {path}: no such file")
    return [path]


def _files_in_partitions(folder: str, listed: list[str]) -> list[str]:
    """The table files, by their paths below `folder`, in its sub-folders of a partitioned dataset's (key=value,
    as Spark, Hive, BigQuery's exports and pandas' to_parquet(partition_cols=...) write them), at any depth. Each
    key=value folder is listed whole at once: on gs://, a request a thousand files, not one a folder."""
    found = []
    for name in filter(PARTITION.fullmatch, listed):
        for relative in storage.list_below(storage.join(folder, name)):
            *folders, file = relative.split("/")
            if all(map(PARTITION.fullmatch, folders)) and _table_names([file]):
                found.append(posixpath.join(name, relative))
    return found


def input_root(path: str) -> str:
    """The folder of --input that its files' keys and partitions are below: itself, a glob's folder before its
    first wildcard, or "" for one file."""
    if any(char in path for char in "*?["):
        return posixpath.dirname(path[: min(path.index(char) for char in "*?[" if char in path)]) or "."
    return path if storage.is_folder(path) else ""


def _check_partitions(path: str, files: list[str], root: str) -> None:
    """A UserError where the files lie below different partitions' keys (below `root`, as input_root gives it): a
    file beside the key=value folders, or below more or fewer of them than another (its rows would lack a column the
    others have)."""
    keys = {file: tuple(key for key, _ in _partitions_below(file, root)) for file in files}
    first, *others = files
    odd = next((file for file in others if keys[file] != keys[first]), None)
    if odd:
        where = {file: "/".join(f"{key}=..." for key in keys[file]) or "no partition folder" for file in (first, odd)}
        raise UserError(
            f"--input {path}: {first} lies below {where[first]} and {odd} below {where[odd]}: every file of a "
            "partitioned dataset lies below the same key=value folders"
        )


def with_partition_columns(dialect: Dialect, path: str, root: str) -> Dialect:
    """The file's dialect with the columns its partitions' folders give (below `root`, --input's folder), after
    its own."""
    if not root:
        return dialect
    partitions = _partitions_below(path, root)
    both = [key for key, _ in partitions if key in dialect.names]
    if both:
        raise UserError(f"{path}: column {both[0]!r} is both in the file and in its folder's name ({both[0]}=...)")
    return _with_columns_of(dialect, partitions)


def with_model_partition_columns(dialect: Dialect, path: str, names: tuple[str, ...]) -> Dialect:
    """For predictions: the file's dialect with the model's columns (`names`) that its header lacks and a folder of
    its path gives (region=north/), as the partitioned dataset the model was trained on gave them."""
    found = _partition_values(posixpath.dirname(path))
    return _with_columns_of(dialect, tuple(pair for pair in found if pair[0] in names and pair[0] not in dialect.names))


def _partitions_below(path: str, root: str) -> tuple[tuple[str, str], ...]:
    return _partition_values(posixpath.relpath(posixpath.dirname(path), root))


def _partition_values(folders: str) -> tuple[tuple[str, str], ...]:
    """The (column, value) of each key=value folder of a path, %-escapes read, Hive's __HIVE_DEFAULT_PARTITION__ a
    missing value."""
    pairs = [found.groups() for found in map(PARTITION.fullmatch, folders.split("/")) if found]
    unquote = urllib.parse.unquote
    return tuple((unquote(key), "" if value == HIVE_NULL else unquote(value)) for key, value in pairs)


def _with_columns_of(dialect: Dialect, partitions: tuple[tuple[str, str], ...]) -> Dialect:
    """The dialect with the partitions' columns after the file's own."""
    if not partitions:
        return dialect
    return replace(dialect, names=dialect.names + tuple(key for key, _ in partitions), partitions=partitions)


def _table_names(listed: list[str]) -> list[str]:
    """The names of a folder's table files (SUFFIXES, compressed or not), hidden ones left out."""
    return [name for name in listed if _stem(name).endswith(tuple(SUFFIXES)) and not name.startswith(HIDDEN_FILES)]


def is_table_input(path: str) -> bool:
    """Whether --input names table files: a table file, a glob, or a folder that holds table files (in its
    partitions' folders too)."""
    if any(char in path for char in "*?[") or _stem(path).endswith(tuple(SUFFIXES)) or _zipped(path):
        return True
    if not storage.is_folder(path):
        return False
    listed = storage.list_names(path)
    return bool(_table_names(listed) or _files_in_partitions(path, listed))


def file_format(path: str) -> str:
    """The file's format, told by its name; but a table of text under a workbook's name is CSV (a tab-separated
    report.xls, as many web applications export one)."""
    kind = _named_format(_table_name(path))
    return CSV if kind == WORKBOOK and not _head(path).startswith(WORKBOOK_MAGIC) else kind


def _table_name(path: str) -> str:
    """The name that tells the table file's format: its own, or a ZIP archive's member's."""
    return zip_member(path) if _zipped(path) else path


def _named_format(path: str) -> str:
    """The format that the file's name tells (CSV where it tells none)."""
    stem = _stem(path)
    return next((kind for suffix, kind in SUFFIXES.items() if stem.endswith(suffix)), CSV)


def compression(path: str) -> str:
    """pyarrow's codec of a compressed file (COMPRESSIONS), "zip" for a ZIP archive, "" for another."""
    if _zipped(path):
        return "zip"
    return next((codec for suffix, codec in COMPRESSIONS.items() if path.lower().endswith(suffix)), "")


def _zipped(path: str) -> bool:
    return path.lower().endswith(ZIP)


def _stem(path: str) -> str:
    """The file's name, lower case, without its compression's suffix."""
    name = posixpath.basename(path).lower()
    return posixpath.splitext(name)[0] if compression(name) else name


@functools.lru_cache(maxsize=64)
def zip_member(path: str) -> str:
    """The name of the one table file that the ZIP archive at `path` holds: its only file, or its only file of a
    table's suffix beside others (a readme); a UserError where it holds none or several (Kaggle's train.csv beside
    test.csv), or one of a format that needs seeking or is compressed again."""
    with storage.open_read(path) as file:
        try:
            with zipfile.ZipFile(file) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError) as error:
            raise UserError(f"{path}: cannot read as a ZIP archive ({error})") from None
    files = [name for name in names if not name.endswith("/") and not name.startswith("__MACOSX/")]
    files = [name for name in files if not posixpath.basename(name).startswith(HIDDEN_FILES)]
    tables = files if len(files) == 1 else [name for name in files if _stem(name).endswith(tuple(SUFFIXES))]
    if not tables:
        raise UserError(f"{path}: the ZIP archive holds no table file" + (f" ({_listed(files)})" if files else ""))
    if len(tables) > 1:
        raise UserError(
            f"{path}: the ZIP archive holds {len(tables)} table files ({_listed(tables)}); unzip it and pass --input "
            "the one to read"
        )
    member = tables[0]
    if _named_format(member) in (*TYPED, WORKBOOK, PACKAGE) or compression(member):
        raise UserError(f"{path}: holds {member}, which is read only unzipped: unzip it and pass --input {member}")
    return member


def text_bytes(path: str) -> int:
    """About how many bytes of text a table file holds, for planning shards: a ZIP archive's member's own size,
    which its directory gives; a compressed file's size times COMPRESSION_RATIO."""
    with storage.open_read(path) as file:
        if _zipped(path):
            with zipfile.ZipFile(file) as archive:
                return archive.getinfo(zip_member(path)).file_size
        size = file.seek(0, os.SEEK_END)
    return size * COMPRESSION_RATIO if compression(path) else size


def _listed(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


@contextlib.contextmanager
def _opened(path: str) -> Iterator[pa.NativeFile]:
    with storage.open_read(path) as file:
        if _zipped(path):
            with zipfile.ZipFile(file) as archive, archive.open(zip_member(path)) as member:
                yield pa.PythonFile(member, mode="r")
            return
        codec = compression(path)
        if codec == XZ:
            with XzFile(file) as text:
                yield pa.PythonFile(text, mode="r")
            return
        stream = pa.PythonFile(file, mode="r")
        yield pa.CompressedInputStream(stream, codec) if codec else stream


class XzFile(lzma.LZMAFile):
    """An xz-compressed file's bytes, whose errors (a cut or damaged file) are OSErrors, as pyarrow's codecs' are."""

    def read(self, size: int = -1) -> bytes:
        try:
            return super().read(size)
        except (lzma.LZMAError, EOFError) as error:
            raise OSError(f"xz: {error}") from None


@contextlib.contextmanager
def _opened_csv(path: str, dialect: Dialect) -> Iterator[pa.NativeFile]:
    """The CSV file's bytes as its rows are parsed: rewritten where its fields are apart by runs of blanks, are
    padded before their quotes, or lie among comment lines (Dialect.rewrite)."""
    with _opened(path) as stream:
        rewrite = dialect.rewrite
        yield pa.PythonFile(Rewritten(stream, rewrite), mode="r") if rewrite else stream


def _refuse_binary(path: str, head: bytes, encoding: str) -> None:
    """A UserError naming what the file is, where its name or first bytes say it is no table of text (a Stata
    file, an Excel workbook, an archive, other binary data): read as CSV, it would be a garbled header, or a
    table of one garbled column."""
    name = _table_name(path)  # a ZIP archive's member's
    what = next((what for suffixes, what in REFUSED_FILES.items() if _stem(name).endswith(suffixes)), "")
    what = what or next((what for magic, what in NOT_TABLES.items() if head.startswith(magic)), "")
    if HTML.match(head):
        what = "a web page (HTML), not a table of text: save its table as CSV (pandas.read_html reads one)"
    if SPREADSHEET_XML.match(head):
        what = "an Excel 2003 XML spreadsheet: save it as .xlsx (or the sheet as CSV)"
    if what and b"opendocument.spreadsheet" in head[:100]:
        what = "a LibreOffice spreadsheet: name it .ods to read it"
    if what and _stem(name).endswith(NUMBERS):
        what = "an Apple Numbers spreadsheet: export it as .xlsx or CSV (File > Export To)"
    wide_text = head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or not _ascii_based(encoding)
    if not what and not wide_text and len(CONTROL_BYTES.findall(head)) > BINARY_SHARE * len(head):
        what = "binary data, not a table of text (if it is UTF-16 text without a byte-order mark, pass --encoding)"
    if what:
        raise UserError(f"{path}: " + (f"holds {name}, " if name != path else "") + what)


@dataclass(frozen=True)
class Dialect:
    """How a table's files are written: found in the first file (or given by flags), shared by all."""

    names: tuple[str, ...]  # every column of the files
    has_header: bool
    delimiter: str  # CSV's
    encoding: str  # Python's name of it, as --encoding gives it (pyarrow transcodes from it)
    format: str = CSV
    decimal: str = "."  # CSV's numbers' decimal mark: "," in much of Europe's spreadsheets (3,14)
    skip_rows: int = 0  # CSV's lines before the header (--skip-rows): a report's title, an export's notes
    sheet: str = ""  # a workbook's sheet that holds the table, where it opens on another ("": that one)
    escape: str = ""  # CSV's: a backslash where it escapes quotes in quoted fields (sniff_escape)
    row_names: bool = False  # CSV's: its first column is row names, under a header one name short (_unnamed_column)
    spaced: bool = False  # CSV's: fields apart by runs of spaces and tabs, read as tab-separated (tabbed); delimiter \t
    padded: bool = False  # CSV's: blanks after a delimiter and before a quote, left out as the file is read (unpadded)
    quote: str = '"'  # CSV's quote character: ARFF's rows may quote with ' (arff_dialect)
    comment: str = ""  # CSV's: a line that starts with it is no row (ARFF's %), left out as the file is read
    lists: tuple[str, ...] = ()  # columns of lists (Parquet's and Arrow's by type, JSON's in the first objects)
    # A partitioned dataset's file's columns that its folders give, each with its value: (("year", "2020"),) for
    # year=2020/part-0.parquet. Last among `names`; the file itself lacks them.
    partitions: tuple[tuple[str, str], ...] = ()

    @property
    def rewrite(self) -> Callable[[bytes], bytes] | None:
        return line_rewrite(self.spaced, self.padded, self.delimiter, self.quote, self.comment, self.escape)

    @property
    def first_line(self) -> int:
        return self.skip_rows + (2 if self.has_header else 1)


def add_reading_flags(group) -> None:
    """The flags of how CSV files are written that every command reading tables takes (qt-preprocess and
    qt-predict): --delimiter, --skip-rows, --decimal, --encoding, --column-names and --sheet; reading_options gives
    their TableOptions fields."""
    group.add_argument(
        "--delimiter",
        type=commandline.delimiter,
        help="the character between fields, e.g. ';' or '\\t', or 'whitespace' for fields apart by runs of spaces "
        "and tabs, as R's read.table and pandas' sep=r'\\s+' read them (default: a tab for .tsv files that hold "
        "one, otherwise the one of comma, semicolon, tab and pipe that splits the first lines alike, else a space "
        "that does, else runs of whitespace; Excel's first line sep=; names it too)",
    )
    group.add_argument(
        "--skip-rows",
        type=commandline.non_negative_int,
        default=0,
        help="lines before a CSV file's header (or first row) to leave out: a report's title, an export's notes "
        "(default: 0)",
    )
    group.add_argument(
        "--decimal",
        choices=(".", ","),
        help="the numbers' decimal mark (default: ',' where the file is not comma-separated and its first lines "
        "hold numbers like 3,14 and none like 3.14, as spreadsheets write CSV in much of Europe; otherwise '.')",
    )
    group.add_argument(
        "--encoding",
        type=commandline.encoding,
        help="the files' text encoding, e.g. latin-1 or cp1252 (default: utf-8, or utf-16 or utf-32 for a CSV file "
        "that starts with its byte-order mark, as Excel's Unicode text does; a byte-order mark is skipped; "
        "qt-predict: the encoding the model's training files were read in)",
    )
    group.add_argument(
        "--column-names",
        type=commandline.names,
        default=(),
        metavar="A,B",
        help="names for the columns of files without a header line (default: the first line's names, or "
        "column_1, column_2, ... when it holds a number and no name of a column it must have: the label's, a "
        "model's)",
    )
    group.add_argument(
        "--sheet",
        default="",
        metavar="NAME",
        help="the worksheet of a spreadsheet (.xlsx, .xls, .ods, ...) that holds the table (default: the one whose "
        "header names --label-column, else the one it opens on: an .xlsx or .ods file's active sheet, an .xls file's "
        "first)",
    )


def reading_options(args, encoding: str = "utf-8") -> dict:
    """The TableOptions fields of add_reading_flags' flags; `encoding` where --encoding is not given."""
    return {
        "delimiter": args.delimiter or "",
        "skip_rows": args.skip_rows,
        "decimal": args.decimal or "",
        "encoding": args.encoding or encoding,
        "column_names": args.column_names,
        "sheet": args.sheet,
    }


def dialect_of(path: str, options: TableOptions, known: tuple[str, ...] = ()) -> Dialect:
    """The file's dialect. JSON lines: the keys of its first objects; Parquet and Arrow: their schema's fields. CSV:
    the delimiter (--delimiter; a tab for .tsv files that hold one; otherwise sniffed), and the column names:
    --column-names for a file without a header, else its first line, which is a header unless it holds a number and
    neither --label-column's name nor one of the `known` names (then the columns are named column_1,
    column_2, ...)."""
    if options.text_folder:
        return Dialect(TEXT_COLUMNS, False, "", options.encoding, TEXT_FOLDER)
    kind = file_format(path)
    if options.sheet and kind != WORKBOOK:
        raise UserError(f"--sheet {options.sheet}: {path} is no spreadsheet, and has no sheets")
    if kind in TYPED:
        with _typed_file(path, kind) as file:
            fields = _leaf_fields(file.schema_arrow if kind == PARQUET else file.schema)
        names = _distinct([name for name, _ in fields], path)
        lists = tuple(name for name, kind in fields if is_list_type(kind))
        return Dialect(names, False, "", options.encoding, kind, lists=lists)
    if kind == PACKAGE:
        return Dialect(_package_names(path, options.encoding), False, "", options.encoding, kind)
    if kind == WORKBOOK:
        label = () if re.fullmatch(r"[+-]?\d+", options.label_column) else (options.label_column,)  # not an index
        return _workbook_dialect(path, options, (*known, *label))
    head = _head(path, options.skip_rows + 2)  # the header, and a line above it: Excel's sep=
    _refuse_binary(path, head, options.encoding)
    encoding = options.encoding if kind == JSON_LINES else encoding_of(head, options.encoding)  # JSON is UTF-8
    if kind == JSON_LINES:  # the keys of the first objects, in the order they first appear
        text = head.decode(_without_bom(encoding), "replace")  # reading names a line that is not UTF-8
        if text.lstrip().startswith("["):
            pieces = _json_array_rows(path, encoding, PARSE_BYTES)
            kind, rows = JSON_ARRAY, next((rows for rows in pieces if rows), [])
        else:
            rows = [(number, _json_object(line, path, number)) for number, line in enumerate(_whole_lines(text), 1)]
        names, lists = json_columns(rows)
        if not names:
            raise UserError(f"{path}: empty file" if kind == JSON_LINES else f"{path}: an empty JSON array")
        return Dialect(names, False, "", encoding, kind, lists=lists)
    if _stem(_table_name(path)).endswith(".arff"):
        return arff_dialect(path, encoding)
    lines = _head_text(path, head, encoding).splitlines(keepends=True)[options.skip_rows :]
    text, blank = _below_blank_lines(lines)
    skip_rows = options.skip_rows + blank
    if excel := EXCEL_SEPARATOR.match(text):  # a line above the header that says the delimiter, as Excel reads it
        text, blank = _below_blank_lines(text[excel.end() :].splitlines(keepends=True))
        skip_rows += 1 + blank
    backslash = BACKSLASH if ESCAPED_QUOTE in text else ""  # the escape that sniffing quotes allows for
    if _marked_header(text, backslash):  # numpy's savetxt: "# a,b,label"
        text = text[1:].lstrip(" \t")
    tsv = _stem(_table_name(path)).endswith(".tsv") and "\t" in text  # a .tsv file of no tab is sniffed as any other
    delimiter = options.delimiter or (excel and excel.group(1)) or ("\t" if tsv else "")
    delimiter = delimiter or sniff_delimiter(text, backslash)
    spaced, padded = _padding(path, text, delimiter, encoding)
    if rewrite := line_rewrite(spaced, padded, delimiter):
        read_as = "\t" if spaced else delimiter
        rewritten = rewritten_text(text, rewrite)
        escape = sniff_escape(rewritten, read_as)  # then the rewrite passes over \" too
        text = rewritten_text(text, line_rewrite(spaced, padded, delimiter, escape=escape)) if escape else rewritten
        delimiter = read_as
    else:
        escape = sniff_escape(text, delimiter)
    decimal = options.decimal or sniff_decimal(text, delimiter)
    header = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, escapechar=escape or None)
    first = [name.strip() for name in next(header, [])]  # split at line breaks only (splitlines splits at \x85 too)
    if not first:
        raise UserError(f"{path}: empty file")
    named = options.label_column if _is_a_name(options.label_column, len(first)) else ""
    if options.column_names:
        if len(options.column_names) != len(first):
            raise UserError(
                f"{path}: --column-names names {len(options.column_names)} columns, and its first line has "
                f"{len(first)} (delimiter {delimiter!r})"
            )
        names, has_header = _distinct(options.column_names, "--column-names"), False
    elif _is_header(first, (*known, named), decimal):
        names, has_header = _header_names(first, f"{path}: line {skip_rows + 1}", _label_of(options, first)), True
        rows = _head_rows(text, delimiter, escape)
        unnamed = _unnamed_column(rows)  # a column without a name: left out
        names = ("", *names) if unnamed == "first" else (*names, "") if unnamed == "last" else names
        if _header_one_longer(rows):  # a delimiter after the header's last name only, as some exports write it
            names = names[:-1]
    else:
        names, has_header = tuple(f"column_{i + 1}" for i in range(len(first))), False
    row_names = has_header and not names[0] and len(names) > len(first)
    return Dialect(
        names,
        has_header,
        delimiter,
        encoding,
        CSV,
        decimal,
        skip_rows,
        escape=escape,
        row_names=row_names,
        spaced=spaced,
        padded=padded,
    )


ARFF_ATTRIBUTE = re.compile(r"""@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)\s*(.*)""", re.IGNORECASE)


def arff_dialect(path: str, encoding: str) -> Dialect:
    """An ARFF file's dialect: its columns named by its @attribute lines, its rows the CSV after @data (quoted
    with ' where its first rows are: Weka writes them so); `?`, its missing value, is one here too."""
    names, data_line = [], 0
    with _opened(path) as stream:
        lines = io.TextIOWrapper(stream, encoding=_without_bom(encoding), newline=None)
        for number, text in enumerate(lines, 1):
            text = text.strip()
            if text.lower().startswith("@data"):
                data_line = number
                break
            if attribute := ARFF_ATTRIBUTE.match(text):
                name = attribute[1]
                names.append(name[1:-1] if name[0] in "'\"" else name)
                if attribute[2].lower().startswith("relational"):
                    raise UserError(f"{path}: line {number}: a relational attribute (multi-instance ARFF) is not read")
        else:
            raise UserError(f"{path}: an ARFF file without a line @data")
        rows = [text.strip() for text in itertools.islice(lines, SNIFF_LINES) if not text.startswith("%")]
    if not names:
        raise UserError(f"{path}: an ARFF file without @attribute lines")
    if any(row.startswith("{") for row in rows):
        raise UserError(f"{path}: a sparse ARFF file ({{index value, ...}} rows); save it as dense ARFF or CSV")
    quote = "'" if any(re.search(r"(^|,)\s*'", row) for row in rows) else '"'
    padded = _padded_quote("\n".join(rows), ",", quote)
    names = _distinct(names, path)
    return Dialect(names, False, ",", encoding, CSV, skip_rows=data_line, padded=padded, quote=quote, comment="%")


def line_rewrite(
    spaced: bool, padded: bool, delimiter: str, quote: str = '"', comment: str = "", escape: str = ""
) -> Callable[[bytes], bytes] | None:
    """How a CSV file's lines are rewritten before pyarrow and the csv module parse them, if they are: comments
    left out, then its fields apart by blanks made tab-separated, or its padding before quotes left out (quoted
    fields passed over whole, with quotes escaped by `escape` inside)."""
    steps = [functools.partial(uncommented, mark=comment)] if comment else []
    if spaced:
        steps.append(functools.partial(tabbed, escape=escape))
    elif padded:
        steps.append(functools.partial(unpadded, delimiter=delimiter, quote=quote, escape=escape))
    return functools.partial(_in_turn, steps=tuple(steps)) if steps else None


def _in_turn(lines: bytes, steps: tuple[Callable[[bytes], bytes], ...]) -> bytes:
    for step in steps:
        lines = step(lines)
    return lines


def _padding(path: str, text: str, delimiter: str, encoding: str) -> tuple[bool, bool]:
    """Whether the file's fields are apart by runs of blanks (--delimiter whitespace, or sniffed so), and else
    whether blanks pad its fields after a delimiter and before a quote (`"a",   "b"`, as tables aligned by hand
    are): both are rewritten as the file is read (Dialect.rewrite), which takes a newline of one byte."""
    spaced = delimiter == WHITESPACE
    # Between tabs or spaces, a blank is an empty field: no padding is told there.
    padded = delimiter not in " \t" and _padded_quote(text, delimiter, '"')
    if spaced and not _ascii_based(encoding):
        raise UserError(
            f"{path}: fields apart by whitespace are read in UTF-8 and other ASCII-based encodings, not {encoding}; "
            "save the file as UTF-8"
        )
    return spaced, padded and _ascii_based(encoding)


def _padded_quote(text: str, delimiter: str, quote: str) -> bool:
    """Whether blanks pad a field after a delimiter and before its quote (`"a",   "b"`)."""
    return re.search(re.escape(delimiter) + "[ \t]+" + re.escape(quote), text) is not None


def _label_of(options: TableOptions, names: list[str]) -> str:
    """The name, in a header of `names`, of --label-column's column: named, or by its place (the last by default)."""
    return options.label_column if _is_a_name(options.label_column, len(names)) else names[int(options.label_column)]


def _is_a_name(label_column: str, width: int) -> bool:
    """Whether --label-column names a column rather than giving its index in a line of `width` fields (an
    index past the last is a name: a header of years, "1970,1971,...")."""
    try:
        return not -width <= int(label_column) < width
    except ValueError:
        return True


def _is_header(first: list[str], known: tuple[str, ...], decimal: str) -> bool:
    """Whether a file's first line names its columns: it holds no number of digits ("inf" names inflation in a
    header more often than it starts a row), one of its fields is a `known` column name (a header of years
    with the label's name, "2019,2020,label"), or it is pandas' names of unnamed columns."""
    if any(name in first for name in known if name) or _pandas_default_names(first):
        return True
    texts = _plain_number_texts(pa.array(first, pa.string()), decimal).to_pylist()
    return not any(tables.is_number(text) and re.search(r"\d", text) for text in texts)


def _pandas_default_names(first: list[str]) -> bool:
    """Whether a first line is the names pandas gives a frame's columns when none were given (a numpy array's
    frame written by to_csv): 0, 1, 2, ... after its index's empty name (",0,1"), or, without the index, from three
    columns on ("0,1,2"; "0,1" may well be a row)."""
    names = first[1:] if first[:1] == [""] else first if len(first) >= 3 else []
    return bool(names) and names == [str(number) for number in range(len(names))]


def _distinct(names, where: str) -> tuple[str, ...]:
    """The column names, each once: two columns of one name (in a flag, or a typed file's schema) are a UserError.
    Columns without a name may be many (a spreadsheet's empty columns after the last); they are left out."""
    seen: dict[str, int] = {}
    for number, name in enumerate(names, 1):
        if name and name in seen:
            raise UserError(f"{where}: columns {seen[name]} and {number} are both named {name!r}; rename one")
        seen[name] = number
    return tuple(names)


def _header_names(names, where: str, label: str = "") -> tuple[str, ...]:
    """A header line's or row's column names, each once: a name that an earlier column has gets ".1" (".2", ...)
    as pandas' read_csv and R's read.csv give it, said in one warning (ProPublica's COMPAS file names two columns
    decile_score and two priors_count; it was refused). A suffix is skipped where another column's name becomes the
    same in TensorFlow's signatures (tables.parameter_name: "a.1" and "a_1"). Two columns named as the `label` are
    a UserError (named, or by --label-column's place): the other may copy it, a feature that gives it away."""
    taken = {tables.parameter_name(name) for name in names if name}
    first: dict[str, int] = {}
    suffixes: dict[str, int] = {}  # the last suffix each repeated name took
    renamed, found = [], []
    for number, name in enumerate(names, 1):
        if name and name in first:
            if name == label:
                raise UserError(
                    f"{where}: columns {first[name]} and {number} are both named {name!r}, the label's name "
                    "(--label-column); rename one"
                )
            suffix = suffixes.get(name, 0) + 1
            while tables.parameter_name(f"{name}.{suffix}") in taken:
                suffix += 1
            suffixes[name] = suffix
            copy = f"{name}.{suffix}"
            taken.add(tables.parameter_name(copy))
            renamed.append(f"column {number} ({name!r}, as column {first[name]}) as {copy!r}")
            name = copy
        first.setdefault(name, number)
        found.append(name)
    if renamed:
        more = f", and {len(renamed) - SHOWN_RENAMES} more" if len(renamed) > SHOWN_RENAMES else ""
        log.warning("%s: two columns of one name; read %s%s", where, ", ".join(renamed[:SHOWN_RENAMES]), more)
    return tuple(found)


def _marked_header(text: str, escape: str) -> bool:
    """Whether the header is written after a comment mark, as numpy's savetxt writes it ("# a,b,label"; its
    loadtxt and genfromtxt read it so): the first line starts with '#', and without it the first lines split
    alike, where they did not with it or its first name is one word ("# of items,price" keeps its name)."""
    if not text.startswith("#"):
        return False
    bare = text[1:].lstrip(" \t")
    delimiter = sniff_delimiter(bare, escape)
    rows = _head_rows(bare, delimiter, escape)
    if len(rows) < 2 or len(rows[0]) < 2 or _rows_width(rows) != len(rows[0]):
        return False
    return " " not in rows[0][0].strip() or _rows_width(_head_rows(text, delimiter, escape)) != len(rows[0])


def sniff_decimal(text: str, delimiter: str) -> str:
    """The decimal mark of the numbers in a file's first lines: "," where some are written with a decimal
    comma, or with points between thousands twice or more (1.234.567: German integers), and none with a decimal
    point (Excel's CSV where the comma is the decimal mark: "3,14;blue"); only in files whose delimiter is not the
    comma."""
    if delimiter == ",":
        return "."
    rows = csv.reader(io.StringIO("\n".join(_whole_lines(text))), delimiter=delimiter)
    fields = _undecorated(pa.array([field.strip() for row in rows for field in row], pa.string())).to_pylist()
    shown = f"{COMMA_NUMBER}|{GROUPED},\\d+"  # 3,14 and 1.234,5
    comma = any(re.fullmatch(shown, field, re.ASCII) or _point_thousands(field) for field in fields)
    point = any(_has_decimal_point(field) for field in fields)
    return "," if comma and not point and not any(re.fullmatch(THOUSANDS, field) for field in fields) else "."


def _point_thousands(field: str) -> bool:
    """Whether a field is an integer with points between thousands twice or more (1.234.567), which no decimal point
    writes; not an IPv4 address (10.134.245.116: four parts of at most 255)."""
    if not re.fullmatch(POINT_THOUSANDS, field, re.ASCII):
        return False
    parts = field.lstrip("+-").split(".")
    return len(parts) != 4 or any(int(part) > 255 for part in parts)


def _has_decimal_point(field: str) -> bool:
    """Whether a field is a number with a decimal point: 0.5, 1,234.5; not 1.234, which may be a thousand and more
    beside decimal commas."""
    if re.fullmatch(POINT_GROUPED, field):
        return "." in field
    return bool(re.fullmatch(POINT_NUMBER, field, re.ASCII)) and not re.fullmatch(GROUPED, field)


def _below_blank_lines(lines: list[str]) -> tuple[str, int]:
    """The text of `lines` from the first that is not blank, and the number of blank lines above it."""
    blank = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return "".join(lines[blank:]), blank


def line_naming(path: str, encoding: str, name: str) -> int:
    """The first of the file's first lines that holds `name` as a field (in any delimiter), or 0: where a
    header sits below a report's title lines."""
    for number, line in enumerate(_first_lines(path, encoding), 1):
        if name in (field.strip().strip('"') for field in re.split(f"[{re.escape(DELIMITERS)}]", line)):
            return number
    return 0


def table_below_notes(path: str, encoding: str, after: int = 0) -> str:
    """The hint at a table that starts below line `after` under notes (_line_of_columns), or ""."""
    below = _line_of_columns(path, encoding)
    if below <= after:
        return ""
    return f"line {below} starts a table: if the lines above are notes, pass --skip-rows {below - 1}"


def _line_of_columns(path: str, encoding: str) -> int:
    """The first of the file's first lines below its first from which the lines split alike into two or more
    fields, or 0: where a table sits below notes ("# exported by ..."), of which one at most (a header, over a
    ruler line) splits as wide as its rows (where more do, they are rows of a table whose lines split unevenly)."""
    lines = _first_lines(path, encoding)
    for number in range(2, len(lines)):
        if not lines[number - 1].strip():
            continue
        below = "\n".join(lines[number - 1 :]) + "\n"
        delimiter = sniff_delimiter(below)
        width = _rows_width(_head_rows(below, delimiter))
        if width > 1:
            above = _head_rows("\n".join(lines[: number - 1]) + "\n", delimiter)
            return number if sum(len(row) == width for row in above) <= 1 else 0  # one: a header above a ruler
    return 0


def uneven_lines(path: str, encoding: str) -> str:
    """Where no delimiter splits a file's first lines alike, which splits its first line into fields and the first
    line it splits otherwise ("at runs of whitespace, line 1 has 6 fields and line 2 has 7"), or "": a table
    printed in aligned columns with spaces inside its values, or a field with a delimiter that is not quoted."""
    numbered = [(number, line) for number, line in enumerate(_first_lines(path, encoding), 1) if line.strip()]
    head = "\n".join(line for _, line in numbered) + "\n"
    for delimiter, name in (*((d, repr(d)) for d in DELIMITERS), (WHITESPACE, "runs of whitespace")):
        widths = [len(row) for row in _head_rows(head, delimiter)]  # a row a line, blank lines left out
        other = next((i for i, width in enumerate(widths) if width != widths[0]), 0)
        if widths and widths[0] > 1 and other:
            first, line = numbered[0][0], numbered[other][0]  # the file's numbers of the lines
            return f"at {name}, line {first} has {widths[0]} fields and line {line} has {widths[other]}"
    return ""


def _first_lines(path: str, encoding: str) -> list[str]:
    """A CSV file's first SNIFF_LINES lines, as text (what cannot be decoded replaced), for hints in errors."""
    head = _head(path)
    return _whole_lines(head.decode(_without_bom(encoding_of(head, encoding)), "replace"))[:SNIFF_LINES]


def _whole_lines(text: str) -> list[str]:
    """The lines of a file's head, but its last where the head cut it off (one line at least)."""
    lines = text.splitlines()
    return lines if text.endswith(("\n", "\r")) else lines[:-1] or lines


def encoding_of(head: bytes, encoding: str) -> str:
    """`encoding`, but UTF-16 (or UTF-32) for a CSV file whose `head` begins with its byte-order mark, which no UTF-8
    file can: Excel's "Unicode text" export (tab-separated) is such a file."""
    if codecs.lookup(encoding).name != "utf-8":
        return encoding
    start = head[:4]
    if start in (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE):  # FF FE 00 00 starts UTF-32 before UTF-16
        return "utf-32"
    return "utf-16" if start[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else encoding


def _without_bom(encoding: str) -> str:
    """The codec that reads `encoding` with a UTF-8 byte-order mark left out (spreadsheets write one)."""
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def _head_text(path: str, head: bytes, encoding: str) -> str:
    """A CSV file's `head` as text; a UserError naming the line where it is not text in `encoding` (decoded with
    replacements, its header became names no flag could name: "no column 'label' (its columns: caf\ufffd, ...)")."""
    try:  # incrementally: a character that the head's end cuts in two waits for bytes not read here
        return codecs.getincrementaldecoder(_without_bom(encoding))().decode(head)
    except UnicodeDecodeError:
        raise UserError(f"{path}: {_not_text(path, encoding)}") from None


def _head(path: str, lines: int = 1) -> bytes:
    """The file's first SNIFF_BYTES, or up to the end of its first `lines` lines where that is longer (the header
    of 10,000 columns, a JSON object of as many keys)."""
    try:
        with _opened(path) as stream:
            head = stream.read(SNIFF_BYTES)
            while max(head.count(b"\n"), head.count(b"\r")) < lines and len(head) < MAX_FIRST_LINE:
                if not (more := stream.read(len(head))):
                    break
                head += more
    except OSError as error:  # a file named .bz2 that is not bzip2, or a cut one
        raise _unreadable(path, error) from None
    return head


def _unreadable(path: str, error: OSError) -> UserError:
    """The line for a file whose bytes cannot be read: compressed and cut short or damaged, or not so compressed."""
    return UserError(f"{path}: cannot read ({str(error).splitlines()[0]})")


def sniff_escape(text: str, delimiter: str) -> str:
    """A backslash where the first lines hold a quote after one (\\") and split alike only where it escapes
    quotes, as MySQL's exports and PHP's fputcsv write them ("he said \\"hi\\""), not RFC 4180's doubled quotes;
    else "", as in a field that ends with a backslash ("C:\\temp\\")."""
    if ESCAPED_QUOTE not in text:
        return ""
    escaped, plain = (_rows_width(_head_rows(text, delimiter, escape)) for escape in (BACKSLASH, ""))
    return BACKSLASH if escaped > 1 and not plain else ""


def sniff_delimiter(text: str, escape: str = "") -> str:
    """The delimiter among DELIMITERS that splits the first lines into the same number of fields, the
    most of them (quoted fields read as the csv module reads them); else a space, where one does (as R's
    write.table and many scientific tables separate columns); else WHITESPACE, where runs of spaces and tabs do
    (columns aligned by padding, as UCI's .data files and R's read.table have them). Where none does, the same
    with a header one field short of the rows (_unnamed_column), then with a header one empty field longer
    (_header_one_longer); a comma when none splits them."""
    for header_shape in ("alike", "short", "longer"):
        best, widest = ",", 1
        for delimiter in (*DELIMITERS, " ", WHITESPACE):
            if delimiter in (" ", WHITESPACE) and widest > 1:  # spaces sit inside other delimiters' fields
                break
            width = _width(_head_rows(text, delimiter, escape), header_shape)
            if width > widest:
                best, widest = delimiter, width
        if widest > 1:
            return best
    return ","


def _width(rows: list[list[str]], header_shape: str) -> int:
    """The number of columns a header names (an empty last name is none) where the rows under it split as
    `header_shape` says, else 0."""
    if header_shape == "alike":
        return _rows_width(rows)
    if header_shape == "short":
        return len(rows[0]) if len(rows) > 1 and _rows_width(rows[1:]) == len(rows[0]) + 1 else 0
    return len(rows[0]) - 1 if _header_one_longer(rows) else 0


def _header_one_longer(rows: list[list[str]]) -> bool:
    """Whether the header ends in an empty field that the rows below it lack: a delimiter after its last name."""
    return len(rows) > 1 and len(rows[0]) > 2 and not rows[0][-1] and _rows_width(rows[1:]) == len(rows[0]) - 1


def _head_rows(text: str, delimiter: str, escape: str = "") -> list[list[str]]:
    """The whole rows of a file's head (its first SNIFF_LINES lines), blank lines left out: where those lines end
    inside a quoted field, its row is left out (cut at one of the field's line breaks, it would read short)."""
    head = "\n".join(_whole_lines(text)[:SNIFF_LINES])
    cut = (head.count('"') - (head.count(escape + '"') if escape else 0)) % 2 == 1  # an odd number of quotes
    if delimiter == WHITESPACE:
        head, delimiter = rewritten_text(head, tabbed), "\t"
    rows = [row for row in csv.reader(io.StringIO(head), delimiter=delimiter, escapechar=escape or None) if row]
    return rows[:-1] if cut and len(rows) > 1 else rows


def _rows_width(rows: list[list[str]]) -> int:
    """The number of fields in every row; 0 where they differ, or for no rows."""
    widths = {len(row) for row in rows}
    return widths.pop() if len(widths) == 1 else 0


def _unnamed_column(rows: list[list[str]]) -> str:
    """Where the rows after the header hold one field more than it names: "last" if that field is empty in
    every row (a delimiter after each row's last field), else "first": R's write.table writes its row names
    so, and R's read.csv and pandas read them back as row names. "" where the header names every field, or
    only one (a title, as likely)."""
    if len(rows) < 2 or len(rows[0]) < 2 or _rows_width(rows[1:]) != len(rows[0]) + 1:
        return ""
    if not any(row[-1] for row in rows[1:]):
        return "last"
    return "first" if len({row[0] for row in rows[1:]}) == len(rows) - 1 else ""  # row names are distinct


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
        yield from _text_folder_blocks(path, dialect)
    elif dialect.format in TYPED:
        yield from _typed_blocks(path, dialect, wanted or dialect.names)
    elif dialect.format == WORKBOOK:
        yield from _workbook_blocks(path, dialect, wanted or dialect.names)
    elif dialect.format == PACKAGE:
        yield from _package_blocks(path, wanted or dialect.names, dialect.encoding)
    elif dialect.format in OBJECTS:
        yield from _json_blocks(path, dialect, wanted or dialect.names, every_column, verbatim)
    else:
        for batch, lines in _csv_rows(path, dialect):
            yield _plain_numbers(batch, dialect.decimal, verbatim), lines


def _csv_rows(path: str, dialect: Dialect) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """A CSV file's blocks of rows, each with its lines; a line that repeats the header, or of only empty fields, is
    no row."""
    line, blank_lines, warned = dialect.first_line, [], False
    for batch in _csv_blocks(path, dialect, blank_lines):
        lines, line = record_lines(batch, line, blank_lines)
        repeats = _header_repeats(batch) if dialect.has_header else None
        if repeats is not None and not warned:
            log.warning(
                "%s: line %d repeats the header (files joined together?); lines that do are left out",
                path,
                lines[np.argmax(repeats)],
            )
            warned = True
        no_rows = [found for found in (repeats, _empty_rows(batch)) if found is not None]
        if no_rows:
            kept = ~np.logical_or.reduce(no_rows)
            batch, lines = batch.filter(pa.array(kept)), lines[kept]
        yield batch, lines


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


# CSV.


def _header_repeats(batch: pa.RecordBatch) -> np.ndarray | None:
    """Which rows repeat the header, each of the block's (two or more) columns holding its own name, as the
    files that `cat a.csv b.csv` joins give (a byte-order mark and blanks around a name allowed); None where
    none does."""
    named = [name for name in batch.schema.names if name]
    if len(named) < 2 or all(tables.is_number(name) for name in named):
        return None  # one column's value, or a row of numbers, may well be what the header says
    return _rows_where_all(
        pc.is_in(pc.utf8_trim(batch.column(name), HEADER_MARKS), _header_spellings(name, named)) for name in named
    )


def _header_spellings(name: str, names: list[str]) -> pa.Array:
    """How a header line may write column `name`, blanks and a byte-order mark around it aside: as it is, and where
    _header_names made it "x.1" of an earlier "x", as x."""
    base, dot, number = name.rpartition(".")
    spellings = [name, base] if dot and number.isdigit() and base in names else [name]
    return pa.array([spelling.strip(HEADER_MARKS) for spelling in spellings], pa.string())


def _empty_rows(batch: pa.RecordBatch) -> np.ndarray | None:
    """Which rows are only empty fields (`,,,`, as a spreadsheet exports the rows below a table that once held
    values): no rows, as blank lines are none, and as a workbook's empty rows are left out; None where none is."""
    return _rows_where_all(pc.equal(pc.binary_length(column), 0) for column in batch.columns)


def _rows_where_all(tested: Iterator[pa.Array]) -> np.ndarray | None:
    """Which rows every one of `tested` (a column's test, each computed only while a row is left) is true in; None
    where none is. The first column alone rules out most blocks."""
    found = None
    for test in tested:
        found = test if found is None else pc.and_(found, test)
        if not pc.any(found).as_py():
            return None
    return None if found is None else found.fill_null(False).to_numpy(zero_copy_only=False)


def _plain_numbers(batch: pa.RecordBatch, decimal: str, verbatim: str) -> pa.RecordBatch:
    """Every value that is a number as a spreadsheet formats it, written as the rest of preprocessing reads
    numbers: "1,234.56", "$1,234.56", "12.5%" and, where the decimal mark is a comma, "1.234,56 €" and "-3,14" as
    "1234.56", "1234.56", "12.5", "1234.56" and "-3.14"; other values, and the `verbatim` column's, as they are."""
    columns = [
        column if name == verbatim else _plain_number_texts(column, decimal)
        for name, column in zip(batch.schema.names, batch.columns)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _plain_number_texts(column: pa.Array, decimal: str) -> pa.Array:
    """One column of text as _plain_numbers writes it. Each step runs only where the column's bytes hold its marks:
    most columns hold none, and a regular expression over a million values costs a tenth of a second."""
    text = _column_bytes(column)
    plain = _plain_texts(column, text, decimal)
    if b"(" not in text:
        return plain
    # Accounting's negatives, (1,234.56), only where the value then reads as a number: "(1, 2)" stays as written.
    negated = _plain_texts(pc.replace_substring_regex(column, PARENTHESIZED, r"-\1\2\3"), text, decimal)
    read = pc.and_(pc.match_substring_regex(column, PARENTHESIZED), pc.match_substring_regex(negated, NUMBER))
    return pc.if_else(pc.fill_null(read, False), negated, plain)


def _column_bytes(column: pa.Array) -> bytes:
    """A text column's values' bytes, to look for marks in at memchr's speed: only its own where it is a slice of a
    larger array."""
    if not pa.types.is_string(column.type) or column.buffers()[2] is None:
        return b""
    _, offsets, data = column.buffers()
    start, end = np.frombuffer(offsets, np.int32)[[column.offset, column.offset + len(column)]]
    return data.slice(start, end - start).to_pybytes()


def _plain_texts(column: pa.Array, text: bytes, decimal: str) -> pa.Array:
    """_plain_number_texts but for accounting's parentheses; `text` is the column's bytes."""
    if any(mark in text for mark in DECORATION_BYTES):
        column = _undecorated(column)
    if b" day" in text:
        column = _durations(column, PANDAS_DURATION)
    if _has_iso_durations(text):
        column = _durations(column, ISO_DURATION)
    if decimal == ",":
        return _with_decimal_point(column)
    if b"'" in text or b"\xe2\x80\x99" in text:
        column = _without_apostrophes(column)
    return _without_thousands_commas(column) if b"," in text else column


def _has_iso_durations(text: bytes) -> bool:
    """Whether a column's bytes may hold an ISO 8601 duration: a T first, one memchr (most columns hold none)."""
    return b"T" in text and (b"PT" in text or b"DT" in text)


def _durations(column: pa.Array, pattern: str) -> pa.Array:
    """Durations that `pattern` matches (its groups: days, hours, minutes, seconds, each "" where a value lacks it) as
    their seconds, as a workbook's or a Parquet file's duration is: pandas' `0 days 00:12:34` (PANDAS_DURATION) and
    ISO 8601's `PT12M34S` (ISO_DURATION) as 754. A match of no part (a bare "PT", Portugal's code) stays as written."""
    parts = pc.extract_regex(column, pattern)  # null where a value is none
    if parts.null_count == len(parts):
        return column
    fields = [parts.field(i) for i in range(len(DURATION_PARTS))]
    given = functools.reduce(pc.or_, [pc.not_equal(field, "") for field in fields])
    numbers = (pc.cast(pc.if_else(pc.equal(field, ""), "0", field), pa.float64()) for field in fields)
    total = functools.reduce(pc.add, map(pc.multiply, numbers, DURATION_PARTS))
    read = pc.fill_null(pc.and_(parts.is_valid(), given), False)
    return pc.if_else(read, pc.cast(total, pa.string()), column)


def _without_apostrophes(column: pa.Array) -> pa.Array:
    """1'234.56 as 1234.56 (an apostrophe between digits is never a decimal mark); O'Brien as it is."""
    grouped = pc.match_substring_regex(column, f"^{APOSTROPHE_GROUPED}$")
    if not pc.any(grouped).as_py():
        return column
    return pc.if_else(grouped, pc.replace_substring_regex(column, "['\u2019]", ""), column)


def _undecorated(column: pa.Array) -> pa.Array:
    """$1,234.56 as 1,234.56, 12.5% as 12.5, $ - as 0 and −7.5 as -7.5: a number's currency symbol and percent
    sign left out, accounting's zero read, and the minus sign written as a hyphen-minus."""
    column = pc.replace_substring_regex(column, MINUS_SIGN, r"-\1")
    column = pc.replace_substring_regex(column, ACCOUNTING_ZERO, "0")
    return pc.replace_substring_regex(column, DECORATED, r"\1\2\3")


def _without_thousands_commas(column: pa.Array) -> pa.Array:
    """1,234.56 and 12,345 as 1234.56 and 12345 where the column's values show that their commas stand between
    thousands: more of them have two such commas (1,234,567) or a decimal point after them (1,234.5, or India's
    12,34,567.5) than read as numbers with a decimal comma (3,14 or 0,125, which a comma-separated file may quote).
    Else 1,250 may be either (1.25 in a German spreadsheet's export), and 10,20,300 a list: they stay as written."""
    grouped = pc.match_substring_regex(column, f"^{POINT_GROUPED}$")
    if not pc.any(grouped).as_py():
        return column
    shown = pc.and_(grouped, pc.match_substring_regex(column, r",\d{3},|\."))  # not 10,20,300: a list, maybe
    comma_numbers = pc.and_not(pc.match_substring_regex(column, f"^{COMMA_NUMBER}$"), grouped)
    if (pc.sum(shown).as_py() or 0) <= (pc.sum(comma_numbers).as_py() or 0):
        return column
    return pc.if_else(grouped, pc.replace_substring(column, ",", ""), column)


def _with_decimal_point(column: pa.Array) -> pa.Array:
    grouped = pc.match_substring_regex(column, f"^{GROUPED}(?:,\\d+)?\\s*$")
    if pc.any(grouped).as_py():
        column = pc.if_else(grouped, pc.replace_substring_regex(column, THOUSANDS_MARKS, ""), column)
    return pc.replace_substring_regex(column, f"^{COMMA_NUMBER}$", r"\1.\2")


def _csv_options(dialect: Dialect, block_size: int, threads: bool, on_invalid_row) -> dict:
    return {
        "read_options": pacsv.ReadOptions(
            column_names=list(dialect.names),
            skip_rows=dialect.skip_rows + (1 if dialect.has_header else 0),
            block_size=block_size,
            use_threads=threads,
            encoding=dialect.encoding,
        ),
        # Quoted fields may hold newlines (RFC 4180): addresses, comments.
        "parse_options": pacsv.ParseOptions(
            delimiter=dialect.delimiter,
            quote_char=dialect.quote,
            escape_char=dialect.escape or False,
            newlines_in_values=True,
            invalid_row_handler=on_invalid_row,
        ),
        "convert_options": pacsv.ConvertOptions(
            column_types={name: pa.string() for name in dialect.names}, strings_can_be_null=False
        ),
    }


def _csv_blocks(path: str, dialect: Dialect, blank_lines: list[int]) -> Iterator[pa.RecordBatch]:
    """A CSV file's rows in blocks; a row with another number of values than the header is a UserError
    naming its line. A record longer than a block (a field of megabytes), or skipped lines above the first
    longer than one, makes the file read again with blocks 8 times larger, from the record it stopped at. The
    file's blank lines (which pyarrow leaves out) are added to `blank_lines` before any block after them."""
    done, block_size = 0, PARSE_BYTES
    while True:
        try:
            for batch in _csv_blocks_of_size(path, dialect, block_size, done, blank_lines):
                done += batch.num_rows
                yield batch
            return
        except pa.ArrowInvalid as error:
            if "skip initial" in str(error) and _ends_above_rows(path, dialect):
                return  # a file of only its header, without a newline after it: no rows, as tables.py says
            if not re.search("straddl|skip initial", str(error)) or block_size >= MAX_PARSE_BYTES:
                raise UserError(f"{path}: cannot read as CSV ({str(error).splitlines()[0]})") from None
            block_size = min(8 * block_size, MAX_PARSE_BYTES)  # pyarrow takes a block size of up to 2 GiB
        except OSError as error:  # a compressed file cut short
            raise _unreadable(path, error) from None


def _ends_above_rows(path: str, dialect: Dialect) -> bool:
    """Whether the file ends within the lines above its rows (its header, or the lines skipped)."""
    above = dialect.skip_rows + (1 if dialect.has_header else 0)
    head = _head(path, above + 1)
    return len(head) < MAX_FIRST_LINE and max(head.count(b"\n"), head.count(b"\r")) < above


def _csv_blocks_of_size(
    path: str, dialect: Dialect, block_size: int, skip: int, blank_lines: list[int]
) -> Iterator[pa.RecordBatch]:
    """_csv_blocks with one block size, leaving out the first `skip` rows."""
    ragged = []

    def on_invalid_row(row) -> str:
        ragged.append(row)
        return "error"

    try:
        with _opened_csv(path, dialect) as file:
            blank_lines.clear()  # read again from the start
            stream = pa.PythonFile(BlankLines(file, blank_lines), mode="r") if _ascii_based(dialect.encoding) else file
            options = _csv_options(dialect, block_size, True, on_invalid_row)
            # The reader closes before the stream: its threads read ahead from it, also when a row stops the run.
            with pacsv.open_csv(stream, **options) as pieces:
                pieces_a_block = _pieces_a_block(len(dialect.names), block_size)
                while group := list(itertools.islice(pieces, pieces_a_block)):
                    batch = pa.Table.from_batches(group).combine_chunks().to_batches()[0]
                    if skip >= batch.num_rows:
                        skip -= batch.num_rows
                        continue
                    yield batch.slice(skip)
                    skip = 0
    except pa.ArrowInvalid as error:
        if "UTF8" in str(error) or "UTF-8" in str(error):
            raise UserError(f"{path}: {_not_text(path, dialect.encoding)}") from None
        if not ragged:
            raise
        row = _first_ragged_row(path, dialect) if ragged[0].number is None else ragged[0]
        line = _record_line(path, dialect, row.number)
        title = line == dialect.skip_rows + 2  # the line under the first one read, which may be a title
        below = table_below_notes(path, dialect.encoding, line)  # notes that split as the file's first line does
        raise UserError(
            f"{path}: line {line} has {row.actual_columns} columns; expected {row.expected_columns}"
            + (LONE_CR if row.actual_columns < row.expected_columns and _lone_cr_line(path) == line else "")
            + (f" (as line {line - 1} has; if it is a title, --skip-rows {line - 1} leaves it out)" if title else "")
            + (f"; {below}" if below else "")
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read ({error})") from None


def _lone_cr_line(path: str) -> int:
    """The line (counted by newlines) of the file's first carriage return that no newline follows, or 0."""
    line, carried = 1, b""
    with _opened(path) as stream:
        while True:
            chunk = stream.read(1 << 20)
            text = carried + chunk
            found = LONE_CR_BYTE.search(text)
            if found and (found.end() < len(text) or not chunk):  # a CR that ends the bytes read waits for the next
                return line + text.count(b"\n", 0, found.start())
            if not chunk:
                return 0
            line += text.count(b"\n", 0, len(text) - 1)
            carried = text[-1:]


def _pieces_a_block(columns: int, block_size: int) -> int:
    """How many pieces of `block_size` bytes a block of a table of `columns` gathers (PARSES_A_BLOCK and on)."""
    return max(PARSES_A_BLOCK, min(columns * BLOCK_BYTES_A_COLUMN, MAX_BLOCK_BYTES) // block_size)


def _not_text(path: str, encoding: str) -> str:
    """Where the file stops being text in `encoding`: 'line N is not ... text; pass --encoding ...'."""
    decoder = codecs.getincrementaldecoder(encoding)()
    line = 1
    with _opened(path) as stream:
        while chunk := stream.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as error:
                line += chunk[: error.start].count(b"\n")
                break
            line += chunk.count(b"\n")
    return f"line {line} is not {encoding} text; pass --encoding with the file's encoding (latin-1, cp1252, ...)"


def _first_ragged_row(path: str, dialect: Dialect):
    """The file's first row of another width, read again with one thread: only then does pyarrow
    number the rows (its numbers count records: see _record_line)."""
    ragged = []

    def on_invalid_row(row) -> str:
        ragged.append(row)
        return "skip"

    with _opened_csv(path, dialect) as stream:
        for _ in pacsv.open_csv(stream, **_csv_options(dialect, PARSE_BYTES, False, on_invalid_row)):
            if ragged:
                break
    return ragged[0]


def _record_line(path: str, dialect: Dialect, number: int) -> int:
    """The line that pyarrow's row `number` begins on. pyarrow counts records (the skipped and header lines
    among them), not the newlines inside their quoted fields, nor blank lines below the skipped ones; read again by
    Python's csv module, which keeps the count of lines. Only where a row is wrong: it reads the file up to that
    row."""
    csv.field_size_limit(MAX_PARSE_BYTES)  # Python's limit is 128 KiB a field; pyarrow reads longer ones
    with _opened_csv(path, dialect) as stream:
        text = io.TextIOWrapper(stream, encoding=_without_bom(dialect.encoding), newline="")
        reader = csv.reader(
            text, delimiter=dialect.delimiter or ",", quotechar=dialect.quote, escapechar=dialect.escape or None
        )
        records, before = 0, 0  # records read, and the lines they and the blank lines between them took
        for fields in reader:
            records += bool(fields) or reader.line_num <= dialect.skip_rows  # pyarrow counts skipped blank lines
            if records == number:
                return before + 1
            before = reader.line_num
    return number


def record_lines(batch: pa.RecordBatch, first_line: int, blank_lines: list[int]) -> tuple[np.ndarray, int]:
    """(each record's first line in the file, the line after the last record), from the line the block
    begins on: one line a record, one more for each newline inside its quoted fields, and the `blank_lines`
    (sorted) between them."""
    inside = np.zeros(batch.num_rows, np.int64)
    for column in batch.columns:
        data = column.buffers()[2]  # all its text: a line break anywhere in it is rare, and cheap to look for
        text = data.to_pybytes() if data is not None else b""
        if text.find(b"\n") >= 0:
            inside += pc.count_substring(column, "\n").to_numpy(zero_copy_only=False)
        if text.find(b"\r") >= 0:  # a lone carriage return breaks a line too, as in old Mac files: \r\n once
            lone = pc.subtract(pc.count_substring(column, "\r"), pc.count_substring(column, "\r\n"))
            inside += lone.to_numpy(zero_copy_only=False)
    starts = first_line + np.arange(batch.num_rows) + np.cumsum(inside) - inside  # as if there were no blank lines
    blanks = np.array(blank_lines[bisect.bisect_left(blank_lines, first_line) :], np.int64)
    if len(blanks):  # a record is as many lines further as there are blank lines before it
        starts += np.searchsorted(blanks - np.arange(len(blanks)), starts, side="right")
    return starts, int(starts[-1] + 1 + inside[-1]) if batch.num_rows else first_line


class BlankLines:
    """A CSV file as pyarrow reads it, its blank lines noted in `found` (their numbers, counted by newlines):
    pyarrow leaves them out, and the lines of the records after them must count them. A newline inside quotes
    (an odd number of quotes before it) begins no line of the file's rows."""

    def __init__(self, file, found: list[int]):
        self.file, self.found = file, found
        self._line, self._quoted, self._carried = 1, False, b""  # where the bytes read so far end

    def read(self, size: int = -1) -> bytes:
        chunk = self.file.read(size)
        text = self._carried + chunk
        end = max(0, len(text) - 2) if chunk else len(text)  # the last 2 bytes wait for what follows them
        at, quotes = 0, b'"' in text  # most tables quote nothing: then no quote is counted
        for blank in BLANK_LINE.finditer(text):
            if blank.start() >= end:
                break
            self._count(text, at, blank.start() + 1, quotes)
            at = blank.start() + 1
            if not self._quoted:
                self.found.append(self._line)
        self._count(text, at, end, quotes)
        self._carried = text[end:]
        return chunk

    def _count(self, text: bytes, start: int, stop: int, quotes: bool) -> None:
        self._quoted ^= quotes and bool(text.count(b'"', start, stop) % 2)
        self._line += text.count(b"\n", start, stop)

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()


class Rewritten:
    """A CSV file as its rows are parsed, whole lines at a time rewritten by `rewrite` (bytes to bytes, every
    newline kept, so that line numbers count the file's own lines): line_rewrite's steps."""

    def __init__(self, file, rewrite: Callable[[bytes], bytes]):
        self.file, self.rewrite = file, rewrite
        self._carried, self._out, self._ended = b"", b"", False

    def read(self, size: int = -1) -> bytes:
        while not self._ended and (size < 0 or len(self._out) < size):
            chunk = self.file.read(size if size > 0 else -1)
            text, self._ended = self._carried + chunk, not chunk or size < 0
            cut = len(text) if self._ended else _whole_lines_end(text)
            self._carried, self._out = text[cut:], self._out + self.rewrite(text[:cut])
        taken = len(self._out) if size < 0 else size
        data, self._out = self._out[:taken], self._out[taken:]
        return data

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()


EDGE_BLANKS = rb"(?:^|(?<=\r))[ \t]+|[ \t]+(?=\r|$)"  # a line's first or last blanks; a lone \r ends a line too


def quoted_field(quote: str = '"', escape: str = "") -> bytes:
    """The pattern of a field quoted by `quote`, that quote doubled inside it (RFC 4180), or after `escape`."""
    mark = re.escape(quote.encode())
    if not escape:
        return mark + b"(?:[^" + mark + b"]|" + mark + mark + b")*" + mark
    escaped = re.escape(escape.encode())
    return mark + b"(?:[^" + mark + escaped + b"]|" + escaped + rb"[\s\S]|" + mark + mark + b")*" + mark


FIELD_START = rb"(?<![^ \t\r\n])"  # where a field of a whitespace-separated line may start: a quote elsewhere is text


def tabbed(lines: bytes, escape: str = "") -> bytes:
    """Lines of fields apart by runs of spaces and tabs as tab-separated ones: each run between two fields one
    tab, the blanks that begin or end a line left out; quoted fields keep theirs."""
    if b'"' not in lines and lines.count(b"\r") == lines.count(b"\r\n"):  # most such files: 16x faster than re
        return b"\n".join(b"\t".join(line.split()) for line in lines.split(b"\n"))
    pattern = FIELD_START + quoted_field('"', escape) + b"|(" + EDGE_BLANKS + rb")|[ \t]+"
    return re.sub(pattern, _tab_between_fields, lines, flags=re.MULTILINE)


def _tab_between_fields(found: re.Match) -> bytes:
    """tabbed's replacement: a quoted field as it is, blanks at a line's edge left out, others one tab."""
    return found[0] if found[0][:1] == b'"' else b"" if found[1] is not None else b"\t"


def unpadded(lines: bytes, delimiter: str, quote: str = '"', escape: str = "") -> bytes:
    """Lines whose quoted fields are padded after their delimiter (`a,   "b, c"`) with the blanks there left out,
    so that the quote quotes its field, as Python's csv module reads with skipinitialspace. A field quoted where
    it starts is passed over whole, its text as it is."""
    mark, field = re.escape(delimiter.encode()), quoted_field(quote, escape)
    at_start = rb"(?<![^" + mark + rb"\r\n])" + field
    padded = rb"(" + mark + rb")[ \t]+(" + field + rb")"
    return re.sub(at_start + b"|" + padded, lambda found: found[0] if found[1] is None else found[1] + found[2], lines)


def uncommented(lines: bytes, mark: str) -> bytes:
    """Lines with those that start with `mark` (ARFF's %) left empty: no rows, still lines."""
    return re.sub(rb"(?m)^[ \t]*" + re.escape(mark.encode()) + rb"[^\r\n]*", b"", lines)


def rewritten_text(text: str, rewrite: Callable[[bytes], bytes]) -> str:
    """`rewrite` for text already read (a file's head, as it is sniffed)."""
    return rewrite(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")


def _ascii_based(encoding: str) -> bool:
    """Whether a newline is one byte, \\n, as in UTF-8 and Latin-1 (not UTF-16's two)."""
    return codecs.lookup(encoding).encode("\n")[0] == b"\n"


def _whole_lines_end(text: bytes) -> int:
    """Where the last line of `text` that ends outside quotes ends (after its line break: \\n, or an old Mac's
    \\r), or 0 to wait for more text. A newline inside a quoted field ends no line; but a quote that quotes
    nothing (an inch mark, 5'11") upsets the count, so a few lines back, or past PARSE_BYTES, the last does."""
    end = max(text.rfind(b"\n"), text.rfind(b"\r"))
    for _ in range(8):
        if end < 0 or not text.count(b'"', 0, end) % 2:
            return end + 1
        end = max(text.rfind(b"\n", 0, end), text.rfind(b"\r", 0, end))
    return max(text.rfind(b"\n"), text.rfind(b"\r")) + 1 if len(text) > PARSE_BYTES else 0


# JSON: Python's json module reads each object, so that a column may hold numbers in one row and text
# in the next, as exports have them (pyarrow's reader stops there).


class LateColumn(UserError):
    """A JSON object with a value under a key that the objects the columns were taken from lack: its file's
    columns are found only by reading every object (every_json_column)."""


def json_columns(rows: Iterable[tuple[int, dict]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the columns of (flattened) JSON objects, those of them that hold a list in any object). The columns are their
    keys in the order they first appear, less a nested record's own key ("geo": null beside geo.city is no column). A
    key with a value is a column whatever other keys start with it: R's and pandas' names hold dots ("year" beside
    "year.rep"), and such a "year" was dropped."""
    keys, valued, lists = {}, set(), set()
    for _, row in rows:
        for key, value in row.items():
            keys[key] = None
            if value is not None:
                valued.add(key)
            if isinstance(value, list):
                lists.add(key)
    records = {key[:dot] for key in keys for dot, char in enumerate(key) if char == "."}
    names = tuple(key for key in keys if key not in records or key in valued)
    return names, tuple(name for name in names if name in lists)


def every_json_column(files: list[str], dialect: Dialect) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """json_columns of every object of the JSON files: the dialect's first columns, then the others as they appear."""
    rows = (row for path in files for piece in _json_pieces(path, dialect) for row in piece)
    return json_columns(itertools.chain([(0, dict.fromkeys(dialect.names))], rows))


def _json_pieces(path: str, dialect: Dialect) -> Iterator[Iterable[tuple[int, dict]]]:
    block_bytes = _pieces_a_block(len(dialect.names), PARSE_BYTES) * PARSE_BYTES
    if dialect.format == JSON_ARRAY:
        return _json_array_rows(path, dialect.encoding, block_bytes)
    return _json_lines_rows(path, dialect.encoding, block_bytes)


def _json_blocks(
    path: str, dialect: Dialect, names: tuple[str, ...], every_column: bool, verbatim: str
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    known = (frozenset(dialect.names), frozenset(dialect.lists)) if every_column else None
    for rows in _json_pieces(path, dialect):
        batch, lines = _objects_batch(rows, path, names, known)
        if len(lines):
            yield _with_seconds_of_durations(batch, verbatim), lines


def _with_seconds_of_durations(batch: pa.RecordBatch, verbatim: str) -> pa.RecordBatch:
    """JSON's ISO 8601 durations as their seconds, as pandas' to_json writes a Timedelta (P0DT0H12M34S) and a
    Parquet file or a workbook holds it as a number; JSON's other strings are as written, its numbers typed."""
    columns = [
        _durations(column, ISO_DURATION) if name != verbatim and _has_iso_durations(_column_bytes(column)) else column
        for name, column in zip(batch.schema.names, batch.columns)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def iso_duration_text(text: str) -> str | None:
    """One value's ISO 8601 duration as the text of its seconds that preprocessing reads a JSON file's as (by
    _durations itself, so a vocabulary's "253" is met as "253"), None where the text is none: for qt-predict's JSON
    instances."""
    if not _has_iso_durations(text.encode()):
        return None
    read = _durations(pa.array([text], pa.string()), ISO_DURATION)[0].as_py()
    return None if read == text else read


def _json_lines_rows(path: str, encoding: str, block_bytes: int) -> Iterator[Iterator[tuple[int, dict]]]:
    """A JSON lines file's objects, with their lines, in pieces of about `block_bytes` of text."""
    line, rest = 1, b""
    with _opened(path) as stream:
        while True:
            chunk = _read(stream, block_bytes, path)
            text = rest + chunk
            cut = len(text) if not chunk else text.rfind(b"\n") + 1
            whole, rest = text[:cut], text[cut:]
            if whole:
                yield _objects_of_lines(_decoded(whole, path, encoding), path, line)
                line += whole.count(b"\n") + (0 if whole.endswith(b"\n") else 1)
            if not chunk:
                return


def _read(stream, size: int, path: str) -> bytes:
    try:
        return stream.read(size)
    except OSError as error:  # a compressed file cut short, or damaged
        raise _unreadable(path, error) from None


def _objects_of_lines(text: str, path: str, first_line: int) -> Iterator[tuple[int, dict]]:
    for offset, line in enumerate(text.split("\n")):
        if line.strip():
            yield first_line + offset, _json_object(line, path, first_line + offset)


def _json_array_rows(path: str, encoding: str, block_bytes: int) -> Iterator[list[tuple[int, dict]]]:
    """The objects of a file of one JSON array (as pandas' to_json(orient="records") and many APIs write a
    table), with the line each starts on, in pieces of about `block_bytes` of text: never the whole file."""
    decoder = json.JSONDecoder()
    text_of = codecs.getincrementaldecoder(_without_bom(encoding))()
    text, line, expected = "", 1, "["  # expected: '[', an object (or ']' first), ',' or ']', or the end
    with _opened(path) as stream:
        while True:
            chunk = _read(stream, block_bytes, path)
            try:
                text += text_of.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                raise UserError(f"{path}: {_not_text(path, encoding)}") from None
            rows, position, expected = _array_items(decoder, text, line, expected, path, final=not chunk)
            yield rows
            line, text = line + text.count("\n", 0, position), text[position:]
            if not chunk:
                break
            if len(text) > MAX_PARSE_BYTES:
                raise UserError(f"{path}: line {line}: an object of more than {MAX_PARSE_BYTES} bytes, or no JSON")
    if expected != "end":
        raise UserError(f"{path}: the JSON array is not closed (no ']' at its end)")


_SPACE = re.compile(r"\s*")


def _array_items(decoder, text: str, line: int, expected: str, path: str, final: bool) -> tuple[list, int, str]:
    """The whole objects in `text`, a JSON array's text from a place where `expected` comes, on `line`:
    (each object with its line, where the text they took ends, what comes next: '[', 'first' (an object or
    ']'), 'object', ',' (or ']') or 'end'). An object that the text cuts off waits for more, unless `final`."""
    rows, position, counted = [], 0, 0
    while (position := _SPACE.match(text, position).end()) < len(text):
        line, counted = line + text.count("\n", counted, position), position
        char = text[position]
        if expected == "end":
            raise UserError(f"{path}: line {line}: more after the end of the JSON array")
        if expected == "[":
            if char != "[":
                raise UserError(f"{path}: line {line} is not JSON lines, nor a JSON array of objects")
            expected, position = "first", position + 1
        elif expected == ",":
            if char not in ",]":
                raise UserError(f"{path}: line {line}: expected ',' or ']' after the array's object, found {char!r}")
            expected, position = ("object" if char == "," else "end"), position + 1
        elif char == "]" and expected == "first":
            expected, position = "end", position + 1
        else:
            try:
                row, end = decoder.raw_decode(text, position)
            except json.JSONDecodeError as error:
                if not final:
                    break
                where = line + text.count("\n", position, error.pos)
                raise UserError(f"{path}: line {where} is not JSON ({error.msg})") from None
            rows.append((line, _an_object(row, path, line)))
            expected, position = ",", end
    return rows, position, expected


def _decoded(text: bytes, path: str, encoding: str) -> str:
    try:
        return text.decode(_without_bom(encoding))
    except UnicodeDecodeError:
        raise UserError(f"{path}: {_not_text(path, encoding)}") from None


def _objects_batch(
    rows: Iterable[tuple[int, dict]], path: str, names: tuple[str, ...], known: tuple | None = None
) -> tuple[pa.RecordBatch, np.ndarray]:
    """Objects (JSON's, or a sheet's rows by column name), each with its line, to a block of the named text columns
    (a key left out or null: empty). Where `known` gives (every column, the columns of lists), a value under any other
    key, or a list in any other column, is a LateColumn."""
    columns: dict[str, list] = {name: [] for name in names}
    lines = []
    for line, row in rows:  # one object at a time: a block's objects are never all held
        if known is not None and not known[0].issuperset(row):
            _check_known(row, known[0], path, line)
        for name, values in columns.items():
            value = row.get(name)
            kind = type(value)
            if kind is str or kind is int or kind is float or value is None:  # as value_text, without its call:
                values.append(value if kind is str else "" if value is None else str(value))  # most of the time
                continue
            if known is not None and isinstance(value, list) and name not in known[1]:
                raise LateColumn(f"{path}: line {line}: column {name!r} holds a list, and the first objects none")
            values.append(_as_text(value, path, line, name))
        lines.append(line)
    batch = pa.RecordBatch.from_arrays([pa.array(values, pa.string()) for values in columns.values()], names)
    return batch, np.array(lines, np.int64)


def _check_known(row: dict, known: frozenset, path: str, line: int) -> None:
    late = [key for key, value in row.items() if key not in known and value is not None]
    if late:
        raise LateColumn(f"{path}: line {line} has a column {late[0]!r} that the first objects lack")


def _json_object(line: str, path: str, number: int) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        if error.pos >= len(line.rstrip()):  # a pretty-printed object: JSON, but of many lines
            raise UserError(
                f"{path}: line {number} is no whole JSON object: JSON lines hold one object a line, and a JSON file of "
                "many lines, an array of objects"
            ) from None
        raise UserError(f"{path}: line {number} is not JSON ({error.msg}, column {error.colno})") from None
    return _an_object(row, path, number)


def _an_object(row, path: str, number: int) -> dict:
    if not isinstance(row, dict):
        raise UserError(f"{path}: line {number} is not a JSON object of column values")
    return tables.flattened(row, f"{path}: line {number}")


def _as_text(value, path: str, line: int, name: str) -> str:
    try:
        return tables.value_text(value)
    except ValueError as error:
        raise UserError(
            f"{path}: line {line}, column {name!r}: {error}; {tables.LIST_RULE} (--ignore-columns {name} leaves it out)"
        ) from None


# Parquet and Arrow: typed columns, cast to text (numbers as numbers, timestamps in ISO 8601).


def _rows_a_block(names: tuple[str, ...]) -> int:
    """Rows of a typed file (Parquet, Arrow, a workbook) read at a time: PARQUET_ROWS, or fewer to hold
    PARQUET_CELLS."""
    return max(1, min(PARQUET_ROWS, PARQUET_CELLS // len(names)))


@contextlib.contextmanager
def _typed_file(
    path: str, kind: str
) -> Iterator[pq.ParquetFile | pa.ipc.RecordBatchFileReader | pa.ipc.RecordBatchStreamReader]:
    """The Parquet file, or the Arrow file or stream, open for reading; a file that is not one is a UserError
    naming it. Both are read only as they are: they need seeking, and compress within the file."""
    if compression(path):
        raise UserError(f"{path}: decompress it first ({FORMAT_NAMES[kind]} compresses within the file)")
    with _opened(path) as stream:
        try:
            yield pq.ParquetFile(stream) if kind == PARQUET else _arrow_reader(stream, path)
        except (pa.ArrowInvalid, OSError) as error:
            raise UserError(f"{path}: cannot read as {FORMAT_NAMES[kind]} ({str(error).splitlines()[0]})") from None


def _typed_blocks(path: str, dialect: Dialect, names: tuple[str, ...]) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    row, rows_a_block = 1, _rows_a_block(names)
    with _typed_file(path, dialect.format) as file:
        for batch in _batches(file, rows_a_block, names):
            batch = _without_structs(batch)
            texts = [_typed_text(batch.column(name), path, name) for name in names]
            yield pa.RecordBatch.from_arrays(texts, names), np.arange(row, row + batch.num_rows)
            row += batch.num_rows


def _arrow_reader(stream: pa.NativeFile, path: str) -> pa.ipc.RecordBatchFileReader | pa.ipc.RecordBatchStreamReader:
    """Arrow's file format (Feather version 2), or its stream format (R's write_ipc_stream, Polars')."""
    start = stream.read(8)
    stream.seek(0)
    if start.startswith(b"FEA1"):
        raise UserError(f"{path}: {NOT_TABLES[b'FEA1']}")
    return pa.ipc.open_file(stream) if start.startswith(b"ARROW1") else pa.ipc.open_stream(stream)


def _batches(file, rows_a_block: int, names: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
    """A typed file's rows, `rows_a_block` at a time: Parquet reads only the `names` columns; an Arrow file's
    batches (as its writer made them, pandas' of 64K rows) are read whole, one at a time, and sliced."""
    if isinstance(file, pq.ParquetFile):
        yield from file.iter_batches(batch_size=rows_a_block, columns=list(names))
        return
    if isinstance(file, pa.ipc.RecordBatchFileReader):
        file = map(file.get_batch, range(file.num_record_batches))
    for batch in file:  # a stream reader yields its batches
        for start in range(0, batch.num_rows, rows_a_block):
            yield batch.slice(start, rows_a_block)


def _leaf_fields(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """The columns of a Parquet or Arrow schema with their types, a struct's fields as columns of their own named by
    their path (geo.city), as tables.flattened names a JSON object's."""
    fields = []
    for field in schema:
        if pa.types.is_struct(field.type):
            fields += [(f"{field.name}.{name}", kind) for name, kind in _leaf_fields(pa.schema(list(field.type)))]
        else:
            fields.append((field.name, field.type))
    return fields


def _without_structs(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its struct columns flattened (geo as geo.city, geo.zip), down to their leaves."""
    while any(pa.types.is_struct(field.type) for field in batch.schema):
        batch = pa.Table.from_batches([batch]).flatten().combine_chunks().to_batches()[0]
    return batch


def _typed_text(values: pa.Array, path: str, name: str) -> pa.Array:
    if is_list_type(values.type):
        return _list_text(values, path, name)
    if pa.types.is_nested(values.type):
        raise UserError(
            f"{path}: column {name!r} holds nested values ({values.type}); tables take one value a column "
            f"(--ignore-columns {name} leaves it out)"
        )
    if pa.types.is_boolean(values.type):
        values = pc.if_else(values, "true", "false")
    if pa.types.is_duration(values.type):  # its seconds, as a workbook's duration and a pandas CSV's
        values = pc.divide(values.cast(pa.int64()).cast(pa.float64()), UNIT_SECONDS[values.type.unit])
    try:  # bytes are text where they are UTF-8: older Spark and Hive write strings as bytes
        return pc.fill_null(values.cast(pa.string()), "")
    except pa.ArrowInvalid:
        what = "bytes that are not UTF-8 text"
    except pa.ArrowNotImplementedError:  # an interval of months, days and nanoseconds (pandas' DateOffset), say
        what = "values that have no text"
    raise UserError(
        f"{path}: column {name!r} holds {what} ({values.type}); tables take numbers, dates and text "
        f"(--ignore-columns {name} leaves it out)"
    )


def is_list_type(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)


def _list_text(values: pa.Array, path: str, name: str) -> pa.Array:
    """A list column (BigQuery's REPEATED) as tables.list_text writes a JSON array: each row's elements as text,
    nulls left out, joined by spaces; a null or empty list is missing."""
    elements = values.flatten()  # a null list's elements left out, whatever its offsets hold
    kind = elements.type
    refused = (pa.types.is_nested, pa.types.is_floating, pa.types.is_decimal, pa.types.is_temporal)
    if any(is_refused(kind) for is_refused in refused):  # lists, records, fractions, times: no words
        raise UserError(
            f"{path}: column {name!r} holds lists of {kind}; {tables.LIST_RULE} (--ignore-columns {name} leaves it out)"
        )
    present = elements.is_valid().to_numpy(zero_copy_only=False)
    lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False)  # as flatten() has them
    rows = np.repeat(np.arange(len(values)), lengths)[present]
    texts = _typed_text(elements.filter(pa.array(present)), path, name)
    ends = np.cumsum(np.bincount(rows, minlength=len(values)), dtype=np.int64)
    lists = pa.LargeListArray.from_arrays(pa.array(np.concatenate([[0], ends])), texts)
    return pc.fill_null(pc.binary_join(lists, " "), "")


# Statistics packages' files: Stata's (pandas' reader), SPSS's and SAS's (pyreadstat's), a chunk of rows at a time,
# their columns typed as Parquet's are.


def _package_file(path: str) -> PackageFile:
    return PACKAGE_FILES[posixpath.splitext(_stem(path))[1]]


@contextlib.contextmanager
def _package_chunks(
    path: str, rows: int, encoding: str, names: tuple[str, ...] = (), first_bytes: int | None = None
) -> Iterator[Iterator]:
    """A statistics package's file's rows, `rows` at a time, as DataFrames: labelled values as their labels, dates as
    datetimes (but Stata's %tC times, which pandas leaves as numbers and warns of); only the `names` columns where
    given. pyreadstat's files are read in the encoding they state, or in --encoding where it is not UTF-8; of a
    gs:// one, its `first_bytes` alone, where given. What the reader cannot read is a UserError naming the file."""
    kind = _package_file(path)
    library = "pyreadstat" if kind.reader else "pandas"
    try:
        module = importlib.import_module(library)  # only for these files: not every install has it
    except ImportError:
        raise UserError(f"{path}: reading {kind.what} takes {library}: pip install {library}") from None
    if compression(path):
        raise UserError(f"{path}: decompress it first ({kind.what} is read as it is: its reader seeks)")
    columns = list(names) or None
    if not kind.reader:
        # Its chunks' categories differ where some values have no label: _package_blocks reads them as text.
        warnings.filterwarnings("ignore", category=module.errors.CategoricalConversionWarning)
        with storage.open_read(path) as file, module.read_stata(file, chunksize=rows, columns=columns) as chunks:
            yield _package_read(chunks, path, kind.what)
        return
    flags = {"apply_value_formats": True} if kind.labels else {}
    encoding = codecs.lookup(encoding).name  # Python's name, which iconv knows too: iso8859-1, cp1252
    if encoding != "utf-8" and not kind.portable:  # the default trusts the file's own
        flags["encoding"] = encoding
    with _local_copy(path, first_bytes) as local:  # pyreadstat reads a file by its path
        read = getattr(module, kind.reader)
        if kind.portable:
            chunks = _portable_chunks(functools.partial(read, local, usecols=columns, **flags), rows)
        else:
            chunks = (chunk for chunk, _ in module.read_file_in_chunks(read, local, rows, usecols=columns, **flags))
        yield _package_read(chunks, path, kind.what)


def _portable_chunks(read: Callable, rows: int) -> Iterator:
    """A portable file's rows, `rows` at a time: its first chunk (all its names need), then the rest read whole and
    handed on in chunks, as pyreadstat reads each chunk of one from its start again."""
    first, _ = read(row_limit=rows)
    yield first
    if len(first) == rows:
        rest, _ = read(row_offset=rows)
        yield from (rest.iloc[start : start + rows].copy() for start in range(0, len(rest), rows))  # written to


@contextlib.contextmanager
def _local_copy(path: str, first_bytes: int | None = None) -> Iterator[str]:
    """The file's local path: itself, or a temporary copy of a gs:// file (of its `first_bytes`, where given)."""
    if not gcs.is_gcs(path):
        yield path
        return
    with tempfile.NamedTemporaryFile(suffix=posixpath.basename(path)) as copy:
        with storage.open_read(path) as file:
            if first_bytes is None:
                shutil.copyfileobj(file, copy)
            else:
                copy.write(file.read(first_bytes))
        copy.flush()
        yield copy.name


def _package_read(chunks, path: str, what: str) -> Iterator:
    """The chunks, the reader's errors (what is no such file) a UserError naming the file. Not `yield from`: closing
    this would close pandas' reader by its deprecated close()."""
    while True:
        try:
            chunk = next(chunks, None)
        except Exception as error:  # pandas' and pyreadstat's errors for what is no such file have no common class
            said = (str(error).splitlines() or [""])[0]
            said = said if re.search("[A-Za-z]{3}", said) else "damaged, or of another kind"  # a KeyError: 0
            hint = "; pass --encoding with its strings' encoding" if "encoding" in said else ""
            raise UserError(f"{path}: cannot read as {what} ({said}){hint}") from None
        if chunk is None:
            return
        yield chunk


def _package_names(path: str, encoding: str) -> tuple[str, ...]:
    """The columns of a statistics package's file, as its first row has them. Of a gs:// SPSS or SAS file, its first
    HEAD_BYTES are copied for them, where its header and first row lie (the whole file where they do not): a file
    is asked for its names twice (planning, then its pass), and copying it whole for each tripled what a conversion
    downloaded. pandas reads a Stata file by seeking in it, copying nothing."""
    first = None
    kind = _package_file(path)
    if gcs.is_gcs(path) and kind.reader and kind.named_first:
        with contextlib.suppress(UserError), _package_chunks(path, 1, encoding, first_bytes=HEAD_BYTES) as chunks:
            first = next(chunks, None)
    if first is None:
        with _package_chunks(path, 1, encoding) as chunks:
            first = next(chunks, None)
    if first is None:
        raise UserError(f"{path}: {kind.what} of no rows")
    return _distinct([str(name) for name in first.columns], path)


def _package_blocks(path: str, names: tuple[str, ...], encoding: str) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    row = 1
    with _package_chunks(path, _rows_a_block(names), encoding, names) as chunks:
        for chunk in chunks:
            # Labels (with the values no label names: 3), and pyreadstat's dates (Python objects), as text.
            labelled = chunk.select_dtypes(["category", "object"]).columns
            chunk[labelled] = chunk[labelled].astype("string")
            batch = pa.RecordBatch.from_pandas(chunk, preserve_index=False)
            texts = [_typed_text(batch.column(name), path, name) for name in names]
            yield pa.RecordBatch.from_arrays(texts, names), np.arange(row, row + batch.num_rows)
            row += batch.num_rows


# A folder of texts, a sub-folder a class.


def text_files(folder: str) -> list[tuple[str, str]]:
    """(path, class) of every .txt file in the folder's sub-folders, sorted; UserError for a folder with no
    sub-folder, or a sub-folder without a .txt file."""
    if not storage.is_folder(folder):
        raise UserError(f"--input {folder}: not a folder (--source text takes one sub-folder of .txt files a class)")
    classes = [name.rstrip("/") for name in storage.list_names(folder) if storage.is_folder(storage.join(folder, name))]
    if not classes:
        raise UserError(f"--input {folder}: no sub-folders; --source text takes one sub-folder of .txt files a class")
    found = []
    for name in classes:
        place = storage.join(folder, name)
        files = [storage.join(place, file) for file in storage.list_names(place) if file.lower().endswith(TEXT_SUFFIX)]
        if not files:
            raise UserError(f"{place}: no {TEXT_SUFFIX} files in the class folder {name!r}")
        found += [(path, name) for path in files]
    return found


def _text_folder_blocks(folder: str, dialect: Dialect) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    files = text_files(folder)
    with ThreadPoolExecutor(READING_THREADS) as pool:
        for start in range(0, len(files), TEXTS_A_BLOCK):
            chosen = files[start : start + TEXTS_A_BLOCK]
            texts = list(pool.map(lambda path: _read_text(path, dialect.encoding), [path for path, _ in chosen]))
            labels = [label for _, label in chosen]
            columns = [pa.array(texts, pa.string()), pa.array(labels, pa.string())]
            batch = pa.RecordBatch.from_arrays(columns, TEXT_COLUMNS)
            yield batch, np.arange(start + 1, start + 1 + len(chosen))


def _read_text(path: str, encoding: str) -> str:
    with storage.open_read(path) as file:
        data = file.read()
    try:
        return data.decode(_without_bom(encoding))
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UserError(
            f"{path}: line {line} is not {encoding} text; "
            "pass --encoding with the files' encoding (latin-1, cp1252, ...)"
        ) from None


# Spreadsheets.


class Sheet(NamedTuple):
    """A worksheet: its title, and its rows from its first, each a tuple of values from its first column (None
    where a cell is empty; numbers, text, booleans, and dates as datetimes). Each call of rows() reads the sheet
    again, but for the one sheet last loaded (_sheet_values)."""

    title: str
    rows: Callable[[], Iterator[tuple]]


@contextlib.contextmanager
def _workbook(path: str) -> Iterator[list[Sheet]]:
    """A workbook's worksheets (a chart sheet has no rows) as python-calamine (pandas' fastest Excel engine) reads
    them, the one it opens on first: an `.xlsx` or `.ods` file's active sheet (its first worksheet where that is
    a chart), another format's first. The values are the ones the cells hold, never what a format shows. A sheet is read
    whole, about 100 bytes a cell: 1.4 s and 176 MB for a sheet of 300,000 rows and 6 columns, where openpyxl's rows
    one at a time took 25.7 s and 70 MB."""
    import python_calamine  # only for workbooks

    with storage.open_read(path) as file:
        data = file.read()
    digest = hashlib.blake2b(data, digest_size=16).digest()  # which workbook a kept sheet is of (_sheet_values)
    try:
        book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
    except Exception as error:  # calamine's errors (of Rust) have no common Python class
        raise UserError(f"{path}: {_cannot_read_sheets(error)}") from None
    try:
        every = book.sheets_metadata
        active = _active_sheet(data, _stem(path), [sheet.name for sheet in every])
        first = sorted(range(len(every)), key=lambda index: index != active)
        names = [every[i].name for i in first if every[i].typ == python_calamine.SheetTypeEnum.WorkSheet]
        if not names:
            raise UserError(f"{path}: the workbook has no worksheet")
        yield [Sheet(name, functools.partial(_sheet_values, book, (digest, name), path)) for name in names]
    finally:
        book.close()


def _active_sheet(data: bytes, name: str, titles: list[str]) -> int:
    """The place among a workbook's sheets (`titles`) of the one it opens on: an `.xlsx` file's workbook.xml names
    it by place (activeTab), an `.ods` file's settings.xml by title (ActiveTable); 0 where neither does."""
    member, view = ("xl/workbook.xml", ACTIVE_TAB) if name.endswith(XLSX) else ("settings.xml", ACTIVE_TABLE)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            found = view.search(archive.read(member))
    except (zipfile.BadZipFile, KeyError):  # an .xls (no ZIP archive), or a file that names none
        return 0
    if found is None:
        return 0
    if view is ACTIVE_TAB:
        return int(found[1])
    title = html.unescape(found[1].decode("utf-8", "replace"))
    return titles.index(title) if title in titles else 0


# The sheet last loaded, by (its workbook's digest, its title), till its rows are read: planning reads a sheet's
# header, pass 1 its rows next, and calamine loads a whole sheet for either (0.85 s of a 200,000-row sheet's 3.8 s).
_loaded_sheet: dict = {}


def forget_kept_sheet() -> None:
    """Lets go of the sheet _sheet_values keeps for its next read, where that read will not come in this process."""
    _loaded_sheet.clear()


def _sheet_values(book, key: tuple[bytes, str], path: str) -> Iterator[tuple]:
    """A sheet's rows from its first, each from its first column, None where a cell is empty (calamine leaves out
    the columns before the first that holds a value, and writes an empty cell as ''); what calamine cannot read (a
    damaged sheet) a UserError. `key` is (the workbook's digest, the sheet's title)."""
    name = key[1]
    try:
        sheet = _loaded_sheet.get(key)  # one get: Beam's threads may clear it meanwhile
        if sheet is None:
            sheet = book.get_sheet_by_name(name)
        _loaded_sheet.clear()  # one sheet kept at most
        _loaded_sheet[key] = sheet
        before = (None,) * (sheet.start[1] if sheet.start else 0)
        for row in sheet.iter_rows():
            yield before + tuple(map(_sheet_cell, row))
    except Exception as error:  # calamine's errors (of Rust) have no common Python class
        raise UserError(f"{path}: sheet {name!r}: {_cannot_read_sheets(error)}") from None


def _sheet_cell(value):
    """A cell's value as openpyxl reads it, and so as a CSV export writes it: an empty cell None, and a whole number
    an integer (calamine reads an `.xlsx` file's 57 as 57.0, and a column of codes would read "57.0" where its CSV
    reads "57"; from 1e16 on, a float's text has an exponent in both)."""
    if value == "":
        return None
    if type(value) is float and value.is_integer() and abs(value) < 1e16:
        return int(value)
    return value


def _cannot_read_sheets(error: Exception) -> str:
    return f"cannot read as a spreadsheet ({str(error).splitlines()[0] if str(error) else type(error).__name__})"


@contextlib.contextmanager
def _sheet_rows(path: str, name: str) -> Iterator[Iterator[tuple[int, tuple]]]:
    """The rows of the sheet `name` (or of the one the workbook opens on), each with its row number."""
    with _workbook(path) as sheets:
        yield enumerate((_named_sheet(sheets, name, path) if name else sheets[0]).rows(), 1)


def _named_sheet(sheets: list[Sheet], name: str, path: str) -> Sheet:
    """The sheet `name`, or a UserError naming the workbook's sheets."""
    found = next((sheet for sheet in sheets if sheet.title == name), None)
    if found is None:
        titles = ", ".join(repr(sheet.title) for sheet in sheets)
        raise UserError(f"{path}: the workbook has no worksheet {name!r} (--sheet); its worksheets: {titles}")
    return found


def _workbook_dialect(path: str, options: TableOptions, known: tuple[str, ...]) -> Dialect:
    """The column names of a workbook's sheet: --column-names, or its header, the first row after --skip-rows that
    holds a `known` name (the label's), else the first that holds a value: sheets often have a title and empty
    rows above their header. The sheet is the one the workbook opens on, unless only another holds a known name
    (a workbook that opens on its notes), or it is empty and another is not."""
    with _workbook(path) as sheets:
        if options.sheet:
            sheets = [_named_sheet(sheets, options.sheet, path)]
        title, header = _table_sheet(sheets, path, options.skip_rows, known)
    title = "" if title == sheets[0].title and not options.sheet else title
    if header is None:
        raise UserError(
            f"{path}: sheet {title or sheets[0].title!r} has no row of values in its first "
            f"{options.skip_rows + SNIFF_LINES}"
        )
    number, names, _ = header
    while names and not names[-1]:  # the sheet's empty columns after the last
        names.pop()
    if options.column_names:
        names = _distinct(options.column_names, "--column-names")
        return Dialect(names, False, "", "", WORKBOOK, skip_rows=number - 1, sheet=title)
    return Dialect(
        _header_names(names, f"{path}: row {number}", _label_of(options, names)),
        True,
        "",
        "",
        WORKBOOK,
        skip_rows=number - 1,
        sheet=title,
    )


def _table_sheet(sheets: list[Sheet], path: str, skip_rows: int, known: tuple[str, ...]) -> tuple[str, tuple | None]:
    """(the title, the header) of the sheet that holds the table: the first whose header holds a `known` name, else
    the first with a row of values. Sheets are read one at a time, and no further than needed: each is read whole."""
    fallback = None
    for sheet in sheets:
        header = _sheet_header(sheet, path, skip_rows, known)
        if header and header[2]:
            return sheet.title, header
        if fallback is None and header:
            fallback = sheet.title, header
        if fallback and not any(known):  # no name to look for in the other sheets
            break
    return fallback or (sheets[0].title, None)


def _sheet_header(sheet, path: str, skip_rows: int, known: tuple[str, ...]) -> tuple[int, list[str], bool] | None:
    """(the row number, the names and whether it holds a `known` name) of a sheet's header, as _workbook_dialect
    finds it; None for a sheet of no values in its first rows."""
    header = None
    rows = enumerate(sheet.rows(), 1)
    for number, row in itertools.islice(rows, skip_rows, skip_rows + SNIFF_LINES):
        names = [_as_text(_cell_value(value), path, number, "").strip() for value in row]
        if any(name in names for name in known if name):
            return number, names, True
        if header is None and any(names):
            header = number, names, False
    return header


def _workbook_blocks(
    path: str, dialect: Dialect, names: tuple[str, ...]
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """A sheet's rows below its header (empty rows left out) in blocks, each row's line its row number."""
    rows_a_block = _rows_a_block(names)
    with _sheet_rows(path, dialect.sheet) as rows:
        objects = (
            (number, dict(zip(dialect.names, map(_cell_value, _within(row, dialect.names, path, number)))))
            for number, row in rows
            if number >= dialect.first_line and any(value is not None for value in row)
        )
        try:
            while piece := list(itertools.islice(objects, rows_a_block)):
                yield _objects_batch(piece, path, names)
        finally:
            forget_kept_sheet()  # read: its memory is not kept for the passes after


def _cell_value(value):
    """A cell's value as a JSON object would hold it: a date or time as ISO 8601 text, a date without its midnight
    (Excel keeps dates as date-times), a duration as its seconds."""
    if isinstance(value, datetime.timedelta):  # a duration ([h]:mm:ss): its seconds
        return value.total_seconds()
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    return value


def _within(row: tuple, names: tuple[str, ...], path: str, number: int) -> tuple:
    """A sheet's row, or a UserError where it holds a value in a column the header does not name."""
    beyond = next((i for i, value in enumerate(row[len(names) :], len(names) + 1) if value is not None), 0)
    if beyond:
        raise UserError(
            f"{path}: row {number} has a value in column {beyond}, and the header names {len(names)} columns"
        )
    return row
