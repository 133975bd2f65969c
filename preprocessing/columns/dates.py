"""Date columns: a block's date format found and its dates counted, and a date column's format, vocabulary and
days decided from its counts (dataformat/dates.py reads the formats)."""

from __future__ import annotations

import logging
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import dates, tables
from dataformat.errors import UserError, quoted
from preprocessing.columns.categorical import choose_vocabulary
from preprocessing.columns.numeric import (
    BAD_CELLS_SHARE,
    FLAGGED_SHARE,
    LIKELY_YEARS,
    few_spellings,
    first_spellings,
    in_likely_years,
    mean_and_std,
    sums,
)

if TYPE_CHECKING:
    from preprocessing.column_counts import ColumnCount
    from preprocessing.tables import TablePlan

log = logging.getLogger(__name__)
# By default, how many times a date's value (a timestamp's hour, a day) must be seen in training to enter its
# vocabulary: 3, where a category's is 10, as their few rows carry weather and schedules (flights: -0.4 points
# of accuracy at 10).
MIN_FREQUENCY = 3
DATE_SAMPLE = 200  # values of a text column's first block that its date format is looked for in
# A timestamp's days are categories when its training rows span at most MOST_DAYS days, ROWS_A_DAY or more
# of them a day on average (a day seen once teaches nothing about the next row of that day).
MOST_DAYS, ROWS_A_DAY = 4000, 10
# A date's values are categories only where they tell the label beyond their time: each value's label shares, from
# the training rows of the other VALUE_FOLDS - 1 folds and shrunk toward those of its stretch of time (one of
# TIME_STRETCHES of like rows) by SHRINK_ROWS rows' worth, must predict the held-out fold's rows better than the
# stretch's shares do. Flights' hours did (+0.045 nats a row: an hour's weather); COMPAS's ten dates did not (-0.005
# to -0.02: a person's custody days, which the network memorized: ROC AUC 0.841 with them, 0.869 without).
VALUE_FOLDS, TIME_STRETCHES, SHRINK_ROWS = 5, 20, 10.0
# A stretch spans at least this many values (or days) seen in training, so that a few dates' effects of their own (a
# survey's waves, ten days of different weather) are checked against a coarser time, not against themselves.
VALUES_A_STRETCH = 10
# Values (or days) x classes x folds that a column's check counts at most (8 MB a shard being written): past that,
# as for 10,000 values of more than 20 classes, its values are kept unchecked.
MOST_VALUE_COUNTS = 1_000_000


def find_date_format(values: pa.Array, formats: tuple[str, ...], flagged: bool) -> str:
    """The format of `formats` that reads the most of the first DATE_SAMPLE values as dates, if it reads
    all but BAD_CELLS_SHARE of them (FLAGGED_SHARE where --date-columns names the column: `flagged`), leaving aside
    one word that may spell a missing date (_word_spelling); "" otherwise. Where formats are tried (more than one),
    a number counts as a date only in its LIKELY_YEARS."""
    sample = values[:DATE_SAMPLE]
    spelling = _word_spelling(sample)
    if spelling:
        sample = sample.filter(pc.not_equal(sample, spelling))
    enough = (FLAGGED_SHARE if flagged else 1 - BAD_CELLS_SHARE) * len(sample)
    # Every format reads digits: a column of words is no dates, found at once (trying every format on each
    # column of words was 75% of converting a table of 500 of them).
    if not len(sample) or _count_matching(sample, r"\d") < enough:
        return ""
    marked = _count_matching(sample, dates.FORMATS_MARK) >= enough
    tried = [form for form in formats if form not in dates.FORMATS or marked]  # a number may be a Unix time
    read = [int(np.count_nonzero(_read_as_dates(sample, form, len(formats) > 1))) for form in tried]
    best = int(np.argmax(read)) if read else 0
    if not read or read[best] < enough:
        return ""
    return _in_order(values, tried[best], tried[best] in dates.SWAPPED and read.count(read[best]) > 1)


def _in_order(values: pa.Array, date_format: str, tied: bool) -> str:
    """Where the first values read alike in a format and in its day-and-month swap (all days up to 12), the one of
    the two that reads more of the block's `values` (a file sorted by day holds its 13ths further on); the first
    tried (month first) if they still tie."""
    if not tied:
        return date_format
    swapped = dates.SWAPPED[date_format]
    read = [int(np.count_nonzero(_read_as_dates(values, form, False))) for form in (date_format, swapped)]
    return swapped if read[1] > read[0] else date_format


def _word_spelling(values: pa.Array) -> str:
    """The value without a digit that fills more than BAD_CELLS_SHARE and at most half of `values`, the most
    frequent such: a date column's word for a missing date ("never", "present", "unknown"). Else ""."""
    words = values.filter(pc.invert(pc.match_substring_regex(values, r"\d")))
    if not len(words):
        return ""
    found = pc.value_counts(words)
    most = int(np.argmax(found.field("counts").to_numpy()))
    word = found.field("values")[most].as_py()
    return "".join(few_spellings((word,), int(found.field("counts")[most].as_py()), len(values), 1))


def _count_matching(values: pa.Array, expression: str) -> int:
    return int(pc.sum(pc.match_substring_regex(values, expression)).as_py() or 0)


def _read_as_dates(values: pa.Array, date_format: str, likely_only: bool) -> np.ndarray:
    years = dates.fields_arrow(values, date_format, exact=True)[:, 0]  # each format by what it reads itself
    if likely_only and date_format in LIKELY_YEARS:
        return in_likely_years(years, date_format)
    return ~np.isnan(years)


def count_dates(
    counts: ColumnCount, values: pa.Array, train: np.ndarray, present: np.ndarray, date_format: str, first_year: int
):
    """Counts a block of a column as dates in `date_format` (two-digit years from `first_year`): the values that are
    none, the days' statistics. Returns the values as the column's vocabulary counts them (dates.keys_of), or None
    without a format."""
    counts.date_tried, counts.date_format = True, date_format
    if not date_format:
        return None
    fields = dates.fields_arrow(values, date_format, first_year=first_year)
    days = dates.days(fields)
    bad = present & np.isnan(days)
    counts.not_dates, counts.not_dates_train = int(bad.sum()), int((bad & train).sum())
    counts.days_over_12 = int(np.count_nonzero(fields[:, 2] > 12))  # NaN compares false
    if bad.any():
        counts.date_spellings = first_spellings(values, bad)
    kept = days[~np.isnan(days) & train]
    counts.days, counts.days_squares, counts.days_counted = sums(kept)
    counts.timed = bool(np.any(kept != np.floor(kept)))
    if len(kept):
        counts.first_day, counts.last_day = float(np.floor(kept.min())), float(np.floor(kept.max()))
    return dates.keys_of(fields, values)


def warn_of_dates(name: str, count: ColumnCount, plan: TablePlan, mostly_dates: bool) -> None:
    """A warning where a column's dates were read month first or day first by a guess (none had a day above 12), or
    where its first values read as dates and too many later ones are no dates: in the other order (its 13ths, day
    first), or at all (ranges, unknown days), so that it is read as a category."""
    swapped = "" if plan.options.date_format else dates.SWAPPED.get(count.date_format, "")
    if mostly_dates:
        if swapped and not count.days_over_12:
            log.warning("column %s: no date has a day above 12, so %r and %r read them alike; read as %r: pass "
                        "--date-format %r if the day comes first", plan.position(name), count.date_format, swapped,
                        count.date_format, swapped)  # fmt: skip
        return
    if not count.date_format or plan.options.kind_given(name):
        return
    # The order's advice only where the other order reads them: a range (09/20/2011 - 10/28/2011) or an unknown day
    # (3/-9/1848) was told to pass a --date-format that then "reads no column".
    examples = list(count.date_spellings[:3])
    read_swapped = dates.fields_arrow(pa.array(examples), swapped, exact=True) if swapped and examples else None
    swap_reads = read_swapped is not None and not np.isnan(read_swapped).all()
    if swap_reads:
        advice = f"they read in {swapped!r}: pass --date-format {swapped!r}"
    elif count.not_dates <= (1 - FLAGGED_SHARE) * count.present:
        advice = (
            f"it is read as a category; pass --date-columns {shlex.quote(name)} to read its dates as dates and the "
            "rest as missing"
        )
    else:
        advice = "it is read as a category"
    log.warning("column %s: its first values read as dates in %r, but %d of its values are no dates in it (%s): %s",
                plan.position(name), count.date_format, count.not_dates,
                ", ".join(map(quoted, examples)) or "none kept", advice)  # fmt: skip


def check_date_format(date_format: str, columns: list[tables.Column]) -> None:
    """A UserError where --date-format reads no column's dates: a mistyped format left the column it was for a
    category of distinct values, with a warning about IDs at most."""
    if date_format and not any(column.kind == tables.DATE and column.date_format == date_format for column in columns):
        found = [f"{column.name} ({column.date_format})" for column in columns if column.kind == tables.DATE]
        also = f"; the date columns found read in other formats: {', '.join(found)}" if found else ""
        raise UserError(f"--date-format {date_format}: no column's values read as dates in it{also}")


def date_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    spelling = date_spelling(count)
    if spelling:  # a value of the vocabulary too, as the model's category input reads every value of the column
        log.info(
            "column %s: its %d values %s are read as missing dates, its dates as dates",
            plan.position(name),
            count.not_dates,
            quoted(spelling),
        )
    elif count.not_dates:
        log.warning(
            "column %s: %d value(s) are no dates in %r and are read as missing",
            plan.position(name),
            count.not_dates,
            count.date_format,
        )
    mean, std = mean_and_std(count.days, count.days_squares, count.days_counted)
    missing = count.missing + count.not_dates_train
    least = plan.options.min_frequency or MIN_FREQUENCY
    vocabulary, buckets, hashed = choose_vocabulary(count, count.frequent, plan.options, least)
    # A timestamp's day is a category too (dates.day_index), one index a day of the training rows' span; a time
    # of day alone has no day.
    timestamp = count.timed and not dates.is_time_of_day(count.date_format)
    span = int(count.last_day - count.first_day + 1) if timestamp else 0
    dense = 0 < span <= MOST_DAYS and count.days_counted >= ROWS_A_DAY * span
    first_day, day_count = (int(count.first_day), span) if dense else (0, 0)
    kept = {"vocabulary": vocabulary, "hash_buckets": buckets, "hashed": hashed, "date_format": count.date_format}
    if "%y" in count.date_format:
        kept["first_year"] = plan.options.first_year
    days = {
        "first_day": first_day,
        "day_count": day_count,
        "timed": count.timed or dates.is_time_of_day(count.date_format),
    }
    return tables.Column(name, tables.DATE, missing, mean, std, **kept, **days, iso_keys=True)


def is_mostly_dates(count: ColumnCount, flagged: bool) -> bool:
    """Whether a column's values are dates enough to be a date column: all but BAD_CELLS_SHARE of them in the format
    found, or beside one word (date_spelling); with --date-columns (`flagged`), FLAGGED_SHARE of them."""
    if not count.date_format:
        return False
    if flagged and count.not_dates <= (1 - FLAGGED_SHARE) * count.present:
        return True
    return count.not_dates <= BAD_CELLS_SHARE * count.present or bool(date_spelling(count))


def date_spelling(count: ColumnCount) -> str:
    """The one value beside a column's dates ("never"): a missing date, and a category of its own. Else ""."""
    return "".join(few_spellings(count.date_spellings, count.not_dates, count.present, 1))


def count_values(column: tables.Column, values: pa.Array, labels: np.ndarray, order: np.ndarray, classes: int) -> dict:
    """A date column's training rows counted by their label's index, their fold (of VALUE_FOLDS, by each row's order
    hash) and: their value's place in its vocabulary ("values"), their day's in its days ("days"), where it has
    them: each [places, classes, folds], none of more than MOST_VALUE_COUNTS cells."""
    if not column.vocabulary and not column.day_count:  # nothing to check: its values are not read
        return {}
    fields = dates.fields_arrow(values, column.date_format, first_year=column.first_year)
    folds = (order % VALUE_FOLDS).astype(np.int64)
    places = {}
    if column.vocabulary:
        keys = dates.keys_of(fields, values)  # as the vocabulary counted them
        found = pc.index_in(keys, value_set=pa.array(column.vocabulary, pa.string()))
        places["values"] = (pc.fill_null(found, -1).to_numpy(zero_copy_only=False), len(column.vocabulary))
    if column.day_count:
        with np.errstate(invalid="ignore"):
            day = np.floor(dates.days(fields)) - column.first_day  # as dates.day_index places it
            inside = (day >= 0) & (day < column.day_count)  # NaN compares false
        places["days"] = (np.where(inside, day, -1).astype(np.int64), column.day_count)
    counted = {}
    for kind, (place, size) in places.items():
        if size * classes * VALUE_FOLDS <= MOST_VALUE_COUNTS:
            kept = place >= 0
            cells = (place[kept] * classes + labels[kept]) * VALUE_FOLDS + folds[kept]
            counted[kind] = np.bincount(cells, minlength=size * classes * VALUE_FOLDS).reshape(size, classes, -1)
    return counted


def value_gain(counts: np.ndarray, stretch: np.ndarray) -> float:
    """How much better, in nats a held-out row, a date's values (or days) predict the label than their stretch of
    time does (see VALUE_FOLDS): the log loss of the stretches' label shares less that of the values' shrunk toward
    them. `stretch`: each value's, from 0 to TIME_STRETCHES (a word's)."""
    totals = counts.sum(axis=2)  # [values, classes]
    stretch_loss = value_loss = 0.0
    for fold in range(VALUE_FOLDS):
        held = counts[:, :, fold]
        fitted = totals - held
        shares = (fitted.sum(axis=0) + 1) / (fitted.sum() + fitted.shape[1])  # every class above 0
        by_stretch = np.zeros((TIME_STRETCHES + 1, fitted.shape[1]))
        np.add.at(by_stretch, stretch, fitted)
        stretch_shares = (by_stretch + SHRINK_ROWS * shares) / (by_stretch.sum(axis=1, keepdims=True) + SHRINK_ROWS)
        expected = stretch_shares[stretch]
        value_shares = (fitted + SHRINK_ROWS * expected) / (fitted.sum(axis=1, keepdims=True) + SHRINK_ROWS)
        stretch_loss -= float((held * np.log(expected)).sum())
        value_loss -= float((held * np.log(value_shares)).sum())
    rows = int(counts.sum())
    return (stretch_loss - value_loss) / rows if rows else 0.0


def _stretches(days: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each value's stretch of time: the values in time order (`days`) cut into runs of like training `rows`,
    TIME_STRETCHES of them or fewer (VALUES_A_STRETCH); a value that is no date (NaN: a missing date's word) is a
    stretch of its own, the last."""
    count = max(1, min(TIME_STRETCHES, int(np.count_nonzero(rows[~np.isnan(days)])) // VALUES_A_STRETCH))
    order = np.argsort(np.where(np.isnan(days), np.inf, days), kind="stable")
    ranked = np.cumsum(rows[order]) - rows[order]  # the training rows before each value, in time order
    stretch = np.empty(len(order), np.int64)
    stretch[order] = np.minimum(ranked * count // max(int(rows.sum()), 1), count - 1)
    return np.where(np.isnan(days), TIME_STRETCHES, stretch)


def _days(keys: tuple[str, ...]) -> np.ndarray:
    """A date vocabulary's values as days since 1970 (its keys are ISO 8601); NaN for a word (a missing date's)."""
    return dates.days(dates.fields_arrow(pa.array(keys, pa.string()), dates.ISO))


def without_values_of_no_signal(columns: tuple[tables.Column, ...], counts: dict, plan: TablePlan) -> tuple:
    """The columns, each date column less the categories that tell the label no more than their time does
    (value_gain at or below 0), with a line saying so: the dates of its vocabulary (a word beside them, "present",
    stays a category of its own), and its days as categories. Its date features stay."""
    kept = []
    for column in columns:
        found = counts.get(column.name, {})
        if "values" in found:
            column = _without_dates_of_no_signal(column, found["values"], plan)
        if "days" in found:
            days = found["days"]
            gain = value_gain(days, _stretches(np.arange(len(days), dtype=float), days.sum(axis=(1, 2))))
            if gain <= 0:
                log.info("column %s: its %d days are left out as categories: on held-out training rows they tell the "
                         "label no better than their stretch of time (%+.4f nats a row)",
                         plan.position(column.name), column.day_count, gain)  # fmt: skip
                column = replace(column, first_day=0, day_count=0)
        kept.append(column)
    return tuple(kept)


def _without_dates_of_no_signal(column: tables.Column, counts: np.ndarray, plan: TablePlan) -> tables.Column:
    days = _days(column.vocabulary)
    words = np.isnan(days)
    if words.all():  # only a missing date's word: a category of its own, nothing to check
        return column
    gain = value_gain(counts, _stretches(days, counts.sum(axis=(1, 2))))
    if gain > 0:
        return column
    what = "times of day" if dates.is_time_of_day(column.date_format) else "dates"
    log.info("column %s: its %d %s are left out as categories: on held-out training rows they tell the label no "
             "better than their stretch of time (%+.4f nats a row); its date features stay",
             plan.position(column.name), int(np.count_nonzero(~words)), what, gain)  # fmt: skip
    # The share of its present training rows outside the vocabulary, now only its words' rows inside it.
    present = counts.sum() / max(1.0 - column.hashed, 1e-9)
    hashed = round(1.0 - counts[words].sum() / present, 4)
    vocabulary = tuple(value for value, word in zip(column.vocabulary, words) if word)
    return replace(column, vocabulary=vocabulary, hash_buckets=0, hashed=hashed)
