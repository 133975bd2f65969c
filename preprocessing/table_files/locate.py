"""Which files a table is in, and what each is: a file, a glob or a folder (a partitioned dataset's too); each file's
format, told by its suffix (and its first bytes where a name misleads), its compression, a ZIP archive's one table;
the files that are no table (binary, a web page, another package's file), refused in one line; and, for the format
modules, each file opened (decompressed), its first bytes and lines read, and its text encoding told by a byte-order
mark.

The reading sizes (PARSE_BYTES and on) are here too: every format that streams text reads it by them."""

from __future__ import annotations

import codecs
import contextlib
import csv
import functools
import logging
import lzma
import os
import posixpath
import re
import shutil
import tempfile
import urllib.parse
import zipfile
from collections.abc import Iterator
from typing import NamedTuple

import pyarrow as pa

from dataformat import gcs, storage
from dataformat.errors import UserError
from dataformat.schema import METADATA_FILE

log = logging.getLogger(__name__)

CSV, JSON_LINES, JSON_ARRAY, PARQUET, ARROW, WORKBOOK = "csv", "jsonl", "json array", "parquet", "arrow", "workbook"
PACKAGE = "package"  # a statistics package's file: Stata's, SPSS's, SAS's
SQLITE = "sqlite"  # an SQLite database's table
SUFFIXES = {".csv": CSV, ".tsv": CSV, ".tab": CSV, ".arff": CSV}  # .tab: Orange's tab-separated files
SUFFIXES.update({".data": CSV, ".dat": CSV})  # UCI's tables (german.data), aligned by spaces or comma-separated
SUFFIXES.update({".jsonl": JSON_LINES, ".ndjson": JSON_LINES, ".json": JSON_LINES, ".geojson": JSON_LINES})
SUFFIXES.update({".parquet": PARQUET, ".feather": ARROW, ".arrow": ARROW, ".arrows": ARROW})
SUFFIXES.update({".xlsx": WORKBOOK, ".xlsm": WORKBOOK, ".xls": WORKBOOK, ".xlsb": WORKBOOK, ".ods": WORKBOOK})
SUFFIXES.update({".sqlite": SQLITE, ".sqlite3": SQLITE, ".db": SQLITE, ".db3": SQLITE})
WORKBOOK_MAGIC = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")  # a workbook's first bytes: a ZIP archive's, or OLE's (.xls)


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
JSON_TABLE = "json table"  # a .json file of one object that holds a whole table, as pandas' to_json writes one
OBJECTS = (JSON_LINES, JSON_ARRAY, JSON_TABLE)  # files of JSON objects, read by key: any object may lack any column
TEXT_FOLDER = "text folder"
FORMAT_NAMES = {
    CSV: "CSV",
    JSON_LINES: "JSON lines",
    JSON_ARRAY: "a JSON array",
    JSON_TABLE: "a JSON object of a table",
    PARQUET: "Parquet",
    ARROW: "an Arrow (Feather) file",
    WORKBOOK: "a spreadsheet",
    PACKAGE: "a statistics package's file",
    SQLITE: "an SQLite database",
    TEXT_FOLDER: "a folder of texts",
}
# A compressed file's suffix, and pyarrow's codec for it: gzip, bzip2 and Zstandard, as pandas' to_csv and
# command-line tools write them.
XZ = "xz"  # no codec of pyarrow's: Python's lzma reads it (_XzFile)
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".xz": XZ}
COMPRESSION_RATIO = 4  # a compressed file's text is about this many times its size, for planning shards
ZIP = ".zip"  # an archive of one table, as Kaggle and many portals hand out a CSV: read as the one file it holds
NUMBERS = ".numbers"  # Apple's spreadsheets, which no library here reads: a ZIP archive too
# Files a folder holds beside its tables: Excel's lock file of an open workbook, macOS's resource forks.
HIDDEN_FILES = ("~$", "._")
PARTITION = re.compile(r"([^=/]+)=([^/]*)")  # a partitioned dataset's folder: key=value
SUB_FOLDERS_LOOKED_AT = 20  # a folder's sub-folders (no partitions') looked in for table files that are not read
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # the folder of a partition column's missing values
# The first bytes of files that are no table of text, and what to do instead.
NOT_TABLES = {
    b"PK\x03\x04": "a ZIP archive: name it .zip to read the one table it holds, or unzip it (an Excel workbook is "
    "read under its .xlsx, .xlsb or .ods name)",
    b"\xd0\xcf\x11\xe0": "an Excel 97-2003 workbook: name it .xls to read it",
    b"ARROW1": "an Arrow or Feather file: name it .feather (or .arrow) to read it as one",
    b"FEA1": "a Feather version 1 file: write it again as version 2 (pandas' to_feather) and name it .feather",
    b"SQLite format 3\x00": "an SQLite database: name it .sqlite to read it",
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
# The reading sizes, read as locate.NAME wherever they are used, so that one setting (a test's) holds everywhere.
PARSE_BYTES = 2**20  # text parsed at a time; pyarrow's CSV reader reads up to 32 of these ahead
PARSES_A_BLOCK = 4  # parsed pieces counted and placed together, at least: fewer, larger steps for Python
# ... and more for a table of hundreds of columns, since Python's steps cost per block and column (4,096
# columns: 30 rows a MiB): a block takes this much text a column, up to MAX_BLOCK_BYTES.
BLOCK_BYTES_A_COLUMN = 16 * 1024
MAX_BLOCK_BYTES = 64 * PARSE_BYTES
SNIFF_BYTES = 1 << 16  # the start of a file that its header and delimiter are read from ...
SNIFF_LINES = 50  # a file's first lines that its header, delimiter and such are read from, at most
MAX_FIRST_LINE = 1 << 24  # ... or more, to the end of its first line (a 10,000-column header), up to this
MAX_PARSE_BYTES = 1 << 30  # the largest block a record may need (a field of up to about this size)
# The csv module, which sniffs the delimiter and reads the header, refuses fields over 128 KiB by default:
# a 10,000-column header split by a delimiter it does not hold is one such field.
csv.field_size_limit(MAX_PARSE_BYTES)


def input_files(path: str) -> list[str]:
    """The table files of --input: a file, a glob, or a folder's files of the known suffixes, with those of its
    partitions' folders (year=2020/) where it is a partitioned dataset."""
    if storage.is_pattern(path):
        files = storage.matching(path)
        if not files:
            raise UserError(f"--input {path}: no file matches")
        _check_partitions(path, files, input_root(path))
        return files
    if storage.is_folder(path):
        listed = storage.list_names(path)
        if METADATA_FILE in listed and any(".tfrecord" in name for name in listed):  # read as a JSON table before
            raise UserError(f"--input {path}: a dataset qt-preprocess wrote (metadata.json and its shards): train on "
                            f"it with qt-train --data-dir {path}")  # fmt: skip
        names = _table_names(listed) + _files_in_partitions(path, listed)
        nested = _files_in_sub_folders(path, listed)
        below = f"{len(nested)} in its sub-folders ({_listed(nested)})"
        if not names:
            kinds = ", ".join(SUFFIXES)
            held = f"; it leaves {below} to a glob, such as {storage.join(path, '*/*.csv')}" if nested else ""
            raise UserError(f"--input {path}: the folder holds no table file ({kinds}, compressed or not){held}")
        if nested:  # as Spark and BigQuery read a folder: its own files, and its partitions'
            log.warning("--input %s: leaves out the table files %s: a folder's own files are read, and its "
                        "partitions' (key=value/); move them up, or name them with a glob", path, below)  # fmt: skip
        archives = [name for name in listed if _zipped(name) and name not in names]
        if archives:  # a ZIP archive may hold anything (the photos of an image folder): its name must say
            log.warning("--input %s: leaves out %s: in a folder, a ZIP archive is read where its name gives the "
                        "format of the table it holds (NAME.csv.zip)", path, _listed(archives))  # fmt: skip
        files = [storage.join(path, name) for name in names]
        _check_partitions(path, files, path)
        return files
    if not storage.exists(path):
        raise UserError(f"--input {path}: no such file")
    if storage.is_stream(path):
        raise UserError(f"--input {path}: a pipe or device, not a file; a table is read more than once: write it to a "
                        "file first")  # fmt: skip
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


def _files_in_sub_folders(folder: str, listed: list[str]) -> list[str]:
    """The table files, by their paths below `folder`, in its first sub-folders that are no partitions'
    (months/2024/feb.csv): not read, and so said. A name with a suffix is taken for a file: on gs://, each name
    looked at is a request."""
    found = []
    # Spark's _temporary and _SUCCESS, macOS's __MACOSX: no data
    candidates = [
        name for name in listed if "." not in name and not name.startswith("_") and not PARTITION.fullmatch(name)
    ]
    for name in candidates[:SUB_FOLDERS_LOOKED_AT]:
        sub_folder = storage.join(folder, name)
        if storage.is_folder(sub_folder):
            found += [posixpath.join(name, relative) for relative in _table_names(storage.list_below(sub_folder))]
    return found


def input_root(path: str) -> str:
    """The folder of --input that its files' keys and partitions are below: itself, a glob's folder before its
    first wildcard, or "" for one file."""
    if storage.is_pattern(path):
        return posixpath.dirname(path[: min(path.index(char) for char in storage.WILDCARDS if char in path)]) or "."
    return path if storage.is_folder(path) else ""


def _check_partitions(path: str, files: list[str], root: str) -> None:
    """A UserError where the files lie below different partitions' keys (below `root`, as input_root gives it): a
    file beside the key=value folders, or below more or fewer of them than another (its rows would lack a column the
    others have)."""
    keys = {file: tuple(key for key, _ in partitions_below(file, root)) for file in files}
    first, *others = files
    odd = next((file for file in others if keys[file] != keys[first]), None)
    if odd:
        where = {file: "/".join(f"{key}=..." for key in keys[file]) or "no partition folder" for file in (first, odd)}
        raise UserError(
            f"--input {path}: {first} lies below {where[first]} and {odd} below {where[odd]}: every file of a "
            "partitioned dataset lies below the same key=value folders"
        )


def partitions_below(path: str, root: str) -> tuple[tuple[str, str], ...]:
    return partition_values(posixpath.relpath(posixpath.dirname(path), root))


def partition_values(folders: str) -> tuple[tuple[str, str], ...]:
    """The (column, value) of each key=value folder of a path, %-escapes read, Hive's __HIVE_DEFAULT_PARTITION__ a
    missing value."""
    pairs = [found.groups() for found in map(PARTITION.fullmatch, folders.split("/")) if found]
    unquote = urllib.parse.unquote
    return tuple((unquote(key), "" if value == HIVE_NULL else unquote(value)) for key, value in pairs)


def _table_names(listed: list[str]) -> list[str]:
    """The names of a folder's table files (SUFFIXES, compressed or not), hidden ones left out."""
    return [name for name in listed if plain_name(name).endswith(tuple(SUFFIXES)) and not name.startswith(HIDDEN_FILES)]


def is_table_input(path: str) -> bool:
    """Whether --input names table files: a table file, a glob, or a folder that holds table files (in its
    partitions' folders too)."""
    if storage.is_pattern(path) or plain_name(path).endswith(tuple(SUFFIXES)) or _zipped(path):
        return True
    if not storage.is_folder(path):
        return False
    listed = storage.list_names(path)
    return bool(_table_names(listed) or _files_in_partitions(path, listed))


def file_format(path: str) -> str:
    """The file's format, told by its name; but a table of text under a workbook's name is CSV (a tab-separated
    report.xls, as many web applications export one)."""
    kind = _named_format(table_name(path))
    return CSV if kind == WORKBOOK and not read_head(path).startswith(WORKBOOK_MAGIC) else kind


def table_name(path: str) -> str:
    """The name that tells the table file's format: its own, or a ZIP archive's member's."""
    return _zip_member(path) if _zipped(path) else path


def _named_format(path: str) -> str:
    """The format that the file's name tells (CSV where it tells none)."""
    stem = plain_name(path)
    return next((kind for suffix, kind in SUFFIXES.items() if stem.endswith(suffix)), CSV)


def compression(path: str) -> str:
    """pyarrow's codec of a compressed file (COMPRESSIONS), "zip" for a ZIP archive, "" for another."""
    if _zipped(path):
        return "zip"
    return next((codec for suffix, codec in COMPRESSIONS.items() if path.lower().endswith(suffix)), "")


def _zipped(path: str) -> bool:
    return path.lower().endswith(ZIP)


def plain_name(path: str) -> str:
    """The file's name, lower case, without its compression's suffix."""
    name = posixpath.basename(path).lower()
    return posixpath.splitext(name)[0] if compression(name) else name


@functools.lru_cache(maxsize=64)
def _zip_member(path: str) -> str:
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
    tables = files if len(files) == 1 else [name for name in files if plain_name(name).endswith(tuple(SUFFIXES))]
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
                return archive.getinfo(_zip_member(path)).file_size
        size = file.seek(0, os.SEEK_END)
    return size * COMPRESSION_RATIO if compression(path) else size


def _listed(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


@contextlib.contextmanager
def opened(path: str) -> Iterator[pa.NativeFile]:
    with storage.open_read(path) as file:
        if _zipped(path):
            with zipfile.ZipFile(file) as archive, archive.open(_zip_member(path)) as member:
                yield pa.PythonFile(member, mode="r")
            return
        codec = compression(path)
        if codec == XZ:
            with _XzFile(file) as text:
                yield pa.PythonFile(text, mode="r")
            return
        stream = pa.PythonFile(file, mode="r")
        yield pa.CompressedInputStream(stream, codec) if codec else stream


class _XzFile(lzma.LZMAFile):
    """An xz-compressed file's bytes, whose errors (a cut or damaged file) are OSErrors, as pyarrow's codecs' are."""

    def read(self, size: int = -1) -> bytes:
        try:
            return super().read(size)
        except (lzma.LZMAError, EOFError) as error:
            raise OSError(f"xz: {error}") from None


@contextlib.contextmanager
def local_copy(path: str, first_bytes: int | None = None) -> Iterator[str]:
    """The file's local path, for readers that take only a path (pyreadstat, SQLite): itself, or a temporary copy of
    a gs:// file (of its `first_bytes`, where given)."""
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


def refuse_binary(path: str, head: bytes, encoding: str) -> None:
    """A UserError naming what the file is, where its name or first bytes say it is no table of text (a Stata
    file, an Excel workbook, an archive, other binary data): read as CSV, it would be a garbled header, or a
    table of one garbled column."""
    name = table_name(path)  # a ZIP archive's member's
    what = next((what for suffixes, what in REFUSED_FILES.items() if plain_name(name).endswith(suffixes)), "")
    what = what or next((what for magic, what in NOT_TABLES.items() if head.startswith(magic)), "")
    if HTML.match(head):
        what = "a web page (HTML), not a table of text: save its table as CSV (pandas.read_html reads one)"
    if SPREADSHEET_XML.match(head):
        what = "an Excel 2003 XML spreadsheet: save it as .xlsx (or the sheet as CSV)"
    if what and b"opendocument.spreadsheet" in head[:100]:
        what = "a LibreOffice spreadsheet: name it .ods to read it"
    if head.startswith(b"PK\x03\x04") and b"xl/" in head:  # an Excel workbook's parts: xl/workbook.xml, ...
        what = "an Excel workbook: name it .xlsx to read it"
    if what and plain_name(name).endswith(NUMBERS):
        what = "an Apple Numbers spreadsheet: export it as .xlsx or CSV (File > Export To)"
    wide_text = head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or not ascii_based(encoding)
    if not what and not wide_text and len(CONTROL_BYTES.findall(head)) > BINARY_SHARE * len(head):
        what = "binary data, not a table of text (if it is UTF-16 text without a byte-order mark, pass --encoding)"
    if what:
        raise UserError(f"{path}: " + (f"holds {name}, " if name != path else "") + what)


def encoding_of(head: bytes, encoding: str) -> str:
    """`encoding`, but UTF-16 (or UTF-32) for a CSV file whose `head` begins with its byte-order mark, which no UTF-8
    file can: Excel's "Unicode text" export (tab-separated) is such a file. --encoding utf-16 (or utf-32) without a
    byte-order mark is the byte order the head's zero bytes show, as Python's decoder takes no such file. And UTF-8
    for a file that begins with UTF-8's byte-order mark, whatever --encoding says: read as cp1252, the mark was the
    first column's name's 'ï»¿', and the name was no longer the one the user typed."""
    name = codecs.lookup(encoding).name
    if name in ("utf-16", "utf-32"):
        return _byte_order(head, name)
    if name != "utf-8":
        return "utf-8" if head.startswith(codecs.BOM_UTF8) else encoding
    start = head[:4]
    if start in (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE):  # FF FE 00 00 starts UTF-32 before UTF-16
        return "utf-32"
    return "utf-16" if start[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else encoding


def _byte_order(head: bytes, name: str) -> str:
    """UTF-16 or UTF-32 (`name`) as `head` holds it: with its byte-order mark, or without one, little-endian unless
    its characters' zero bytes come first (big-endian): ASCII text in UTF-16 is "a\0" little-endian, "\0a" big."""
    marks = {"utf-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "utf-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)}
    if head.startswith(marks[name]):
        return name
    width = 2 if name == "utf-16" else 4
    sample = head[: len(head) // width * width]
    zeros_first = sample[0::width].count(0) > sample[width - 1 :: width].count(0)
    return f"{name}-be" if zeros_first else f"{name}-le"


def without_bom(encoding: str) -> str:
    """The codec that reads `encoding` with a UTF-8 byte-order mark left out (spreadsheets write one)."""
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def read_head(path: str, lines: int = 1) -> bytes:
    """The file's first SNIFF_BYTES, or up to the end of its first `lines` lines where that is longer (the header
    of 10,000 columns, a JSON object of as many keys)."""
    try:
        with opened(path) as stream:
            head = stream.read(SNIFF_BYTES)
            while max(head.count(b"\n"), head.count(b"\r")) < lines and len(head) < MAX_FIRST_LINE:
                if not (more := stream.read(len(head))):
                    break
                head += more
    except OSError as error:  # a file named .bz2 that is not bzip2, or a cut one
        raise unreadable(path, error) from None
    return head


def whole_lines(text: str) -> list[str]:
    """The lines of a file's head, but its last where the head cut it off (one line at least)."""
    lines = text.splitlines()
    return lines if text.endswith(("\n", "\r")) else lines[:-1] or lines


def unreadable(path: str, error: OSError) -> UserError:
    """The line for a file whose bytes cannot be read: compressed and cut short or damaged, or not so compressed."""
    return UserError(f"{path}: cannot read ({str(error).splitlines()[0]})")


def block_pieces(columns: int, block_size: int) -> int:
    """How many pieces of `block_size` bytes a block of a table of `columns` gathers (PARSES_A_BLOCK and on)."""
    return max(PARSES_A_BLOCK, min(columns * BLOCK_BYTES_A_COLUMN, MAX_BLOCK_BYTES) // block_size)


def not_text(path: str, encoding: str) -> str:
    """Where the file stops being text in `encoding`: 'line N is not ... text; pass --encoding ...'."""
    decoder = codecs.getincrementaldecoder(encoding)()
    line = 1
    with opened(path) as stream:
        while chunk := stream.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as error:
                line += chunk[: error.start].count(b"\n")
                break
            line += chunk.count(b"\n")
    return f"line {line} is not {encoding} text; pass --encoding with the file's encoding (latin-1, cp1252, ...)"


def ascii_based(encoding: str) -> bool:
    """Whether a newline is one byte, \\n, as in UTF-8 and Latin-1 (not UTF-16's two)."""
    return codecs.lookup(encoding).encode("\n")[0] == b"\n"
