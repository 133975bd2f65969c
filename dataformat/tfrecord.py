"""TFRecord framing, so shards can be streamed to any binary file object, and a file's records read back.

Each record is: uint64 length, uint32 masked CRC-32C of the length, the data, uint32 masked
CRC-32C of the data (all little-endian), as TensorFlow's own writer does. Writing it here
lets the shard writer stream to a local temporary file or straight into a Cloud Storage
upload without going through TensorFlow's file layer.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import google_crc32c

from dataformat.errors import UserError, tensorflow_error_line

_MASK_DELTA = 0xA282EAD8


def masked_crc(data: bytes) -> int:
    """CRC-32C rotated and offset the way TFRecord files store it."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One record in TFRecord framing."""
    length = struct.pack("<Q", len(record))
    return b"".join((length, struct.pack("<I", masked_crc(length)), record, struct.pack("<I", masked_crc(record))))


class DamagedFile(UserError):
    """A TFRecord file that cannot be read to its end: a bad checksum, or a record cut short."""


def records(path: str, compression: str = "") -> Iterator[bytes]:
    """A TFRecord file's records, in order (TensorFlow's reader: local or gs://, "GZIP" or ""); DamagedFile, naming
    the file and the records read before, where one is damaged or cut short."""
    import tensorflow as tf

    read = 0
    try:
        for record in tf.data.TFRecordDataset(path, compression).as_numpy_iterator():
            yield record
            read += 1
    except tf.errors.DataLossError as error:
        raise DamagedFile(
            f"{path}: damaged or cut short after {read} record(s) ({tensorflow_error_line(error)})"
        ) from None
