"""The dataset format: feature names, record encoding and `metadata.json`.

Defined once here and used by the shard writer, the trainer's input_fn, the serving input
and the tests, so that writer and reader can never disagree.

A record is a `tf.train.Example` that packs up to `examples_per_record` consecutive
examples (64 by default) into two features:
  - their data, one example after another: uint8 data as one raw byte string under
    IMAGE_KEY (one byte a value, not one int64 a value), or float32 data as one float list
    under VECTOR_KEY;
  - LABEL_KEY: their class indices, one int64 each.
Packing is what makes shards as small as the raw data (a tf.train.Example and its TFRecord
frame cost about 50 bytes, most of a 64-byte digit) and reading cheap (TensorFlow's reader
pays a few microseconds a record, not a byte). With one example a record this is the plain
one-example-a-record layout that any TFRecord reader knows; format version 1 was exactly that.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from dataformat import tables, wire
from dataformat.errors import UserError
from dataformat.numeric import NUMERIC_KEY

if TYPE_CHECKING:
    import tensorflow as tf

# 7 packed a table's numeric columns as one block and gave timestamps a day index; 6 added a weight column;
# 5 added text columns; 4 added categorical columns' hash buckets; 3 tables (columns); 2 examples_per_record;
# version 1 held one example a record
FORMAT_VERSION = 7
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)
NUMERIC_BLOCK_SINCE = 7  # tables of older versions hold a feature per numeric column
EXAMPLES_PER_RECORD = 64
METADATA_FILE = "metadata.json"
IMAGE_KEY = "image"
VECTOR_KEY = "features"
LABEL_KEY = "label"
KEY = "key"  # a table's keys among the model's features and outputs (see Metadata.key_column)
WEIGHT = "weight"  # a table's row weights among the training input's features (see Metadata.weight_column)
DTYPES = ("uint8", "float32")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp")  # what TensorFlow decodes (the export's image input)
PHOTO_SUFFIXES = (*IMAGE_SUFFIXES, ".webp", ".heic", ".heif")  # what preprocessing reads, with Pillow, and qt-predict
# Shard compression (as TensorFlow's TFRecordOptions names it) -> shard file suffix.
SHARD_SUFFIXES = {"": ".tfrecord", "GZIP": ".tfrecord.gz"}


@dataclass(frozen=True)
class ShardInfo:
    file: str  # relative to the dataset folder
    examples: int
    bytes: int


@dataclass(frozen=True)
class SplitInfo:
    examples: int
    bytes: int
    shards: tuple[ShardInfo, ...]

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(shard.file for shard in self.shards)


@dataclass(frozen=True)
class Metadata:
    """What a reader needs to know about a finished dataset."""

    shape: tuple[int, ...]  # of one example: (H, W, C) for images, (D,) for vectors and table rows
    dtype: str  # "uint8" (stored as raw bytes) or "float32" (stored as a float list)
    class_names: tuple[str, ...]
    splits: dict[str, SplitInfo]
    # Per-channel (last axis) statistics of the training split, for normalizing inputs.
    mean: tuple[float, ...]
    std: tuple[float, ...]
    source: str = ""
    compression: str = ""  # of the shards: "" or "GZIP"
    # At most; a shard's last record may hold fewer, as may one where a broken image was skipped.
    examples_per_record: int = 1
    format_version: int = FORMAT_VERSION
    extra: dict = field(default_factory=dict)  # free-form facts about the run (seed, timings)
    # Tables: the feature columns (see tables.py) and the label column's name; empty otherwise.
    columns: tuple[tables.Column, ...] = ()
    label_column: str = ""
    key_column: str = ""  # each example's key (--key-column), stored beside it, passed through serving
    weight_column: str = ""  # each example's weight in the training loss (--weight-column), stored beside it
    class_counts: tuple[int, ...] = ()  # examples of each class, both splits (empty in datasets before it)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def is_table(self) -> bool:
        """Whether examples are rows of named columns (tables.py) rather than arrays."""
        return bool(self.columns)

    @property
    def is_image(self) -> bool:
        """Whether an example is an image (H, W, C) rather than a vector."""
        return len(self.shape) == 3

    @property
    def feature_key(self) -> str:
        return IMAGE_KEY if self.dtype == "uint8" else VECTOR_KEY

    def records_holding(self, examples: int) -> int:
        """How many full records hold at least `examples` examples (rounded up)."""
        return -(-examples // self.examples_per_record)

    def to_json(self) -> str:
        # num_classes is derived, but written out for readers of the file.
        raw = {
            **asdict(replace(self, columns=())),  # asdict would copy every vocabulary, value by value
            "columns": [column.to_json() for column in self.columns],
            "num_classes": self.num_classes,
        }
        return json.dumps(raw, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> Metadata:
        """Parses and checks `metadata.json`; `where` names the file in error messages."""
        try:
            raw = json.loads(text)
            metadata = cls(
                shape=tuple(int(n) for n in raw["shape"]),
                dtype=str(raw["dtype"]),
                class_names=tuple(str(name) for name in raw["class_names"]),
                splits={
                    name: SplitInfo(
                        examples=int(split["examples"]),
                        bytes=int(split["bytes"]),
                        shards=tuple(
                            ShardInfo(str(s["file"]), int(s["examples"]), int(s["bytes"])) for s in split["shards"]
                        ),
                    )
                    for name, split in raw["splits"].items()
                },
                mean=tuple(float(v) for v in raw["mean"]),
                std=tuple(float(v) for v in raw["std"]),
                source=str(raw.get("source", "")),
                compression=str(raw.get("compression", "")),
                examples_per_record=int(raw.get("examples_per_record", 1)),
                format_version=int(raw["format_version"]),
                extra=dict(raw.get("extra", {})),
                columns=tuple(tables.Column.from_json(column) for column in raw.get("columns", ())),
                label_column=str(raw.get("label_column", "")),
                key_column=str(raw.get("key_column", "")),
                weight_column=str(raw.get("weight_column", "")),
                class_counts=tuple(int(n) for n in raw.get("class_counts", ())),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise UserError(f"{where}: malformed metadata ({type(error).__name__}: {error})") from None
        metadata.check(where)
        if raw.get("num_classes", metadata.num_classes) != metadata.num_classes:
            raise UserError(f"{where}: bad metadata: num_classes {raw['num_classes']} but {metadata.num_classes} names")
        return metadata

    def located(self, folder: str) -> Metadata:
        """The metadata of the dataset in `folder`, its text columns' vocabulary files found there."""
        return replace(self, columns=tuple(column.located(folder) for column in self.columns))

    def check(self, where: str) -> None:
        """Raises UserError when the metadata contradicts itself."""
        problems = []
        if self.format_version not in READABLE_VERSIONS:
            readable = " and ".join(map(str, READABLE_VERSIONS))
            problems.append(f"format version {self.format_version}, this code reads {readable}")
        if self.examples_per_record < 1:
            problems.append(f"examples_per_record {self.examples_per_record} is not a positive number")
        if self.compression not in SHARD_SUFFIXES:
            problems.append(f"compression {self.compression!r} is not one of {', '.join(map(repr, SHARD_SUFFIXES))}")
        if self.dtype not in DTYPES:
            problems.append(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if not self.shape or any(n <= 0 for n in self.shape):
            problems.append(f"shape {list(self.shape)} has no elements")
        if self.num_classes < 2:
            problems.append(f"{self.num_classes} class(es); a classifier needs at least 2")
        if self.class_counts and len(self.class_counts) != self.num_classes:
            problems.append(f"{len(self.class_counts)} class counts for {self.num_classes} classes")
        channels = self.shape[-1] if self.shape else 0
        if len(self.mean) != channels or len(self.std) != channels:
            problems.append(f"mean/std have {len(self.mean)}/{len(self.std)} values for {channels} channels")
        if any(not math.isfinite(s) or s <= 0 for s in self.std):
            problems.append("std has a value that is not a positive number")
        if "train" not in self.splits:
            problems.append("no train split")
        for name, split in self.splits.items():
            if split.examples != sum(s.examples for s in split.shards) or split.bytes != sum(
                s.bytes for s in split.shards
            ):
                problems.append(f"the {name} split's totals differ from the sums over its shards")
        if self.is_table:
            width = tables.vector_width(self.columns)
            if self.shape != (width,) or self.dtype != "float32":
                problems.append(f"a table of {len(self.columns)} columns needs shape [{width}], float32")
            passed = [name for name in (self.key_column, self.weight_column) if name]  # beside the features
            problems += tables.problems(self.columns, reserved=(LABEL_KEY, *passed))
        if problems:
            raise UserError(f"{where}: bad metadata: {'; '.join(problems)}")


def encode_record(data: np.ndarray, labels: np.ndarray, keys: Sequence[str] = (), key_name: str = "") -> bytes:
    """Consecutive examples (`data` of shape [n, ...], n labels) as one serialized
    tf.train.Example: uint8 data as one raw byte string, anything else as one packed float
    list, the labels as a packed int64 list, and with `keys` (--key-column) their n keys as a
    bytes list under `key_name` (never read as a feature).

    The protobuf bytes are written directly, in the order TensorFlow's deterministic
    serialization uses (a test holds them equal), because building message objects was most
    of the writer's time, and so that shard-writing processes need no TensorFlow.
    """
    if data.dtype == np.uint8:  # Feature.bytes_list (1) > BytesList.value (1)
        key, feature = IMAGE_KEY, wire.field(1, wire.field(1, data.tobytes()))
    else:  # Feature.float_list (2) > FloatList.value (1), packed little-endian float32
        key, feature = VECTOR_KEY, wire.field(2, wire.field(1, np.ascontiguousarray(data, "<f4").tobytes()))
    label_feature = wire.field(3, wire.field(1, wire.varints(labels)))  # Feature.int64_list (3) > Int64List.value
    features = {key: feature, LABEL_KEY: label_feature}
    if len(keys):  # Feature.bytes_list (1) > BytesList.value (1), one a key
        features[key_name] = wire.field(1, b"".join(wire.field(1, str(k).encode()) for k in keys))
    return wire.example(features)


def parse_records(serialized: tf.Tensor, metadata: Metadata) -> tuple[tf.Tensor, ...]:
    """A batch of serialized records to (the examples they pack, in their stored dtype; int64
    labels; and for a table with a weight column, float32 weights), checking that each record holds
    data for exactly as many examples as labels.

    Images stay uint8 here: they are 4x smaller than floats on their way to the device, and
    the model converts them there.
    """
    import tensorflow as tf  # here, not at the top: shard-writing processes never need it

    if metadata.is_table:
        return _parse_table_records(serialized, metadata)
    size = int(np.prod(metadata.shape))
    dtype = tf.string if metadata.dtype == "uint8" else tf.float32
    spec = {
        metadata.feature_key: tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64),
        LABEL_KEY: tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
    }
    parsed = tf.io.parse_example(serialized, spec)
    labels = parsed[LABEL_KEY]
    if metadata.dtype == "uint8":
        strings = parsed[IMAGE_KEY].flat_values
        values_per_record = tf.strings.length(strings)
        # One string per record; joined, the whole batch decodes in one op.
        values = tf.io.decode_raw(tf.strings.reduce_join(strings), tf.uint8)
        strings_per_record = parsed[IMAGE_KEY].row_lengths()
        checks = [tf.debugging.assert_equal(strings_per_record, tf.ones_like(strings_per_record), message=ONE_STRING)]
    else:
        values_per_record = parsed[VECTOR_KEY].row_lengths()
        values = parsed[VECTOR_KEY].flat_values
        checks = []
    checks.append(
        tf.debugging.assert_equal(
            tf.cast(values_per_record, tf.int64), labels.row_lengths() * size, message=COUNTS_DIFFER
        )
    )
    with tf.control_dependencies(checks):
        data = tf.reshape(values, [-1, *metadata.shape])
    return data, labels.flat_values


def _parse_table_records(serialized: tf.Tensor, metadata: Metadata) -> tuple[tf.Tensor, ...]:
    """parse_records for tables: every feature holds one value for each label (the numeric block, one for
    each numeric column; a text column, its lengths). One parse op and one check for every feature at once:
    a wrapper and a check per column cost 22 s of graph building and 31,752 ops at 1,024 columns."""
    import tensorflow as tf

    columns = metadata.columns
    texts = tables.columns_of(columns, tables.TEXT)
    weights = [metadata.weight_column] if metadata.weight_column else []
    numeric = tables.columns_of(columns, tables.NUMERIC)
    block = numeric and metadata.format_version >= NUMERIC_BLOCK_SINCE
    stored = [column for column in columns if not (block and column.kind == tables.NUMERIC)]
    keys = [NUMERIC_KEY] * bool(block) + [column.name for column in stored]
    keys += [column.name + tables.LENGTHS for column in texts] + weights + [LABEL_KEY]
    record_type = {tables.NUMERIC: tf.float32, tables.TEXT: tf.int64}  # the others: strings
    types = [tf.float32] * bool(block) + [record_type.get(column.kind, tf.string) for column in stored]
    types += [tf.int64] * len(texts) + [tf.float32] * len(weights) + [tf.int64]
    parsed = tf.raw_ops.ParseExampleV2(
        serialized=serialized,
        names=[],
        sparse_keys=[],
        dense_keys=[],
        ragged_keys=keys,
        dense_defaults=[],
        num_sparse=0,
        sparse_types=[],
        ragged_value_types=types,
        ragged_split_types=[tf.int64] * len(keys),
        dense_shapes=[],
    )
    values, splits = dict(zip(keys, parsed.ragged_values)), dict(zip(keys, parsed.ragged_row_splits))
    # Every column's row splits are the labels' times its values a row (a text column's: its lengths'; the
    # block's: k times the labels'): one comparison of them all.
    counted = [key for key in keys[:-1] if key not in {column.name for column in texts}]
    per_row = tf.constant([len(numeric) if key == NUMERIC_KEY else 1 for key in counted], tf.int64)
    expected = splits[LABEL_KEY][None, :] * per_row[:, None]
    check = tf.debugging.assert_equal(tf.stack([splits[key] for key in counted]), expected, message=COUNTS_DIFFER)
    with tf.control_dependencies([check]):
        if block:
            values[NUMERIC_KEY] = tf.reshape(values[NUMERIC_KEY], [-1, len(numeric)])
        for column in texts:  # a row's word IDs, by the row lengths its record holds
            words = tf.RaggedTensor.from_row_lengths(values[column.name], values[column.name + tables.LENGTHS])
            values[column.name] = words.to_tensor(shape=[None, column.width])
        vector = tables.to_vector(values, columns)
    return (vector, values[LABEL_KEY], *[values[name] for name in weights])


ONE_STRING = "a record's image feature does not hold exactly one byte string"
COUNTS_DIFFER = "a record holds data for a different number of examples than it has labels"


def parse_examples(serialized: tf.Tensor, metadata: Metadata) -> tf.Tensor:
    """Serialized tf.train.Examples of one example each, labels not needed, to their data in
    the stored dtype: what the serving signature for tf.Example strings takes."""
    import tensorflow as tf

    if metadata.is_table:
        return tables.to_vector(table_example_values(serialized, metadata.columns), metadata.columns)
    if metadata.dtype == "uint8":
        strings = tf.io.parse_example(serialized, {IMAGE_KEY: tf.io.FixedLenFeature([], tf.string)})[IMAGE_KEY]
        return tf.reshape(tf.io.decode_raw(strings, tf.uint8), [-1, *metadata.shape])
    spec = {VECTOR_KEY: tf.io.FixedLenFeature(list(metadata.shape), tf.float32)}
    return tf.io.parse_example(serialized, spec)[VECTOR_KEY]


def table_example_values(
    serialized: tf.Tensor, columns: tuple[tables.Column, ...], key: str | None = None
) -> dict[str, tf.Tensor]:
    """Serialized tf.train.Examples of one table row each to named column values, as tables.to_vector takes
    them (the numbers as one block), with one parse op for every column (see _parse_table_records). The numbers
    come a feature a column, or as one block, as a record of one row holds them; one left out is missing.
    With `key` (--key-column), each row's key too, in the same parse ("" where it has none)."""
    import tensorflow as tf

    numeric = [column.name for column in tables.columns_of(columns, tables.NUMERIC)]
    keys = [column.name for column in columns] + [key] * bool(key) + [NUMERIC_KEY] * bool(numeric)
    nan, empty = tf.constant(np.nan, tf.float32), tf.constant("")  # shared: not a constant op a column
    defaults = [nan if column.kind == tables.NUMERIC else empty for column in columns] + [empty] * bool(key)
    parsed = tf.raw_ops.ParseExampleV2(
        serialized=serialized,
        names=[],
        sparse_keys=[],
        dense_keys=keys,
        ragged_keys=[],
        dense_defaults=defaults + [tf.constant(np.nan, tf.float32, [len(numeric)])] * bool(numeric),
        num_sparse=0,
        sparse_types=[],
        ragged_value_types=[],
        ragged_split_types=[],
        dense_shapes=[[]] * (len(columns) + bool(key)) + [[len(numeric)]] * bool(numeric),
    )
    values = dict(zip(keys, parsed.dense_values))
    if numeric:
        block, named = values[NUMERIC_KEY], tf.stack([values.pop(name) for name in numeric], axis=1)
        values[NUMERIC_KEY] = tf.where(tf.math.is_nan(block), named, block)
    return values


def decode_record(record: bytes, metadata: Metadata, labeled: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """One serialized record to (data of shape [n, ...], n labels or None), or UserError
    saying what is wrong.

    It accepts what the trainer's parser accepts, so it can point at the record that stopped a
    run; TensorFlow's own errors name neither the file nor the record.
    """
    return decode_example(parse_record(record), metadata, labeled)


def parse_record(record: bytes):
    """One serialized record as its tf.train.Example, or UserError."""
    import tensorflow as tf

    try:
        return tf.train.Example.FromString(record)
    except Exception:  # protobuf raises its own DecodeError, or others on odd bytes
        raise UserError("not a serialized tf.train.Example") from None


def decode_example(example, metadata: Metadata, labeled: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """decode_record of a record already parsed (parse_record)."""
    features = example.features.feature
    if metadata.is_table:
        return _decode_table_record(example, metadata, labeled)
    expected = {IMAGE_KEY: "bytes_list", VECTOR_KEY: "float_list"}[metadata.feature_key]
    wanted = ((metadata.feature_key, expected), (LABEL_KEY, "int64_list"))
    for key, kind in wanted if labeled else wanted[:1]:
        if key not in features:
            raise UserError(f"feature {key!r} is missing")
        if features[key].WhichOneof("kind") != kind:
            raise UserError(f"feature {key!r} is a {features[key].WhichOneof('kind')}, expected a {kind}")
    size = int(np.prod(metadata.shape))
    if metadata.dtype == "uint8":
        strings = features[IMAGE_KEY].bytes_list.value
        if len(strings) != 1:
            raise UserError(f"feature 'image' holds {len(strings)} byte strings, expected 1")
        values = np.frombuffer(strings[0], np.uint8)
        unit = "bytes"
    else:
        values = np.array(features[VECTOR_KEY].float_list.value, np.float32)
        unit = "floats"
    if not labeled:
        if len(values) % size:
            raise UserError(f"feature {metadata.feature_key!r} holds {len(values)} {unit}, not a multiple of {size}")
        return values.reshape(-1, *metadata.shape), None
    labels = np.array(features[LABEL_KEY].int64_list.value, np.int64)
    if len(values) != len(labels) * size:
        raise UserError(
            f"feature {metadata.feature_key!r} holds {len(values)} {unit}, expected {len(labels) * size} for "
            f"{len(labels)} label(s) of shape {list(metadata.shape)}"
        )
    outside = labels[(labels < 0) | (labels >= metadata.num_classes)]
    if len(outside):
        raise UserError(f"label {outside[0]} is outside the {metadata.num_classes} classes")
    return values.reshape(-1, *metadata.shape), labels


def stored_keys(example, metadata: Metadata) -> list[str]:
    """The keys a parsed record (parse_record) stores beside its examples (--key-column), one an example; none
    where it stores none."""
    if not metadata.key_column:
        return []
    features = example.features.feature
    stored = features[metadata.key_column].bytes_list.value if metadata.key_column in features else []
    return [key.decode("utf-8", "replace") for key in stored]


def _decode_table_record(example, metadata: Metadata, labeled: bool) -> tuple[list[dict], np.ndarray | None]:
    """decode_record for tables: (one {column: value} a row, the labels or None)."""
    try:
        values = tables.example_values(example, metadata.columns)
    except KeyError as error:
        raise UserError(f"feature {error.args[0]!r} is missing") from None
    except ValueError as error:
        raise UserError(str(error)) from None
    counts = {name: len(column) for name, column in values.items()}
    if len(set(counts.values())) > 1:
        raise UserError(f"columns hold different numbers of values ({counts})")
    rows = next(iter(counts.values()), 0)
    instances = [{name: column[i] for name, column in values.items()} for i in range(rows)]
    if not labeled:
        return instances, None
    features = example.features.feature
    if LABEL_KEY not in features or features[LABEL_KEY].WhichOneof("kind") != "int64_list":
        raise UserError(f"feature {LABEL_KEY!r} is missing or not an int64_list")
    labels = np.array(features[LABEL_KEY].int64_list.value, np.int64)
    if len(labels) != rows:
        raise UserError(f"the columns hold {rows} row(s) but there are {len(labels)} label(s)")
    weight = metadata.weight_column
    if weight and (weight not in features or features[weight].WhichOneof("kind") != "float_list"):
        raise UserError(f"feature {weight!r} (the weights) is missing or not a float_list")
    weights = len(features[weight].float_list.value) if weight else rows
    if weights != rows:
        raise UserError(f"the columns hold {rows} row(s) but there are {weights} weight(s)")
    outside = labels[(labels < 0) | (labels >= metadata.num_classes)]
    if len(outside):
        raise UserError(f"label {outside[0]} is outside the {metadata.num_classes} classes")
    return instances, labels
