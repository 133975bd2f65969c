"""What hardware this process sees, for the choices that depend on it (data format, staging)."""

import tensorflow as tf


def has_gpu() -> bool:
    return bool(tf.config.list_physical_devices("GPU"))
