"""A table's categorical columns (and a date column's value, and a timestamp's day) as a network's inputs: each
category index's place in the row's vector, its embedding's width, and the embedding tables that hold its rows."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from dataformat import tables

if TYPE_CHECKING:
    from dataformat.schema import Metadata

ONE_HOT_MAX = 12  # categorical columns with at most this many indices go in one-hot, larger ones through embeddings
# Jobs trained before 2026-12-08 kept an embedding table a categorical input, named after its place in the vector;
# such a job resumes with them (ModelSettings.column_embedding_tables).
COLUMN_EMBEDDING_TABLE = re.compile(r"classifier/embedding_\d+/embeddings")


class Category(NamedTuple):
    """One category index of a row's vector: a categorical or date column's value, or a timestamp's day."""

    place: int  # where it is in the vector
    name: str  # its column's name; a day's: the name + tables.DAY
    size: int  # how many indices it has
    labels: Callable[[], list[str]]  # what each index stands for (Column.index_labels, Column.day_labels)


def categorical_inputs(metadata: Metadata) -> list[Category]:
    """Each category index of the vector: each categorical and date column's value, each timestamp's day."""
    found = []
    for column, start in zip(metadata.columns, tables.offsets(metadata.columns)):
        if column.category_slot is not None:
            found.append(Category(start + column.category_slot, column.name, column.size, column.index_labels))
        if column.day_slot is not None:
            days = column.day_count + 1
            found.append(Category(start + column.day_slot, column.name + tables.DAY, days, column.day_labels))
    return found


def embedding_size(indices: int) -> int:
    """A categorical column's embedding width: grows slowly with its vocabulary, at most 32."""
    return min(32, max(2, round(1.6 * math.pow(indices, 0.56))))


class EmbeddingTable(NamedTuple):
    """One of the deep part's embedding tables: the rows of one or more categorical inputs, each from its offset."""

    name: str  # its layer's
    width: int
    members: list[int]  # each input's place in categorical_inputs' list
    offsets: list[int]  # each one's first row
    rows: int


def embedding_tables(categories: list[Category], column_tables: bool = False) -> list[EmbeddingTable]:
    """The embedding tables of the inputs of more than ONE_HOT_MAX indices: one a width, each input's rows from its
    own offset, as DLRM concatenates its tables, so that a step makes one lookup and one sparse update a width, not
    one an input (the click-log benchmark's 26 columns, all embedded 32 wide: 115-148 steps/s, 89-116 with a table
    each).
    `column_tables`: a table an input, named embedding_PLACE, as jobs trained before kept them
    (column_embedding_tables)."""
    grouped: dict[str, list[int]] = {}
    for j, category in enumerate(categories):
        if category.size > ONE_HOT_MAX:
            width = embedding_size(category.size)
            name = f"embedding_{category.place}" if column_tables else f"embeddings_of_width_{width}"
            grouped.setdefault(name, []).append(j)
    found = []
    for name, members in grouped.items():
        sizes = [categories[j].size for j in members]
        offsets = [sum(sizes[:k]) for k in range(len(sizes))]
        found.append(EmbeddingTable(name, embedding_size(sizes[0]), members, offsets, sum(sizes)))
    return found


def column_embedding_tables(variables) -> bool:
    """Whether a checkpoint's variable names hold an embedding table a categorical input (COLUMN_EMBEDDING_TABLE)."""
    return any(COLUMN_EMBEDDING_TABLE.fullmatch(name) for name in variables)
