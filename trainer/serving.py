"""The exported SavedModel's serving inputs: raw values, encoded images, or serialized tf.Example.

Every signature feeds one feature tensor, the raw values in their stored scale (0-255 pixels,
raw feature values), which the model normalizes exactly as in training:

    examples (tf.Example strings) --parse--\\
                                            concat --> placeholder_with_default --> model
    image_bytes (PNG/JPEG) ------decode----/           (`serving_default` feeds it directly)

The encoded inputs are placeholders with an empty default, so a request that feeds one of
them leaves the other empty; a raw-values request overrides the whole chain.

Vertex AI batch prediction sends every instance to `serving_default`, so --serving-input
chooses what it takes (with_default_input): numbers, encoded images or serialized examples.
The chosen input keeps its own signature too, and the numbers then move to
`numbers:serving_default`.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from dataformat import tables
from dataformat.errors import UserError
from dataformat.numeric import NUMERIC_KEY, numeric_block
from dataformat.schema import KEY, Metadata, parse_examples, table_example_values
from trainer import exif

EXAMPLES = "examples"  # signature "examples:serving_default", input "examples"
CSV_LINES = "csv_lines"  # tables: signature "csv_lines:serving_default", a row's values without the label
IMAGE_BYTES = "image_bytes"  # signature "image_bytes:serving_default"; *_bytes takes {"b64": ...} over REST
PNG_MAGIC = b"\x89PNG"  # a PNG's first bytes: the one format whose fourth channel is alpha
NUMBERS = "numbers"  # the raw values: serving_default, or "numbers:serving_default" when another input is the default


def takes_encoded_images(metadata: Metadata) -> bool:
    return metadata.dtype == "uint8" and metadata.is_image and metadata.shape[-1] in (1, 3)


def decode_images(encoded: tf.Tensor, metadata: Metadata) -> tf.Tensor:
    """PNG/JPEG/GIF/BMP strings to float32 (N, H, W, C) pixels as preprocessing stored the training photos
    (preprocessing/sources.py's ImageLoader, with Pillow): turned upright as its EXIF orientation says, a PNG's
    transparent parts on white, then gray or color, then resized with antialiasing, each step's pixels whole
    numbers as uint8 held them. Decoding straight to the model's channels dropped the alpha, so a transparent
    PNG's background came out black where training saw white, and an unfiltered resize of a large photo differed
    by 15 levels a pixel. A 32-bit BMP's fourth byte is no alpha, as Pillow reads it; TensorFlow reads no GIF's
    transparency (qt-predict sends a GIF as PNG)."""
    height, width, channels = metadata.shape

    def decode(data: tf.Tensor) -> tf.Tensor:
        image = tf.cast(tf.io.decode_image(data, expand_animations=False), tf.float32)  # its own 1 to 4 channels
        image = exif.upright(data, image)
        alpha = tf.equal(tf.strings.substr(data, 0, 4), PNG_MAGIC) & tf.equal(tf.shape(image)[-1] % 2, 0)
        image = tf.cond(alpha, lambda: _on_white(image), lambda: image[..., :3])
        image = _with_channels(image, channels)
        same_size = tf.reduce_all(tf.equal(tf.shape(image)[:2], [height, width]))
        return tf.ensure_shape(tf.cond(same_size, lambda: image, lambda: resized(image)), metadata.shape)

    def resized(image: tf.Tensor) -> tf.Tensor:
        return _whole(tf.image.resize(image, [height, width], antialias=True))

    # map_fn hands `decode` to AutoGraph, whose conversion took 1.6 s of each export; it branches with tf.cond, never
    # on a tensor in Python, so there is nothing to convert.
    decode = tf.autograph.experimental.do_not_convert(decode)
    return tf.map_fn(decode, encoded, fn_output_signature=tf.TensorSpec(metadata.shape, tf.float32))


def _on_white(image: tf.Tensor) -> tf.Tensor:
    """Pixels whose last channel is alpha (gray or RGB with it) over a white background, without the alpha."""
    alpha = image[..., -1:] / 255.0
    return _whole(image[..., :-1] * alpha + 255.0 * (1.0 - alpha))


def _with_channels(image: tf.Tensor, channels: int) -> tf.Tensor:
    """Gray or RGB pixels as the model's channels: RGB to gray by ITU-R 601's weights, as Pillow's convert("L")."""
    gray = tf.equal(tf.shape(image)[-1], 1)
    if channels == 1:
        return tf.cond(gray, lambda: image, lambda: _whole(tf.image.rgb_to_grayscale(image)))
    return tf.cond(gray, lambda: tf.tile(image, [1, 1, 3]), lambda: image)


def _whole(pixels: tf.Tensor) -> tf.Tensor:
    """Pixels rounded into 0..255, as a uint8 image holds them."""
    return tf.clip_by_value(tf.round(pixels), 0.0, 255.0)


def _empty_strings(name: str | None = None) -> tf.Tensor:
    """A [None] string input that is empty unless fed."""
    return tf.compat.v1.placeholder_with_default(tf.constant([], tf.string), [None], name=name)


def make_serving_input_fn(metadata: Metadata) -> Callable[[], tf.estimator.export.ServingInputReceiver]:
    if metadata.is_table:
        return _table_serving_input_fn(metadata)

    def serving_input_fn():
        examples = _empty_strings(EXAMPLES)
        sources = [tf.cast(parse_examples(examples, metadata), tf.float32)]
        alternatives = {EXAMPLES: {EXAMPLES: examples}}
        if takes_encoded_images(metadata):
            image_bytes = _empty_strings(IMAGE_BYTES)
            sources.append(decode_images(image_bytes, metadata))
            alternatives[IMAGE_BYTES] = {IMAGE_BYTES: image_bytes}
        raw = tf.compat.v1.placeholder_with_default(
            tf.concat(sources, axis=0), [None, *metadata.shape], name=metadata.feature_key
        )
        features, receivers = {metadata.feature_key: raw}, {metadata.feature_key: raw}
        if metadata.key_column:  # every input but serialized examples (which hold theirs) takes a key an example
            key = _keys(examples, metadata.key_column)
            receivers[metadata.key_column] = key
            if IMAGE_BYTES in alternatives:
                alternatives[IMAGE_BYTES][metadata.key_column] = key
            features[KEY] = _one_key_each(key, tf.shape(raw)[0])
        return tf.estimator.export.ServingInputReceiver(
            features=features, receiver_tensors=receivers, receiver_tensors_alternatives=alternatives
        )

    return serving_input_fn


def _keys(examples: tf.Tensor, name: str) -> tf.Tensor:
    """The key input (--key-column), by default the keys that serialized examples hold."""
    spec = {name: tf.io.FixedLenFeature([], tf.string, default_value="")}
    return tf.compat.v1.placeholder_with_default(tf.io.parse_example(examples, spec)[name], [None])


def _one_key_each(keys: tf.Tensor, examples: tf.Tensor) -> tf.Tensor:
    """The keys, one an example; a request with none gets "" each, one with another count is refused."""
    keys = tf.cond(tf.equal(tf.size(keys), 0), lambda: tf.fill([examples], ""), lambda: keys)
    check = tf.debugging.assert_equal(tf.size(keys), examples, message="give one key an example, or none")
    with tf.control_dependencies([check]):
        return tf.identity(keys)


def _table_serving_input_fn(metadata: Metadata) -> Callable[[], tf.estimator.export.ServingInputReceiver]:
    """Tables: `serving_default` takes one input a column, named as in the header (float32 for a
    numeric column, NaN for missing; a string for a categorical one); `examples:serving_default`
    takes tf.Examples of one feature a column (a feature left out is a missing value; without text
    columns, the numbers may come as one block, as a record of one row holds them), and
    `csv_lines:serving_default` CSV lines of the columns in metadata.json's order. All three go
    through one tables.to_vector, as training does. A table with a key column (--key-column) takes each
    row's key too (an input, a feature, the first field of a CSV line) and returns it as `key`."""

    def serving_input_fn():
        columns, key = metadata.columns, metadata.key_column
        named = _column_inputs(columns)
        examples, lines = _empty_strings(EXAMPLES), _empty_strings(CSV_LINES)
        from_lines = tables.parse_csv_lines(lines, columns, key)
        from_examples = table_example_values(examples, columns, key)
        values = _finite_or_missing(_one_after_another([_as_block(named, columns), from_examples, from_lines]))
        features = {metadata.feature_key: tables.to_vector(values, columns)}
        if key:  # passed through to the predictions, whichever input the rows came in
            named[key] = _empty_strings()
            features[KEY] = tf.concat([named[key], from_examples[key], from_lines[key]], axis=0)
        return tf.estimator.export.ServingInputReceiver(
            features=features,
            receiver_tensors=named,
            receiver_tensors_alternatives={EXAMPLES: {EXAMPLES: examples}, CSV_LINES: {CSV_LINES: lines}},
        )

    return serving_input_fn


def _as_block(named: dict[str, tf.Tensor], columns: tuple[tables.Column, ...]) -> dict[str, tf.Tensor]:
    """`serving_default`'s inputs with the numbers as one block, as the other inputs give them."""
    numeric = tables.columns_of(columns, tables.NUMERIC)
    values = {column.name: named[column.name] for column in columns if column.kind != tables.NUMERIC}
    return {NUMERIC_KEY: numeric_block(named, numeric), **values} if numeric else values


def _one_after_another(sources: list[dict[str, tf.Tensor]]) -> dict[str, tf.Tensor]:
    """The column values of every input (the first's names: to_vector's, the others may hold more, such as
    a key), one input's rows after another's, so that to_vector builds its ops once for them all: on a
    table of flights a call adds 491 ops in 0.26 s, and one a signature took 72% of an export's time."""
    return {name: tf.concat([source[name] for source in sources], axis=0) for name in sources[0]}


def _finite_or_missing(values: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The requests' numbers beyond float32's range (1e200, inf) as missing, as preprocessing reads them
    (preprocessing/columns/numeric.py, read_numbers); its records hold none, so training needs no such op."""
    if NUMERIC_KEY not in values:
        return values
    block = values[NUMERIC_KEY]
    return {**values, NUMERIC_KEY: tf.where(tf.math.is_finite(block), block, float("nan"))}


def _column_inputs(columns: tuple[tables.Column, ...]) -> dict[str, tf.Tensor]:
    """`serving_default`'s inputs: a [None] tensor a column (float32 for a numeric one, else a string),
    empty unless fed. They are the outputs of one op for each type, an unstacked empty block, not a
    placeholder each: a session feeds any tensor by name, and at 4,096 columns the placeholders took
    0.9 s to build and the Estimator's export check (`_ensure_servable`, quadratic in the ops it walks
    back through) 1.4 s more."""
    inputs = {}
    for numeric, dtype in ((True, tf.float32), (False, tf.string)):
        names = [column.name for column in columns if (column.kind == tables.NUMERIC) == numeric]
        if names:
            block = tf.compat.v1.placeholder_with_default(tf.zeros([0, len(names)], dtype), [None, len(names)])
            inputs.update(zip(names, tf.unstack(block, axis=1)))
    return inputs


def with_default_input(
    serving_input_fn: Callable, default: str
) -> Callable[[], tf.estimator.export.ServingInputReceiver]:
    """`serving_input_fn` with its alternative input `default` (IMAGE_BYTES or EXAMPLES) as serving_default,
    and the numbers under NUMBERS; the same function for NUMBERS. UserError when the data has no such input."""
    if default == NUMBERS:
        return serving_input_fn

    def serving_input_fn_with_default():
        receiver = serving_input_fn()
        alternatives = receiver.receiver_tensors_alternatives
        if default not in alternatives:
            takes = ", ".join([NUMBERS, *alternatives])
            raise UserError(f"--serving-input {default}: this dataset's model does not take it (it takes {takes})")
        return tf.estimator.export.ServingInputReceiver(
            features=receiver.features,
            receiver_tensors=alternatives[default],
            receiver_tensors_alternatives={**alternatives, NUMBERS: receiver.receiver_tensors},
        )

    return serving_input_fn_with_default
