"""TFRecord framing, so shards can be streamed to any binary file object.

Each record is: uint64 length, uint32 masked CRC-32C of the length, the data, uint32 masked
CRC-32C of the data (all little-endian), as TensorFlow's own writer does. Writing it here
lets the shard writer stream to a local temporary file or straight into a Cloud Storage
upload without going through TensorFlow's file layer.
"""

import struct

import google_crc32c

_MASK_DELTA = 0xA282EAD8


def masked_crc(data: bytes) -> int:
    """CRC-32C rotated and offset the way TFRecord files store it."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One record in TFRecord framing."""
    length = struct.pack("<Q", len(record))
    return b"".join((length, struct.pack("<I", masked_crc(length)), record, struct.pack("<I", masked_crc(record))))
