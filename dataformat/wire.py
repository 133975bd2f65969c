"""The protobuf wire format, written by hand: building tf.train.Example messages was most of the
shard writers' time, and writing the bytes directly needs no TensorFlow in writer processes.
The bytes are those of TensorFlow's deterministic serialization (tests hold them equal)."""

from __future__ import annotations

import functools

import numpy as np

_SMALL_VARINTS = [bytes((n,)) for n in range(0x80)]


def varint(value: int) -> bytes:
    if value < 0x80:  # tags and short lengths: the common case, kept fast
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varints(values: np.ndarray) -> bytes:
    """Integers from 0 to 2^35 as consecutive varints (a packed repeated field's payload), as bytes."""
    return packed_varints(values)[0].tobytes()


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


@functools.lru_cache(maxsize=1 << 16)
def entry_header(key: str, path: tuple[int, ...], size: int) -> bytes:
    """The bytes of a Features map entry for `key` that come before its `size` bytes of payload,
    the payload nested in the length-delimited fields `path` of the Feature (outermost first:
    (2, 1) is Feature.float_list > FloatList.value; () means the payload is the Feature itself).

    Cached: a table's records repeat the same keys and sizes, and this was most of their time."""
    value = b""
    for number in (*path[::-1], 2):  # innermost first, then MapEntry.value (2) around the Feature
        value = varint(number << 3 | 2) + varint(size + len(value)) + value
    key_field = field(1, key.encode())  # MapEntry.key (1)
    return varint(1 << 3 | 2) + varint(len(key_field) + len(value) + size) + key_field + value


def example(features: dict[str, bytes]) -> bytes:
    """A serialized tf.train.Example of already-encoded Feature messages, map entries by key."""
    return field(1, b"".join(entry_header(key, (), len(features[key])) + features[key] for key in sorted(features)))


# Many fields at once, vectorized (numpy only: shard writers need no TensorFlow).


def _varint_groups(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each length (below 2^35) as a varint: (bytes of every varint, up to 5, in a [n, 5] array; how many each
    uses)."""
    if not len(lengths) or lengths.max() < 0x80:  # one byte each: short strings, class indices, word IDs rarely
        return lengths.astype(np.uint8)[:, None], np.ones(len(lengths), np.int64)
    lengths = lengths.astype(np.uint64)
    sizes = np.ones(len(lengths), np.int64)
    for bits in (7, 14, 21, 28):
        sizes += lengths >= (1 << bits)
    groups = np.stack([(lengths >> np.uint64(7 * i)) & np.uint64(0x7F) for i in range(5)], axis=1).astype(np.uint8)
    more = np.arange(5)[None, :] < (sizes[:, None] - 1)
    return groups | (more.astype(np.uint8) << 7), sizes


def string_fields(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Strings (Arrow layout: `data[offsets[i]:offsets[i + 1]]`) as consecutive BytesList.value
    fields: (the bytes, and where each string's field starts, n + 1 positions).

    Vectorized, because a Python loop over every string of a large table was most of the time.
    """
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    varints, varint_sizes = _varint_groups(lengths)
    field_sizes = 1 + varint_sizes + lengths
    starts = np.concatenate([[0], np.cumsum(field_sizes)])
    out = np.empty(starts[-1], np.uint8)
    content = np.ones(len(out), bool)  # where the strings' own bytes go
    for i in range(varints.shape[1] + 1):
        places = starts[:-1] + i  # the tag (field 1, length-delimited), then each byte of the varint
        if i == 0:
            out[places] = 0x0A
        elif i == 1:
            out[places] = varints[:, 0]
        else:  # only the longer strings' varints have a second byte, and more
            longer = varint_sizes >= i
            places = places[longer]
            out[places] = varints[longer, i - 1]
        content[places] = False
    out[content] = data[offsets[0] : offsets[-1]]
    return out, starts


# Where a feature's values sit in a tf.train.Feature (see entry_header).
FLOAT_VALUES = (2, 1)  # Feature.float_list > FloatList.value, packed little-endian float32
BYTES_VALUES = (1,)  # Feature.bytes_list, whose BytesList.value fields string_fields makes
INT64_VALUES = (3, 1)  # Feature.int64_list > Int64List.value, packed varints


def packed_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integers from 0 to 2^35 as consecutive varints (a packed repeated field's payload): (the bytes, where each
    value's starts, n + 1)."""
    groups, sizes = _varint_groups(np.asarray(values, np.int64))
    return groups[np.arange(groups.shape[1])[None, :] < sizes[:, None]], np.concatenate([[0], np.cumsum(sizes)])
