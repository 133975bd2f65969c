"""`python -m trainer.predict`: predictions from an exported SavedModel, on files or a JSON request.

PNG/JPEG files go through `image_bytes:serving_default` as they are stored; .npz, CSV (for a
table, any file its preprocessing reads), and TFRecord files (a dataset's shards: records that may
pack many examples) are read here and their values go through the numbers' signature
(`serving_default`, or `numbers:serving_default` in an export whose serving_default takes another
input), one prediction per example.
`--instances-json` reads the body of a TF Serving / Vertex AI predict request and prints the
body the server would return.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import csv
import io
import itertools
import json
import logging
import os
import posixpath
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import NoReturn

import numpy as np

from dataformat import commandline, gcs, json_text, storage, tables
from dataformat.errors import NotFound, UserError, quoted, tensorflow_error_line
from dataformat.schema import PHOTO_SUFFIXES, decode_record, stored_keys

log = logging.getLogger("trainer.predict")
SHOWN_BAD_VALUES = 3  # a table file's values that are not numbers or dates, named one by one in warnings
ROWS_READ = 1024  # rows whose dates or texts are read at once (dates.fields_arrow, text.words)
# A date this many standard deviations from the training rows' mean is far from them: at most 1/36 of any training
# split's dates lie so far (Chebyshev), and a date column's span is about 3.5 deviations for evenly spread dates.
FAR_DATE_STDS = 6
# An image's value this many standard deviations above the training images' mean is far above them: scaled otherwise
# (0-255 to a model of 0-16). Training images' own highest lie within 3 (scikit-learn's digits 1.8, MNIST 2.8).
FAR_STDS = 10

DEFAULT_SIGNATURE = "serving_default"
NUMBERS_SIGNATURE = "numbers:serving_default"  # where the numbers go when serving_default takes another input
JSON_LINES = (".jsonl", ".json")  # one instance a line
IMAGES_SIGNATURE = "image_bytes:serving_default"
EXAMPLES_SIGNATURE = "examples:serving_default"  # serialized tf.Examples, one row each
AS_PNG = (".webp", ".gif")  # photos qt-predict sends as PNG (_image_bytes)

EXAMPLES = """\
examples:
  qt-predict --model-dir runs/digits/export/best/1795322157 --input digit.png more.npz
  qt-predict --model-dir EXPORT --input data/digits/eval-00000-of-00001.tfrecord --output p.jsonl
  qt-predict --model-dir EXPORT --instances-json request.json
  qt-predict --endpoint projects/my-project/locations/us-central1/endpoints/123 --input rows.csv --explain
"""


class FirstFew:
    """Warnings of one kind about a file's rows: the first SHOWN_BAD_VALUES each in a line of its own, then (at
    `close`) one line that counts them all, so a file of a million bad values warns in four lines."""

    def __init__(self, path: str, count_line: str):
        self.path, self.count_line, self.count = path, count_line, 0  # count_line: "%d values in all are ..."

    def warn(self, message: str, *args) -> None:
        self.count += 1
        if self.count <= SHOWN_BAD_VALUES:
            log.warning(message, *args)

    def close(self) -> None:
        if self.count > SHOWN_BAD_VALUES:
            log.warning("%s: " + self.count_line, self.path, self.count)


class Rejected(UserError):
    """An input the model rejects (an image that does not decode), named."""


class Model:
    """An exported SavedModel and the dataset metadata that travels with it."""

    def __init__(self, model_dir: str):
        import tensorflow as tf

        from dataformat.schema import METADATA_FILE, Metadata
        from trainer.config import served_export

        found = served_export(model_dir)
        if not found:
            raise UserError(f"--model-dir {model_dir}: not an export (no saved_model.pb), nor a job dir with one")
        model_dir = found
        path = posixpath.join(model_dir, "assets.extra", METADATA_FILE)
        if not tf.io.gfile.exists(path):
            raise UserError(f"--model-dir {model_dir}: not an export of this trainer (no {path})")
        log.info("Model: %s", model_dir)
        with tf.io.gfile.GFile(path) as file:
            self.metadata = Metadata.from_json(file.read(), path)
        try:
            self.signatures = tf.saved_model.load(model_dir).signatures
        except (tf.errors.OpError, OSError, ValueError) as error:  # a file of it missing, or cut short
            raise UserError(
                f"--model-dir {model_dir}: the export does not load ({tensorflow_error_line(error)})"
            ) from None
        self.numbers_signature = NUMBERS_SIGNATURE if NUMBERS_SIGNATURE in self.signatures else DEFAULT_SIGNATURE

    def predict(self, signature: str, values, names: list[str] | None = None, keys: list | None = None) -> list[dict]:
        """One dict of outputs per input, as a predict server's row format returns them. An input
        the model rejects (an image that does not decode) is Rejected, naming it (by `names`,
        or as "input N"). A model that takes keys (--key-column) gets `keys`, by default the names."""
        import tensorflow as tf

        if signature not in self.signatures:
            raise UserError(f"the model has no signature {signature!r} (it has {', '.join(sorted(self.signatures))})")
        function = self.signatures[signature]
        names = names or [f"input {i}" for i in range(len(values))]
        try:
            outputs = _call(function, self._inputs(signature, values, names, keys))
        except tf.errors.InvalidArgumentError as error:
            raise Rejected(self._rejected(signature, values, names, error)) from None
        return [
            {key: _json_value(value[i]) for key, value in sorted(outputs.items())}
            for i in range(len(outputs["class_ids"]))
        ]

    def _inputs(self, signature: str, values: list, names: list[str], keys: list | None = None) -> dict:
        """The signature's inputs for a batch: a table's rows ({column: value} each) as one array a
        column; anything else as one array, and where the model takes keys (--key-column), the inputs' names."""
        if self.metadata.is_table and signature == self.numbers_signature:
            return tables.instance_columns(values, self.metadata.columns, names, self.metadata.key_column)
        inputs = {self.input_name(signature): values}
        if self.metadata.key_column in self.signatures[signature].structured_input_signature[1]:
            given = names if keys is None else keys
            inputs[self.metadata.key_column] = np.array([str(key).encode() for key in given], dtype=np.bytes_)
        return inputs

    def input_name(self, signature: str) -> str:
        """The one input of a signature besides a key (all but a table's numbers have one)."""
        inputs = self.signatures[signature].structured_input_signature[1]
        (name,) = [name for name in inputs if name != self.metadata.key_column or len(inputs) == 1]
        return name

    def _rejected(self, signature: str, values: list, names: list[str], error) -> str:
        """Which input of a failed batch the model rejects, found by trying each alone, and why."""
        import tensorflow as tf

        function = self.signatures[signature]
        for value, name in zip(values, names):
            try:
                _call(function, self._inputs(signature, [value], [name]))
            except tf.errors.InvalidArgumentError as alone:
                said = tensorflow_error_line(alone)
                if "Data types don't match" in said:  # a tf.Example's feature of another type than the column's
                    said += (
                        "; the examples signature takes a numeric column as a float_list feature and any other "
                        "as a bytes_list one (TFX writes integer columns as int64_list: write them as floats)"
                    )
                return f"{name}: the model rejects it ({said})"
        return f"{names[0]} to {names[-1]}: the model rejects this batch ({tensorflow_error_line(error)})"

    def values(self, array: np.ndarray, where: str) -> np.ndarray:
        return input_values(self.metadata, array, where)


def input_values(metadata, array: np.ndarray, where: str) -> np.ndarray:
    """Raw values as float32 of the model's input shape, or UserError naming `where`."""
    shape = tuple(metadata.shape)
    array = np.asarray(array, dtype=np.float32)
    if array.shape[1:] == shape[:-1] and shape[-1] == 1:
        array = array[..., np.newaxis]  # (N, H, W) for one-channel images
    if array.shape[1:] != shape:
        raise UserError(f"{where}: inputs have shape {list(array.shape[1:])}; the model takes {list(shape)}")
    return array


def _call(function, inputs: dict) -> dict[str, np.ndarray]:
    """One call of a signature on a batch of inputs; its outputs as numpy arrays."""
    import tensorflow as tf

    return {key: value.numpy() for key, value in function(**{k: tf.constant(v) for k, v in inputs.items()}).items()}


def _json_value(value):
    """A numpy output as JSON-ready Python."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value.tolist() if isinstance(value, np.ndarray) else value.item()


def _read_csv_rows(path: str, columns: int) -> np.ndarray:
    """Numeric rows of `columns` values; a header line (no numbers) is skipped, and a trailing
    label column is dropped if there is one more column."""
    rows = []
    for number, fields in enumerate(_csv_lines(path), start=1):
        if number == 1 and not any(tables.is_number(field) for field in fields):
            continue
        if len(fields) == columns + 1:
            fields = fields[:-1]
        if len(fields) != columns or not all(tables.is_number(field) for field in fields):
            raise UserError(f"{path}: line {number} is not {columns} numbers (with an optional label last)")
        rows.append([float(field) for field in fields])
    return np.array(rows, dtype=np.float32).reshape(len(rows), columns)


def _csv_lines(path: str) -> list[list[str]]:
    with storage.open_read(path) as file:
        text = file.read().decode("utf-8")
    return [[field.strip() for field in fields] for fields in csv.reader(io.StringIO(text)) if fields]


def table_rows(
    path: str, label_column: str, names: tuple[str, ...], options, key: str = ""
) -> Iterator[tuple[str, dict]]:
    """A table's rows ({column: text} of the columns `names` that it has; others, such as the label, are
    ignored), named by their line. Read by preprocessing's own reader, so that any file reads here as
    preprocessing reads it: CSV of any delimiter and decimal mark (`options`: add_reading_flags' flags, as
    TableOptions), quoted newlines, compressed or not, Parquet, Arrow and spreadsheets; the `key`
    column as written.
    CSV needs a header line or --column-names, but for a model of a table that had neither (its columns named
    column_1, column_2, ... by their place): then the file's columns are named so too, and it must reach the last
    of the model's."""
    from preprocessing.table_files import CSV, OBJECTS, blocks, dialect_of, with_model_partition_columns

    dialect = dialect_of(path, replace(options, label_column=label_column), names)
    # A partitioned dataset's file (region=north/part-0.parquet): its folders give columns too.
    dialect = with_model_partition_columns(dialect, path, names)
    named = dialect.has_header or options.column_names  # a header, or --column-names
    if dialect.format == CSV and not named and not _by_place(names, dialect.names, key):
        raise UserError(f"{path}: line 1 is not a header (it holds a number); predictions need the column names")
    found = tuple(name for name in dialect.names if name and name in names)
    unknown = [name for name in dialect.names if name and name not in names]
    cased = tables.in_another_case([name for name in names if name and name not in found], unknown)
    if cased:  # the model's column under another case: read as missing, every prediction would be off
        raise UserError(f"{path}: {tables.no_such_column(cased[0], unknown)}")
    if not found:
        raise UserError(f"{path}: no column of the model's ({', '.join(filter(None, names))}) is in its header")
    # JSON: a key its first objects lack, a later one may hold; other files: every row lacks the others
    wanted = tuple(filter(None, names)) if dialect.format in OBJECTS else found
    absent = [name for name in names if name and name not in wanted and name != key]
    if absent:
        log.warning("%s: no column %s; read as missing in every row", path, ", ".join(map(repr, absent)))
    if key and key not in dialect.names and dialect.format not in OBJECTS:
        log.warning("%s: no column %r, the model's key column: every prediction's key is empty", path, key)
    rows = 0
    for batch, lines in blocks(path, dialect, wanted, key):
        values = {name: batch.column(name).to_pylist() for name in wanted}
        for i, line in enumerate(lines.tolist()):
            yield f"{path}:{line}", {name: column[i] for name, column in values.items()}
        rows += len(lines)
    if not rows:  # as preprocessing refuses it: an export cut short, or the wrong file
        raise UserError(f"{path}: no rows" + (" below the header line" if dialect.has_header else ""))


def _durations_as_seconds(rows: Iterator[tuple[str, dict]], columns) -> Iterator[tuple[str, dict]]:
    """JSON instances with an ISO 8601 duration (P0DT0H12M34S, as pandas' to_json writes one) in one of the
    `columns` as its seconds, as preprocessing reads a JSON file's: a number in a numeric column, else the text that
    a categorical column's vocabulary holds for it."""
    from preprocessing.table_files import iso_duration_text

    for name, row in rows:
        for column in columns if isinstance(row, dict) else ():
            value = row.get(column.name)
            seconds = iso_duration_text(value) if isinstance(value, str) else None
            if seconds is not None:
                row[column.name] = float(seconds) if column.kind == tables.NUMERIC else seconds
        yield name, row


def bad_numbers_as_missing(rows: Iterator[tuple[str, dict]], path: str, numeric) -> Iterator[tuple[str, dict]]:
    """A table file's rows (CSV and the like, or JSON lines) with each value of a `numeric` column that is not a
    number read as missing, as preprocessing reads such a column's few bad cells, and said so: the first few by
    line, then a count (the column's own missing spelling, such as "-", quietly). One bad cell stopped the file's
    predictions where the same file had trained. The instance a JSON lines file's output echoes is the one
    predicted for, the value null; a row that is not an object passes as it is (the model refuses it)."""
    bad = FirstFew(path, "%d values in all are not numbers and were read as missing")
    for name, row in rows:
        for column in numeric if isinstance(row, dict) else ():
            value = row.get(column.name)
            number = tables.is_a_number(value)
            if tables.is_missing_value(value) or number and tables.in_float32_range(value):
                continue
            if not tables.is_missing_in(value, column):  # a bad cell, not the column's own missing spelling
                what = "is beyond float32's range" if number else "is not a number"
                bad.warn("%s: column %r: %s %s; read as missing", name, column.name, quoted(value), what)
            row[column.name] = None
        yield name, row
    bad.close()


def far_numbers_warned(rows: Iterator[tuple[str, dict]], path: str, numeric) -> Iterator[tuple[str, dict]]:
    """A table file's rows, each number of a `numeric` column far outside the training split's (beyond its least
    or greatest by more than their difference) warned of: the first few by line, then a count. The model
    extrapolates there, and a unit that differs from training's (cents for dollars, grams for kilograms) is the
    usual cause; it predicted silently before."""
    far = FirstFew(path, "%d values in all are far outside the training rows' numbers")
    spanned = [column for column in numeric if column.span]
    for name, row in rows:
        for column in spanned if isinstance(row, dict) else ():
            value = row.get(column.name)
            if value is not None and tables.is_a_number(value) and _far_outside(float(value), column.span):
                lowest, highest = column.span
                far.warn("%s: column %r: %s is far outside the training rows' numbers (%g to %g); the model "
                         "extrapolates", name, column.name, quoted(value), lowest, highest)  # fmt: skip
        yield name, row
    far.close()


def _far_outside(value: float, span: tuple[float, float]) -> bool:
    """Whether a number lies beyond the span by more than the span is wide (than the number, for a constant)."""
    lowest, highest = span
    margin = highest - lowest or max(abs(highest), 1.0)
    return value < lowest - margin or value > highest + margin


def unreadable_dates_warned(rows: Iterator[tuple[str, dict]], path: str, dated) -> Iterator[tuple[str, dict]]:
    """A table file's rows, each value of a `dated` column that is no date in its column's format warned of (the
    first few by line, then a count): the model reads it as a missing date, as preprocessing read the training
    rows' such values, and the same dates written another way (11/03/2020 for 2020-03-11) are the usual cause.
    A value of the column's vocabulary ("never", where training rows held it beside dates) is no surprise. A date
    far from the training rows' (FAR_DATE_STDS deviations from their mean: 2999-01-01 among the 2000s) is warned
    of too, as a far number is: the model extrapolates, and predicted silently."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dataformat import dates

    bad = FirstFew(path, "%d values in all are no dates in their column's format and were read as missing")
    far = FirstFew(path, "%d dates in all are far from the training rows' dates")
    known = {column.name: pa.array(column.vocabulary, pa.string()) for column in dated}
    while dated and (chunk := list(itertools.islice(rows, ROWS_READ))):
        texts, unread, distant = {}, {}, {}  # by column: each row's value, as text or None; no date; a far date
        for column in dated:
            values = [row.get(column.name) if isinstance(row, dict) else None for _, row in chunk]
            texts[column.name] = [None if tables.is_missing_value(value) else str(value) for value in values]
            found = pa.array(texts[column.name], pa.string())
            fields = dates.fields_arrow(found, column.date_format)
            seen = pc.or_(pc.is_null(found), pc.is_in(found, value_set=known[column.name]))
            unread[column.name] = np.isnan(fields[:, 0]) & ~seen.to_numpy(zero_copy_only=False)
            with np.errstate(invalid="ignore"):
                distant[column.name] = np.abs(dates.days(fields) - column.mean) > FAR_DATE_STDS * column.std
        for i in range(len(chunk)):  # in line order
            for column in dated:
                if unread[column.name][i]:
                    bad.warn("%s: column %r: %s is no date in %r%s; read as missing", chunk[i][0], column.name,
                             quoted(texts[column.name][i]), column.date_format,
                             " nor ISO 8601" * dates.also_iso(column.date_format))  # fmt: skip
                elif distant[column.name][i]:
                    far.warn("%s: column %r: %s is far from the training rows' dates (%s); the model extrapolates",
                             chunk[i][0], column.name, quoted(texts[column.name][i]), _date_span(column))  # fmt: skip
        yield from chunk
    yield from rows
    bad.close()
    far.close()


def _date_span(column) -> str:
    """The dates within FAR_DATE_STDS deviations of a date column's training mean, as words."""
    import datetime

    def day(offset: float) -> str:
        days = min(max(column.mean + offset * column.std, -719_162), 2_932_896)  # within years 1 to 9999
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=int(days))).isoformat()

    return f"{day(-FAR_DATE_STDS)} to {day(FAR_DATE_STDS)} hold nearly all of them"


def _by_place(names: tuple[str, ...], found: tuple[str, ...], key: str) -> bool:
    """Whether every one of a model's columns is among the `found` columns of a file without a header, which are
    named by their place (column_1, column_2, ...), as preprocessing named those of the model's table: the file is
    as wide as that table, or less its label where that came last."""
    return all(name in found for name in names if name and name != key)


def _json_lines(path: str, table: bool) -> Iterator[tuple[str, object]]:
    """One instance a line, as Vertex AI batch prediction reads JSON lines; for a `table`'s model, whose
    instances are objects, also one JSON array of them, or one object of a table as pandas' to_json writes it,
    as preprocessing reads a table."""
    with storage.open_read(path) as file:
        data = file.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:  # JSON is UTF-8 (RFC 8259)
        line = data.count(b"\n", 0, error.start) + 1
        raise UserError(f"{path}: line {line} is not UTF-8 text, which JSON must be") from None
    if table and text.lstrip().startswith("["):
        try:
            rows = json_text.loads(text)
        except json.JSONDecodeError as error:
            raise UserError(f"{path}: line {error.lineno} is not JSON ({error.msg})") from None
        yield from ((f"{path}: item {number}", row) for number, row in enumerate(rows, start=1))
        return
    if table:
        from preprocessing.table_files.json_objects import one_document, table_rows

        if one_document(text, path):  # a whole table in one object, as pandas' to_json writes one
            rows, _ = table_rows(text, path)
            yield from ((f"{path}: row {number}", row) for number, row in enumerate(rows, start=1))
            return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield f"{path}:{number}", json_text.loads(line)
            except json.JSONDecodeError as error:
                raise UserError(f"{path}: line {number} is not JSON ({error.msg})") from None


def requests_for(path: str, model: Model, table_options=None, missing=None) -> Iterator[tuple[str, str, object]]:
    """(input name, signature, value) for each example in one input file (a table read with `table_options`,
    TableOptions of table_files.add_reading_flags' flags); an image list's missing images are named in errors
    and in `missing`."""
    suffix = path.lower()
    if IMAGES_SIGNATURE in model.signatures and suffix.endswith((".csv", ".jsonl")) and _is_image_list(path):
        yield from _listed_images(path, [] if missing is None else missing)
    elif suffix.endswith(JSON_LINES) and model.metadata.is_table:
        rows = _durations_as_seconds(_json_lines(path, table=True), model.metadata.columns)
        yield from _table_requests(rows, path, model)
    elif suffix.endswith(JSON_LINES):
        for name, instance in _json_lines(path, table=False):
            if isinstance(instance, dict):  # {"image_bytes": {"b64": ...}}: a request's instance, not a file's line
                raise UserError(
                    f"{name}: an object; this model takes a list of numbers a line, or an image list (Vertex AI's "
                    "import format); send request instances with --instances-json"
                )
            yield name, model.numbers_signature, model.values([instance], name)[0]
    elif ".tfrecord" in suffix:
        yield from _shard_requests(path, model)
    elif model.metadata.source == "text" and suffix.endswith(".txt"):  # a model of a folder of texts: one a file
        from preprocessing.table_files.text_folders import TEXT_COLUMNS, read_text

        try:
            document = read_text(path, table_options.encoding if table_options else "utf-8")
        except UserError as error:  # named, and the others predicted, as a broken photo is
            log.error("%s", error)
            (missing if missing is not None else []).append(path)
            return
        yield from _table_requests(iter([(path, {TEXT_COLUMNS[0]: document})]), path, model)
    elif model.metadata.is_table:
        if suffix.endswith((*PHOTO_SUFFIXES, ".npz")):
            kinds = "CSV, Parquet, Arrow, JSON lines, spreadsheets or .tfrecord shards"
            raise UserError(f"{path}: this model takes tables ({kinds})")
        from preprocessing.tables import TableOptions

        metadata = model.metadata
        names = (*(column.name for column in metadata.columns), metadata.key_column)
        options = table_options or TableOptions()
        rows = table_rows(path, metadata.label_column, names, options, metadata.key_column)
        yield from _table_requests(rows, path, model)
    elif suffix.endswith(PHOTO_SUFFIXES):
        if IMAGES_SIGNATURE not in model.signatures:
            raise UserError(f"{path}: this model does not take images")
        yield path, IMAGES_SIGNATURE, _image_bytes(path)
    elif suffix.endswith(".npz"):
        with storage.open_read(path) as file, np.load(file, allow_pickle=False) as arrays:
            x = arrays["x"] if "x" in arrays.files else arrays[arrays.files[0]]
            for i, row in enumerate(model.values(x, path)):
                yield f"{path}#{i}", model.numbers_signature, row
    elif suffix.endswith(".csv"):
        shape = model.metadata.shape
        rows = _read_csv_rows(path, int(np.prod(shape))).reshape(-1, *shape)  # a row holds one flattened example
        for i, row in enumerate(model.values(rows, path)):
            yield f"{path}#{i}", model.numbers_signature, row
    elif storage.is_folder(path):
        raise UserError(f"{path}: a folder; pass the files in it ({path.rstrip('/')}/*)")
    else:
        raise UserError(f"{path}: unknown kind of file; expected {', '.join(PHOTO_SUFFIXES)}, .npz, .csv, .jsonl or "
                        ".tfrecord")  # fmt: skip


def _image_bytes(path: str) -> bytes:
    """A photo's file as the export's image input takes it: as it is, or as PNG, its transparency kept, a WebP
    file (TensorFlow 2.15 decodes none) or a GIF (TensorFlow reads no GIF's transparency, which preprocessing
    puts on white). One that Pillow cannot read goes as it is, for the model to reject and qt-predict to name."""
    from PIL import Image

    with storage.open_read(path) as file:
        data = file.read()
    if path.lower().endswith(AS_PNG):
        try:
            with Image.open(io.BytesIO(data)) as image, io.BytesIO() as png:
                image.save(png, format="PNG")
                return png.getvalue()
        except (OSError, ValueError, Image.DecompressionBombError):
            pass
    return data


def _is_image_list(path: str) -> bool:
    from preprocessing.image_lists import is_image_list

    return is_image_list(path)


def _listed_images(path: str, missing: list[str]) -> Iterator[tuple[str, str, bytes]]:
    """The images an image list names (Vertex AI's import formats, as preprocessing reads them), each by its path as
    listed, which is its key where the model takes one; one that is missing is named in an error and in `missing`,
    and the others are predicted, as preprocessing skips it."""
    from preprocessing.image_lists import read_list

    for row in read_list(path):
        try:
            data = _image_bytes(row.path)
        except (FileNotFoundError, NotFound):
            log.error("%s: %s: no such image file", row.where, row.path)
            missing.append(row.where)
            continue
        yield row.listed, IMAGES_SIGNATURE, data


def _table_requests(rows: Iterator[tuple[str, dict]], path: str, model: Model) -> Iterator[tuple[str, str, dict]]:
    """A table file's rows (a table's or JSON lines') as requests, their bad numbers read as missing and their
    unreadable dates and far numbers warned of."""
    numeric = tables.numeric_columns(model.metadata.columns)
    inputs = tables.request_inputs(model.metadata.columns, model.metadata.key_column)
    rows = ((name, named(row, inputs)) for name, row in rows)  # a JSON line of one text, for a model of one
    for name, row in bad_numbers_as_missing(_warned(rows, path, model), path, numeric):
        yield name, model.numbers_signature, row


def _warned(rows: Iterator[tuple[str, dict]], path: str, model: Model) -> Iterator[tuple[str, dict]]:
    """Rows of named columns, a file's or a request's, their unreadable dates and far numbers warned of."""
    dated = [column for column in model.metadata.columns if column.kind == tables.DATE]
    rows = unreadable_dates_warned(rows, path, dated)
    rows = long_texts_warned(rows, path, [column for column in model.metadata.columns if column.kind == tables.TEXT])
    return far_numbers_warned(rows, path, tables.numeric_columns(model.metadata.columns))


def long_texts_warned(rows: Iterator[tuple[str, dict]], path: str, texts) -> Iterator[tuple[str, dict]]:
    """A table file's rows, each text longer than its column reads warned of (the first few, then a count): the
    model reads as many words as the longest training text had (its input's width, at most --max-length), and the
    words after them were left out silently (three deciding words after 40 others changed nothing)."""
    import tensorflow as tf

    from dataformat import text

    cut = FirstFew(path, "%d texts in all are longer than the model reads")
    while texts and (chunk := list(itertools.islice(rows, ROWS_READ))):
        for column in texts:
            values = [row.get(column.name) if isinstance(row, dict) else None for _, row in chunk]
            given = [str(value) if isinstance(value, str) else "" for value in values]
            lengths = text.words(tf.constant(given), column.max_length + 1).row_lengths().numpy()
            why = "--max-length" if column.width == column.max_length else "the longest training text's words"
            for i in np.flatnonzero(lengths > column.width):
                cut.warn("%s: column %r: a text of more than %d words; the model reads its first %d (%s)",
                         chunk[i][0], column.name, column.width, column.width, why)  # fmt: skip
        yield from chunk
    yield from rows
    cut.close()


def _shard_requests(path: str, model: Model) -> Iterator[tuple[str, str, object]]:
    """A dataset's shard (records that may pack many examples), unpacked; each example with its stored key
    (--key-column) where it has one, else keyed by its place in the shard."""
    texts = [column.name for column in model.metadata.columns if column.kind == tables.TEXT]
    if texts:
        yield from _text_example_requests(path, model, texts)
        return
    i = 0
    for number, record in enumerate(_records(path)):
        try:
            data, _ = decode_record(record, model.metadata, labeled=False)
        except UserError as error:
            raise UserError(f"{path}, record {number}: {error}") from None
        rows = data if model.metadata.is_table else model.values(data, path)
        keys = stored_keys(record, model.metadata)  # the examples' own keys (--key-column), where stored
        for j, row in enumerate(rows):
            name = f"{path}#{i}"
            if j < len(keys) and model.metadata.is_table:
                row = {**row, model.metadata.key_column: keys[j]}  # a table's key travels in its row, as a file's
            elif j < len(keys):
                name = keys[j]  # an image's key is its name, as a photo file's path is
            yield name, model.numbers_signature, row
            i += 1


def _text_example_requests(path: str, model: Model, texts: list[str]) -> Iterator[tuple[str, str, bytes]]:
    """A TFRecord file of a text model's tf.Examples, one row each with its texts as they are (bytes_list features
    named by the columns, as the examples signature takes them and Vertex AI's tf-record instances hold them): each
    record through that signature. A dataset's shard holds word IDs instead, and is refused."""
    import tensorflow as tf

    for number, record in enumerate(_records(path)):
        try:
            features = tf.train.Example.FromString(record).features.feature
        except Exception:  # protobuf raises its own DecodeError, or others on odd bytes
            raise UserError(f"{path}, record {number}: not a serialized tf.train.Example") from None
        if any(name in features and features[name].WhichOneof("kind") != "bytes_list" for name in texts):
            raise UserError(
                f"{path}: a text table's shards hold word IDs, not its texts ({', '.join(texts)}); predict from "
                + ("the .txt files" if model.metadata.source == "text" else "the table's CSV or JSON lines")
                + ", or from tf.Examples that hold the texts as bytes_list features"
            )
        if not any(name in features for name in texts):  # else predicted from empty texts, silently
            held = ", ".join(sorted(features)) or "none"
            raise UserError(f"{path}, record {number}: no feature {' or '.join(map(repr, texts))} (it holds {held})")
        yield f"{path}#{number}", EXAMPLES_SIGNATURE, record


def _records(path: str) -> Iterator[bytes]:
    """A TFRecord file's records (gzipped where its name ends in .gz); a damaged or cut one is a UserError naming
    the file, where it ended in TensorFlow's DataLossError and a traceback."""
    import tensorflow as tf

    compression = "GZIP" if path.lower().endswith(".gz") else ""
    read = 0
    try:
        for record in tf.data.TFRecordDataset(path, compression).as_numpy_iterator():
            yield record
            read += 1
    except tf.errors.DataLossError as error:
        said = tensorflow_error_line(error)
        raise UserError(f"{path}: damaged or cut short after {read} record(s) ({said})") from None


class LeftOut(UserError):
    """Inputs left out of a run that predicted the others (missing, or rejected by the model)."""


def predict_files(
    model: Model, paths: list[str], batch_size: int, table_options=None, encoding_given: bool = True
) -> Iterator[dict]:
    """Batches consecutive inputs of the same signature; yields one JSON-ready line per input. An input the
    model rejects (a broken image) is named in an error and left out, and the run fails at the end, once the
    others are predicted: one broken photo among thousands stopped them all. Without --encoding
    (`encoding_given`), a file in UTF-8 is read so, whatever the training files' encoding (_in_utf8_if_so)."""
    batch: list[tuple[str, object]] = []
    signature, rejected = None, []
    for path in paths:
        if not storage.exists(path):
            raise UserError(f"--input {path}: no such file")
        if storage.is_stream(path):
            raise UserError(f"--input {path}: a pipe or device, not a file; write it to a file first")
        found = 0
        options = table_options if encoding_given or table_options is None else _in_utf8_if_so(path, table_options)
        for name, sig, value in off_scale_warned(requests_for(path, model, options, rejected), path, model):
            if batch and (sig != signature or len(batch) == batch_size):
                yield from _run(model, signature, batch, rejected)
                batch = []
            signature = sig
            batch.append((name, value))
            found += 1
        if not found and path not in rejected:  # an empty JSON lines file, "[]": an export cut short, or the wrong file
            raise UserError(f"{path}: nothing to predict for in it (no rows, no instances)")
    if batch:
        yield from _run(model, signature, batch, rejected)
    if rejected:
        raise LeftOut(f"{len(rejected)} input(s) missing or that the model rejects were left out, the first "
                      f"{rejected[0]}")  # fmt: skip


def off_scale_warned(requests: Iterator[tuple], path: str, model: Model) -> Iterator[tuple]:
    """A file's requests, each image whose values lie far above the training images' warned of (the first few,
    then a count): the digits model (values 0-16) answered 7 for a PNG of a 0 in 0-255, silently. Only for
    models whose training images were scaled below 0-255; photos' are not, and are not decoded here."""
    ceiling = _value_ceiling(model.metadata)
    if ceiling is None:
        yield from requests
        return
    metadata = model.metadata
    far = FirstFew(path, "%d images in all hold values far above the training images'")
    for name, signature, value in requests:
        highest = _highest_value(value)
        if highest is not None and highest > ceiling:
            far.warn("%s: values up to %g, far above the training images' (mean %.3g, standard deviation %.3g): "
                     "scale it as they were (scikit-learn's digits: 0 to 16)", name, highest, max(metadata.mean),
                     max(metadata.std))  # fmt: skip
        yield name, signature, value
    far.close()


def _value_ceiling(metadata) -> float | None:
    """The value above which an image's pixels are far from the training images' (FAR_STDS deviations above
    their mean in some channel), where that is below 255; else None."""
    if not metadata.is_image:  # a table's examples are no images either
        return None
    ceiling = max(mean + FAR_STDS * std for mean, std in zip(metadata.mean, metadata.std))
    return ceiling if ceiling < 255 else None


def _highest_value(value) -> float | None:
    """An input image's highest value: of its array, or of its file's bytes decoded; None where it does not decode
    (the model then names it)."""
    if not isinstance(value, bytes):
        return float(np.max(value))
    from PIL import Image

    try:
        with Image.open(io.BytesIO(value)) as image:
            return float(np.asarray(image).max())
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


UTF8_HEAD = 1 << 16  # bytes of a file whose decoding tells whether it is UTF-8


def _in_utf8_if_so(path: str, options):
    """The reading options, in UTF-8 where the training files' encoding was another (latin-1, cp1252) and the
    file's first bytes are UTF-8 with characters beyond ASCII: Latin-1 reads any bytes, so a table saved again in
    UTF-8 read München as MÃ¼nchen, a value the model never saw, silently."""
    if codecs.lookup(options.encoding).name in ("utf-8", "utf-8-sig"):
        return options
    with storage.open_read(path) as file:
        head = file.read(UTF8_HEAD)
    whole = head if len(head) < UTF8_HEAD else head[: head.rfind(b"\n") + 1]  # no character cut at the end
    try:
        whole.decode("utf-8")
    except UnicodeDecodeError:
        return options
    if whole.isascii():
        return options
    log.warning("%s: read as UTF-8, which it is, not as %s, the training files' encoding (pass --encoding %s to "
                "read it so)", path, options.encoding, options.encoding)  # fmt: skip
    return replace(options, encoding="utf-8")


def _run(model: Model, signature: str, batch: list, rejected: list[str]) -> Iterator[dict]:
    """One line per input: {"input": name, outputs...}, or for a row of JSON lines the line
    Vertex AI batch prediction writes, {"instance": ..., "prediction": {outputs...}}. A batch with an input
    the model rejects is predicted one input at a time, each rejected one named in an error and in `rejected`."""
    names, values = zip(*batch)
    try:
        predictions = model.predict(signature, list(values), list(names))
    except Rejected:
        predictions = []
        for name, value in batch:
            try:
                predictions += model.predict(signature, [value], [name])
            except Rejected as error:
                log.error("%s", error)
                rejected.append(name)
                predictions.append(None)
    for name, value, prediction in zip(names, values, predictions):
        if prediction is None:
            continue
        if name.rsplit(":", 1)[0].lower().endswith(JSON_LINES):  # "FILE:LINE", where FILE may be gs://...
            yield {"instance": value.tolist() if isinstance(value, np.ndarray) else value, "prediction": prediction}
        else:
            yield {"input": name, **prediction}


def respond(model: Model, request: dict) -> dict:
    """The response body a TF Serving / Vertex AI server returns for a predict request body."""
    if not isinstance(request, dict) or not isinstance(request.get("instances"), list) or not request["instances"]:
        raise UserError('--instances-json: expected {"instances": [...]} with at least one instance')
    signature = request.get("signature_name", DEFAULT_SIGNATURE)
    if signature not in model.signatures:
        raise UserError(f"--instances-json: the model has no signature {signature!r}")
    names = [f"--instances-json: instance {i}" for i in range(len(request["instances"]))]
    numbers = signature == model.numbers_signature
    if model.metadata.is_table and numbers:  # rows of named columns, as they are, odd dates and numbers warned of
        inputs = tables.request_inputs(model.metadata.columns, model.metadata.key_column)
        instances = [named(instance, inputs) for instance in request["instances"]]
        for instance, name in zip(instances, names):
            problem = served_problem(instance, inputs)
            if problem:
                raise UserError(f"{name}: {problem}")
        instances = [_as_text(instance, name) for instance, name in zip(instances, names)]
        rows = [row for _, row in _warned(zip(names, instances), "--instances-json", model)]
        return {"predictions": model.predict(signature, rows, names)}
    input_name = model.input_name(signature)
    values = [_instance_value(instance, input_name, i) for i, instance in enumerate(request["instances"])]
    if numbers:
        values = model.values(values, "--instances-json")
    key = model.metadata.key_column
    keys = [str(instance.get(key, "")) if isinstance(instance, dict) else "" for instance in request["instances"]]
    return {"predictions": model.predict(signature, values, names, keys if key else None)}


def named(instance, inputs: dict[str, bool]):
    """An instance of a signature of one input, sent bare ("a review", as TF Serving takes it there), as
    {input: value}; any other as it is."""
    if len(inputs) == 1 and not isinstance(instance, dict):
        return {next(iter(inputs)): instance}
    return instance


def served_problem(instance, inputs: dict[str, bool]) -> str | None:
    """Why TF Serving's row format, which Vertex AI's prebuilt image runs, would refuse an instance of named inputs
    (`inputs`: each name, and whether it takes a string), or None. It takes an object of exactly the signature's
    inputs, a string for a string input and a number for another, and no null; qt-predict's files are read more
    freely (a column left out is missing), but a request or a batch prediction's line is sent as it is."""
    if not isinstance(instance, dict):
        return f"expected an object of the signature's inputs ({', '.join(inputs)})"
    lacking = [name for name in inputs if name not in instance]
    others = [name for name in instance if name not in inputs]
    if lacking or others:
        said = [f"lacks {', '.join(map(repr, lacking))}"] * bool(lacking) + [
            f"has {', '.join(map(repr, others))}, no input of the model's"
        ] * bool(others)
        return f"{'; '.join(said)}: a server takes exactly the signature's inputs, {', '.join(inputs)}"
    for name, text in inputs.items():
        value = instance[name]
        if value is None and text:
            return f'{name!r} is null, which a server refuses; send "" for a missing value'
        if value is None:
            return (
                f"{name!r} is null, which a server refuses, and JSON has no NaN for a missing number; a model trained "
                "with --serving-input examples takes tf.Example records, where a feature left out is missing"
            )
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        string = isinstance(value, str) or _is_b64(value)  # TF Serving decodes {"b64": ...} to a string's bytes
        if not (string if text else number):
            wanted = "a string" if text else "a number"
            return f"{name!r}: a server takes {wanted} there, not {json.dumps(value)}"
    return None


def _as_text(instance: dict, name: str) -> dict:
    """A table's instance with each {"b64": ...} value, which TF Serving decodes to a string input's bytes, as text."""
    return {
        key: _b64_bytes(value, name).decode("utf-8", "replace") if _is_b64(value) else value
        for key, value in instance.items()
    }


def _is_b64(value) -> bool:
    return isinstance(value, dict) and set(value) == {"b64"}


def _b64_bytes(value: dict, name: str) -> bytes:
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (ValueError, TypeError):
        raise UserError(f"{name}: b64 is not valid base64") from None


def _instance_value(instance, input_name: str, index: int):
    """One instance's value: a bare value, or {input_name: value}; {"b64": ...} is bytes."""
    value = instance.get(input_name, instance) if isinstance(instance, dict) else instance
    if _is_b64(value):
        return _b64_bytes(value, f"--instances-json: instance {index}")
    if isinstance(value, dict):
        raise UserError(f"--instances-json: instance {index}: expected a value or {{{input_name!r}: value}}")
    return value


def parse_args(argv: list[str] | None):
    from preprocessing.table_files import add_reading_flags

    parser = commandline.ArgumentParser(
        prog="qt-predict",
        description="(also: python -m trainer.predict) "
        "Predict with an exported model (an export, a folder of numbered ones, or a job dir: its best). "
        "Prints one JSON line per input: its name and the model's outputs (class_ids, classes, "
        'probabilities, logits); for JSON lines, Vertex AI batch prediction\'s {"instance": ..., "prediction": '
        "...}; for --instances-json, a server's response body.",
        examples=EXAMPLES,
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument(
        "--model-dir",
        help="an export (holds saved_model.pb), a folder of numbered exports (the newest), or a job dir (its "
        "export/best/)",
    )
    model.add_argument(
        "--endpoint",
        help="a Vertex AI endpoint (projects/P/locations/R/endpoints/ID, as qt-deploy prints it) to send the "
        "inputs to online instead; the output lines are the same",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="with --endpoint: ask for explanations, added to each line as attributions",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input",
        nargs="+",
        metavar="FILE",
        help="images (.png, .jpg), .npz, .csv, .jsonl or .tfrecord files; for a table, also .tsv, .parquet, "
        ".feather, .arrow, .xlsx, .xls, .ods, .arff and any file its preprocessing reads",
    )
    source.add_argument(
        "--instances-json", metavar="FILE", help='a predict request body ({"instances": [...]}); - reads stdin'
    )
    add_reading_flags(parser.add_argument_group("tables, as qt-preprocess reads them"))
    parser.add_argument("--output", help="write JSON lines here instead of standard output")
    parser.add_argument(
        "--batch-size", type=commandline.positive_int, default=128, help="inputs per call to the model (default: 128)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return commandline.run(
        lambda: _predict(argv), "the predictions written so far are complete lines", stop_signals=True
    )


def _predict(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if args.explain and not args.endpoint:
        raise UserError("--explain: explanations come from a Vertex AI endpoint; give --endpoint (see qt-deploy)")
    if args.endpoint:
        from trainer.vertex.online import OnlineModel

        if args.instances_json:
            raise UserError("--instances-json: send a request body to an endpoint with gcloud ai endpoints predict")
        model = OnlineModel(args.endpoint, args.explain)
    else:
        model = Model(args.model_dir)
    if args.instances_json:
        lines = [respond(model, _read_request(args.instances_json))]
    else:
        _check_output_is_no_input(args.output, args.input)
        from preprocessing.table_files import reading_options
        from preprocessing.tables import TableOptions

        trained_in = model.metadata.extra.get("encoding", "utf-8")  # new rows come as the training files came
        options = TableOptions(**reading_options(args, trained_in))
        lines = predict_files(model, args.input, args.batch_size, options, encoding_given=bool(args.encoding))
    count = _write(lines, args.output)
    if args.output:
        log.info("Wrote %d prediction(s) to %s", count, args.output)
    return 0


def _check_output_is_no_input(output: str | None, inputs: list[str]) -> None:
    """A UserError where --output is one of the --input files, which writing it would erase before it is read."""
    for path in inputs:
        if output and (path == output or _same_local_file(path, output)):
            raise UserError(f"--output {output}: it is --input {path}, which writing it would erase; name another file")


def _same_local_file(one: str, other: str) -> bool:
    local = "://" not in one + other
    return local and os.path.exists(one) and os.path.exists(other) and os.path.samefile(one, other)


def _read_request(path: str) -> dict:
    if path == "-":
        text = sys.stdin.read()
    else:
        if not storage.exists(path):
            raise UserError(f"--instances-json {path}: no such file")
        with storage.open_read(path) as file:
            text = file.read().decode("utf-8")
    try:
        return json_text.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"--instances-json {path}: not JSON ({error})") from None


def _write(lines, output: str | None) -> int:
    """Writes the prediction lines to --output (a file, local or gs://) or stdout; returns how many. Inputs left out
    at the end (a rejected image) leave the others' lines written, then fail the run."""
    count, left_out = 0, None
    with _output(output) as write:
        try:
            for line in lines:
                write(json.dumps(line) + "\n")
                count += 1
        except LeftOut as error:  # the others' lines stay written; any other error leaves a gs:// --output unwritten
            left_out = error
    if left_out:
        raise left_out
    return count


@contextlib.contextmanager
def _output(output: str | None):
    """A function that writes text to --output, or to stdout without one. On gs:// the object appears when whole."""
    if not output:
        yield sys.stdout.write
        return
    if gcs.is_gcs(output):
        gcs.check_credentials()
        with storage.atomic_writer(output) as file:
            yield lambda text: file.write(text.encode("utf-8"))
        return
    try:
        file = open(output, "w", encoding="utf-8")  # noqa: SIM115 (closed below, its opening's error said apart)
    except OSError as error:
        raise UserError(f"--output {output}: cannot write ({storage.describe_os_error(error)})") from None

    def write(text: str) -> None:
        try:
            file.write(text)
        except OSError as error:  # an input's OSError is its own, not --output's
            raise UserError(f"--output {output}: cannot write ({storage.describe_os_error(error)})") from None

    with file:
        yield write


def cli() -> NoReturn:
    """qt-predict, and python -m trainer.predict."""
    commandline.exit_at_once(main())


if __name__ == "__main__":
    cli()
