"""Warnings of prediction inputs unlike the training data, which the model would answer silently: numbers that are
none or lie far outside the training rows', dates that do not read or lie far from theirs, texts longer than the model
reads, and images scaled otherwise. Each kind warns of its first few by name, then counts them all."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator

import numpy as np

from dataformat import tables
from dataformat.errors import quoted
from dataformat.missing import is_missing_value
from dataformat.numeric import in_float32_range, is_numeric_value
from trainer.exported_model import Model

log = logging.getLogger("trainer.predict")
SHOWN_BAD_VALUES = 3  # a table file's values that are not numbers or dates, named one by one in warnings
ROWS_READ = 1024  # rows whose dates or texts are read at once (dates.fields_arrow, text.words)
# A date this many standard deviations from the training rows' mean is far from them: at most 1/36 of any training
# split's dates lie so far (Chebyshev), and a date column's span is about 3.5 deviations for evenly spread dates.
FAR_DATE_STDS = 6
# An image's value this many standard deviations above the training images' mean is far above them: scaled otherwise
# (0-255 to a model of 0-16). Training images' own highest lie within 3 (scikit-learn's digits 1.8, MNIST 2.8).
FAR_STDS = 10


class FirstFew:
    """Warnings of one kind about a file's rows: the first SHOWN_BAD_VALUES each in a line of its own, then (at
    `close`) one line that counts them all, so a file of a million bad values warns in four lines."""

    def __init__(self, path: str, count_line: str):
        self.path, self.count_line, self.count = path, count_line, 0  # count_line: "%d values in all are ..."

    def warn(self, message: str, *args) -> None:
        self.count += 1
        if self.count <= SHOWN_BAD_VALUES:
            log.warning(message, *args)

    def close(self) -> None:
        if self.count > SHOWN_BAD_VALUES:
            log.warning("%s: " + self.count_line, self.path, self.count)


def warned(rows: Iterator[tuple[str, dict]], path: str, model: Model) -> Iterator[tuple[str, dict]]:
    """Rows of named columns, a file's or a request's, their unreadable dates, long texts and far numbers warned
    of."""
    columns = model.metadata.columns
    rows = unreadable_dates_warned(rows, path, tables.columns_of(columns, tables.DATE))
    rows = long_texts_warned(rows, path, tables.columns_of(columns, tables.TEXT))
    return far_numbers_warned(rows, path, tables.columns_of(columns, tables.NUMERIC))


def bad_numbers_as_missing(rows: Iterator[tuple[str, dict]], path: str, numeric) -> Iterator[tuple[str, dict]]:
    """A table file's rows (CSV and the like, or JSON lines) with each value of a `numeric` column that is not a
    number read as missing, as preprocessing reads such a column's few bad cells, and said so: the first few by
    line, then a count (the column's own missing spelling, such as "-", quietly). One bad cell stopped the file's
    predictions where the same file had trained. The instance a JSON lines file's output echoes is the one
    predicted for, the value null; a row that is not an object passes as it is (the model refuses it)."""
    bad = FirstFew(path, "%d values in all are not numbers and were read as missing")
    for name, row in rows:
        for column in numeric if isinstance(row, dict) else ():
            value = row.get(column.name)
            number = is_numeric_value(value)
            if is_missing_value(value) or number and in_float32_range(value):
                continue
            if not tables.is_missing_in(value, column):  # a bad cell, not the column's own missing spelling
                what = "is beyond float32's range" if number else "is not a number"
                bad.warn("%s: column %r: %s %s; read as missing", name, column.name, quoted(value), what)
            row[column.name] = None
        yield name, row
    bad.close()


def far_numbers_warned(rows: Iterator[tuple[str, dict]], path: str, numeric) -> Iterator[tuple[str, dict]]:
    """A table file's rows, each number of a `numeric` column far outside the training split's (beyond its least
    or greatest by more than their difference) warned of: the first few by line, then a count. The model
    extrapolates there, and a unit that differs from training's (cents for dollars, grams for kilograms) is the
    usual cause; it predicted silently before."""
    far = FirstFew(path, "%d values in all are far outside the training rows' numbers")
    spanned = [column for column in numeric if column.span]
    for name, row in rows:
        for column in spanned if isinstance(row, dict) else ():
            value = row.get(column.name)
            if value is not None and is_numeric_value(value) and _far_outside(float(value), column.span):
                lowest, highest = column.span
                far.warn("%s: column %r: %s is far outside the training rows' numbers (%g to %g); the model "
                         "extrapolates", name, column.name, quoted(value), lowest, highest)  # fmt: skip
        yield name, row
    far.close()


def _far_outside(value: float, span: tuple[float, float]) -> bool:
    """Whether a number lies beyond the span by more than the span is wide (than the number, for a constant)."""
    lowest, highest = span
    margin = highest - lowest or max(abs(highest), 1.0)
    return value < lowest - margin or value > highest + margin


def unreadable_dates_warned(rows: Iterator[tuple[str, dict]], path: str, dated) -> Iterator[tuple[str, dict]]:
    """A table file's rows, each value of a `dated` column that is no date in its column's format warned of (the
    first few by line, then a count): the model reads it as a missing date, as preprocessing read the training
    rows' such values, and the same dates written another way (11/03/2020 for 2020-03-11) are the usual cause.
    A value of the column's vocabulary ("never", where training rows held it beside dates) is no surprise. A date
    far from the training rows' (FAR_DATE_STDS deviations from their mean: 2999-01-01 among the 2000s) is warned
    of too, as a far number is: the model extrapolates, and predicted silently."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dataformat import dates

    bad = FirstFew(path, "%d values in all are no dates in their column's format and were read as missing")
    far = FirstFew(path, "%d dates in all are far from the training rows' dates")
    known = {column.name: pa.array(column.vocabulary, pa.string()) for column in dated}
    while dated and (chunk := list(itertools.islice(rows, ROWS_READ))):
        texts, unread, distant = {}, {}, {}  # by column: each row's value, as text or None; no date; a far date
        for column in dated:
            values = [row.get(column.name) if isinstance(row, dict) else None for _, row in chunk]
            texts[column.name] = [None if is_missing_value(value) else str(value) for value in values]
            found = pa.array(texts[column.name], pa.string())
            fields = dates.fields_arrow(found, column.date_format, first_year=column.first_year)
            seen = pc.or_(pc.is_null(found), pc.is_in(found, value_set=known[column.name]))
            unread[column.name] = np.isnan(fields[:, 0]) & ~seen.to_numpy(zero_copy_only=False)
            with np.errstate(invalid="ignore"):
                distant[column.name] = np.abs(dates.days(fields) - column.mean) > FAR_DATE_STDS * column.std
        for i in range(len(chunk)):  # in line order
            for column in dated:
                if unread[column.name][i]:
                    bad.warn("%s: column %r: %s is no date in %r%s; read as missing", chunk[i][0], column.name,
                             quoted(texts[column.name][i]), column.date_format,
                             " nor ISO 8601" * dates.also_iso(column.date_format))  # fmt: skip
                elif distant[column.name][i]:
                    far.warn("%s: column %r: %s is far from the training rows' dates (%s); the model extrapolates",
                             chunk[i][0], column.name, quoted(texts[column.name][i]), _date_span(column))  # fmt: skip
        yield from chunk
    yield from rows
    bad.close()
    far.close()


def _date_span(column) -> str:
    """Why a date is far, in words: the training dates' mean and standard deviation, which it lies FAR_DATE_STDS of
    from; a column of times of day's in hours (its dates were all 1970-01-01, "1970-01-01 to 1970-01-01"). The mean
    and the deviation, not the bounds they make, which read as where the training dates lie (2012 to 2021 for a
    column of 2016 to 2018)."""
    import datetime

    from dataformat import dates

    if dates.is_time_of_day(column.date_format):
        minutes = round(column.mean * 24 * 60) % (24 * 60)
        typical = (
            f"their mean time of day {minutes // 60:02d}:{minutes % 60:02d}, give or take {column.std * 24:.1f} hours"
        )
    else:
        days = min(max(column.mean, -719_162), 2_932_896)  # within years 1 to 9999
        mean = datetime.date(1970, 1, 1) + datetime.timedelta(days=int(np.floor(days)))
        typical = f"their mean {mean.isoformat()}, give or take {column.std:,.0f} days"
    return f"{typical}; it is over {FAR_DATE_STDS} times that from the mean"


def long_texts_warned(rows: Iterator[tuple[str, dict]], path: str, texts) -> Iterator[tuple[str, dict]]:
    """A table file's rows, each text longer than its column reads warned of (the first few, then a count): the
    model reads as many words as the longest training text had (its input's width, at most --max-length), and the
    words after them were left out silently (three deciding words after 40 others changed nothing)."""
    import tensorflow as tf

    from dataformat import text

    cut = FirstFew(path, "%d texts in all are longer than the model reads")
    while texts and (chunk := list(itertools.islice(rows, ROWS_READ))):
        for column in texts:
            values = [row.get(column.name) if isinstance(row, dict) else None for _, row in chunk]
            given = [str(value) if isinstance(value, str) else "" for value in values]
            lengths = text.words(tf.constant(given), column.max_length + 1).row_lengths().numpy()
            why = "--max-length" if column.width == column.max_length else "the longest training text's words"
            for i in np.flatnonzero(lengths > column.width):
                cut.warn("%s: column %r: a text of more than %d words; the model reads its first %d (%s)",
                         chunk[i][0], column.name, column.width, column.width, why)  # fmt: skip
        yield from chunk
    yield from rows
    cut.close()


def off_scale_warned(requests: Iterator[tuple], path: str, model: Model) -> Iterator[tuple]:
    """A file's requests, each image whose values lie far above the training images' warned of (the first few,
    then a count): the digits model (values 0-16) answered 7 for a PNG of a 0 in 0-255, silently. Only for
    models whose training images were scaled below 0-255; photos' are not, and are not decoded here."""
    ceiling = _value_ceiling(model.metadata)
    if ceiling is None:
        yield from requests
        return
    metadata = model.metadata
    far = FirstFew(path, "%d images in all hold values far above the training images'")
    for name, signature, value in requests:
        highest = _highest_value(value)
        if highest is not None and highest > ceiling:
            far.warn("%s: values up to %g, far above the training images' (mean %.3g, standard deviation %.3g): "
                     "scale it as they were (scikit-learn's digits: 0 to 16)", name, highest, max(metadata.mean),
                     max(metadata.std))  # fmt: skip
        yield name, signature, value
    far.close()


def _value_ceiling(metadata) -> float | None:
    """The value above which an image's pixels are far from the training images' (FAR_STDS deviations above
    their mean in some channel), where that is below 255; else None."""
    if not metadata.is_image:  # a table's examples are no images either
        return None
    ceiling = max(mean + FAR_STDS * std for mean, std in zip(metadata.mean, metadata.std))
    return ceiling if ceiling < 255 else None


def _highest_value(value) -> float | None:
    """An input image's highest value: of its array, or of its file's bytes decoded; None where it does not decode
    (the model then names it)."""
    if not isinstance(value, bytes):
        return float(np.max(value))
    from preprocessing.photos import open_photo, undecodable

    try:
        with open_photo(value) as image:
            return float(np.asarray(image).max())
    except undecodable():
        return None
