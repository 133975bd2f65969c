"""A table's text columns as a network's input: each column's word IDs in the row's vector, and fastText's
bag of words and bigrams over them (TextPart), which the table networks and the `text` network share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import tensorflow as tf

from dataformat import tables
from dataformat.text import PADDING
from trainer.columns.crosses import cross_bucket

if TYPE_CHECKING:
    from dataformat.schema import Metadata
    from trainer.model import ModelSettings

layers = tf.keras.layers
WORD_WIDTH = 128  # a text column's word and bigram embeddings (64: 0.3 points less on rotten tomatoes' reviews)


def text_columns(metadata: Metadata) -> list[tuple[int, tables.Column]]:
    """(where its word IDs start in the vector, the column) of each text column."""
    columns = metadata.columns
    return [(start, column) for column, start in zip(columns, tables.offsets(columns)) if column.kind == tables.TEXT]


def word_ids(rows: tf.Tensor, start: int, column: tables.Column) -> tf.Tensor:
    """A text column's [n, width] word IDs (PADDING after its words), as int32."""
    return tf.cast(rows[:, start : start + column.width], tf.int32)


class WordBag(layers.Layer):
    """A text column's word IDs to the sum of the embeddings of its words and of its pairs of neighbouring
    words (hashed into the column's bigram buckets) over the square root of their count, as fastText's bag of
    words and bigrams with TensorFlow's "sqrtn" combiner: [n, width]. fastText's mean learns a long text's
    words slowly (each gets 1/n of the gradient): on 20 Newsgroups, 0.78 accuracy by the default steps
    against 0.91 with sqrtn."""

    def __init__(self, column: tables.Column, width: int, name: str):
        super().__init__(name=name)
        # No L2 penalty (--embedding-l2): it shrinks every row at every step, and a word is in few batches: on
        # rotten tomatoes' reviews it left the embeddings near zero and the model near the majority class.
        self.words = layers.Embedding(column.size, width, name="words")
        self.buckets = column.bigram_buckets
        self.bigrams = layers.Embedding(self.buckets, width, name="bigrams") if self.buckets else None

    def call(self, ids: tf.Tensor) -> tf.Tensor:
        present = tf.not_equal(ids, PADDING)
        total, count = summed(self.words, ids, present)
        if self.bigrams is not None:
            pairs = cross_bucket([ids[:, :-1], ids[:, 1:]], self.buckets)
            bigram_total, bigram_count = summed(self.bigrams, pairs, present[:, :-1] & present[:, 1:])
            total, count = total + bigram_total, count + bigram_count
        return total / tf.sqrt(tf.maximum(count, 1.0))[:, None]


def summed(embedding: layers.Embedding, ids: tf.Tensor, present: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Each row's sum of the embeddings of its `present` IDs, [n, width], and their count, [n]. Only those IDs
    are looked up: a batch of short texts padded to max_length costs its words, not its padding, forward and
    in the gradient, whose rows are the words' (on modeldata's reviews, 81 words of 300 on average)."""
    where = tf.where(present)
    found = embedding(tf.gather_nd(ids, where))
    rows = tf.shape(ids, out_type=tf.int64)[0]
    return tf.math.unsorted_segment_sum(found, where[:, 0], rows), tf.reduce_sum(tf.cast(present, tf.float32), axis=1)


class TextPart(layers.Layer):
    """fastText's classifier over a table's text columns: each column's bag of words (and bigrams), dropout
    (--dropout), then one linear layer to the logits. Linear in the bags: on modeldata's reviews, the bag
    through a hidden layer of 256 overfit to 0.73 accuracy by the default 64 epochs; straight to the logits
    it held 0.81 (and with dropout kept it there)."""

    def __init__(self, settings: ModelSettings, metadata: Metadata):
        super().__init__(name="text")
        self.texts = text_columns(metadata)
        self.bags = [WordBag(column, WORD_WIDTH, f"words_{start}") for start, column in self.texts]
        self.dropout = layers.Dropout(settings.dropout, seed=settings.seed)
        self.logits = layers.Dense(metadata.num_classes, name="text_logits")

    def call(self, rows: tf.Tensor, training: bool = False) -> tf.Tensor:
        bags = [bag(word_ids(rows, start, column)) for (start, column), bag in zip(self.texts, self.bags)]
        return self.logits(self.dropout(tf.concat(bags, axis=1), training=training))
