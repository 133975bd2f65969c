"""A table's categorical columns (and a date column's value) in the record format: a value is stored as its
text, and read as an index: MISSING_INDEX, OOV_INDEX, then the vocabulary in order, then the column's hash
buckets, where a value outside the vocabulary goes by its FarmHash fingerprint (a column without buckets gives
it OOV_INDEX). Any string has an index, so serving takes values never seen in training."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataformat.missing import is_missing_stripped

if TYPE_CHECKING:
    import tensorflow as tf

    from dataformat.tables import Column

MISSING_INDEX, OOV_INDEX = 0, 1  # a categorical column's first two indices; the vocabulary follows
# A whole number written as a fraction, as pandas writes an integer column that lacks a value (12.0): one
# class or category with the integer (12), in labels and in the vocabularies of integer codes.
WHOLE_FRACTION = r"^([+-]?\d+)\.0+$"
# true and false as JSON, Parquet and this reader write them; pandas writes True and False, Python's str() too
BOOLEANS = ("false", "true")
KEY_SEPARATOR = "\x1f"  # between a column's number and a value, in the keys of the vocabularies' one table


def _vocabularies_lookup(columns: list[Column]) -> tf.lookup.StaticHashTable:
    """One table of every column's vocabulary: "j" KEY_SEPARATOR value -> the value's index in column j."""
    import tensorflow as tf

    keys, values = [], []
    for j, column in enumerate(columns):
        keys += [f"{j}{KEY_SEPARATOR}{value}" for value in column.vocabulary]
        values += range(OOV_INDEX + 1, OOV_INDEX + 1 + len(column.vocabulary))
    # Free of the caller's control dependencies: the table is initialized with the local variables,
    # before any queue runs, and must not wait for a record to be read.
    with tf.control_dependencies(None):
        initializer = tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys or [""]), tf.constant(values or [OOV_INDEX], tf.int64)
        )
        return tf.lookup.StaticHashTable(initializer, default_value=OOV_INDEX, name="vocabulary")


def category_indices(values: dict[str, tf.Tensor], columns: list[Column]) -> tf.Tensor:
    """Categorical and date columns' strings (a date whose vocabulary holds ISO 8601 keys: as dates.keys_tf
    writes them, as to_vector gives them) to their value's indices (see the module's docstring), [n, k] float32,
    as one block: one lookup in one table keyed by column and value, missing values found at once, the values
    outside a vocabulary hashed once for each count of buckets. (An op a column made a table of 500 categorical
    columns read 48 batches a second on 2 cores.)"""
    import tensorflow as tf

    strings = tf.strings.strip(tf.stack([_as_counted(values[column.name], column) for column in columns], axis=1))
    prefixes = tf.constant([f"{j}{KEY_SEPARATOR}" for j in range(len(columns))])
    index = _vocabularies_lookup(columns).lookup(
        tf.strings.join([tf.broadcast_to(prefixes, tf.shape(strings)), strings])
    )
    counts = [column.hash_buckets for column in columns]
    first_bucket = tf.constant([OOV_INDEX + 1 + len(column.vocabulary) for column in columns], tf.int64)
    for count in sorted(set(counts) - {0}):
        outside = tf.equal(index, OOV_INDEX) & tf.constant([each == count for each in counts])
        index = tf.where(outside, first_bucket + tf.strings.to_hash_bucket_fast(strings, count), index)
    index = tf.where(is_missing_stripped(strings), tf.constant(MISSING_INDEX, tf.int64), index)
    return tf.cast(index, tf.float32)


def _as_counted(strings: tf.Tensor, column: Column) -> tf.Tensor:
    """A categorical or date column's values spelt as preprocessing counted them (preprocessing/columns/, its
    categorical_column and date_column): in a column of integer codes, whole numbers written as fractions (12.0) as
    integers (12); in a column of true and false, any case (True, TRUE) as lower case. Other columns' values as
    they are."""
    import tensorflow as tf

    if column.integer_codes:
        return tf.strings.regex_replace(tf.strings.strip(strings), WHOLE_FRACTION, r"\1")
    if column.booleans:
        return tf.strings.lower(strings)
    return strings
