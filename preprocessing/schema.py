"""The dataset format: feature names, record encoding and `metadata.json`.

Defined once here and used by the shard writer, the trainer's input_fn, the serving input
and the tests, so that writer and reader can never disagree.

A record is a `tf.train.Example` with two features:
  - the example itself: uint8 data as one raw byte string under IMAGE_KEY (one byte a
    value, not one int64 a value), or float32 data as a float list under VECTOR_KEY;
  - LABEL_KEY: the class index as int64.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from preprocessing.errors import UserError

if TYPE_CHECKING:
    import tensorflow as tf

FORMAT_VERSION = 1
METADATA_FILE = "metadata.json"
IMAGE_KEY = "image"
VECTOR_KEY = "features"
LABEL_KEY = "label"
DTYPES = ("uint8", "float32")
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

    shape: tuple[int, ...]  # of one example: (H, W, C) for images, (D,) for vectors
    dtype: str  # "uint8" (stored as raw bytes) or "float32" (stored as a float list)
    class_names: tuple[str, ...]
    splits: dict[str, SplitInfo]
    # Per-channel (last axis) statistics of the training split, for normalizing inputs.
    mean: tuple[float, ...]
    std: tuple[float, ...]
    source: str = ""
    compression: str = ""  # of the shards: "" or "GZIP"
    format_version: int = FORMAT_VERSION
    extra: dict = field(default_factory=dict)  # free-form facts about the run (seed, timings)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def feature_key(self) -> str:
        return IMAGE_KEY if self.dtype == "uint8" else VECTOR_KEY

    def to_json(self) -> str:
        # num_classes is derived, but written out for readers of the file.
        return json.dumps({**asdict(self), "num_classes": self.num_classes}, indent=2) + "\n"

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
                format_version=int(raw["format_version"]),
                extra=dict(raw.get("extra", {})),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise UserError(f"{where}: malformed metadata ({type(error).__name__}: {error})") from None
        metadata.check(where)
        if raw.get("num_classes", metadata.num_classes) != metadata.num_classes:
            raise UserError(f"{where}: bad metadata: num_classes {raw['num_classes']} but {metadata.num_classes} names")
        return metadata

    def check(self, where: str) -> None:
        """Raises UserError when the metadata contradicts itself."""
        problems = []
        if self.format_version != FORMAT_VERSION:
            problems.append(f"format version {self.format_version}, this code reads {FORMAT_VERSION}")
        if self.compression not in SHARD_SUFFIXES:
            problems.append(f"compression {self.compression!r} is not one of {', '.join(map(repr, SHARD_SUFFIXES))}")
        if self.dtype not in DTYPES:
            problems.append(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if not self.shape or any(n <= 0 for n in self.shape):
            problems.append(f"shape {list(self.shape)} has no elements")
        if self.num_classes < 2:
            problems.append(f"{self.num_classes} class(es); a classifier needs at least 2")
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
        if problems:
            raise UserError(f"{where}: bad metadata: {'; '.join(problems)}")


def _varint(value: int) -> bytes:
    if value < 0x80:  # tags and short lengths: the common case, kept fast
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = [bytes((n,)) for n in range(0x80)]


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_example(x: np.ndarray, label: int) -> bytes:
    """One example as a serialized tf.train.Example: uint8 data as one raw byte string, anything
    else as a packed float list, the label as int64.

    The protobuf bytes are written directly, in the order TensorFlow's deterministic
    serialization uses (a test holds them equal), because building message objects was most
    of the writer's time, and so that shard-writing processes need no TensorFlow.
    """
    if x.dtype == np.uint8:  # Feature.bytes_list (1) > BytesList.value (1)
        key, feature = IMAGE_KEY, _field(1, _field(1, x.tobytes()))
    else:  # Feature.float_list (2) > FloatList.value (1), packed little-endian float32
        key, feature = VECTOR_KEY, _field(2, _field(1, np.ascontiguousarray(x, "<f4").tobytes()))
    label_feature = _field(3, _field(1, _varint(int(label))))  # Feature.int64_list (3) > Int64List.value
    entries = sorted(((key, feature), (LABEL_KEY, label_feature)))  # map entries, by key
    features = b"".join(_field(1, _field(1, k.encode()) + _field(2, v)) for k, v in entries)
    return _field(1, features)  # Example.features (1)


def feature_spec(metadata: Metadata, labeled: bool = True) -> dict:
    """The `tf.io.parse_example` spec that reads what `encode_example` wrote."""
    import tensorflow as tf  # here, not at the top: shard-writing processes never need it

    if metadata.dtype == "uint8":
        spec = {IMAGE_KEY: tf.io.FixedLenFeature([], tf.string)}
    else:
        spec = {VECTOR_KEY: tf.io.FixedLenFeature(list(metadata.shape), tf.float32)}
    if labeled:
        spec[LABEL_KEY] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def parse_examples(
    serialized: tf.Tensor, metadata: Metadata, labeled: bool = True
) -> tuple[tf.Tensor, tf.Tensor | None]:
    """A batch of serialized examples to (inputs in their stored dtype, int64 labels or None).

    Images stay uint8 here: they are 4x smaller than floats on their way to the device, and
    the model converts them there.
    """
    import tensorflow as tf

    parsed = tf.io.parse_example(serialized, feature_spec(metadata, labeled))
    data = parsed[metadata.feature_key]
    if metadata.dtype == "uint8":
        data = tf.reshape(tf.io.decode_raw(data, tf.uint8), [-1, *metadata.shape])
    return data, parsed.get(LABEL_KEY)


def decode_record(record: bytes, metadata: Metadata) -> tuple[np.ndarray, int]:
    """One serialized example to (data, label) in Python, or UserError saying what is wrong.

    It accepts what the trainer's parser accepts, so it can point at the record that stopped a
    run; TensorFlow's own errors name neither the file nor the record.
    """
    import tensorflow as tf

    try:
        example = tf.train.Example.FromString(record)
    except Exception:  # protobuf raises its own DecodeError, or others on odd bytes
        raise UserError("not a serialized tf.train.Example") from None
    features = example.features.feature
    expected = {IMAGE_KEY: "bytes_list", VECTOR_KEY: "float_list"}[metadata.feature_key]
    for key, kind in ((metadata.feature_key, expected), (LABEL_KEY, "int64_list")):
        if key not in features:
            raise UserError(f"feature {key!r} is missing")
        if features[key].WhichOneof("kind") != kind:
            raise UserError(f"feature {key!r} is a {features[key].WhichOneof('kind')}, expected a {kind}")
    size = int(np.prod(metadata.shape))
    if metadata.dtype == "uint8":
        values = features[IMAGE_KEY].bytes_list.value
        if len(values) != 1 or len(values[0]) != size:
            found = f"{len(values[0])} bytes" if len(values) == 1 else f"{len(values)} byte strings"
            raise UserError(f"feature 'image' holds {found}, expected {size} bytes for shape {list(metadata.shape)}")
        data = np.frombuffer(values[0], np.uint8).reshape(metadata.shape)
    else:
        values = features[VECTOR_KEY].float_list.value
        if len(values) != size:
            raise UserError(f"feature 'features' holds {len(values)} floats, expected {size}")
        data = np.array(values, np.float32).reshape(metadata.shape)
    labels = features[LABEL_KEY].int64_list.value
    if len(labels) != 1:
        raise UserError(f"feature 'label' holds {len(labels)} values, expected 1")
    if not 0 <= labels[0] < metadata.num_classes:
        raise UserError(f"label {labels[0]} is outside the {metadata.num_classes} classes")
    return data, int(labels[0])
