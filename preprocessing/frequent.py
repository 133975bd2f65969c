"""The most frequent values of a column, in bounded memory: a Misra-Gries summary.

Misra-Gries keeps at most `capacity` counters. Two summaries merge by adding their counters and
then subtracting the (capacity + 1)-th largest from all of them, dropping those that reach zero
(Agarwal et al., "Mergeable summaries", 2012): so blocks, files and Beam's bundles combine in
any grouping. A kept count is low by at most `error`, which stays at most N / (capacity + 1)
for N values added; a value that was dropped occurred at most `error` times. While a column
has no more than `capacity` distinct values, nothing is subtracted and every count is exact.

Counters are kept as Arrow arrays and merged with Arrow's group-by, so a column of millions
of distinct values never becomes millions of Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CAPACITY = 40_000  # counters a column keeps: 4x the default vocabulary, so its last entries are sure


@dataclass
class FrequentValues:
    """A Misra-Gries summary of a column's values; add() exact counts, merge() other summaries."""

    capacity: int = CAPACITY
    values: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    error: int = 0  # how much any count may be low by
    overflowed: bool = False  # whether more than `capacity` distinct values were ever held
    _pending: list = field(default_factory=list)  # (values, counts) added since the last compaction
    _pending_size: int = 0
    _ordered: tuple | None = field(default=None, compare=False)  # most_frequent's answer, until a value is added

    def add(self, values: pa.Array, counts: np.ndarray) -> None:
        """Adds the exact counts of distinct values (a block's value_counts)."""
        if len(values):
            self._pending.append((values.cast(pa.string()), np.asarray(counts, np.int64)))
            self._pending_size += len(values)
        if self._pending_size > self.capacity:  # compacting at twice the capacity amortizes its group-by
            self._compact()

    def merge(self, other: FrequentValues) -> None:
        """Adds another summary (of other rows) to this one."""
        other._compact()
        self.capacity = max(self.capacity, other.capacity)  # a text column's summary keeps more than the default
        self.error += other.error
        self.overflowed = self.overflowed or other.overflowed
        self.add(other.values, other.counts)

    def most_frequent(self) -> tuple[pa.Array, np.ndarray]:
        """(values, their counts), most frequent first, ties in value order; as arrays, since a caller
        takes a few of tens of thousands (40,000 Python strings a column cost 9 ms)."""
        self._compact()
        if self._ordered is None:  # sorted once for a column's several readers (its vocabulary, its hints)
            table = pa.table({"value": self.values, "count": self.counts})
            order = pc.sort_indices(table, [("count", "descending"), ("value", "ascending")])
            self._ordered = (self.values.take(order), self.counts[order.to_numpy()])
        return self._ordered

    def replaced(self, pattern: str, replacement: str) -> FrequentValues:
        """This summary with each value matching the regular expression `pattern` replaced (as pyarrow's
        replace_substring_regex does), the counts of values that become one added up."""
        self._compact()
        if not pc.any(pc.match_substring_regex(self.values, pattern)).as_py():
            return self
        found = FrequentValues(self.capacity, error=self.error, overflowed=self.overflowed)
        found._pending = [(pc.replace_substring_regex(self.values, pattern, replacement), self.counts)]
        found.values, found.counts = found._summed()
        return found

    def _compact(self) -> None:
        if not self._pending:
            return
        self._ordered = None
        if len(self.values) == 0 and len(self._pending) == 1:  # one add's values, distinct already
            (values, counts), self._pending, self._pending_size = self._pending[0], [], 0
        else:
            values, counts = self._summed()
        if len(counts) > self.capacity:
            self.overflowed = True
            cut = int(np.partition(counts, len(counts) - self.capacity - 1)[len(counts) - self.capacity - 1])
            kept = counts > cut
            values, counts = values.filter(pa.array(kept)), counts[kept] - cut
            self.error += cut
        self.values, self.counts = values, counts

    def _summed(self) -> tuple[pa.Array, np.ndarray]:
        """The held and pending counts, added up by value."""
        table = pa.table(
            {
                "value": pa.concat_arrays([self.values, *(values for values, _ in self._pending)]),
                "count": np.concatenate([self.counts, *(counts for _, counts in self._pending)]),
            }
        )
        self._pending, self._pending_size = [], 0
        grouped = table.group_by("value").aggregate([("count", "sum")])
        return grouped.column("value").combine_chunks(), grouped.column("count_sum").to_numpy()

    def __getstate__(self) -> dict:  # Beam pickles accumulators: compacted, they are smallest
        self._compact()
        return self.__dict__
