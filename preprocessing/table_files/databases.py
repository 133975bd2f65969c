"""SQLite databases (.sqlite, .sqlite3, .db, .db3), as Kaggle and many apps hand out data, read through Python's own
sqlite3: the table (or view) that holds the data (--table, else the one whose columns name the label, else the only
one), and its rows in blocks of text, each named by its place in the table, from 1. A gs:// database is copied to
local disk first: SQLite reads a file by its path."""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from dataformat.errors import UserError
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.headers import distinct_names
from preprocessing.table_files.json_objects import objects_batch
from preprocessing.table_files.locate import SQLITE, compression, local_copy
from preprocessing.table_files.typed import rows_per_block

# The tables and views a user made: SQLite's own (sqlite_sequence, sqlite_stat1) are no data.
TABLES = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"


@contextlib.contextmanager
def _database(path: str) -> Iterator[sqlite3.Connection]:
    """The database, opened to read only; what is no SQLite database a UserError naming the file."""
    if compression(path):
        raise UserError(f"{path}: decompress it first (an SQLite database is read as it is: SQLite seeks in it)")
    with local_copy(path) as local:
        try:  # a URI, to open it read-only: its path %-encoded (a # or % in a name)
            connection = sqlite3.connect(pathlib.Path(local).resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as error:
            raise UserError(f"{path}: cannot open as an SQLite database ({error})") from None
        try:
            yield connection
        except sqlite3.Error as error:  # a damaged database, or another kind of file under its name
            raise UserError(f"{path}: cannot read as an SQLite database ({error})") from None
        finally:
            connection.close()


def database_dialect(path: str, table: str, known: tuple[str, ...]) -> Dialect:
    """The dialect of the database's table that holds the data: `table` (--table), else the one whose columns
    name a `known` column (the label's), else its only one."""
    with _database(path) as database:
        tables = [name for (name,) in database.execute(TABLES)]
        listed = ", ".join(map(repr, tables))
        if not tables:
            raise UserError(f"{path}: the SQLite database has no table")
        if table and table not in tables:
            raise UserError(f"{path}: the database has no table {table!r} (--table); its tables: {listed}")
        if not table:
            wanted = set(filter(None, known))  # each table's columns asked for once, not once a known name
            naming = [name for name in tables if wanted.intersection(_columns(database, name))]
            if len(naming) != 1 and len(tables) > 1:
                raise UserError(f"{path}: the database holds {len(tables)} tables ({listed}): --table names the one")
            table = (naming or tables)[0]
        names = _columns(database, table, strict=True)
    return Dialect(distinct_names(names, path), False, "", "utf-8", SQLITE, sheet=table)


def _columns(database: sqlite3.Connection, table: str, strict: bool = False) -> list[str]:
    """A table's columns; a view that cannot be read (it names a table that is gone) has none, unless `strict`."""
    try:
        return [name for name, *_ in database.execute(f"SELECT * FROM {_quoted(table)} LIMIT 0").description]
    except sqlite3.Error:
        if strict:
            raise
        return []


def _quoted(name: str) -> str:
    """An SQL identifier, quoted: a table's name may hold spaces or quotes."""
    return '"' + name.replace('"', '""') + '"'


def database_blocks(path: str, dialect: Dialect, names: tuple[str, ...]) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """The table's rows in blocks of the `names` columns' text (NULL missing), in the table's order, each row's line
    its place from 1."""
    wanted = ", ".join(_quoted(name) for name in names)
    row, size = 1, rows_per_block(names)
    with _database(path) as database:
        cursor = database.execute(f"SELECT {wanted} FROM {_quoted(dialect.sheet)}")
        while values := cursor.fetchmany(size):
            objects = (
                (row + offset, _row_object(value, names, path, row + offset)) for offset, value in enumerate(values)
            )
            yield objects_batch(objects, path, names)
            row += len(values)


def _row_object(values: tuple, names: tuple[str, ...], path: str, row: int) -> dict:
    """A row as {column: value}; a BLOB of UTF-8 text is that text, and one of other bytes a UserError."""
    if bytes in map(type, values):
        values = tuple(_blob_text(value, path, row, name) for value, name in zip(values, names))
    return dict(zip(names, values))


def _blob_text(value, path: str, row: int, name: str):
    if not isinstance(value, bytes):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(
            f"{path}: row {row}, column {name!r} holds binary data (a BLOB), no value to learn from; --ignore-columns "
            f"{name} leaves it out"
        ) from None
