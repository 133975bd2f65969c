"""A photo's EXIF orientation, read and applied in the graph, so that the export turns a phone's photo upright as
preprocessing did (preprocessing/photos.py's `upright`). Phones store a portrait photo's pixels sideways and say
so in the EXIF block; TensorFlow's decoders ignore that block.

Both read the block where Pillow keeps it as `info["exif"]` when it opens a file: a JPEG's APP1 segment after
"Exif\\0\\0", or a PNG's eXIf chunk before its pixels (IDAT). The block is a TIFF header, then a directory whose
ORIENTATION entry holds a number 1-8. Anything else, or a block this cannot read, leaves the pixels as they are;
so does a block past a file's first SEARCHED_BYTES, which Pillow would read (no camera writes one there).
"""

from __future__ import annotations

import tensorflow as tf

JPEG_START, PNG_START = b"\xff\xd8", b"\x89PNG"
JPEG_EXIF = b"Exif\0\0"  # an APP1 segment's start; the TIFF header follows
PNG_EXIF, PNG_PIXELS = b"eXIf", b"IDAT"  # chunk types; an eXIf chunk's data is the TIFF header
ORIENTATION = 0x0112  # the TIFF tag
LONG = 4  # the TIFF type of a 4-byte number; the orientation is read as 2 bytes (a SHORT) in any other
MAX_ENTRIES = 128  # a directory's entries looked at; cameras write a dozen or two
SEARCHED_BYTES = 1 << 20  # a file's first bytes, where its EXIF block is looked for (past a few segments before it)
BLOCK_BYTES = 4096  # of the block, read: the TIFF header, then the directory (cameras start it at byte 8)


def upright(data: tf.Tensor, image: tf.Tensor) -> tf.Tensor:
    """`image` (H, W, C), decoded from the encoded file `data`, turned as its EXIF orientation says, as Pillow's
    Image.transpose turns it in preprocessing."""
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
    jpeg = tf.equal(tf.strings.substr(data, 0, len(JPEG_START)), JPEG_START)
    png = tf.equal(tf.strings.substr(data, 0, len(PNG_START)), PNG_START)
    head = tf.strings.substr(data, 0, SEARCHED_BYTES)
    found, block = tf.case(
        [
            (jpeg, lambda: _after(head, JPEG_EXIF)),
            (png, lambda: _png_block(head)),
        ],
        default=lambda: (tf.constant(False), tf.constant(b"")),
    )
    value = _orientation_entry(block)
    return tf.where(found & (value >= 1) & (value <= 8), value, 1)


def _after(data: tf.Tensor, pattern: bytes) -> tuple[tf.Tensor, tf.Tensor]:
    """Whether `pattern` is in `data`, and the bytes after its first place."""
    pieces = tf.strings.split(data, pattern, maxsplit=1)
    return tf.size(pieces) > 1, pieces[-1]


def _png_block(data: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """_after for a PNG's eXIf chunk before its pixels, whose data some tools start with JPEG's "Exif\\0\\0" too."""
    found, block = _after(tf.strings.split(data, PNG_PIXELS, maxsplit=1)[0], PNG_EXIF)
    prefixed = tf.equal(tf.strings.substr(block, 0, len(JPEG_EXIF)), JPEG_EXIF)
    return found, tf.where(prefixed, tf.strings.substr(block, len(JPEG_EXIF), tf.strings.length(block)), block)


def _orientation_entry(block: tf.Tensor) -> tf.Tensor:
    """The value of the ORIENTATION entry in the first directory of the TIFF header that starts `block`; 0 where
    there is none, or the header or the directory's place do not read."""
    head = tf.io.decode_raw(tf.strings.substr(block, 0, BLOCK_BYTES), tf.uint8)
    head = tf.cast(tf.pad(head, [[0, BLOCK_BYTES + 4 - tf.size(head)]]), tf.int32)  # zeros past what is read
    little = tf.reduce_all(tf.equal(head[:4], [ord("I"), ord("I"), 42, 0]))
    big = tf.reduce_all(tf.equal(head[:4], [ord("M"), ord("M"), 0, 42]))

    def number(at: tf.Tensor, size: int) -> tf.Tensor:
        """The unsigned `size`-byte numbers at each of `at`, in the header's byte order (4 bytes wrap past 2**31)."""
        digits = tf.gather(head, tf.clip_by_value(at[..., None] + tf.range(size), 0, BLOCK_BYTES + 3))
        return tf.reduce_sum(digits * tf.where(little, 256 ** tf.range(size), 256 ** tf.range(size - 1, -1, -1)), -1)

    directory = number(tf.constant(4), 4)  # where the directory starts, from the header's start
    readable = (little | big) & (directory >= 8) & (directory < BLOCK_BYTES)
    entries = directory + 2 + 12 * tf.range(MAX_ENTRIES)  # each: tag (2 bytes), type (2), count (4), value (4)
    wanted = (tf.range(MAX_ENTRIES) < number(directory, 2)) & tf.equal(number(entries, 2), ORIENTATION)
    types = number(entries + 2, 2)
    values = tf.where(tf.equal(types, LONG), number(entries + 8, 4), number(entries + 8, 2))
    first = tf.argmax(tf.cast(wanted, tf.int32))
    return tf.where(readable & tf.reduce_any(wanted), tf.gather(values, first), 0)
