"""Text columns: how free text becomes token IDs, one TensorFlow function for preprocessing and serving.

Preprocessing (pass 1: counting words; pass 2: writing IDs) and the exported serving graph call the
same `words` and `token_ids`, so a text is tokenized alike wherever it is read. The steps:

  1. at most `max_length` x CHARS_A_TOKEN characters are read (a text of megabytes costs no more);
  2. a letter written decomposed (e and a combining accent) is composed, as NFC composes it, and each
     character becomes its NFKC compatibility form, lower-cased, where that is one character
     (FOLD: fullwidth "Ａ" to "a", "É" to "é", a non-breaking space to a space); TensorFlow has no
     Unicode normalization op, so this is a table of code points, made from Python's unicodedata;
  3. a zero-width space becomes a space, and the other invisible format characters (a byte-order mark, a
     soft hyphen, right-to-left marks) are left out; HTML tags (`<br />`, not `x < y`) become spaces, and
     the commonest character references their characters (`&amp;` to `&`, `&#39;` to `'`);
  4. punctuation and symbols (Unicode categories P and S, emoji among them) and Chinese characters
     (written without spaces between words) become tokens of their own;
  5. the text is split at spaces, separators and control characters; the first `max_length` words kept.

A word's ID is its place in the column's vocabulary plus FIRST_ID: PADDING (0) fills a row to
`max_length`, OUT_OF_VOCABULARY (1) is any word outside the vocabulary. The vocabulary is a text file,
one word a line, most frequent first, that TensorFlow's lookup tables read directly; an export carries
it as an asset. Word bigrams are not stored: the network hashes each pair of neighbouring IDs into the
column's bigram buckets (trainer/columns/text.py), as fastText hashes word n-grams.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import TYPE_CHECKING

import numpy as np

from dataformat.missing import is_missing

if TYPE_CHECKING:
    import tensorflow as tf

    from dataformat.tables import Column

PADDING, OUT_OF_VOCABULARY, FIRST_ID = 0, 1, 2
CHARS_A_TOKEN = 16  # characters read for each word a row keeps: room for long words and markup
PAIR = 1 << 21  # above every code point: a base and a mark as one int64 (compositions)
# An HTML tag as HTML writes one (a name, then attributes), a comment, a doctype or an XML declaration: "x < y and
# y > z", "a<b && c>d" and "<3" are no tags, and their words stay.
HTML_TAG = (
    r"""<(?:/?[A-Za-z][\w:.-]*(?:\s+[A-Za-z_:][\w:.-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*\s*/?"""
    r"|!--.*?--|![A-Za-z][^<>]*|\?[A-Za-z][^<>]*\?)>"
)
# The character references that text scraped from the web holds most, as their characters: "don&#39;t &amp;" was
# the words don & # 39 ; t & amp ;, where a page's own "don't &" is don ' t &.
ENTITIES = (
    ("&(?:amp|#38|#x26);", "&"),
    ("&(?:lt|#60|#x3[cC]);", "<"),
    ("&(?:gt|#62|#x3[eE]);", ">"),
    ("&(?:quot|#34|#x22);", '"'),
    ("&(?:apos|#39|#x27|rsquo|lsquo|#8217|#8216);", "'"),
    ("&(?:nbsp|#160|#x[aA]0);", " "),
)
# A zero-width space breaks words; the other invisible format characters (Unicode category Cf: a byte-order mark,
# right-to-left marks, soft hyphens, joiners) belong to no word: "great\u200bwonderful" is two words, "\ufeffgreat" one.
ZERO_WIDTH_SPACE = "\u200b"
FORMAT_CHARACTERS = r"\p{Cf}"
# One character a token: punctuation and symbols, and Chinese characters (Han, in Japanese too), which are
# written without spaces between words; each its own word, as BERT's tokenizer splits them.
ONE_CHARACTER_WORDS = r"([\pP\pS\p{Han}])"
SPACES = r"[\pZ\p{Cc}]+"  # separators (spaces of every script) and control characters (tabs, newlines)
VOCABULARY_SUFFIX = ".vocabulary.txt"


@functools.lru_cache(maxsize=1)
def fold() -> tuple[np.ndarray, np.ndarray]:
    """(code points, what each becomes): every character whose NFKC form, lower-cased, is one other character."""
    keys, values = [], []
    for point in range(0x110000):
        if 0xD800 <= point < 0xE000:  # surrogates are no characters
            continue
        folded = unicodedata.normalize("NFKC", chr(point)).lower()
        if len(folded) == 1 and folded != chr(point):
            keys.append(point)
            values.append(ord(folded))
    return np.array(keys, np.int32), np.array(values, np.int32)


@functools.lru_cache(maxsize=1)
def compositions() -> tuple[np.ndarray, np.ndarray]:
    """(pairs, as a base's code point x PAIR + a combining mark's, sorted; the one character each composes): every
    pair that Unicode's canonical composition (NFC) makes one character, "e" and U+0301 "é" among them."""
    pairs = {}
    for point in range(0x110000):
        parts = unicodedata.decomposition(chr(point)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):  # canonical, of two characters
            base, mark = (int(part, 16) for part in parts)
            if unicodedata.normalize("NFC", chr(base) + chr(mark)) == chr(point):  # not excluded from composition
                pairs[base * PAIR + mark] = point
    keys = np.array(sorted(pairs), np.int64)
    return keys, np.array([pairs[key] for key in keys], np.int32)


def _composed(points: tf.RaggedTensor) -> tf.RaggedTensor:
    """Characters written decomposed, a letter and its combining marks, as the one character NFC makes of them:
    "cafe" and U+0301 read as "café" (macOS's file names and some web text decompose). Twice, for a letter of two
    marks (Vietnamese "ệ": e, U+0323, U+0302)."""
    import tensorflow as tf

    keys, values = compositions()
    marks = np.unique(keys % PAIR)
    found = tf.gather(marks, tf.minimum(tf.searchsorted(marks, tf.cast(points.flat_values, tf.int64)), len(marks) - 1))
    any_mark = tf.reduce_any(tf.equal(found, tf.cast(points.flat_values, tf.int64)))
    return tf.cond(any_mark, lambda: _compose_pairs(points, keys, values), lambda: points)  # most texts have none


def _compose_pairs(points: tf.RaggedTensor, keys: np.ndarray, values: np.ndarray) -> tf.RaggedTensor:
    import tensorflow as tf

    for _ in range(2):
        flat = tf.cast(points.flat_values, tf.int64)
        size = tf.size(flat)  # the slices below keep a batch of no characters at none
        following = tf.concat([flat[1:], [-1]], 0)[:size]
        rows = points.value_rowids()
        last = tf.concat([tf.not_equal(rows[1:], rows[:-1]), [True]], 0)[:size]  # the next is another row's
        pairs = flat * PAIR + following
        place = tf.minimum(tf.searchsorted(keys, pairs), len(keys) - 1)
        found = tf.equal(tf.gather(keys, place), pairs) & ~last
        composed = tf.where(found, tf.gather(values, place), points.flat_values)
        merged = tf.concat([[False], found[:-1]], 0)[:size]  # the mark after a composed letter
        points = tf.ragged.boolean_mask(points.with_flat_values(composed), points.with_flat_values(~merged))
    return points


def _folded(strings: tf.Tensor, max_chars: int) -> tf.Tensor:
    """Steps 1 and 2: the first `max_chars` characters of each string, composed and folded (invalid UTF-8 becomes
    U+FFFD)."""
    import tensorflow as tf

    points = _composed(tf.strings.unicode_decode(strings, "UTF-8", errors="replace")[:, :max_chars])
    keys, values = fold()
    flat = points.flat_values
    place = tf.minimum(tf.searchsorted(keys, flat), len(keys) - 1)
    folded = tf.where(tf.equal(tf.gather(keys, place), flat), tf.gather(values, place), flat)
    return tf.strings.unicode_encode(points.with_flat_values(folded), "UTF-8")


def words(strings: tf.Tensor, max_length: int) -> tf.RaggedTensor:
    """A [n] string tensor's texts as their words, standardized (see the module's docstring): [n, <= max_length]."""
    import tensorflow as tf

    text = _folded(strings, max_length * CHARS_A_TOKEN)
    text = tf.strings.regex_replace(text, ZERO_WIDTH_SPACE, " ")
    text = tf.strings.regex_replace(text, FORMAT_CHARACTERS, "")
    text = tf.strings.regex_replace(text, HTML_TAG, " ")
    for reference, character in ENTITIES:  # after the tags: "&lt;b&gt;" is text that shows a tag
        text = tf.strings.regex_replace(text, reference, character)
    text = tf.strings.regex_replace(text, ONE_CHARACTER_WORDS, r" \1 ")
    text = tf.strings.regex_replace(text, SPACES, " ")
    return tf.strings.split(text)[:, :max_length]


def vocabulary_lookup(vocabulary: tuple[str, ...] | str) -> tf.lookup.StaticHashTable:
    """A word's place in the vocabulary (a tuple of words, or the path of its file), -1 outside it."""
    import tensorflow as tf

    with tf.control_dependencies(None):  # initialized with the tables, never waiting for a record
        if isinstance(vocabulary, str):
            initializer = tf.lookup.TextFileInitializer(
                vocabulary, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER
            )
        else:
            keys = tf.constant(list(vocabulary) or [""], tf.string)
            initializer = tf.lookup.KeyValueTensorInitializer(keys, tf.range(len(vocabulary) or 1, dtype=tf.int64))
        return tf.lookup.StaticHashTable(initializer, default_value=-1, name="words")


def token_ids(strings: tf.Tensor, lookup: tf.lookup.StaticHashTable, max_length: int) -> tf.RaggedTensor:
    """A [n] string tensor's texts as word IDs (see the module's docstring): [n, <= max_length] int64."""
    import tensorflow as tf

    found = words(strings, max_length)
    places = tf.ragged.map_flat_values(lookup.lookup, found)
    outside = tf.constant(OUT_OF_VOCABULARY, tf.int64)
    return tf.ragged.map_flat_values(lambda place: tf.where(place < 0, outside, place + FIRST_ID), places)


def padded(ids: tf.RaggedTensor, max_length: int) -> tf.Tensor:
    """Ragged word IDs as a [n, max_length] float32 block, PADDING after each row's words (IDs stay far
    below 2**24, where float32 is exact)."""
    import tensorflow as tf

    return tf.cast(ids.to_tensor(default_value=PADDING, shape=[None, max_length]), tf.float32)


def word_ids(value: tf.Tensor, column: Column) -> tf.Tensor:
    """A text column's [n, width] word IDs, as float32: from its raw strings, or as records hold them."""
    import tensorflow as tf

    if value.dtype != tf.string:
        return tf.cast(value, tf.float32)
    lookup = vocabulary_lookup(column.vocabulary or column.vocabulary_file)
    value = tf.where(is_missing(value), "", value)  # "NA" is a missing text, as preprocessing reads it
    return padded(token_ids(value, lookup, column.max_length), column.width)
