"""Tables (CSV in any dialect, JSON lines, Parquet, ...) to sharded TFRecord files plus metadata.json,
streaming: memory stays flat however many rows and distinct values there are. This module plans the run (the
columns, the flags) and drives its three steps; each step's work a column at a time has a module of its own.

  pass 1  every file is read in blocks of text columns (table_files/). A block's rows are
          split by class, --eval-fraction of each to evaluation, chosen by a hash of their
          file and line (split.py), which also gives their shard: nothing depends on the order
          of the files. Per column, the training rows' missing values, numbers, dates and most
          frequent values (a Misra-Gries summary, frequent.py) are counted (column_counts.py,
          with a module a kind in columns/);
          the block's rows go to their shard's temporary Arrow file.
  decide  each column is numeric, a date, text or categorical (the data, then the flags);
          vocabularies and hash buckets, means, standard deviations and quantile boundaries,
          from the training rows only (column_kinds.py, columns/); a text column's words are counted as
          it is read, once its file's first block looks like text (or --text-columns names
          it), and its vocabulary is written beside metadata.json.
  pass 2  each shard's rows, from its temporary file, are put in a seeded random order,
          converted and written as packed records (table_shards.py, dataformat.tables), a
          piece at a time; metadata.json last.

Every row is checked in pass 1, and a mistake is a UserError naming the file, line and column.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import math
import os
import re
import shlex
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from tqdm import tqdm

from dataformat import dates, storage, tables
from dataformat.categorical import BOOLEANS, WHOLE_FRACTION
from dataformat.errors import UserError, quoted, shortened
from dataformat.numeric import parses_as_float
from dataformat.schema import (
    EXAMPLES_PER_RECORD,
    LABEL_KEY,
    METADATA_FILE,
    SHARD_SUFFIXES,
    Metadata,
    ShardInfo,
    SplitInfo,
)
from preprocessing.column_counts import ColumnCount, add_counts, count_column, missing_mask
from preprocessing.column_kinds import decide_columns, describe, write_vocabularies
from preprocessing.columns.categorical import CODE_NAME
from preprocessing.columns.dates import without_values_of_no_signal
from preprocessing.columns.numeric import NUMBER_DATE_FORMATS, read_numbers
from preprocessing.keys import KeyCheck
from preprocessing.memory import release_memory
from preprocessing.split import file_key, row_hashes, shard_name, stratified_train
from preprocessing.table_files import (
    CSV,
    FORMAT_NAMES,
    OBJECTS,
    SQLITE,
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
    splits_none,
    table_below_notes,
    text_bytes,
    text_files,
    uneven_lines,
    with_partition_columns,
)
from preprocessing.table_files.headers import LAST_COLUMN, label_of
from preprocessing.table_shards import ShardWriter, order_column
from preprocessing.writer import check_output, clear_output, usable_cores

log = logging.getLogger(__name__)
SHARD_BYTES = 16 * 2**20  # CSV text per shard: pass 2 holds one shard per worker in memory
MAX_LABELS = 1000  # distinct labels beyond which the label column is surely not a class
MAX_FRACTION_LABELS = 20  # ... or labels with fractions (ratings of half stars, 0.5 to 5, are 10 classes)
SHOWN_CLASSES = 10  # classes a message lists
# The largest --weight-column weight: the loss sums a batch's weights times its losses (up to ~100) in float32,
# whose largest is 3.4e38; at 1e30 that holds for batches of a million rows.
WEIGHT_MAX = 1e30  # as messages write it: 1e30
# A binary label's first class by name that says the second is the one to find, whichever is the more frequent.
NEGATIVES = ("0", "-1", "false", "no", "n", "negative", "neg", "f")
RELEASE_BLOCKS = 8  # pass 1 hands freed memory back every this many blocks


# Columns named like times (timestamp, created_at, eventTime, date) whose values are numbers are tried as dates in
# NUMBER_DATE_FORMATS (columns/numeric.py) too, as are the columns --date-columns names: 20180305, and Unix times
# (MovieLens' ratings).
TIME_NAME = re.compile(r"(^|[^A-Za-z])(?i:time|timestamp|ts|date|datetime|epoch|at)$|[a-z](Time|Timestamp|Date|At|TS)$")


@dataclass(frozen=True)
class TableOptions:
    """qt-preprocess's table flags, in three groups: how the files are read, which columns play which part, and
    how the other columns' kinds and vocabularies are decided."""

    # How the files are read (preprocessing/table_files/)
    delimiter: str = ""  # "" to sniff it (a tab for .tsv)
    decimal: str = ""  # the numbers' decimal mark, "." or ","; "" to sniff it
    unclear_decimal: str = "."  # the mark of a file whose first lines show neither (qt-predict: the training files')
    skip_rows: int = 0  # CSV files' lines before the header (or the first row)
    sheet: str = ""  # a spreadsheet's worksheet that holds the table ("": the one it opens on, or names the label)
    encoding: str = "utf-8"
    column_names: tuple[str, ...] = ()  # the names of a headerless file's columns
    text_folder: bool = False  # --source text: --input is a folder of .txt files, a sub-folder a class

    # Which columns play which part
    label_column: str = LAST_COLUMN  # a name, or an index (negative counts from the end)
    positive_class: str = ""  # of a binary label, the class to find (--positive-class): class 1 ("": the second sorted)
    key: str = ""  # the column of each row's key (--key-column): stored and passed through, never a feature
    weight: str = ""  # the column of each row's weight in the training loss (--weight-column), never a feature
    ignore: tuple[str, ...] = ()  # columns to leave out

    # How the features' kinds and vocabularies are decided (preprocessing/columns/)
    categorical: tuple[str, ...] = ()  # columns to treat as categorical whatever they hold
    numeric: tuple[str, ...] = ()  # columns that must be numbers
    dates: tuple[str, ...] = ()  # columns that must be dates or timestamps
    date_format: str = ""  # the dates' format (dataformat/dates.py); "" to find it among dates.FORMATS
    # the first year that two-digit years (%y) read as; 0: dates.first_year_now(), which plan_table puts here once,
    # so that every file and Beam's workers read alike
    first_year: int = 0
    text: tuple[str, ...] = ()  # columns of free text whatever they look like
    min_frequency: int | None = None  # a value or word seen fewer times in training is left out of the vocabulary
    # (None: the MIN_FREQUENCY of the kind's module in preprocessing/columns/)
    max_categories: int = 10_000  # a vocabulary keeps at most this many values, the most frequent
    hash_buckets: int = 1000  # at most this many buckets a column for the values outside its vocabulary
    max_tokens: int = 20_000  # a text column's vocabulary keeps at most this many words, the most frequent
    max_length: int = 300  # a text keeps its first this many words
    bigram_buckets: int | None = None  # a text column's buckets of hashed word pairs (None: by its words)

    def kind_given(self, name: str) -> bool:
        """Whether a flag gives the column's kind, rather than its values."""
        return any(name in names for names in (self.categorical, self.numeric, self.dates, self.text))


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
        kept = self.kept
        return pa.schema([(name, pa.string()) for name in kept] + [(order_column(kept), pa.uint64())])

    def position(self, name: str) -> str:
        return f"{self.names.index(name) + 1} ({name!r})"


@dataclass
class Totals:
    """Pass 1's counts, of a block or of every block added up: counts by column, rows by label, rows (with a label
    or not), training rows of a weight above 0 (--weight-column), and training rows."""

    counts: dict[str, ColumnCount]
    labels: Counter
    rows: int = 0
    weighted: int = 0
    training: int = 0

    @classmethod
    def empty(cls, plan: TablePlan) -> Totals:
        return cls({name: ColumnCount() for name in plan.features}, Counter())

    def add(self, more: Totals, plan: TablePlan) -> None:
        """`more` added, the labels checked as they grow (a column of IDs stops here, not after the last block)."""
        for name, count in more.counts.items():
            add_counts(self.counts[name], count)
        self.labels.update(more.labels)
        check_labels(self.labels, plan)
        self.rows += more.rows
        self.weighted += more.weighted
        self.training += more.training


@dataclass
class Block:
    """What one block of a file adds: its totals, and its rows by (split, shard)."""

    totals: Totals
    parts: list[tuple[tuple[str, int], pa.RecordBatch]]
    first_unlabeled: int = 0  # the line of its first row without a label, if any
    keys: tuple[pa.Array, np.ndarray] | None = None  # with --key-column: its labelled rows' keys and their lines


def _checked_weights(values: pa.Array, lines: np.ndarray, plan: TablePlan, path: str) -> np.ndarray:
    """--weight-column's cells as numbers, checked: a missing one, or one that is not a number from 0 to
    WEIGHT_MAX, stops the conversion with its line. The cells stay text until the shard writer stores them."""
    numbers, finite = read_numbers(values, ~missing_mask(values))
    bad = ~finite | (numbers < 0) | (numbers > WEIGHT_MAX)
    if bad.any():
        row = int(np.argmax(bad))
        large = finite[row] and numbers[row] > WEIGHT_MAX
        why = " (the loss sums a batch's weights in float32, whose largest is 3.4e38: rescale the column)" * large
        raise UserError(
            f"{path}: line {int(lines[row])}, column {plan.position(plan.weight)}: the weight "
            f"{quoted(values[row].as_py())} is not a number from 0 to 1e30{why}"
        )
    return numbers


def read_blocks(path: str, plan: TablePlan) -> Iterator[Block]:
    """Pass 1 over one file, block by block, checking every row."""
    plan = replace(plan, dialect=_file_dialect(path, plan))  # errors name this file's column numbers
    dialect = plan.dialect
    key = file_key(path, plan.root, plan.seed)
    earlier = {name: ColumnCount() for name in plan.features}  # each column's count in the block before
    unlabeled_seen = False
    key_check = KeyCheck()
    with ThreadPoolExecutor(usable_cores()) as pool:  # pyarrow's kernels release the GIL: columns in parallel
        for batch, lines in blocks(path, dialect, tuple(plan.kept), plan.key, every_column=True):
            block = _read_block(batch, lines, key, plan, pool, earlier, path)
            if block.keys:
                key_check.add(*block.keys)
            if block.first_unlabeled and not unlabeled_seen:
                log.warning(
                    "%s: line %d, column %s: the label is missing; rows without a label are left out",
                    path,
                    block.first_unlabeled,
                    plan.position(plan.label),
                )
                unlabeled_seen = True
            earlier = block.totals.counts or earlier  # a block of only unlabeled rows counted nothing
            yield block
    if plan.key:
        key_check.warn(path, plan.position(plan.key))


def _read_block(batch, lines, key, plan: TablePlan, pool, earlier: dict, path: str) -> Block:
    """One block: checked, its rows placed, its columns counted. Rows without a label are left out, as
    Ludwig and Vertex AI's tabular training leave them: nothing can be learnt from them."""
    if plan.options.text_folder:  # a class folder's name, as it is: folders NA and null are classes, 1 and 1.0 two
        label = batch.column(plan.label)
        labeled = np.ones(len(label), bool)
    else:
        label = _one_spelling_a_class(pc.utf8_trim_whitespace(batch.column(plan.label)))
        labeled = ~missing_mask(label)
    first_unlabeled = 0 if labeled.all() else int(lines[np.argmin(labeled)])
    if not labeled.any():
        return Block(Totals({}, Counter(), batch.num_rows), [], first_unlabeled)
    if first_unlabeled:
        batch, lines, label = batch.filter(pa.array(labeled)), lines[labeled], label.filter(pa.array(labeled))
    passed = [name for name in (plan.key, plan.weight) if name]  # stored, never counted
    trimmed = {plan.label: label, **{name: pc.utf8_trim_whitespace(batch.column(name)) for name in passed}}
    split_hash, order = row_hashes(key, lines)
    classes = pc.dictionary_encode(label).indices.to_numpy(zero_copy_only=False)
    train = stratified_train(split_hash, order, classes, plan.eval_fraction)
    options = plan.options
    date_formats = tuple(dict.fromkeys((options.date_format, *dates.FORMATS))) if options.date_format else dates.FORMATS

    def count(name: str) -> tuple:
        codes = name in options.categorical
        named_like_a_code = bool(CODE_NAME.search(name)) and name not in options.numeric
        is_text = True if name in options.text else False if options.kind_given(name) else None
        named_like_a_time = name in options.dates or is_text is None and TIME_NAME.search(name)
        formats = tuple(dict.fromkeys(date_formats + NUMBER_DATE_FORMATS)) if named_like_a_time else date_formats
        flags = (codes, codes or named_like_a_code, name in options.dates, formats, is_text, options)
        values = pc.utf8_trim_whitespace(batch.column(name))  # here, in the pool: a column at a time in parallel
        return count_column(values, train, (path, lines, split_hash), earlier[name], flags)

    counted = pool.map(count, plan.features)
    counts, nulled = {}, [trimmed[plan.label], *([trimmed[plan.key]] if plan.key else [])]
    weighted = 0
    if plan.weight:
        weighted = int(np.count_nonzero(_checked_weights(trimmed[plan.weight], lines, plan, path)[train] > 0))
        nulled.append(trimmed[plan.weight])
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
    totals = Totals(counts, labels, len(labeled), weighted, int(np.count_nonzero(train)))
    return Block(totals, parts, first_unlabeled, (trimmed[plan.key], lines) if plan.key else None)


def label_said(plan: TablePlan) -> str:
    """The label as messages name it: the flag that named it, or a text folder's class folders."""
    return "the class folders" if plan.options.text_folder else f"--label-column {plan.label}"


def _one_spelling_a_class(labels: pa.Array) -> pa.Array:
    """Labels written alike where one class is written two ways: a whole number written as a fraction ("1.0", as
    pandas writes an integer column that lacks a value) as the integer, so that "1" and "1.0" are one class; and true
    and false in any case in lower case, as a categorical column reads them (pandas writes True, JSON and Parquet
    true: a table of both had four classes)."""
    distinct = pc.unique(labels)  # most tables: only the few distinct labels are looked at
    if pc.any(pc.match_substring_regex(distinct, WHOLE_FRACTION)).as_py():
        labels = pc.replace_substring_regex(labels, WHOLE_FRACTION, r"\1")
    booleans = pa.array(BOOLEANS)
    if pc.any(pc.and_(pc.is_in(pc.utf8_lower(distinct), booleans), pc.invert(pc.is_in(distinct, booleans)))).as_py():
        lowered = pc.utf8_lower(labels)
        labels = pc.if_else(pc.is_in(lowered, booleans), lowered, labels)
    return labels


ROWS_BAR = "{desc}{n_fmt}{unit} [{elapsed}, {rate_fmt}]"  # pass 1's progress: rows read, their total unknown


def _read_pass(files: list[str], plan: TablePlan, folder: str) -> Totals:
    """Pass 1 over every file, each shard's rows into its temporary file in `folder`: every block's totals."""
    totals = Totals.empty(plan)

    def keep(block: Block, writers: dict, bar: tqdm) -> None:
        totals.add(block.totals, plan)
        for shard, part in block.parts:
            writers[shard].write_batch(part)
        bar.update(block.totals.rows)

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
        if error.errno == errno.EMFILE:  # one open file a shard: --shards 100000
            said = storage.describe_os_error(error)
            raise UserError(f"--shards: {sum(plan.shards.values())} shards in all, more files than this system lets "
                            f"a process open at once ({said}); pass fewer") from None  # fmt: skip
        raise UserError(
            f"{folder}: cannot write the temporary shard files ({storage.describe_os_error(error)}); "
            "set TMPDIR to a folder with room for about the size of the input"
        ) from None
    return totals


def decide_writer(
    plan: TablePlan, totals: Totals, path: str, files: list[str], compression: str, per_record: int
) -> ShardWriter:
    """After pass 1, locally or in Beam: the rows checked, each column decided, the classes named, and the
    shard writer that encodes the rows so (once its text columns' vocabularies are written: with_vocabularies)."""
    check_rows(totals, path, plan)
    columns = decide_columns(plan, totals.counts, files)
    classes = class_names(totals.labels, label_said(plan), plan.options.positive_class)
    check_split(totals, plan)
    return ShardWriter(plan.label, columns, classes, compression, per_record, plan.key, plan.weight)


def settle_date_values(writer: ShardWriter, date_values: list[dict], plan: TablePlan) -> ShardWriter:
    """After pass 2, locally or in Beam: the writer's date columns without the values that tell the label no more
    than their time does, by the training shards' counts (ShardWriter.write_and_count), added up. The records hold
    a date as its text, so a vocabulary left out changes no shard."""
    totals: dict[str, dict[str, np.ndarray]] = {}
    for counted in date_values:
        for name, kinds in counted.items():
            for kind, found in kinds.items():
                total = totals.setdefault(name, {})
                total[kind] = total[kind] + found if kind in total else found
    return replace(writer, columns=without_values_of_no_signal(writer.columns, totals, plan))


def with_vocabularies(writer: ShardWriter, output: str) -> ShardWriter:
    """The writer, its text columns' vocabularies written to `output` and located there."""
    return replace(writer, columns=write_vocabularies(output, writer.columns))


def _bucket(folder: str, split: str, index: int) -> str:
    return os.path.join(folder, f"{split}-{index}.arrow")


def check_rows(totals: Totals, path: str, plan: TablePlan) -> None:
    """That there are rows, and labeled ones, and training rows of a weight above 0 where --weight-column gives
    them; how many were left out for the lack of a label."""
    rows, labels, weighted = totals.rows, totals.labels, totals.weighted
    if not rows:
        raise UserError(f"{path}: no rows" + (" below the header line" if plan.dialect.has_header else ""))
    if plan.weight and not weighted:  # a model of nothing, trained to the end and exported, exit 0
        raise UserError(f"--weight-column {plan.weight}: every training row's weight is 0; the model would learn "
                        "nothing")  # fmt: skip
    unlabeled = rows - sum(labels.values())
    if unlabeled == rows:
        raise UserError(f"{path}: the label (column {plan.position(plan.label)}) is missing in every row")
    guessed = plan.options.label_column == LAST_COLUMN and plan.label != LABEL_KEY
    if guessed and unlabeled > rows / 2:  # a column of notes, most likely: it trained on the few rows that had one
        raise UserError(
            f"{path}: the label (by default the last column: column {plan.position(plan.label)}) is missing in "
            f"{unlabeled} of {rows} rows; name the label column with --label-column"
        )
    if unlabeled:
        log.warning("Left out %d of %d rows: their label is missing", unlabeled, rows)


def check_split(totals: Totals, plan: TablePlan) -> None:
    """That both splits hold rows: before a shard is written (it was after, and --shards 50 had written 5,000)."""
    labeled = sum(totals.labels.values())
    if not totals.training or totals.training == labeled:
        raise UserError(
            f"--eval-fraction {plan.eval_fraction} leaves {totals.training} training and "
            f"{labeled - totals.training} evaluation rows out of {labeled}; both need at least one"
        )


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


def class_names(labels: Counter, label: str, positive: str = "") -> tuple[str, ...]:
    """The label's classes (messages name the label as `label`: "--label-column income"), sorted: numerically
    when every label is a number (3 before 10); of two, the
    `positive` one (--positive-class) second (_with_positive_class). Many numbers with fractions (prices, scores)
    are a quantity to predict, not classes, and so are many values that mostly label one row each (counts,
    amounts, IDs): a UserError."""
    names = list(labels)
    if len(names) < 2:
        raise UserError(
            f"{label}: every labeled row has the same value, {quoted(names[0])}; a classifier needs "
            "at least 2 classes (is it the label?)"
        )
    numbers = all(parses_as_float(name) for name in names)
    fractions = [name for name in names if numbers and not float(name).is_integer()]
    if fractions and len(names) > MAX_FRACTION_LABELS:
        raise UserError(
            f"{label}: its {len(names)} distinct values are numbers with fractions "
            f"({shortened(fractions[0])}, ...), a quantity rather than classes; this trainer classifies: put them into "
            "a few classes first"
        )
    once = [name for name, count in labels.items() if count == 1]
    if len(names) > MAX_FRACTION_LABELS and len(once) > len(names) / 2:  # classes that nothing can be learnt of
        raise UserError(
            f"{label}: {len(once)} of its {len(names)} distinct values ({shortened(once[0])}, ...) "
            "label one row each: a quantity or an ID rather than classes; this trainer classifies: put them into a "
            "few classes first"
        )
    if numbers and len(names) > MAX_FRACTION_LABELS:  # horsepower: 93 classes, silently; codes are classes too
        whole = [float(name) for name in names]
        log.warning(
            "%s: its %d distinct values are whole numbers (%g to %g), each learnt as a class of its own; if they are "
            "a quantity (a count, a measurement), put them into a few classes first", label, len(names), min(whole),
            max(whole),
        )  # fmt: skip
    cased = [group for group in _by_lower_case(names) if len(group) > 1]
    if cased:  # "Yes" beside "yes": typed by hand, or two sources; which are one class only the user knows
        shown = "; ".join(" and ".join(map(quoted, group)) for group in cased[:3])
        log.warning(
            "%s: classes %s differ only in case: they are learnt apart (write them alike if each pair "
            "is one class)", label, shown
        )  # fmt: skip
    if once:  # a typo ("yes " beside "yes"), or a line that is not the table's (a title of counts)
        shown = ", ".join(quoted(name) for name in once[:3]) + (", ..." if len(once) > 3 else "")
        log.warning("%s: %d class(es) label a single row (%s): too few to learn", label, len(once), shown)
    classes = tuple(sorted(names, key=float)) if numbers else tuple(sorted(names))
    return _with_positive_class(classes, labels, label, positive)


def _with_positive_class(classes: tuple[str, ...], labels: Counter, label: str, positive: str) -> tuple[str, ...]:
    """Two classes with the `positive` one second: class 1, the one that the binary metrics (precision, recall, the
    precision-recall curve, the threshold table) are of. Without it, sorted (1 after 0, yes after no, true after
    false), and a warning where that makes the majority positive and the names are no such pair (churned and
    stayed: every rare-positive figure was of the 93% who stayed)."""
    if positive:
        named = _class_named(positive, classes)
        if named is None:
            shown = ", ".join(map(quoted, classes[:SHOWN_CLASSES])) + (", ..." if len(classes) > SHOWN_CLASSES else "")
            raise UserError(f"--positive-class {positive}: not a class of {label} ({shown})")
        if len(classes) != 2:
            raise UserError(f"--positive-class {positive}: for a label of two classes, and {label} has {len(classes)}")
        return (*(name for name in classes if name != named), named)
    if len(classes) == 2 and labels[classes[1]] > labels[classes[0]] and classes[0].lower() not in NEGATIVES:
        log.warning(
            "%s: its positive class (class 1, the one precision, recall and the precision-recall "
            "curve are of) is %s, the majority (%.0f%%); pass --positive-class %s if %s is the one to find",
            label, quoted(classes[1]), 100 * labels[classes[1]] / sum(labels.values()), shlex.quote(classes[0]),
            quoted(classes[0]),
        )  # fmt: skip
    return classes


def _class_named(given: str, classes: tuple[str, ...]) -> str | None:
    """The class --positive-class names: itself, or the one class it names as the file wrote it, where the reader
    wrote it otherwise (True for the class true, 1.0 for 1); None where there is none."""
    if given in classes:
        return given
    number = float(given) if parses_as_float(given) else None
    alike = [name for name in classes if name.lower() == given.lower() or number is not None and parses_as_float(name)
             and float(name) == number]  # fmt: skip
    return alike[0] if len(alike) == 1 else None


def _by_lower_case(names: list[str]) -> list[list[str]]:
    """The names grouped by their lower case, each group sorted."""
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        groups.setdefault(name.lower(), []).append(name)
    return list(groups.values())


def _table_elsewhere(path: str, options: TableOptions) -> str:
    """Where a file's header names one column, a hint at where its table may be: another worksheet, or lines
    below notes."""
    kind = file_format(path)
    if kind == WORKBOOK:
        return "; if another worksheet holds the table, --sheet names it"
    if kind == SQLITE:
        return "; if another of the database's tables holds the data, --table names it"
    if kind != CSV:
        return ""
    wrong = _wrong_delimiter(path, options)
    if wrong:
        return wrong
    below = table_below_notes(path, options.encoding)
    if below:
        return f"; {below}"
    uneven = uneven_lines(path, options.encoding) if not options.delimiter else ""
    return f"; no delimiter splits its first lines alike ({uneven}): --delimiter names the one to use" if uneven else ""


def _wrong_delimiter(path: str, options: TableOptions) -> str:
    """The hint where --delimiter splits none of a CSV file's first lines (the flag names another file's), or ""."""
    if options.delimiter and file_format(path) == CSV and splits_none(path, options.encoding, options.delimiter):
        return f"; --delimiter {options.delimiter!r} splits none of its first lines: leave it out to find its own"
    return ""


def _marked_columns(options: TableOptions, dialect: Dialect, where: str) -> TableOptions:
    """The options with what the file's header marks (Orange's flags and types), where no flag says otherwise: the
    class is the label, the weight column the weight, the columns marked meta or ignore are left out, and those
    typed discrete are categorical."""
    if dialect.marked_label and options.label_column == LAST_COLUMN and LABEL_KEY not in dialect.names:
        log.info("%s: its header marks %r as the class: it is the label (--label-column names another)", where,
                 dialect.marked_label)  # fmt: skip
        options = replace(options, label_column=dialect.marked_label)
    weight = dialect.marked_weight
    if weight and not options.weight and weight != options.label_column and weight not in options.ignore:
        log.info("%s: its header marks %r as the rows' weight: it is the weight column", where, weight)
        options = replace(options, weight=weight)
    by_default = options.label_column == LAST_COLUMN and LABEL_KEY in dialect.names  # as _label_column has it
    label = LABEL_KEY if by_default else label_of(options, list(dialect.names))  # by its name or its place
    named = {label, options.key, options.weight, *options.categorical, *options.numeric, *options.dates}
    named.update({*options.text, *options.ignore})
    out = tuple(name for name in dialect.marked_out if name not in named)
    if out:
        log.info("%s: its header marks %s as meta or ignore: left out (a flag that names one keeps it)", where,
                 ", ".join(map(repr, out)))  # fmt: skip
        options = replace(options, ignore=(*options.ignore, *out))
    discrete = tuple(name for name in dialect.marked_categorical if name not in named and name not in out)
    if discrete:  # a column of codes (0 1, a zoo's legs) is a category as the file says, not a number
        log.info("%s: its header types %s as discrete: categorical (a flag that names one says otherwise)", where,
                 ", ".join(map(repr, discrete)))  # fmt: skip
        options = replace(options, categorical=(*options.categorical, *discrete))
    return options


def _plan_columns(names: list[str], options: TableOptions, where: str, own: int) -> tuple[str, list[str]]:
    """(the label column, the feature columns) of a header, checking the flags' column names (the key
    column is neither)."""
    label = _label_column(names, options, where, own)
    _check_column_flags(names, options, where, label)
    unnamed = [str(number) for number, name in enumerate(names, 1) if not name]
    if unnamed:  # pandas' index (row numbers, nothing to learn from), or a spreadsheet's empty columns
        log.warning("%s: column(s) %s have no name and are left out; name one to use it", where, ", ".join(unnamed))
    features = _feature_columns(names, options, label, where, unnamed)
    _check_input_names([name for name in [*features, options.key] if name], where)
    return label, features


def _label_column(names: list[str], options: TableOptions, where: str, own: int) -> str:
    """--label-column's column: a name, or an index that counts the file's `own` first columns (the columns a
    partitioned dataset's folders give come after them, and the default last column must never be one of those);
    by default, the column named LABEL_KEY where there is one."""
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
            hint = _wrong_delimiter(where, options) or hint
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
    return label


def _check_column_flags(names: list[str], options: TableOptions, where: str, label: str) -> None:
    """A UserError where a flag names a column the header lacks, two kind flags name one column, or a flag names
    the label, the key or the weight column as something else."""
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
    # A column named as a feature of a kind and left out was left out silently.
    for (flag, chosen), (other, others) in itertools.combinations(
        {**kinds, "--ignore-columns": options.ignore}.items(), 2
    ):
        both = set(chosen) & set(others)
        if both:
            raise UserError(f"{flag} and {other} both name {sorted(both)[0]!r}")
    named = [name for chosen in kinds.values() for name in chosen]  # the columns the feature flags name
    for flag, chosen in (*kinds.items(), ("--ignore-columns", options.ignore)):
        if label in chosen:  # the default label (the last column) is easily named by mistake
            raise UserError(f"{flag} names {label!r}, the label column (--label-column): leave it out of {flag}")
    for flag, value in (("--key-column", options.key), ("--weight-column", options.weight)):
        if value and value == label and options.label_column == LAST_COLUMN:  # the user named no label
            raise UserError(f"{flag} {value}: it is the last column, which is the label where --label-column names "
                            "none; name the label column with --label-column")  # fmt: skip
    if options.key in (label, LABEL_KEY):
        raise UserError(f"--key-column {options.key}: it is the label column, or named as the records' labels")
    if options.key and options.key in (*named, *options.ignore):  # ignored, it was kept as the key all the same
        raise UserError(
            f"--key-column {options.key}: a key is kept beside each row and is never a feature; leave it out of the "
            "other flags"
        )
    if options.weight and options.weight in (label, LABEL_KEY, options.key):
        raise UserError(
            f"--weight-column {options.weight}: it is the label or the key column, or named as the records' labels"
        )
    if options.weight in (*named, *options.ignore):  # ignored, it weighed the rows all the same
        raise UserError(
            f"--weight-column {options.weight}: a weight is never a feature; leave it out of the other flags"
        )


def _feature_columns(names: list[str], options: TableOptions, label: str, where: str, unnamed: list[str]) -> list[str]:
    """The columns that are features: all but the label, the key, the weight, the ignored and the unnamed ones; a
    UserError where none is left, or where one has a name the records reserve."""
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
    return features


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
    if not options.text_folder:  # a text folder's class folders are no partitions (a bare name's had no parent)
        dialect = with_partition_columns(dialect, files[0], root)
    if dialect.sheet and not options.sheet and dialect.format == WORKBOOK:
        log.info("%s: sheet %r holds the table (the workbook opens on another)", files[0], dialect.sheet)
    if dialect.format == SQLITE and not options.sheet:
        log.info("%s: the database's table %r holds the data (--table names another)", files[0], dialect.sheet)
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
    if dialect.header_lines > 1:
        under = "a ruler" if dialect.header_lines == 2 else "the columns' types and flags (Orange's)"
        log.info("%s: the lines under its names hold %s, read as part of the header", files[0], under)
    options = _marked_columns(options, dialect, files[0])
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
    # Evaluation's in proportion, but past training's count only as its bytes need (--eval-fraction 0.99 --shards
    # 50 made 4,950 evaluation shards of a 40-row table, all but a few of them empty).
    proportion = round(train * eval_fraction / (1 - eval_fraction))
    needed = max(train, math.ceil(size * eval_fraction / SHARD_BYTES))
    counts = {"train": train, "eval": max(1, min(proportion, needed))}
    options = replace(options, first_year=options.first_year or dates.first_year_now())
    plan = TablePlan(
        dialect=dialect,
        label=label,
        features=tuple(features),
        key=options.key,
        options=options,
        eval_fraction=eval_fraction,
        seed=seed,
        shards=counts,
        root=root,
        first_file=files[0],
    )
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


def _reading_of(plan: TablePlan) -> dict:
    """How the training files were read, which qt-predict reads new rows by unless told otherwise: their encoding,
    and a CSV table's decimal mark (a file of a few rows to predict for may say nothing of it: 4.000 is 4000 where the
    training files had decimal commas)."""
    decimal = {"decimal": plan.dialect.decimal} if plan.dialect.format == CSV else {}
    return {"encoding": plan.options.encoding, **decimal}


def table_metadata(plan: TablePlan, writer: ShardWriter, written: dict, labels: Counter, extra: dict) -> Metadata:
    """The dataset's metadata, from the plan, the columns, every shard written (by (split, index)) and the
    rows of each label."""
    splits = {}
    for split, count in plan.shards.items():
        infos = tuple(written[split, i] for i in range(count))
        splits[split] = SplitInfo(sum(i.examples for i in infos), sum(i.bytes for i in infos), infos)
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
        extra={"seed": plan.seed, "eval_fraction": plan.eval_fraction, **_reading_of(plan), **extra},
        columns=columns,
        label_column=plan.label,
        key_column=plan.key,
        weight_column=plan.weight,
    )


def log_read(rows: int, files: int, plan: TablePlan, columns: tuple[tables.Column, ...]) -> None:
    """The summary line of what was read, and each column as it will be stored (both runners')."""
    read = "1 folder of texts, a file a row" if plan.options.text_folder else f"{files} file(s)"
    log.info("Read %d rows of %s: %s", rows, read, ", ".join(map(describe, columns)))


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
    check_output(output, overwrite)
    with tempfile.TemporaryDirectory(prefix="tables-") as folder:
        try:
            totals = _read_pass(files, plan, folder)
        except LateColumn as late:  # sparse JSON: columns that the first objects lack, found only by reading all
            log.info("%s: finding every object's columns, then reading the rows again", late)
            files, plan = plan_table(path, options, eval_fraction, seed, shards, every_object=True)
            totals = _read_pass(files, plan, folder)
        release_memory()  # pass 1's blocks are gone
        writer = decide_writer(plan, totals, path, files, compression, examples_per_record)
        clear_output(output, overwrite)  # only now: where the rows are refused, --overwrite's old dataset stays
        writer = with_vocabularies(writer, output)
        log_read(totals.rows, len(files), plan, writer.columns)
        paths = shard_paths(plan, output, compression)

        def write(shard: tuple[str, int]) -> tuple[ShardInfo, dict]:
            with ipc.open_file(_bucket(folder, *shard)) as reader:
                return writer.write_and_count(reader.read_all(), paths[shard], shard[0])

        with ThreadPoolExecutor(workers or usable_cores()) as pool:
            done = tqdm(pool.map(write, paths), total=len(paths), unit="shard", desc="writing", disable=None)
            written, date_values = {}, []
            for shard, (info, counted) in zip(paths, done):
                written[shard] = info
                date_values.append(counted)
        writer = settle_date_values(writer, date_values, plan)
    extra = {"seconds": round(time.time() - start, 3), "files": len(files)}
    metadata = table_metadata(plan, writer, written, totals.labels, extra)
    storage.write_text_atomically(storage.join(output, METADATA_FILE), metadata.to_json())
    return metadata
