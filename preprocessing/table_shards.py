"""Pass 2: one shard of a table's rows (its temporary Arrow file), in a seeded random order, converted by the
decided columns and written as packed records of tf.train.Example (dataformat.tables), a piece at a time."""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import tables, text
from dataformat.schema import LABEL_KEY, ShardInfo
from dataformat.tfrecord import frame
from preprocessing.columns.dates import count_values
from preprocessing.columns.numeric import read_numbers
from preprocessing.memory import release_memory
from preprocessing.writer import shard_output

WRITE_ROWS = 32768  # rows of a shard converted and encoded at a time
TEXT_WRITE_ROWS = 4096  # the same for a table with text, whose words take far more memory than its rows


@dataclass(frozen=True)
class ShardWriter:
    """Writes one shard of rows (a bucket's table): in their random order, converted, packed, framed."""

    label: str
    columns: tuple[tables.Column, ...]
    classes: tuple[str, ...]
    compression: str
    per_record: int
    key: str = ""  # the key column, stored under its name as a bytes feature
    weight: str = ""  # the weight column, stored under its name as a float feature

    def __call__(self, rows: pa.Table, path: str) -> ShardInfo:
        order = pc.sort_indices(rows.column(rows.num_columns - 1))  # the temporary files' last column (order_column)
        rows_a_piece = TEXT_WRITE_ROWS if any(c.kind == tables.TEXT for c in self.columns) else WRITE_ROWS
        piece = self.per_record * max(1, rows_a_piece // self.per_record)  # whole records a piece
        with shard_output(path, self.compression) as (out, counted):
            for start in range(0, rows.num_rows, piece):
                for record in self._records(rows, order.slice(start, piece)):
                    out.write(frame(record))
        release_memory()  # the shard's buffers: memory stays flat
        return ShardInfo(posixpath.basename(path), rows.num_rows, counted.bytes)

    def write_and_count(self, rows: pa.Table, path: str, split: str) -> tuple[ShardInfo, dict]:
        """The shard written (see __call__), and a training shard's date columns counted by value or day, label and
        fold (dates.count_values), by name: what settles which date values stay categories (settle_date_values)."""
        found = {}
        if split == "train":
            order = rows.column(rows.num_columns - 1).to_numpy()
            labels = self._label_indices(rows.column(self.label))
            for column in tables.columns_of(self.columns, tables.DATE):
                values = rows.column(column.name).combine_chunks()
                found[column.name] = count_values(column, values, labels, order, len(self.classes))
        return self(rows, path), found

    def _label_indices(self, labels: pa.Array) -> np.ndarray:
        """Each row's label as its class's index."""
        return pc.index_in(labels, value_set=pa.array(self.classes)).to_numpy(zero_copy_only=False).astype(np.int64)

    def _records(self, rows: pa.Table, chosen: pa.Array) -> Iterator[bytes]:
        """The records of the chosen rows, in that order, converted one column at a time."""
        numeric = [column.name for column in tables.columns_of(self.columns, tables.NUMERIC)]
        block = np.empty((len(chosen), len(numeric)), np.float32)
        for j, name in enumerate(numeric):  # a value that is not a number is missing, as its statistics had it
            values = rows.column(name).take(chosen).combine_chunks()  # null where missing
            block[:, j] = read_numbers(values, values.is_valid().to_numpy(zero_copy_only=False))[0]
        floats, strings, words = {}, {}, {}
        for column in (column for column in self.columns if column.kind != tables.NUMERIC):
            values = rows.column(column.name).take(chosen).combine_chunks()
            if column.kind == tables.TEXT:
                words[column.name] = _word_ids(pc.fill_null(values, "").to_numpy(zero_copy_only=False), column)
            else:
                strings[column.name] = _arrow_layout(pc.cast(pc.fill_null(values, ""), pa.large_string()))
        if self.weight:  # text checked by pass 1 to be numbers
            weights = rows.column(self.weight).take(chosen).combine_chunks()
            floats[self.weight] = pc.cast(weights, pa.float32()).to_numpy(zero_copy_only=False)
        if self.key:
            keys = rows.column(self.key).take(chosen).combine_chunks()
            strings[self.key] = _arrow_layout(pc.cast(pc.fill_null(keys, ""), pa.large_string()))
        labels = self._label_indices(rows.column(self.label).take(chosen))
        return tables.encode_table_records(block, floats, strings, words, labels, self.per_record, LABEL_KEY)


def order_column(names: list[str]) -> str:
    """The name of the temporary files' last column, each row's random order within its shard: one no column of
    the table has (a table may hold a column named __order__)."""
    name = "__order__"
    while name in names:
        name += "_"
    return name


def _word_ids(texts: np.ndarray, column: tables.Column) -> tuple[np.ndarray, np.ndarray]:
    """A text column's values as the records hold them (text.token_ids): (every word ID, each row's row split)."""
    import tensorflow as tf

    lookup = _lookup(column.vocabulary or column.vocabulary_file)
    ids = text.token_ids(tf.constant(texts, tf.string), lookup, column.max_length)
    return ids.flat_values.numpy(), ids.row_splits.numpy()


@functools.lru_cache(maxsize=8)
def _lookup(vocabulary: tuple[str, ...] | str):
    """One lookup table a vocabulary for every piece of every shard: a table made for each piece stayed in
    memory (1M reviews: 1.13 GB, growing shard by shard)."""
    return text.vocabulary_lookup(vocabulary)


def _arrow_layout(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of a large_string array without nulls."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, np.int64)[array.offset : array.offset + len(array) + 1]
    return offsets, np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
