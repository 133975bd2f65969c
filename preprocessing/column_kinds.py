"""Deciding each column from its counts (decide_columns): numeric, a date, text or categorical, by the data and
then the flags. What its kind needs to be converted the same way in training and serving is decided in the kind's
module (preprocessing/columns/): a numeric column's mean, standard deviation, quantile boundaries and missing
spellings; a date's format and its days' categories; a categorical column's vocabulary and hash buckets; a text's
words, which write_vocabularies writes beside metadata.json. describe gives the summary line's words for each."""

from __future__ import annotations

import logging
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING

from dataformat import dates, storage, tables
from dataformat.errors import UserError, quoted
from dataformat.text import CHARS_A_TOKEN
from preprocessing.column_counts import ColumnCount
from preprocessing.columns.categorical import CODE_NAME, MOSTLY_RARE, categorical_column
from preprocessing.columns.categorical import MIN_FREQUENCY as MIN_CATEGORY_FREQUENCY
from preprocessing.columns.dates import check_date_format, date_column, is_mostly_dates, warn_of_dates
from preprocessing.columns.numeric import (
    FLAGGED_SHARE,
    NUMBER_DATE_FORMATS,
    hint_at_numbers,
    is_mostly_numbers,
    numeric_column,
)
from preprocessing.columns.text import MIN_FREQUENCY as MIN_WORD_FREQUENCY
from preprocessing.columns.text import check_text_flags, repeats, text_column
from preprocessing.table_files import WORKBOOK

if TYPE_CHECKING:
    from preprocessing.tables import TablePlan

log = logging.getLogger(__name__)


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
        mostly_numbers = is_mostly_numbers(count, name in plan.options.numeric)
        if name in plan.options.numeric and not mostly_numbers:
            path, line, value = count.bad_cells[0]
            raise UserError(
                f"{path}: line {line}, column {plan.position(name)}: {quoted(value)} is not a finite number, nor are "
                f"{count.not_numbers - 1} more of its {count.present} values, more than {FLAGGED_SHARE:.0%} "
                f"(--numeric-columns {name})"
            )
        mostly_dates = is_mostly_dates(count, name in plan.options.dates)
        warn_of_dates(name, count, plan, mostly_dates)
        if name in plan.options.dates and not mostly_dates:
            tried = dict.fromkeys((plan.options.date_format, *dates.FORMATS, *NUMBER_DATE_FORMATS))
            if count.date_format:
                found = (
                    f"{count.not_dates} of its {count.present} values are no dates in {count.date_format!r}, more "
                    f"than {FLAGGED_SHARE:.0%}"
                )
            else:  # the share that find_date_format asks of one format, where a flag names the column
                share = f"{FLAGGED_SHARE:.0%}"
                found = (
                    f"no one format reads {share} of its first values as dates (of {', '.join(filter(None, tried))})"
                )
            raise UserError(
                f"column {plan.position(name)}: {found} (--date-columns {name}); give their format with --date-format"
            )
        columns.append(_decide(name, count, plan, mostly_numbers, mostly_dates))
    check_date_format(plan.options.date_format, columns)
    check_text_flags(plan.options, columns)
    return _with_words(columns, plan, files)


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
        return categorical_column(name, count, plan)
    if count.text:
        return _text_or_categories(name, count, plan)
    if name in options.dates or mostly_dates and name not in options.numeric:
        return date_column(name, count, plan)
    if not (count.counted and mostly_numbers):
        hint_at_numbers(name, count, plan)
        return categorical_column(name, count, plan)
    if count.integers and count.zero_led and name not in options.numeric:
        log.warning(
            "column %s holds integers written with leading zeros, as codes are (ZIP codes): they are read as "
            "categories; pass --numeric-columns %s if they are quantities",
            plan.position(name),
            shlex.quote(name),
        )
        return categorical_column(name, count, plan)
    if count.integers and CODE_NAME.search(name) and name not in options.numeric:
        log.warning(
            "column %s holds integers named like IDs or codes: they are read as categories; "
            "pass --numeric-columns %s if they are quantities",
            plan.position(name),
            shlex.quote(name),
        )
        return categorical_column(name, count, plan)
    return numeric_column(name, count, plan)


def _text_or_categories(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    """A column its first values showed as text: categories where most of its training rows hold a value that a
    category's vocabulary keeps (names of places or businesses, each of many rows), else text."""
    least = plan.options.min_frequency or MIN_CATEGORY_FREQUENCY
    share = repeats(count, least)
    if share < 1 - MOSTLY_RARE:
        return text_column(name, count, plan)
    log.info(
        "column %s: %.0f%% of its training rows hold a value seen %d times or more (names?): read as categories; "
        "pass --text-columns %s to learn from its words instead",
        plan.position(name),
        100 * share,
        least,
        shlex.quote(name),
    )
    return categorical_column(name, replace(count, frequent=count.whole_values, text=False), plan)


def write_vocabularies(output: str, columns: tuple[tables.Column, ...]) -> tuple[tables.Column, ...]:
    """Writes each text column's vocabulary beside metadata.json, one word a line; the columns, located there."""
    for column in columns:
        if column.kind == tables.TEXT:
            words = "".join(word + "\n" for word in column.vocabulary)
            storage.write_text_atomically(storage.join(output, column.vocabulary_file), words)
    return tuple(column.located(output) for column in columns)


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
        years = f" (years {column.first_year}-{column.first_year + 99})" if "%y" in column.date_format else ""
        counted = f"{len(column.vocabulary)} frequent values{days}{missing}"
        return f"{column.name} ({kind} {column.date_format!r}{years}, {counted})"
    buckets = f" + {column.hash_buckets} hash buckets" if column.hash_buckets else ""
    values = f"{len(column.vocabulary)} value" + "s" * (len(column.vocabulary) != 1)
    return f"{column.name} (categorical: {values}{buckets}, {column.hashed:.1%} outside{missing})"


def _length(column: tables.Column) -> str:
    """The words a text column keeps: the share of training rows cut at --max-length, or its longest row's."""
    if column.cut:
        characters = column.max_length * CHARS_A_TOKEN
        return f"{column.cut:.1%} of rows cut at {column.max_length} words or {characters:,} characters"
    return f"at most {column.width} words a row"


def _with_words(columns: list[tables.Column], plan: TablePlan, files: list[str]) -> tuple[tables.Column, ...]:
    """The columns less the text columns that hold no word to learn: none seen --min-frequency times in training
    (a small table's column of unique phrases, whose word pairs are as rare). Left out with a warning, as a column
    missing in every row is; a UserError when no feature column is left."""
    wordless = [column for column in columns if column.kind == tables.TEXT and not column.vocabulary_size]
    if not wordless:
        return tuple(columns)
    where = _where(files)
    least = plan.options.min_frequency or MIN_WORD_FREQUENCY
    named = ", ".join(plan.position(column.name) for column in wordless)
    because = f"no word of theirs is seen {least} or more times in training (--min-frequency)"
    if len(wordless) == len(columns):
        raise UserError(f"{where}: column(s) {named} are text, and {because}: no feature column is left")
    log.warning("%s: column(s) %s are text, and %s: left out", where, named, because)
    left_out = {column.name for column in wordless}
    return tuple(column for column in columns if column.name not in left_out)
