"""A photo's EXIF orientation, read and applied in the graph, so that the export turns a phone's photo upright as
preprocessing did with Pillow (preprocessing/sources.py). Phones store a portrait photo's pixels sideways and
say so in the EXIF block; TensorFlow's decoders ignore that block.

The block is read where JPEG (an APP1 segment "Exif\\0\\0") and PNG (an "eXIf" chunk) keep it, within the file's
first HEAD_BYTES: a TIFF header, then the first directory's entries, one of which (ORIENTATION) holds a number
1-8. Anything else, or a block this cannot read, leaves the pixels as they are.
"""

from __future__ import annotations

import tensorflow as tf

HEAD_BYTES = 65_600  # an APP1 segment is at most 64 KiB, and comes before the pixels
JPEG_START = (0xFF, 0xD8)
PNG_START = (0x89, ord("P"))
JPEG_EXIF = b"Exif\0\0"  # then the TIFF header
PNG_EXIF = b"eXIf"  # a PNG chunk's type, then the TIFF header
ORIENTATION = 0x0112  # the TIFF tag
MAX_ENTRIES = 64  # a directory's entries looked at; cameras put the orientation among the first dozen


def upright(data: tf.Tensor, image: tf.Tensor) -> tf.Tensor:
    """`image` (H, W, C), decoded from the encoded file `data`, turned as its EXIF orientation says, as Pillow's
    ImageOps.exif_transpose turns it."""
    turns = [
        lambda: image,  # 1: upright
        lambda: tf.reverse(image, [1]),  # 2: mirrored
        lambda: tf.reverse(image, [0, 1]),  # 3: upside down
        lambda: tf.reverse(image, [0]),  # 4: mirrored upside down
        lambda: tf.transpose(image, [1, 0, 2]),  # 5: Pillow's TRANSPOSE
        lambda: tf.reverse(tf.transpose(image, [1, 0, 2]), [1]),  # 6: turned a quarter clockwise
        lambda: tf.reverse(tf.transpose(image, [1, 0, 2]), [0, 1]),  # 7: Pillow's TRANSVERSE
        lambda: tf.reverse(tf.transpose(image, [1, 0, 2]), [0]),  # 8: turned a quarter counterclockwise
    ]
    return tf.switch_case(orientation(data) - 1, turns)


def orientation(data: tf.Tensor) -> tf.Tensor:
    """The EXIF orientation (1-8) of one encoded image, 1 where it has none that this reads."""
    head = tf.io.decode_raw(tf.strings.substr(data, 0, HEAD_BYTES), tf.uint8)
    head = tf.cast(tf.pad(head, [[0, HEAD_BYTES + 2 - tf.size(head)]]), tf.int32)  # zeros past the end
    jpeg = _starts_with(head, JPEG_START)
    tiff = tf.where(jpeg, _after(head, JPEG_EXIF), tf.where(_starts_with(head, PNG_START), _after(head, PNG_EXIF), -1))
    value = tf.cond(tiff >= 0, lambda: _orientation_entry(head, tiff), lambda: tf.constant(1))
    return tf.where((value >= 1) & (value <= 8), value, 1)


def _starts_with(head: tf.Tensor, start: tuple[int, int]) -> tf.Tensor:
    return tf.equal(head[0], start[0]) & tf.equal(head[1], start[1])


def _after(head: tf.Tensor, pattern: bytes) -> tf.Tensor:
    """The index just after the first `pattern` in `head`, or -1."""
    count = tf.size(head) - len(pattern) + 1
    found = tf.ones([count], tf.bool)
    for offset, byte in enumerate(pattern):
        found &= tf.equal(head[offset : offset + count], byte)
    places = tf.where(found)
    return tf.cond(tf.size(places) > 0, lambda: tf.cast(places[0, 0], tf.int32) + len(pattern), lambda: -1)


def _orientation_entry(head: tf.Tensor, tiff: tf.Tensor) -> tf.Tensor:
    """The value of the ORIENTATION entry in the first directory of the TIFF header at `tiff`, or 0."""
    little = tf.equal(head[tiff], ord("I")) & tf.equal(head[tiff + 1], ord("I"))  # else "MM", big-endian

    def number(at: tf.Tensor, size: int) -> tf.Tensor:
        """The unsigned `size`-byte numbers at `tiff + at`, as the header's byte order writes them."""
        places = tf.clip_by_value(tiff + at[..., None] + tf.range(size), 0, HEAD_BYTES - 1)
        digits = tf.gather(head, places)
        weights = tf.where(little, 256 ** tf.range(size), 256 ** tf.range(size - 1, -1, -1))
        return tf.reduce_sum(digits * weights, axis=-1)

    directory = number(tf.constant(4), 4)  # its offset from the header; at most 2**31 read as int32
    entries = directory + 2 + 12 * tf.range(MAX_ENTRIES)  # each: tag, type, count (4 bytes), value
    listed = tf.range(MAX_ENTRIES) < number(directory, 2)
    tags = tf.where(listed, number(entries, 2), -1)
    values = number(entries + 8, 2)  # a SHORT's value sits in the value field's first two bytes
    matches = tf.where(tf.equal(tags, ORIENTATION))
    return tf.cond(tf.size(matches) > 0, lambda: values[matches[0, 0]], lambda: tf.constant(0))
