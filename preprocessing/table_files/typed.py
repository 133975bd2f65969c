"""Parquet and Arrow (Feather) files: their columns from the schema (a struct's fields by their path), and their rows
in blocks of text, converted from their types a block at a time (booleans as true and false, durations as seconds,
lists as words)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dataformat import tables
from dataformat.errors import UserError
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.headers import distinct_names
from preprocessing.table_files.locate import FORMAT_NAMES, NOT_TABLES, PARQUET, compression, opened

UNIT_SECONDS = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}  # Arrow's duration units, in a second
PARQUET_ROWS = 65_536  # rows of a Parquet or Arrow file converted to text at a time ...
PARQUET_CELLS = 1 << 23  # ... or fewer, to hold at most this many values (locate.MAX_BLOCK_BYTES of 8-byte numbers)


def typed_dialect(path: str, kind: str, encoding: str) -> Dialect:
    """A Parquet or Arrow file's dialect: its schema's fields, and which of them hold lists."""
    with _typed_file(path, kind) as file:
        fields = _leaf_fields(file.schema_arrow if kind == PARQUET else file.schema)
    names = distinct_names([name for name, _ in fields], path)
    lists = tuple(name for name, field_type in fields if _is_list_type(field_type))
    return Dialect(names, False, "", encoding, kind, lists=lists)


def rows_per_block(names: tuple[str, ...]) -> int:
    """Rows of a typed file (Parquet, Arrow, a workbook, a statistics package's file) read at a time: PARQUET_ROWS,
    or fewer to hold PARQUET_CELLS."""
    return max(1, min(PARQUET_ROWS, PARQUET_CELLS // len(names)))


@contextlib.contextmanager
def _typed_file(
    path: str, kind: str
) -> Iterator[pq.ParquetFile | pa.ipc.RecordBatchFileReader | pa.ipc.RecordBatchStreamReader]:
    """The Parquet file, or the Arrow file or stream, open for reading; a file that is not one is a UserError
    naming it. Both are read only as they are: they need seeking, and compress within the file."""
    if compression(path):
        raise UserError(f"{path}: decompress it first ({FORMAT_NAMES[kind]} compresses within the file)")
    with opened(path) as stream:
        try:
            yield pq.ParquetFile(stream) if kind == PARQUET else _arrow_reader(stream, path)
        except (pa.ArrowInvalid, OSError) as error:
            raise UserError(f"{path}: cannot read as {FORMAT_NAMES[kind]} ({str(error).splitlines()[0]})") from None


def typed_blocks(path: str, dialect: Dialect, names: tuple[str, ...]) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    row, rows_a_block = 1, rows_per_block(names)
    with _typed_file(path, dialect.format) as file:
        for batch in _batches(file, rows_a_block, names):
            batch = _without_structs(batch)
            texts = [typed_text(batch.column(name), path, name) for name in names]
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


def typed_text(values: pa.Array, path: str, name: str) -> pa.Array:
    if _is_list_type(values.type):
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


def _is_list_type(kind: pa.DataType) -> bool:
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
    texts = typed_text(elements.filter(pa.array(present)), path, name)
    ends = np.cumsum(np.bincount(rows, minlength=len(values)), dtype=np.int64)
    lists = pa.LargeListArray.from_arrays(pa.array(np.concatenate([[0], ends])), texts)
    return pc.fill_null(pc.binary_join(lists, " "), "")
