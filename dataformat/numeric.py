"""A table's numeric columns in the record format: one block of float32 numbers a row under NUMERIC_KEY (NaN
where missing), and numbers written as text read as preprocessing reads them, in Python and in TensorFlow."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dataformat.missing import is_missing_stripped
from dataformat.number_patterns import (
    ACCOUNTING_ZERO,
    APOSTROPHE_GROUPED,
    DECORATED,
    DURATION_PARTS,
    ISO_DURATION,
    MINUS_SIGN,
    NUMBER,
    PANDAS_DURATION,
    PARENTHESIZED,
    POINT_GROUPED,
)

if TYPE_CHECKING:
    import tensorflow as tf

    from dataformat.tables import Column

NUMERIC_KEY = "/numeric"  # the records' feature of every numeric column's values; a name no column may take
FLOAT32_MAX = float(np.finfo(np.float32).max)  # the largest number the records hold


def parses_as_float(text: str) -> bool:
    """Whether Python's float() reads the text ("1e3", " 2 ", "nan" and "inf" too)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_numeric_value(value) -> bool:
    """Whether a value that is not missing can be a numeric column's (true and false are not numbers)."""
    return not isinstance(value, bool) and parses_as_float(str(value))


def in_float32_range(value) -> bool:
    """Whether a number is one the records' float32 holds: 1e200 and inf are not, and read as missing."""
    return abs(float(value)) <= FLOAT32_MAX


def numeric_block(values: dict[str, tf.Tensor], numeric: list[Column]) -> tf.Tensor:
    """The numeric columns' [n, k] float32 values: the block as records hold it, or one stack of its columns."""
    import tensorflow as tf

    if NUMERIC_KEY in values:
        return tf.ensure_shape(values[NUMERIC_KEY], [None, len(numeric)])
    return tf.cast(tf.stack([values[column.name] for column in numeric], axis=1), tf.float32)


def numbers(strings: tf.Tensor) -> tf.Tensor:
    """Numbers written as text to float32, as preprocessing reads a table's numbers with a decimal point
    (preprocessing/table_files/number_text.py): $1,234.56, 12.5%, (5), 1'234, the minus sign and durations (their
    seconds) read as numbers; a
    missing value (MISSING_TOKENS), and a text that is no number (a bad cell), are NaN: missing. Where the
    training file's column context decided (12,345 as twelve thousand, or 12.345 with a decimal comma), a single
    value reads with commas between thousands."""
    import tensorflow as tf

    stripped = tf.strings.strip(strings)
    negative = tf.strings.regex_full_match(stripped, PARENTHESIZED)  # accounting's (1,234.56)
    text = tf.where(negative, tf.strings.regex_replace(stripped, PARENTHESIZED, r"-\1\2\3"), stripped)
    text = tf.strings.regex_replace(text, MINUS_SIGN, r"-\1")
    text = tf.strings.regex_replace(text, ACCOUNTING_ZERO, "0")
    text = tf.strings.regex_replace(text, DECORATED, r"\1\2\3")  # a currency symbol or percent sign left out
    grouped = tf.strings.regex_full_match(text, f"{POINT_GROUPED}|{APOSTROPHE_GROUPED}")
    plain = tf.where(grouped, tf.strings.regex_replace(text, "[,'\u2019]", ""), text)
    readable = tf.logical_and(tf.strings.regex_full_match(plain, NUMBER), tf.logical_not(is_missing_stripped(stripped)))
    value = tf.strings.to_number(tf.where(readable, plain, "0"), tf.float32)
    percent = tf.strings.regex_full_match(stripped, r".*%\s*\)?")
    value = tf.where(readable, tf.where(percent, value / 100.0, value), float("nan"))
    for pattern in (PANDAS_DURATION, ISO_DURATION):  # a duration is its seconds: 0 days 00:12:34 and PT12M34S, 754
        read, seconds = _duration_seconds(stripped, pattern)
        value = tf.where(read, seconds, value)
    return value


def _duration_seconds(texts: tf.Tensor, pattern: str) -> tuple[tf.Tensor, tf.Tensor]:
    """(whether each text is a duration that `pattern` matches, its seconds), as number_text.durations reads them:
    the pattern's groups are days, hours, minutes and seconds, each "" where a value lacks it, and a match of no
    part (a bare "PT") is no duration."""
    import tensorflow as tf

    matched = tf.where(tf.strings.regex_full_match(texts, pattern), texts, "")  # others give "" parts, read as 0
    parts = [tf.strings.regex_replace(matched, pattern, f"\\{group}") for group in range(1, len(DURATION_PARTS) + 1)]
    read = tf.reduce_any([tf.not_equal(part, "") for part in parts], axis=0)
    numbers = [tf.strings.to_number(tf.where(tf.equal(part, ""), "0", part), tf.float64) for part in parts]
    seconds = tf.add_n([number * scale for number, scale in zip(numbers, DURATION_PARTS)])
    return read, tf.cast(seconds, tf.float32)


def spelled_missing(strings: tf.Tensor, column: Column) -> tf.Tensor:
    """A numeric column's values as text, its missing spellings (if it has any) made empty: missing."""
    import tensorflow as tf

    if not column.missing_spellings:
        return strings
    stripped = tf.strings.strip(strings)
    spelled = tf.reduce_any([tf.equal(stripped, spelling) for spelling in column.missing_spellings], axis=0)
    return tf.where(spelled, "", strings)
