"""JSON lines, JSON arrays of objects, and one JSON object of a whole table as pandas' to_json writes it: their
columns (the keys of the first objects; a later key is a LateColumn), and their rows in blocks, each object's values as
text (a list's elements as words, a nested object's fields by their path, an ISO 8601 duration as seconds), named by
the line each object starts on (a table object's rows: by their place, from 1)."""

from __future__ import annotations

import codecs
import itertools
import json
import logging
import re
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from dataformat import json_text, tables
from dataformat.errors import UserError
from dataformat.number_patterns import ISO_DURATION
from preprocessing.table_files import locate
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.headers import header_names
from preprocessing.table_files.locate import (
    JSON_ARRAY,
    JSON_LINES,
    JSON_TABLE,
    block_pieces,
    not_text,
    opened,
    plain_name,
    table_name,
    unreadable,
    whole_lines,
    without_bom,
)
from preprocessing.table_files.number_text import column_bytes, durations, has_iso_durations

log = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 1 << 28  # a JSON object of a table is read whole, as pandas reads it: up to this many bytes
LINES_SUFFIXES = (".jsonl", ".ndjson")  # files of JSON lines by name, never one object of a table
TABLE_ROWS_A_BLOCK = 10_000


class LateColumn(UserError):
    """A JSON object with a value under a key that the objects the columns were taken from lack: its file's
    columns are found only by reading every object (every_json_column)."""


def json_dialect(path: str, head: bytes, encoding: str) -> Dialect:
    """JSON lines' or a JSON array's dialect, from its `head` (its first bytes): the keys of its first objects, in
    the order they first appear."""
    text = head.decode(without_bom(encoding), "replace")  # reading names a line that is not UTF-8
    if text.lstrip().startswith("["):
        pieces = _json_array_rows(path, encoding, locate.PARSE_BYTES)
        kind, rows = JSON_ARRAY, next((rows for rows in pieces if rows), [])
    elif one_document(text, path):
        kind, rows = JSON_TABLE, _json_table_rows(path, encoding, said=True)
    else:
        kind = JSON_LINES
        rows = [(number, _json_object(line, path, number)) for number, line in enumerate(whole_lines(text), 1)]
    names, lists = _json_columns(rows)
    if not names:
        empty = {JSON_LINES: "empty file", JSON_ARRAY: "an empty JSON array", JSON_TABLE: "a JSON table of no rows"}
        raise UserError(f"{path}: {empty[kind]}")
    return Dialect(names, False, "", encoding, kind, lists=lists)


def _json_columns(rows: Iterable[tuple[int, dict]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
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
    """_json_columns of every object of the JSON files: the dialect's first columns, then the others as they appear."""
    rows = (row for path in files for piece in _json_pieces(path, dialect) for row in piece)
    return _json_columns(itertools.chain([(0, dict.fromkeys(dialect.names))], rows))


def _json_pieces(path: str, dialect: Dialect) -> Iterator[Iterable[tuple[int, dict]]]:
    block_bytes = block_pieces(len(dialect.names), locate.PARSE_BYTES) * locate.PARSE_BYTES
    if dialect.format == JSON_ARRAY:
        return _json_array_rows(path, dialect.encoding, block_bytes)
    if dialect.format == JSON_TABLE:
        rows = _json_table_rows(path, dialect.encoding)
        return (rows[start : start + TABLE_ROWS_A_BLOCK] for start in range(0, len(rows), TABLE_ROWS_A_BLOCK))
    return _json_lines_rows(path, dialect.encoding, block_bytes)


def json_blocks(
    path: str, dialect: Dialect, names: tuple[str, ...], every_column: bool, verbatim: str
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    known = (frozenset(dialect.names), frozenset(dialect.lists)) if every_column else None
    for rows in _json_pieces(path, dialect):
        batch, lines = objects_batch(rows, path, names, known)
        if len(lines):
            yield _with_seconds_of_durations(batch, verbatim), lines


def _with_seconds_of_durations(batch: pa.RecordBatch, verbatim: str) -> pa.RecordBatch:
    """JSON's ISO 8601 durations as their seconds, as pandas' to_json writes a Timedelta (P0DT0H12M34S) and a
    Parquet file or a workbook holds it as a number; JSON's other strings are as written, its numbers typed."""
    columns = [
        durations(column, ISO_DURATION) if name != verbatim and has_iso_durations(column_bytes(column)) else column
        for name, column in zip(batch.schema.names, batch.columns)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _json_lines_rows(path: str, encoding: str, block_bytes: int) -> Iterator[Iterator[tuple[int, dict]]]:
    """A JSON lines file's objects, with their lines, in pieces of about `block_bytes` of text. Decoded before it is
    split at newlines: in UTF-16 a newline's bytes are two, and a line's next byte its second."""
    text_of = codecs.getincrementaldecoder(without_bom(encoding))()
    line, rest = 1, ""
    with opened(path) as stream:
        while True:
            chunk = _read(stream, block_bytes, path)
            try:
                text = rest + text_of.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                raise UserError(f"{path}: {not_text(path, encoding)}") from None
            cut = len(text) if not chunk else text.rfind("\n") + 1
            whole, rest = text[:cut], text[cut:]
            if whole:
                yield _objects_of_lines(whole, path, line)
                line += whole.count("\n") + (0 if whole.endswith("\n") else 1)
            if not chunk:
                return


def _read(stream, size: int, path: str) -> bytes:
    try:
        return stream.read(size)
    except OSError as error:  # a compressed file cut short, or damaged
        raise unreadable(path, error) from None


def _objects_of_lines(text: str, path: str, first_line: int) -> Iterator[tuple[int, dict]]:
    for offset, line in enumerate(text.split("\n")):
        if line.strip():
            yield first_line + offset, _json_object(line, path, first_line + offset)


def _json_array_rows(path: str, encoding: str, block_bytes: int) -> Iterator[list[tuple[int, dict]]]:
    """The objects of a file of one JSON array (as pandas' to_json(orient="records") and many APIs write a
    table), with the line each starts on, in pieces of about `block_bytes` of text: never the whole file."""
    text_of = codecs.getincrementaldecoder(without_bom(encoding))()
    text, line, expected = "", 1, "["  # expected: '[', an object (or ']' first), ',' or ']', or the end
    with opened(path) as stream:
        while True:
            chunk = _read(stream, block_bytes, path)
            try:
                text += text_of.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                raise UserError(f"{path}: {not_text(path, encoding)}") from None
            rows, position, expected = _array_items(text, line, expected, path, final=not chunk)
            yield rows
            line, text = line + text.count("\n", 0, position), text[position:]
            if not chunk:
                break
            if len(text) > locate.MAX_PARSE_BYTES:
                raise UserError(
                    f"{path}: line {line}: an object of more than {locate.MAX_PARSE_BYTES} bytes, or no JSON"
                )
    if expected != "end":
        raise UserError(f"{path}: the JSON array is not closed (no ']' at its end)")


def one_document(text: str, path: str) -> bool:
    """Whether a JSON file's text (or head) is the start of one JSON object rather than of JSON lines: its first
    line opens an object that goes on over more lines (pretty-printed) or past the head, or it is the one line and
    holds a table. A .jsonl or .ndjson file is JSON lines whatever it holds: one line of it is one row (an instance
    to predict) however nested."""
    lines = [line for line in whole_lines(text) if line.strip()]
    if not lines or not lines[0].lstrip().startswith("{") or plain_name(table_name(path)).endswith(LINES_SUFFIXES):
        return False
    try:
        first = json_text.loads(lines[0])
    except json.JSONDecodeError as error:
        cut = not re.search("[\r\n]", text)  # one line longer than the head: pandas' to_json of a large frame
        return cut or error.pos >= len(lines[0].rstrip())  # cut off by the line's end, not wrong within it
    return len(lines) == 1 and bool(_table_layout(first))


def _json_table_rows(path: str, encoding: str, said: bool = False) -> list[tuple[int, dict]]:
    """The rows of a file of one JSON object of a table, each with its place from 1; `said`: log its layout."""
    data = b""
    with opened(path) as stream:
        while len(data) <= MAX_DOCUMENT_BYTES and (chunk := _read(stream, MAX_DOCUMENT_BYTES + 1 - len(data), path)):
            data += chunk  # a compressed stream may hand back less than asked for
    if len(data) > MAX_DOCUMENT_BYTES:
        raise UserError(
            f"{path}: one JSON object of more than {MAX_DOCUMENT_BYTES >> 20} MiB, which is read whole; write the "
            "table as JSON lines, read a block at a time (pandas: to_json(path, orient='records', lines=True))"
        )
    rows, found = table_rows(_decoded(data, path, encoding), path)
    if said:
        log.info("%s: one JSON object of %d rows, %s", path, len(rows), found)
    return [(number, _an_object(row, path, number)) for number, row in enumerate(rows, 1)]


def table_rows(text: str, path: str) -> tuple[list, str]:
    """The rows of `text`, one JSON object of a table, and how they were found in it (TABLE_LAYOUTS)."""
    try:
        document = json_text.loads(text)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":  # objects of many lines one after another, as jq prints them
            raise UserError(
                f"{path}: line {error.lineno}: another JSON value after the object of many lines above it: JSON lines "
                "hold one whole object a line (jq -c writes them so)"
            ) from None
        raise UserError(f"{path}: line {error.lineno} is not JSON ({error.msg}, column {error.colno})") from None
    layout = _table_layout(document)
    if not layout:
        raise UserError(
            f"{path}: line 1 is no whole JSON object: JSON lines hold one object a line, and a JSON file of many "
            "lines, an array of objects or an object of a table (as pandas' to_json writes one)"
        )
    rows = TABLE_LAYOUTS[layout](document, path)
    if layout == "records":
        return rows, f"the array of objects under {_records_key(document)!r}"
    return rows, f"as pandas' to_json(orient={layout!r}) writes a table"


def _table_layout(document) -> str:
    """The orient of pandas' to_json that a JSON value is a table in ('columns', 'index', 'split' or 'table'),
    'records' for an object that holds one array of objects (an API's {"data": [...], "count": 3}, GeoJSON's
    features), or '' for none. An object of objects of the same keys (pandas writes every row's, nulls too) is
    'columns' (its keys the columns, theirs the rows: pandas' default) or 'index' (its keys the rows): the one whose
    keys are row numbers where the others' are not, or else the one with more rows than columns, as a table to learn
    from has."""
    if not isinstance(document, dict) or not document:
        return ""
    if isinstance(document.get("schema"), dict) and isinstance(document.get("data"), list):
        return "table"
    if isinstance(document.get("columns"), list) and isinstance(document.get("data"), list):
        return "split" if set(document) <= {"columns", "index", "data"} else ""
    if not all(isinstance(value, dict) for value in document.values()):
        return "records" if _records_key(document) else ""
    if len({tuple(sorted(value)) for value in document.values()}) > 1:  # pandas writes every row's key in each
        return ""  # objects of other keys: one nested record, an instance to predict
    inner = {key: None for value in document.values() for key in value}
    if _row_numbers(document) != _row_numbers(inner):
        return "index" if _row_numbers(document) else "columns"
    return "index" if len(document) > len(inner) else "columns"


def _records_key(document: dict) -> str:
    """The key of the one array of objects an object holds, or ""."""
    arrays = [key for key, value in document.items() if value and isinstance(value, list) and _objects(value)]
    return arrays[0] if len(arrays) == 1 else ""


def _objects(values: list) -> bool:
    return all(isinstance(value, dict) for value in values)


def _row_numbers(keys) -> bool:
    return all(re.fullmatch(r"-?\d+", key) for key in keys)


def _rows_of_columns(document: dict, path: str) -> list[dict]:
    rows = {key: None for column in document.values() for key in column}  # every column's rows, in order
    return [{name: column.get(row) for name, column in document.items()} for row in rows]


def _rows_of_split(document: dict, path: str) -> list[dict]:
    """orient='split': the columns' names (numbers where the frame's are), and its rows as lists of values."""
    names = header_names([str(name) for name in document["columns"]], f'{path}: "columns"')  # x, x.1 as pandas
    rows = []
    for number, values in enumerate(document["data"], 1):
        if isinstance(values, list) and len(values) > len(names):
            raise UserError(f'{path}: row {number} has {len(values)} values; "columns" names {len(names)}')
        rows.append(dict(zip(names, values)) if isinstance(values, list) else values)
    return rows


def _rows_of_table(document: dict, path: str) -> list[dict]:
    """orient='table': its rows are objects, with the index as a field that the schema's primaryKey names."""
    key = document["schema"].get("primaryKey") or ()
    index = {key} if isinstance(key, str) else set(key)
    return [
        {name: value for name, value in row.items() if name not in index} if isinstance(row, dict) else row
        for row in document["data"]
    ]  # a row that is no object: _an_object names it


# Each layout's rows, as objects of column values: an index (pandas' row labels) is left out, as pandas'
# read_json makes it the frame's index and no column.
TABLE_LAYOUTS = {
    "columns": _rows_of_columns,
    "index": lambda document, path: list(document.values()),
    "split": _rows_of_split,
    "table": _rows_of_table,
    "records": lambda document, path: document[_records_key(document)],
}

_SPACE = re.compile(r"\s*")


def _array_items(text: str, line: int, expected: str, path: str, final: bool) -> tuple[list, int, str]:
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
                row, end = json_text.raw_decode(text, position)
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
        return text.decode(without_bom(encoding))
    except UnicodeDecodeError:
        raise UserError(f"{path}: {not_text(path, encoding)}") from None


def objects_batch(
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
            values.append(as_text(value, path, line, name))
        lines.append(line)
    batch = pa.RecordBatch.from_arrays([pa.array(values, pa.string()) for values in columns.values()], names)
    return batch, np.array(lines, np.int64)


def _check_known(row: dict, known: frozenset, path: str, line: int) -> None:
    late = [key for key, value in row.items() if key not in known and value is not None]
    if late:
        raise LateColumn(f"{path}: line {line} has a column {late[0]!r} that the first objects lack")


def _json_object(line: str, path: str, number: int) -> dict:
    try:
        row = json_text.loads(line)
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
        unnamed = " (an array of values names no columns: write objects, as pandas' to_json(orient='records') does)"
        raise UserError(f"{path}: line {number} is not a JSON object of column values" + unnamed * (type(row) is list))
    return tables.flattened(row, f"{path}: line {number}")


def as_text(value, path: str, line: int, name: str) -> str:
    try:
        return tables.value_text(value)
    except ValueError as error:
        raise UserError(
            f"{path}: line {line}, column {name!r}: {error}; {tables.LIST_RULE} (--ignore-columns {name} leaves it out)"
        ) from None
