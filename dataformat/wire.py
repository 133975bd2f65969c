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
    """Non-negative integers as consecutive varints (a packed repeated field's payload)."""
    values = np.asarray(values, np.int64)
    if len(values) and values.min() >= 0 and values.max() < 0x80:  # one byte each: class indices, mostly
        return values.astype(np.uint8).tobytes()
    return b"".join(varint(int(value)) for value in values)


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
