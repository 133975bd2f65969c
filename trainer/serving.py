"""Serving inputs for the exported SavedModel: raw feature tensors, or serialized tf.Example.

Both signatures feed the same feature tensor: the serialized examples are parsed into a
`placeholder_with_default`, which a raw-input request overrides. So the model sees one
input either way, normalized by the same code as in training.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from preprocessing.schema import Metadata, parse_examples

EXAMPLES_SIGNATURE = "examples"


def make_serving_input_fn(metadata: Metadata) -> Callable[[], tf.estimator.export.ServingInputReceiver]:
    """`serving_default` takes float32 values of shape (N, *shape) in the stored scale (0-255
    pixels, raw feature values); `examples` takes serialized tf.Example strings."""

    def serving_input_fn():
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="serialized_examples")
        parsed, _ = parse_examples(serialized, metadata, labeled=False)
        raw = tf.compat.v1.placeholder_with_default(
            tf.cast(parsed, tf.float32), [None, *metadata.shape], name=metadata.feature_key
        )
        return tf.estimator.export.ServingInputReceiver(
            features={metadata.feature_key: raw},
            receiver_tensors={metadata.feature_key: raw},
            receiver_tensors_alternatives={EXAMPLES_SIGNATURE: {"examples": serialized}},
        )

    return serving_input_fn
