"""Text columns: whether a column's values are free text, a block's words counted as the records will hold them
(dataformat/text.py), and a text column's vocabulary and bigram buckets decided from its counts."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat import storage, tables, text
from dataformat.errors import UserError
from preprocessing import frequent
from preprocessing.frequent import FrequentValues

if TYPE_CHECKING:
    from preprocessing.column_counts import ColumnCount
    from preprocessing.tables import TableOptions, TablePlan

log = logging.getLogger(__name__)
# By default, how many times a word must be seen in training to enter the vocabulary: twice; on rotten tomatoes'
# reviews, 0.779 accuracy against 0.776 with three times.
MIN_FREQUENCY = 2
TEXT_SAMPLE = 1000  # values of a column's first block that tell whether it is free text
LARGE_TEXT = 2**20  # a text of this many bytes or more is named in a warning
TEXT_WORDS = 3  # a value of at least this many words is text-like; a column of mostly such, mostly distinct, is text
# ... as its first values tell; but a column whose values repeat (causaldata's restaurants: 1,618 business names, 17
# rows each) is categories, where the most of its training rows hold a value that a category's vocabulary keeps:
# as text, those names gave accuracy 0.908 and ROC AUC 0.914; as categories, 0.934 and 0.954. Its whole values are
# counted while a block's are at most REPEATED_SHARE distinct.
REPEATED_SHARE = 0.5
DISTINCT_TOLD = 100  # ... in a block of at least this many training values (a file's last few rows tell nothing)
# Bigrams only for large texts: on rotten tomatoes' reviews (266,000 training words) hashed bigrams cost 1.7
# points of accuracy (noise of rare pairs); fastText's paper reports their gains on sets of millions of words.
BIGRAMS_FROM_WORDS = 5_000_000  # training words from which a text column gets bigram buckets by default
WORDS_A_BIGRAM_BUCKET = 10  # it then gets a bucket for about every this many training words
# Adam updates every row of an embedding at every step: 730,000 buckets of 128 trained 6 steps/s.
MOST_BIGRAM_BUCKETS = 100_000


def check_text_flags(options: TableOptions, columns: list[tables.Column]) -> None:
    """A UserError where a text column's flag is given and no column is text: it was ignored silently."""
    if any(column.kind == tables.TEXT for column in columns):
        return
    defaults = {field.name: field.default for field in dataclasses.fields(options)}
    for name in ("max_tokens", "max_length", "bigram_buckets"):
        if getattr(options, name) != defaults[name]:
            raise UserError(f"--{name.replace('_', '-')} {getattr(options, name)}: a flag of text columns, and no "
                            "column of this table is text (--text-columns names one)")  # fmt: skip


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


def _count_whole_values(counts: ColumnCount, kept: pa.Array) -> None:
    """A block's training values counted whole, unless most are distinct (free text: reviews, whose whole values
    are left from then on, so that the summary holds no long texts)."""
    found = pc.value_counts(kept)
    counts.distinct, counts.distinct_of = len(found), len(kept)
    if len(kept) >= DISTINCT_TOLD and len(found) > REPEATED_SHARE * len(kept):
        counts.whole_values_left = True
    else:
        counts.whole_values.add(found.field("values"), found.field("counts").to_numpy())


def repeats(count: ColumnCount, least: int) -> float:
    """The share of a text column's training rows whose whole value was seen `least` times or more in training: 0
    where its values went uncounted (free text)."""
    if count.whole_values_left or not count.texts:
        return 0.0
    _, frequencies = count.whole_values.most_frequent()
    return float(frequencies[frequencies >= least].sum()) / count.texts


def _text_named(path: str, line: int) -> str:
    """Where a text is: its file in a folder of texts (--source text, a file a row), else its table's line."""
    from preprocessing.table_files import text_files

    if storage.is_folder(path):
        return text_files(path, warn=False)[line - 1][0]
    return f"{path}: line {line}"


def count_text(
    counts: ColumnCount,
    values: pa.Array,
    train: np.ndarray,
    present: np.ndarray,
    options: TableOptions,
    where,
    whole: bool,
) -> ColumnCount:
    """A block of a text column counted into `counts` (of its missing and present values): its training rows'
    words (text.words, as the records will hold them), how many, the rows cut at --max-length words (or its
    characters) and the longest row's; where `whole`, its whole values too (_count_whole_values). A text of
    LARGE_TEXT bytes or more is named in a warning (its file and line), since only its first characters are read."""
    import tensorflow as tf  # only for text: TensorFlow's own ops tokenize, here as in the serving graph

    large = np.flatnonzero(pc.binary_length(values).to_numpy(zero_copy_only=False) >= LARGE_TEXT)
    if len(large):
        path, lines, _ = where
        log.warning(
            "%s: a text of %.1f MB (and %d more in this block); its first %d characters are read",
            _text_named(path, int(lines[large[0]])),
            len(values[int(large[0])].as_py().encode()) / 1e6,
            len(large) - 1,
            options.max_length * text.CHARS_A_TOKEN,
        )
    counts.text = counts.text_tried = True
    counts.frequent = FrequentValues(max(frequent.CAPACITY, 2 * options.max_tokens))
    training = values.filter(pa.array(present & train))
    if whole:
        _count_whole_values(counts, training)
    else:
        counts.whole_values_left = True
    kept = training.to_numpy(zero_copy_only=False)
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


def text_column(name: str, count: ColumnCount, plan: TablePlan) -> tables.Column:
    """A text column: its vocabulary, the most frequent words seen --min-frequency times, at most --max-tokens;
    bigram buckets for a large text (--bigram-buckets; see BIGRAMS_FROM_WORDS)."""
    options = plan.options
    words, frequencies = count.frequent.most_frequent()
    least = options.min_frequency or MIN_FREQUENCY
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
