"""Numeric columns: a block's numbers and bad cells counted, and a numeric column's statistics (mean, standard
deviation, quantile boundaries, missing spellings) decided from its counts. Numbers may be dates (20180305, Unix
times) in their likely years. The rules for a few values that are not numbers (few_spellings, BAD_CELLS_SHARE)
serve the dates too, whose few values that are not dates follow them."""

from __future__ import annotations

import logging
import math
import re
import shlex
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import dates, tables
from dataformat.errors import quoted
from dataformat.number_patterns import COMMA_NUMBER, NUMBER
from dataformat.numeric import FLOAT32_MAX

if TYPE_CHECKING:
    from preprocessing.column_counts import ColumnCount
    from preprocessing.tables import TablePlan

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
# A column that --numeric-columns or --date-columns names is read so where at least this share of its values are
# numbers or dates: its other values are missing, named in a warning (dslabs' reported heights, 93% numbers beside
# 59 spellings of feet and inches, were refused). Where fewer are, the flag is refused: a mistyped name, or a format
# that reads too few of them.
FLAGGED_SHARE = 0.5
HINTED_SHARE = 0.1  # a column read as categories with at most this share of values that are no numbers is hinted at
SPELLINGS_KEPT = MOST_MISSING_SPELLINGS + 1
SHOWN_BAD_CELLS = 3  # a numeric column's bad cells named in its warning
QUANTILE_SAMPLE = 1024  # training numbers a column keeps to find its quantiles (a uniform sample by row hash)
NUMBER_DATE_FORMATS = ("%Y%m%d", dates.UNIX)
# A column's numbers are found to be dates in a NUMBER_DATE_FORMATS format only if they fall in these years
# (from, to): a Unix time of fewer than 9 digits is before 1973-03-03, and more likely a count or a duration.
LIKELY_YEARS = {"%Y%m%d": (1800, 2100), dates.UNIX: (1974, 2100)}
# Integers written with leading zeros (02134, 007) are codes, as ZIP and FIPS codes are, when at least this share
# of a block's counted values are so written; a stray "007" in a column of counts is not.
ZERO_LED_SHARE = 0.01
ZERO_LED = r"^[+-]?0\d"
QUANTILE_BUCKETS = 10  # a numeric column's buckets in the linear part, at most (boundaries)


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


def first_spellings(values: pa.Array, bad: np.ndarray) -> tuple:
    """The first SPELLINGS_KEPT distinct values where `bad`: enough to tell one spelling from several."""
    return tuple(pc.unique(values.filter(pa.array(bad)))[:SPELLINGS_KEPT].to_pylist())


def in_likely_years(years: np.ndarray, date_format: str) -> np.ndarray:
    first, last = LIKELY_YEARS[date_format]
    return (years >= first) & (years < last)


def zero_led(distinct: pa.StructArray, counted: int) -> bool:
    """Whether ZERO_LED_SHARE or more of a block's `counted` values (`distinct`: value_counts) have leading zeros."""
    led = pc.match_substring_regex(distinct.field("values"), ZERO_LED).to_numpy(zero_copy_only=False)
    return int(distinct.field("counts").to_numpy()[led].sum()) >= max(1, ZERO_LED_SHARE * counted)


def few_spellings(spellings: tuple[str, ...], count: int, present: int, most: int) -> tuple[str, ...]:
    """The values of `spellings`, where they are at most `most` and their `count` of the column's `present` values is
    more than a few bad cells and at most half the values for one spelling, a quarter for two, a sixth for three (a
    column of numbers and words in like shares is categories); else ()."""
    share = BAD_CELLS_SHARE * present < count <= present / (2 * max(1, len(spellings)))
    return spellings if 0 < len(spellings) <= most and share else ()


def is_mostly_numbers(count: ColumnCount, flagged: bool) -> bool:
    """Whether a column's values are numbers enough to be numeric: all but BAD_CELLS_SHARE of them, or beside a few
    missing spellings; with --numeric-columns (`flagged`), FLAGGED_SHARE of them."""
    if flagged and count.not_numbers <= (1 - FLAGGED_SHARE) * count.present:
        return True
    return count.not_numbers <= BAD_CELLS_SHARE * count.present or bool(missing_spellings(count))


def hint_at_numbers(name: str, count: ColumnCount, plan: TablePlan) -> None:
    """A warning where a column read as categories is mostly numbers: its other values are numbers with a decimal
    comma (71,16) that the file's first lines did not show (its decimal mark is sniffed there: whole numbers alone
    there say nothing), or at most HINTED_SHARE of its values are other words (5'4" among heights in inches)."""
    if not count.bad_cells or not count.counted:
        return
    path, line, value = count.bad_cells[0]
    where = f"{quoted(value)} ({path}: line {line})"
    commas = all(re.fullmatch(COMMA_NUMBER, str(value)) for _, _, value in count.bad_cells)
    if commas and plan.dialect.decimal == "." and not plan.options.decimal:
        log.warning(
            "column %s: %d of its values are numbers with a decimal comma, as %s, where the file's first lines "
            "showed none: read as categories; pass --decimal , to read them as numbers",
            plan.position(name), count.not_numbers, where,
        )  # fmt: skip
        return
    # Numbers are looked for until a block holds too many other spellings (count_column): the share is of those.
    numbers = count.present - count.not_numbers
    if count.sought and numbers >= (1 - HINTED_SHARE) * count.sought:
        of = "" if count.sought == count.present else "first "
        log.warning(
            "column %s: %d of its %s%d values are numbers, and the others are not, as %s: read as categories; pass "
            "--numeric-columns %s to read its numbers as numbers and the rest as missing",
            plan.position(name), numbers, of, count.sought, where, shlex.quote(name),
        )  # fmt: skip


def missing_spellings(count: ColumnCount) -> tuple[str, ...]:
    """The few values beside a column's numbers (a spreadsheet's "-", "T" for trace rain, "3+", "unknown" beside
    "n.a."): read as missing, they stay values apart from the numbers to the model (the "was missing" input, shared
    with the column's empty fields), and the numbers stay numbers. Else ()."""
    if not count.counted:
        return ()
    return few_spellings(count.spellings, count.not_numbers, count.present, MOST_MISSING_SPELLINGS)


FLOAT32_LEVELS = 256  # the fewest float32 values a numeric column's range may span before it is warned of


def numeric_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    spellings = missing_spellings(count)
    if spellings:
        log.info(
            'column %s: its %d values %s are read as missing (the model\'s "was missing" input tells them apart), '
            "its numbers as numbers; pass --categorical-columns %s to read every value as a category",
            plan.position(name),
            count.not_numbers,
            " and ".join(map(quoted, spellings)),
            shlex.quote(name),
        )
    elif count.not_numbers:
        cells = ", ".join(f"{path}: line {line} {quoted(value)}" for path, line, value in count.bad_cells)
        log.warning(
            "column %s: %d value(s) are not numbers and are read as missing (%s%s)",
            plan.position(name),
            count.not_numbers,
            cells,
            ", ..." if count.not_numbers > len(count.bad_cells) else "",
        )
    if count.integers and name not in plan.options.numeric and _likely_unix_times(count):
        log.warning(
            "column %s holds integers that read as Unix times (seconds since 1970, or milliseconds); it is read as "
            "a number: pass --date-columns %s to read them as dates and times",
            plan.position(name),
            shlex.quote(name),
        )
    elif count.integers and count.nearly_unique and count.numbers_rows and name not in plan.options.numeric:
        log.warning(
            "column %s holds integers that rise from row to row, as row numbers and IDs do; it is read as a number: "
            "pass --ignore-columns %s if it numbers the rows (it would only learn their order), or "
            "--categorical-columns %s if its values are codes",
            plan.position(name),
            shlex.quote(name),
            shlex.quote(name),
        )
    if count.counted and _finer_than_float32(count.lowest, count.highest):
        log.warning(
            "column %s: its numbers, %r to %r, lie closer together than a float32 (as the records hold numbers) tells "
            "apart at their size, so the model sees a few values at most: subtract an offset from them, or pass "
            "--categorical-columns %s if they are codes",
            plan.position(name),
            count.lowest,
            count.highest,
            name,
        )
    mean, std = mean_and_std(count.total, count.squares, count.counted)
    missing = count.missing + count.not_numbers_train
    span = (count.lowest, count.highest) if count.counted else ()
    return tables.Column(
        name, tables.NUMERIC, missing, mean, std, boundaries=boundaries(count), missing_spellings=spellings, span=span
    )


def _finer_than_float32(lowest: float, highest: float) -> bool:
    """Whether numbers from `lowest` to `highest` span fewer than FLOAT32_LEVELS float32 values: 10**12 + 0..1000 is
    one (float32 keeps 24 bits, 65,536 apart at 10**12)."""
    size = max(abs(lowest), abs(highest))
    return highest > lowest and highest - lowest < size * 2.0**-23 * FLOAT32_LEVELS


def _likely_unix_times(count: ColumnCount) -> bool:
    """Whether a numeric column's sampled training numbers all read as Unix times in LIKELY_YEARS."""
    if not count.sample:
        return False
    return bool(np.all(in_likely_years(dates.unix_fields(count.sample[1])[:, 0], dates.UNIX)))


def mean_and_std(total: float, squares: float, counted: int) -> tuple[float, float]:
    """From sums(): the mean (0 of nothing) and the standard deviation (1 where there is no spread)."""
    mean = total / counted if counted else 0.0
    variance = max(squares / counted - mean**2, 0.0) if counted else 0.0
    return mean, math.sqrt(variance) if variance > 1e-12 else 1.0


def boundaries(count: ColumnCount) -> tuple[float, ...]:
    """The column's quantile boundaries (QUANTILE_BUCKETS buckets), from the sample of its training numbers;
    fewer where values repeat."""
    if not count.sample:
        return ()
    values = np.quantile(count.sample[1], np.linspace(0, 1, QUANTILE_BUCKETS + 1)[1:-1])
    return tuple(float(value) for value in np.unique(values))
