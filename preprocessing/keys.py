"""The --key-column's checks, a file at a time: rows without a key, and keys that repeat. A prediction comes back
under its row's key, so either row joins back to no row, or to several."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat.errors import quoted

log = logging.getLogger(__name__)

# A file's keys checked for repeats, at most: 8 bytes each (their hashes; twice that while two arrays merge), so that
# memory stays bounded on any file.
KEYS_CHECKED = 4_000_000


FNV_OFFSET, FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def fnv1a(values: pa.Array) -> np.ndarray:
    """Each string's 64-bit FNV-1a hash, all of them a byte position at a time (native speed: turning a block's
    values into Python strings took 1.5 s a million)."""
    values = values.cast(pa.large_binary())
    offsets = np.frombuffer(values.buffers()[1], np.int64)[values.offset : values.offset + len(values) + 1]
    data = values.buffers()[2]  # none where every value is empty
    data = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    lengths = np.diff(offsets)
    longest_first = np.argsort(-lengths, kind="stable")
    starts, descending = offsets[:-1][longest_first], lengths[longest_first]
    hashes = np.full(len(values), FNV_OFFSET, np.uint64)
    for position in range(int(descending[0]) if len(values) else 0):
        longer = np.searchsorted(-descending, -position, side="left")  # the values longer than `position`
        hashes[:longer] = (hashes[:longer] ^ data[starts[:longer] + position]) * FNV_PRIME
    found = np.empty_like(hashes)
    found[longest_first] = hashes
    return found


class KeyCheck:
    """One file's keys, block after block; `warn` names what was found."""

    def __init__(self):
        self.missing, self.first_missing = 0, 0  # rows without a key, and the first one's line
        self.repeats, self.first_repeat = 0, (0, "")  # rows whose key an earlier row has, and the first (line, key)
        self.checked = 0
        self.seen: list[np.ndarray] = []  # sorted hashes of the keys so far, merged as they grow (see _remember)

    def add(self, keys: pa.Array, lines: np.ndarray) -> None:
        """A block's keys (trimmed, of its labelled rows) and their lines."""
        empty = pc.equal(pc.fill_null(keys, ""), "").to_numpy(zero_copy_only=False)
        if empty.any():
            self.missing += int(np.count_nonzero(empty))
            self.first_missing = self.first_missing or int(lines[np.argmax(empty)])
        if self.checked >= KEYS_CHECKED:
            return
        kept = np.flatnonzero(~empty)[: KEYS_CHECKED - self.checked]
        if not len(kept):
            return
        values = keys.take(pa.array(kept))
        hashes = fnv1a(values)  # a key is stored as written: "NA" is one
        distinct, firsts = np.unique(hashes, return_index=True)  # one sort: the block's hashes, each one's first row
        repeated = np.ones(len(hashes), bool)
        repeated[firsts] = False  # within the block: every row of a hash but its first
        repeated |= self._in_earlier_blocks(hashes)
        if repeated.any():
            self.repeats += int(np.count_nonzero(repeated))
            first = int(np.argmax(repeated))
            if not self.first_repeat[0]:
                self.first_repeat = (int(lines[kept[first]]), values[first].as_py())
        self._remember(distinct)
        self.checked += len(hashes)

    def _in_earlier_blocks(self, hashes: np.ndarray) -> np.ndarray:
        """Which hashes a key of the blocks before has."""
        repeated = np.zeros(len(hashes), bool)
        for earlier in self.seen:
            at = np.minimum(np.searchsorted(earlier, hashes), len(earlier) - 1)
            repeated |= earlier[at] == hashes
        return repeated

    def _remember(self, hashes: np.ndarray) -> None:
        """Keeps the sorted hashes in a few arrays, each more than twice the next: a block's search stays a few
        binary searches, and each hash is merged about log2(blocks) times."""
        self.seen.append(hashes)
        while len(self.seen) > 1 and len(self.seen[-2]) <= 2 * len(self.seen[-1]):
            last = self.seen.pop()
            self.seen[-1] = np.union1d(self.seen[-1], last)

    def warn(self, path: str, column: str) -> None:
        if self.missing:
            log.warning("%s: line %d, column %s: the key is missing (--key-column), in %d row(s) of this file",
                        path, self.first_missing, column, self.missing)  # fmt: skip
        if self.repeats:
            line, key = self.first_repeat
            checked = "" if self.checked < KEYS_CHECKED else f" (its first {KEYS_CHECKED:,} keys checked)"
            log.warning(
                "%s: line %d, column %s: the key %s is an earlier row's (--key-column), as %d row(s) of this file%s "
                "repeat one: their predictions come back under the same key",
                path, line, column, quoted(key), self.repeats, checked,
            )  # fmt: skip
