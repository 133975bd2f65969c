"""The record format of tables: named columns, each numeric, categorical, a date or text, with missing values.

A table's record packs up to `examples_per_record` consecutive rows. Its numeric columns travel as one
block: NUMERIC_KEY holds the rows' numbers row by row, a value for each numeric column in the order of
the metadata's columns (NaN where the value is missing), so a table of 1,024 numeric columns costs one
feature to parse, as a vector does (version 6 and older stored a feature per numeric column). Every
other column is one feature named after it: a bytes list for a categorical or date column, a value a
row (the empty string where it is missing). A text column holds its rows' word IDs
(dataformat/text.py), one after another in an int64 list, and how many each row has in the int64 list
`<name>` + LENGTHS. LABEL_KEY holds the rows' class indices. The export's `examples` signature takes
the plain one-feature-per-column tf.train.Example that TFX and TFDV read (a text column as its raw
string), and, for a table without text columns, a record of one row as well.

The model sees a row as one float32 vector, Column.width numbers a column, in the order of the metadata's
columns: numeric values as they are (NaN for missing), categorical values as an index, a date as its
features and its index, a text as its word IDs. `to_vector` makes that vector from named column tensors,
for training, evaluation and serving alike, so they can never disagree. Indices stay far below 2**24,
where float32 is exact.

This module holds what every kind shares: Column, the records, the vector and the requests. Each kind's
own encoding and reading is in its module, named as in preprocessing/columns/ and trainer/columns/:
numeric.py, categorical.py, dates.py and text.py (trainer/columns/ has no dates.py: a date's features reach
the network as numbers and categories); missing.py says what a missing value is.
"""

from __future__ import annotations

import datetime
import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from dataformat import dates, storage, text, wire
from dataformat.categorical import BOOLEANS, OOV_INDEX, category_indices
from dataformat.missing import is_missing_value
from dataformat.numeric import NUMERIC_KEY, in_float32_range, is_numeric_value, numbers, numeric_block, spelled_missing

if TYPE_CHECKING:
    import tensorflow as tf

NUMERIC, CATEGORICAL, DATE = "numeric", "categorical", "date"  # a date column's values are stored as text
TEXT = "text"  # free text: word IDs in the records, its words' vocabulary in a file beside metadata.json
LENGTHS = "/lengths"  # a text column's feature of its rows' word counts is named after it with this suffix
DAY = "/day"  # a timestamp's day's category is named after its column with this suffix (trainer/columns/categorical.py)
SHOWN_NAMES = 20  # column names an error lists at most
INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class Column:
    """One feature column of a table, as the training split described it."""

    name: str
    kind: str  # NUMERIC, CATEGORICAL, DATE or TEXT
    missing: int = 0  # training rows where it is missing
    mean: float = 0.0  # numeric: of the training split's present values; date: of their days since 1970
    std: float = 1.0
    # categorical: its most frequent values, each seen --min-frequency times; text: its most frequent words
    # (held while preprocessing writes them to vocabulary_file, not in metadata.json)
    vocabulary: tuple[str, ...] = ()
    hash_buckets: int = 0  # categorical: where values outside the vocabulary go (none: to OOV_INDEX)
    hashed: float = 0.0  # categorical: the share of training rows whose value is outside the vocabulary; text: of words
    date_format: str = ""  # date: its format (dataformat/dates.py)
    # date with times of day: its day as a category (dates.day_index), one index a day of the training split's
    # span, from first_day (days since 1970) for day_count days; day_count 0: no day index
    first_day: int = 0
    day_count: int = 0
    iso_keys: bool = False  # date: its vocabulary holds its dates as dates.keys_of writes them (else as written)
    # date: whether its training values had times of day; where not, a value's time is left out (dates.fields_tf)
    timed: bool = True
    first_year: int = dates.POSIX_FIRST_YEAR  # date in a format of two-digit years (%y): the first year they read as
    boundaries: tuple[float, ...] = ()  # numeric: quantile boundaries of the training split, for the linear part
    max_length: int = 0  # text: the words a row keeps (--max-length); the tokenizer reads as many characters for them
    longest: int = 0  # text: the most words of a training row, at most max_length: the input's width (0: max_length)
    vocabulary_file: str = ""  # text: its vocabulary, one word a line (a name beside metadata.json, or a path)
    vocabulary_size: int = 0  # text: the words in it
    bigram_buckets: int = 0  # text: where the network hashes pairs of neighbouring words
    cut: float = 0.0  # text: the share of training rows with more than max_length words
    missing_spellings: tuple[str, ...] = ()  # numeric: the few other values its file held beside numbers ("-"), missing
    span: tuple[float, ...] = ()  # numeric: the training split's least and greatest number (none: not known)

    def __deepcopy__(self, memo: dict) -> Column:
        """Itself: nothing in it can change. The Estimator deep-copies its params (the metadata) for every
        model_fn call, which at 4,096 columns, or 26 vocabularies of 10,000 values, took 0.26 s a call."""
        return self

    @property
    def width(self) -> int:
        """How many numbers of the model's vector the column takes: a date's features, then its value's
        index as a category (a day or hour that repeats, as in a table of flights, is a category too), then
        a timestamp's day as a category."""
        return {DATE: dates.DATE_FEATURES + 1 + bool(self.day_count), TEXT: self.longest or self.max_length}.get(
            self.kind, 1
        )

    @property
    def category_slot(self) -> int | None:
        """Where, within its numbers, the column's category index is (None: it has none)."""
        return {CATEGORICAL: 0, DATE: dates.DATE_FEATURES}.get(self.kind)

    @property
    def integer_codes(self) -> bool:
        """Categorical: whether its vocabulary holds integers, codes that a client may write as 12 or 12.0."""
        return self.kind == CATEGORICAL and any(INTEGER.fullmatch(value) for value in self.vocabulary)

    @property
    def booleans(self) -> bool:
        """Categorical: whether its vocabulary is true and false, which a client may write in any case."""
        return self.kind == CATEGORICAL and bool(self.vocabulary) and set(self.vocabulary) <= set(BOOLEANS)

    @property
    def day_slot(self) -> int | None:
        """Where, within its numbers, a timestamp's day index is (None: it has none)."""
        return dates.DATE_FEATURES + 1 if self.kind == DATE and self.day_count else None

    def day_labels(self) -> list[str]:
        """What each of a timestamp's day indices stands for (see index_labels): a warm start keeps a day's
        weights where both models trained on that day."""
        first = datetime.date(1970, 1, 1) + datetime.timedelta(days=self.first_day)
        days = (first + datetime.timedelta(days=k) for k in range(self.day_count))
        return ["<missing, or a day outside training>", *(day.isoformat() for day in days)]

    def statistics(self) -> list[tuple[float, float]]:
        """(mean, std) of each of the column's numbers in the vector, for standardizing: a date's days and
        year from its days' statistics, its cyclic features as they are; a categorical index none."""
        if self.kind == NUMERIC:
            return [(self.mean, self.std)]
        if self.kind in (CATEGORICAL, TEXT):
            return [(0.0, 1.0)] * self.width
        year = (1970 + self.mean / dates.DAYS_PER_YEAR, max(self.std / dates.DAYS_PER_YEAR, 1.0))
        return [(self.mean, self.std), year] + [(0.0, 1.0)] * (self.width - 2)

    @property
    def size(self) -> int:
        """Categorical: how many indices the column's values take (missing, out of vocabulary, vocabulary,
        buckets); text: how many word IDs (padding, out of vocabulary, vocabulary)."""
        if self.kind == TEXT:
            return text.FIRST_ID + self.vocabulary_size
        return OOV_INDEX + 1 + len(self.vocabulary) + self.hash_buckets

    def index_labels(self) -> list[str]:
        """What each of the column's indices stands for, one line of text each: a value or word as JSON (a
        quoted string), a place of its own in <angle brackets>. A warm start moves a model's rows for a
        value to the value's new index by these (trainer/warm_start.py)."""
        if self.kind == TEXT:
            with storage.open_read(self.vocabulary_file) as file:
                words = file.read().decode("utf-8").splitlines()
            return ["<padding>", "<out of vocabulary>", *map(json.dumps, words)]
        buckets = [f"<bucket {k} of {self.hash_buckets}>" for k in range(self.hash_buckets)]
        return ["<missing>", "<out of vocabulary>", *map(json.dumps, self.vocabulary), *buckets]

    def to_json(self) -> dict:
        if self.kind == NUMERIC:
            found = {"name": self.name, "kind": self.kind, "missing": self.missing, "mean": self.mean, "std": self.std}
            spelled = {"missing_spellings": list(self.missing_spellings)} if self.missing_spellings else {}
            spanned = {"span": list(self.span)} if self.span else {}
            return {**found, "boundaries": list(self.boundaries), **spelled, **spanned}
        found = {"name": self.name, "kind": self.kind, "missing": self.missing}
        if self.kind == TEXT:
            sizes = {"max_length": self.max_length, "longest": self.longest, "vocabulary_size": self.vocabulary_size}
            found.update(sizes, bigram_buckets=self.bigram_buckets, outside=self.hashed, cut=self.cut)
            return {**found, "vocabulary_file": self.vocabulary_file.rsplit("/", 1)[-1]}
        if self.kind == DATE:
            found.update(mean=self.mean, std=self.std, date_format=self.date_format)
            found.update(first_day=self.first_day, day_count=self.day_count, iso_keys=self.iso_keys, timed=self.timed)
            if "%y" in self.date_format:
                found.update(first_year=self.first_year)
        return {**found, "hash_buckets": self.hash_buckets, "hashed": self.hashed, "vocabulary": list(self.vocabulary)}

    @classmethod
    def from_json(cls, raw: dict) -> Column:
        return cls(
            name=str(raw["name"]),
            kind=str(raw["kind"]),
            missing=int(raw.get("missing", 0)),
            mean=float(raw.get("mean", 0.0)),
            std=float(raw.get("std", 1.0)),
            vocabulary=tuple(str(value) for value in raw.get("vocabulary", ())),
            hash_buckets=int(raw.get("hash_buckets", 0)),
            hashed=float(raw.get("hashed", raw.get("outside", 0.0))),
            date_format=str(raw.get("date_format", "")),
            first_day=int(raw.get("first_day", 0)),
            day_count=int(raw.get("day_count", 0)),
            iso_keys=bool(raw.get("iso_keys", False)),
            timed=bool(raw.get("timed", True)),  # before it was written: times read as sent
            first_year=int(raw.get("first_year", dates.POSIX_FIRST_YEAR)),  # before it was written: POSIX's
            boundaries=tuple(float(value) for value in raw.get("boundaries", ())),
            max_length=int(raw.get("max_length", 0)),
            longest=int(raw.get("longest", 0)),
            vocabulary_file=str(raw.get("vocabulary_file", "")),
            vocabulary_size=int(raw.get("vocabulary_size", 0)),
            bigram_buckets=int(raw.get("bigram_buckets", 0)),
            cut=float(raw.get("cut", 0.0)),
            missing_spellings=_missing_spellings(raw),
            span=tuple(float(value) for value in raw.get("span", ())),
        )

    def located(self, folder: str) -> Column:
        """The column with its vocabulary file's path in the dataset's folder (text; others as they are)."""
        if self.kind != TEXT or not self.vocabulary_file:
            return self
        return replace(self, vocabulary_file=storage.join(folder, self.vocabulary_file.rsplit("/", 1)[-1]))

    @property
    def vocabulary_name(self) -> str:
        """Text: the vocabulary file's name beside metadata.json."""
        return vocabulary_name(self.name)


def _missing_spellings(raw: dict) -> tuple[str, ...]:
    """A numeric column's missing spellings as metadata.json holds them; as one `missing_spelling` before 2026-12."""
    if "missing_spellings" in raw:
        return tuple(map(str, raw["missing_spellings"]))
    return (str(raw["missing_spelling"]),) if raw.get("missing_spelling") else ()


def vocabulary_name(column: str) -> str:
    """A text column's vocabulary file's name: its name, made safe for a file name."""
    return "".join(char if char.isalnum() or char in "-_." else "_" for char in column) + text.VOCABULARY_SUFFIX


def problems(columns: tuple[Column, ...], reserved: tuple[str, ...]) -> list[str]:
    """What is wrong with a table's column descriptions, for Metadata.check."""
    found = []
    names = [column.name for column in columns]
    if len(set(names)) != len(names):
        found.append("two columns share a name")
    for column in columns:
        if column.kind not in (NUMERIC, CATEGORICAL, DATE, TEXT):
            found.append(f"column {column.name!r} has kind {column.kind!r}")
        if column.name in reserved or reserved_name(column.name):
            found.append(f"column {column.name!r} has a reserved name")
        if column.kind == DATE:
            try:
                dates.check(column.date_format)
            except ValueError as error:
                found.append(f"column {column.name!r} has date format {column.date_format!r}: {error}")
        if column.kind in (NUMERIC, DATE) and not (np.isfinite(column.std) and column.std > 0):
            found.append(f"column {column.name!r} has a std that is not a positive number")
        if list(column.boundaries) != sorted(set(column.boundaries)) or not np.isfinite(column.boundaries).all():
            found.append(f"column {column.name!r} has boundaries that are not finite and increasing")
        if column.kind == TEXT and (column.max_length < 1 or not column.vocabulary_file or column.bigram_buckets < 0):
            found.append(f"column {column.name!r} is text without a max_length, a vocabulary file or bigram buckets")
        if column.hash_buckets < 0 or column.day_count < 0:
            found.append(f"column {column.name!r} has a negative number of hash buckets or days")
    return found


# Writing (numpy only: shard writers need no TensorFlow).


def encode_table_records(
    block: np.ndarray,
    numeric: dict[str, np.ndarray],
    strings: dict[str, tuple[np.ndarray, np.ndarray]],
    words: dict[str, tuple[np.ndarray, np.ndarray]],
    labels: np.ndarray,
    per_record: int,
    label_key: str,
) -> Iterator[bytes]:
    """Rows, column by column, as serialized tf.train.Examples of up to `per_record` rows each, one at a
    time (a shard's records are written as they are made, never all held).

    `block` holds the numeric columns' values, [rows, numeric columns] (NaN: missing; no columns: no
    feature); `numeric` maps any other float feature (the weights) to its values; `strings` maps a column to its
    values in Arrow's layout (offsets, bytes; empty: missing); `words` maps a text column to its
    rows' word IDs (all of them, and where each row's start: n + 1 row splits). The bytes are those of
    TensorFlow's deterministic serialization (see wire.py). Every column is first encoded whole,
    vectorized; a record is then one slice of each, behind its cached entry header.
    """
    rows = len(labels)
    firsts = np.append(np.arange(0, rows, per_record), rows)  # each record's first row, then the end
    encoded = {}  # key: (where its values sit, all its bytes, where each record's bytes start)
    if block.shape[1]:
        values = np.ascontiguousarray(block, "<f4").view(np.uint8)
        encoded[NUMERIC_KEY] = (wire.FLOAT_VALUES, values.reshape(-1), firsts * values.shape[1])
    for name, values in numeric.items():
        encoded[name] = (wire.FLOAT_VALUES, np.ascontiguousarray(values, "<f4").view(np.uint8), firsts * 4)
    for name, layout in strings.items():
        data, starts = wire.string_fields(*layout)
        encoded[name] = (wire.BYTES_VALUES, data, starts[firsts])
    for name, (ids, splits) in words.items():
        data, starts = wire.packed_varints(ids)
        encoded[name] = (wire.INT64_VALUES, data, starts[splits[firsts]])
        data, starts = wire.packed_varints(np.diff(splits))
        encoded[name + LENGTHS] = (wire.INT64_VALUES, data, starts[firsts])
    data, starts = wire.packed_varints(labels)
    encoded[label_key] = (wire.INT64_VALUES, data, starts[firsts])
    # In protobuf's deterministic order: by name, a name before any it begins ("review/lengths", "review").
    ordered = sorted(encoded.items(), key=lambda item: item[0].encode() + b"\xff")
    columns = [(key, path, data, bounds.tolist()) for key, (path, data, bounds) in ordered]
    for record in range(len(firsts) - 1):
        parts = []
        for key, path, data, bounds in columns:
            payload = data[bounds[record] : bounds[record + 1]].tobytes()
            parts += (wire.entry_header(key, path, len(payload)), payload)
        yield wire.field(1, b"".join(parts))  # Example.features (1)


def no_such_column(name: str, names: list[str]) -> str:
    """'no column NAME' and what the user may have meant: the column of another case or spelling, or else
    the first SHOWN_NAMES columns (a wide table's header would fill the screen)."""
    by_case = {other.lower(): other for other in names}
    close = [by_case[name.lower()]] if name.lower() in by_case else difflib.get_close_matches(name, names, 1, 0.8)
    if close:
        return f"no column {name!r} (did you mean {close[0]!r}?)"
    more = f", ... ({len(names)} in all)" if len(names) > SHOWN_NAMES else ""
    return f"no column {name!r} (its columns: {', '.join(names[:SHOWN_NAMES])}{more})"


def in_another_case(names: list[str], among: list[str]) -> list[str]:
    """The `names` that `among` holds only in another case ("age" where it holds "Age")."""
    lowered = {other.lower() for other in among}
    return [name for name in names if name not in among and name.lower() in lowered]


def flattened(row: dict, where: str) -> dict:
    """A row whose values include objects, with each object's values as columns of their own, named by their
    path: {"geo": {"city": "Oslo"}} as {"geo.city": "Oslo"} (BigQuery's RECORD columns, exported as JSON or
    Parquet). Lists stay as they are. A key that is also a field's path is a UserError naming `where` the row is."""
    if dict not in map(type, row.values()):  # a scan in C: a generator here took a tenth of reading JSON
        return row  # most rows: nothing to copy
    from dataformat.errors import UserError

    flat = {}
    for name, value in row.items():
        if isinstance(value, dict):
            items = [(f"{name}.{inner}", item) for inner, item in flattened(value, where).items()]  # {}: no column
        else:
            items = [(name, value)]
        for field, item in items:
            if field in flat:
                raise UserError(f"{where}: {field!r} is both a key and a nested record's field; rename one")
            flat[field] = item
    return flat


def value_text(value) -> str:
    """A JSON value (a row's, or a predict request's) as the text a table's column holds: null as empty (a missing
    value), true and false in lower case (as Parquet's are read), a list as list_text writes it, else as str()."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return list_text(value)
    return str(value)


# What a list may hold (BigQuery's REPEATED column, a JSON array): words, codes and integer IDs, but not fractions (an
# embedding's numbers, whose digits are no words) nor lists and records.
LIST_RULE = "a column's list may hold text, integers and true or false"


def list_text(values: list) -> str:
    """A list (tags, genres, item IDs) as its elements' text joined by spaces, nulls left out: a list column is
    read as a text column whose words its elements are (tables with lists name them so, as Ludwig's set features
    split a value at spaces). ValueError for a list that holds a decimal number, a list or an object."""
    for value in values:
        if isinstance(value, (list, dict)):
            raise ValueError("a list of lists or objects")
        if isinstance(value, float):
            raise ValueError(f"a list that holds a decimal number ({value!r})")
    return " ".join(value_text(value) for value in values if value is not None)


def parameter_name(name: str) -> str:
    """The parameter name TensorFlow's Python side (tf.saved_model.load, and qt-predict) makes of a serving
    signature's input named `name`: every character but letters and digits an underscore, "arg_" before a first
    character that is no letter."""
    swapped = "".join(char if char.isalnum() else "_" for char in name)
    return swapped if swapped[:1].isalpha() else "arg_" + swapped


def is_missing_in(value, column: Column) -> bool:
    """Whether a value is missing in this column: a missing value, or one of the column's own missing spellings."""
    return isinstance(value, str) and value.strip() in column.missing_spellings or is_missing_value(value)


def instance_columns(
    instances: list[dict], columns: tuple[Column, ...], names: list[str], key: str = ""
) -> dict[str, np.ndarray]:
    """Rows as a predict request sends them ({column: value}, a key left out or null for a missing value, a
    nested record's fields as `flattened` names them) to one array a column, as the `serving_default` signature
    takes them, and the rows' `key` column as text ("" where left out). A value that cannot be a number in a
    numeric column is a UserError naming the row (by `names`)."""
    from dataformat.errors import UserError, quoted

    arrays = {}
    instances = [flattened(one, name) if isinstance(one, dict) else one for one, name in zip(instances, names)]
    known = [column.name for column in columns] + ([key] if key else [])
    for instance, name in zip(instances, names):
        if isinstance(instance, dict):
            _check_keys(instance, known, name)
    if key:
        keys = [instance.get(key) if isinstance(instance, dict) else None for instance in instances]
        arrays[key] = np.array(["" if value is None else str(value) for value in keys], dtype=object)
    for column in columns:
        values = []
        for instance, name in zip(instances, names):
            if not isinstance(instance, dict):
                raise UserError(f"{name}: expected an object of column values, e.g. {{{column.name!r}: ...}}")
            value = instance.get(column.name)
            missing = is_missing_in(value, column)
            if column.kind != NUMERIC:
                values.append("" if missing else _request_text(value, column, name))
            elif not missing and not is_numeric_value(value):
                raise UserError(f"{name}: column {column.name!r}: {quoted(value)} is not a number")
            else:  # 1e200 too is missing, as preprocessing reads it (and serving's graph: trainer/serving.py)
                values.append(float(value) if not missing and in_float32_range(value) else float("nan"))
        dtype = np.float32 if column.kind == NUMERIC else object
        arrays[column.name] = np.array(values, dtype=dtype)
    return arrays


def request_inputs(columns: tuple[Column, ...], key: str = "") -> dict[str, bool]:
    """The inputs of a table export's serving_default (trainer/serving.py), by name, each with whether it takes a
    string: every column, a number for a numeric one, and the key column (--key-column) as a string."""
    inputs = {column.name: column.kind != NUMERIC for column in columns} | ({key: True} if key else {})
    return dict(sorted(inputs.items()))


def _check_keys(instance: dict, known: list[str], where: str) -> None:
    """A UserError naming a request's row whose keys are none of the `known` columns (every value missing: one
    prediction for every row, silently), or one of them in another case ("age" for "Age"). Other keys are
    columns the model does not use, as a file's may be."""
    from dataformat.errors import UserError

    unknown = [name for name in instance if name not in known]
    if not unknown:
        return
    wanted = [name for name in known if name not in instance]
    misspelled = in_another_case(unknown, wanted)
    if misspelled:
        raise UserError(f"{where}: {no_such_column(misspelled[0], wanted)}")
    if len(unknown) == len(instance):
        raise UserError(f"{where}: none of its keys is a column of the model's: {no_such_column(unknown[0], known)}")


def _request_text(value, column: Column, where: str) -> str:
    from dataformat.errors import UserError

    try:
        return value_text(value).strip()
    except ValueError as error:
        raise UserError(f"{where}: column {column.name!r}: {error}; {LIST_RULE}") from None


# Reading (TensorFlow, in the input pipeline and the serving graph).


def to_vector(values: dict[str, tf.Tensor], columns: tuple[Column, ...]) -> tf.Tensor:
    """Named column values (a [n] tensor each: float for numeric columns, NaN for missing, or all of them
    as one [n, numeric columns] block under NUMERIC_KEY; strings for the others; a text column's words as
    IDs, [n, max_length], or as its raw strings) as the model's [n, vector_width] float32 vectors: a
    number for each numeric and categorical column, Column.width for each date column (its features,
    then its index, then a timestamp's day's) and each text column (its word IDs)."""
    import tensorflow as tf

    # The numeric columns as one block, the categorical and date columns' indices as another, the others a
    # part each; then one gather puts every number at its place in the vector.
    starts = offsets(columns)
    numeric = columns_of(columns, NUMERIC)
    parts = [numeric_block(values, numeric)] if numeric else []
    places = [start for column, start in zip(columns, starts) if column.kind == NUMERIC]
    date_features, date_keys = dates.columns_tf(values, columns_of(columns, DATE))
    indexed = [(column, start) for column, start in zip(columns, starts) if column.category_slot is not None]
    if indexed:  # a date's value as its vocabulary holds it
        parts.append(category_indices({**values, **date_keys}, [column for column, _ in indexed]))
        places += [start + column.category_slot for column, start in indexed]
    for column, start in zip(columns, starts):
        if column.kind == DATE:  # its features, then a timestamp's day's index (its value's index: above)
            parts.append(date_features[column.name])
            places += [start + j for j in range(column.width) if j != column.category_slot]
        elif column.kind == TEXT:
            parts.append(text.word_ids(values[column.name], column))
            places += range(start, start + column.width)
    found = tf.concat(parts, axis=1) if len(parts) > 1 else parts[0]
    if places == sorted(places):
        return found
    return tf.gather(found, np.argsort(places), axis=1)


def reserved_name(name: str) -> bool:
    """Whether no column may take `name`: the records' numeric block, or a name ending as a text column's
    lengths or a timestamp's day's layer does."""
    return name == NUMERIC_KEY or name.endswith((LENGTHS, DAY))


def columns_of(columns: tuple[Column, ...], kind: str) -> list[Column]:
    """The columns of one kind, in their order (for NUMERIC, that of the block that records hold: NUMERIC_KEY)."""
    return [column for column in columns if column.kind == kind]


def vector_width(columns: tuple[Column, ...]) -> int:
    return sum(column.width for column in columns)


def offsets(columns: tuple[Column, ...]) -> list[int]:
    """Where each column's numbers start in the vector."""
    return np.cumsum([0] + [column.width for column in columns[:-1]]).tolist()


def parse_csv_lines(lines: tf.Tensor, columns: tuple[Column, ...], key: str = "") -> dict[str, tf.Tensor]:
    """CSV lines holding the columns' values in order (after the row's key, where the table has a `key`
    column) to named column values, as to_vector takes them (the numeric ones as one block), and the keys
    under `key`."""
    import tensorflow as tf

    names = [key] * bool(key) + [column.name for column in columns]
    empty = tf.constant([""])  # one default for every field: a constant each would add an op a column
    fields = dict(zip(names, tf.io.decode_csv(lines, record_defaults=[empty] * len(names))))
    numeric = columns_of(columns, NUMERIC)
    if numeric:  # one block of ops for every numeric column, however many there are
        texts = [spelled_missing(fields.pop(column.name), column) for column in numeric]
        fields[NUMERIC_KEY] = numbers(tf.stack(texts, axis=1))
    return fields


def example_values(example, columns: tuple[Column, ...]) -> dict[str, list]:
    """The columns' values in a parsed tf.train.Example (numpy side, for error messages and
    predictions from shards); raises KeyError or ValueError on a malformed one."""
    features = example.features.feature
    values = {}
    numeric = [column.name for column in columns_of(columns, NUMERIC)]
    if numeric and NUMERIC_KEY in features:  # the block (version 6 and older: a feature a column, as below)
        block = features[NUMERIC_KEY]
        if block.WhichOneof("kind") != "float_list" or len(block.float_list.value) % len(numeric):
            raise ValueError(f"feature {NUMERIC_KEY!r} is not a float_list of {len(numeric)} values a row")
        rows = np.array(block.float_list.value, np.float32).reshape(-1, len(numeric))
        values.update(zip(numeric, rows.T.tolist()))
    for column in columns:
        if column.name in values:
            continue
        feature = features[column.name]
        kind = {NUMERIC: "float_list", TEXT: "int64_list"}.get(column.kind, "bytes_list")
        if feature.WhichOneof("kind") != kind:
            raise ValueError(f"feature {column.name!r} is a {feature.WhichOneof('kind')}, expected a {kind}")
        if column.kind == NUMERIC:
            values[column.name] = list(feature.float_list.value)
        elif column.kind == TEXT:  # each row's word IDs
            ids, lengths = list(feature.int64_list.value), list(features[column.name + LENGTHS].int64_list.value)
            if sum(lengths) != len(ids):
                raise ValueError(f"feature {column.name!r} holds {len(ids)} word IDs, its lengths {sum(lengths)}")
            ends = np.cumsum(lengths).tolist()
            values[column.name] = [ids[end - length : end] for end, length in zip(ends, lengths)]
        else:
            values[column.name] = [value.decode("utf-8", "replace") for value in feature.bytes_list.value]
    return {column.name: values[column.name] for column in columns}  # in the columns' order
