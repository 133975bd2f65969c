"""A table's categorical columns (and a date column's value, and a timestamp's day) as a network's inputs: each
category index's place in the row's vector, and its embedding's width."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from dataformat import tables

if TYPE_CHECKING:
    from dataformat.schema import Metadata

ONE_HOT_MAX = 12  # categorical columns with at most this many indices go in one-hot, larger ones through embeddings


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
