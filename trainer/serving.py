"""The exported SavedModel's serving inputs: raw values, encoded images, or serialized tf.Example.

Every signature feeds one feature tensor, the raw values in their stored scale (0-255 pixels,
raw feature values), which the model normalizes exactly as in training:

    examples (tf.Example strings) --parse--\\
                                            concat --> placeholder_with_default --> model
    image_bytes (PNG/JPEG) ------decode----/           (`serving_default` feeds it directly)

The encoded inputs are placeholders with an empty default, so a request that feeds one of
them leaves the other empty; a raw-values request overrides the whole chain.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from dataformat.schema import Metadata, parse_examples

EXAMPLES = "examples"  # signature "examples:serving_default", input "examples"
IMAGE_BYTES = "image_bytes"  # signature "image_bytes:serving_default"; *_bytes takes {"b64": ...} over REST


def takes_encoded_images(metadata: Metadata) -> bool:
    return metadata.dtype == "uint8" and metadata.is_image and metadata.shape[-1] in (1, 3)


def decode_images(encoded: tf.Tensor, metadata: Metadata) -> tf.Tensor:
    """PNG/JPEG strings to float32 (N, H, W, C) pixels, resized when their size differs."""
    height, width, channels = metadata.shape

    def decode(data: tf.Tensor) -> tf.Tensor:
        image = tf.io.decode_image(data, channels=channels, expand_animations=False)
        same_size = tf.reduce_all(tf.equal(tf.shape(image)[:2], [height, width]))
        image = tf.cond(same_size, lambda: tf.cast(image, tf.float32), lambda: tf.image.resize(image, [height, width]))
        return tf.ensure_shape(image, metadata.shape)

    return tf.map_fn(decode, encoded, fn_output_signature=tf.TensorSpec(metadata.shape, tf.float32))


def _empty_strings(name: str) -> tf.Tensor:
    return tf.compat.v1.placeholder_with_default(tf.constant([], tf.string), [None], name=name)


def make_serving_input_fn(metadata: Metadata) -> Callable[[], tf.estimator.export.ServingInputReceiver]:
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
        return tf.estimator.export.ServingInputReceiver(
            features={metadata.feature_key: raw},
            receiver_tensors={metadata.feature_key: raw},
            receiver_tensors_alternatives=alternatives,
        )

    return serving_input_fn
