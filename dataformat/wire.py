"""The protobuf wire format, written by hand: building tf.train.Example messages was most of the
shard writers' time, and writing the bytes directly needs no TensorFlow in writer processes.
The bytes are those of TensorFlow's deterministic serialization (tests hold them equal)."""

from __future__ import annotations

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


def example(features: dict[str, bytes]) -> bytes:
    """A serialized tf.train.Example of already-encoded Feature messages, map entries by key."""
    entries = b"".join(field(1, field(1, key.encode()) + field(2, features[key])) for key in sorted(features))
    return field(1, entries)  # Example.features (1)
