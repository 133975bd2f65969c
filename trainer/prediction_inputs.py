"""qt-predict's input files read into requests: (name, signature, value) for each example of an image, an image
list, .npz, CSV of numbers, JSON lines, a dataset's shards or TFRecords of tf.Examples, or a table in any format its
preprocessing reads, read as preprocessing read the training files."""

from __future__ import annotations

import codecs
import csv
import difflib
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from dataformat import json_text, storage, tables, tfrecord
from dataformat.errors import NotFound, UserError, shortened
from dataformat.numeric import parses_as_float
from dataformat.schema import PHOTO_SUFFIXES, decode_example, parse_record, stored_keys
from trainer.exported_model import EXAMPLES_SIGNATURE, IMAGES_SIGNATURE, Model
from trainer.input_warnings import bad_numbers_as_missing, warned
from trainer.instances import named

log = logging.getLogger("trainer.predict")
JSON_LINES = (".jsonl", ".json")  # one instance a line
AS_PNG = (".webp", ".gif", ".heic", ".heif")  # photos qt-predict sends as PNG (_image_bytes)


def requests_for(path: str, model: Model, table_options=None, missing=None) -> Iterator[tuple[str, str, object]]:
    """(input name, signature, value) for each example in one input file (a table read with `table_options`,
    TableOptions of table_files.add_reading_flags' flags); an image list's missing images are named in errors
    and in `missing`."""
    from preprocessing.image_lists import is_image_list

    suffix = path.lower()
    if IMAGES_SIGNATURE in model.signatures and suffix.endswith((".csv", ".jsonl")) and is_image_list(path):
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


def _read_csv_rows(path: str, columns: int) -> np.ndarray:
    """Numeric rows of `columns` values; a header line (no numbers) is skipped, and a trailing
    label column is dropped if there is one more column."""
    rows = []
    for number, fields in enumerate(_csv_lines(path), start=1):
        if number == 1 and not any(parses_as_float(field) for field in fields):
            continue
        if len(fields) == columns + 1:
            fields = fields[:-1]
        if len(fields) != columns or not all(parses_as_float(field) for field in fields):
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
        model = ",".join(name for name in names if name)
        raise UserError(f"{path}: line 1 is not a header (it holds a number); name the file's columns with "
                        f"--column-names (the model's are {shortened(model)})")  # fmt: skip
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
        others = [name for name in unknown if name != label_column]
        log.warning("%s: no column %s; read as missing in every row%s", path, ", ".join(map(repr, absent)),
                    _misspelt(absent, others))  # fmt: skip
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


def _misspelt(absent: list[str], others: list[str]) -> str:
    """What the file's `others` columns, none of the model's, may be of its `absent` ones: "colour" for "color"
    (the model read a misspelt column as missing in every row, its predictions off, with no hint)."""
    meant = [(name, difflib.get_close_matches(name, others, 1, 0.8)) for name in absent]
    said = [f"{close[0]!r} for {name!r}" for name, close in meant if close]
    if said:
        return f" (did you mean {', '.join(said)}?)"
    return f" (the file's other columns: {', '.join(others[: tables.SHOWN_NAMES])})" if others else ""


def _by_place(names: tuple[str, ...], found: tuple[str, ...], key: str) -> bool:
    """Whether every one of a model's columns is among the `found` columns of a file without a header, which are
    named by their place (column_1, column_2, ...), as preprocessing named those of the model's table: the file is
    as wide as that table, or less its label where that came last."""
    return all(name in found for name in names if name and name != key)


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
        from preprocessing.table_files import json_objects

        if json_objects.one_document(text, path):  # a whole table in one object, as pandas' to_json writes one
            rows, _ = json_objects.table_rows(text, path)
            yield from ((f"{path}: row {number}", row) for number, row in enumerate(rows, start=1))
            return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield f"{path}:{number}", json_text.loads(line)
            except json.JSONDecodeError as error:
                raise UserError(f"{path}: line {number} is not JSON ({error.msg})") from None


def _table_requests(rows: Iterator[tuple[str, dict]], path: str, model: Model) -> Iterator[tuple[str, str, dict]]:
    """A table file's rows (a table's or JSON lines') as requests, their bad numbers read as missing and their
    unreadable dates, long texts and far numbers warned of."""
    numeric = tables.columns_of(model.metadata.columns, tables.NUMERIC)
    inputs = tables.request_inputs(model.metadata.columns, model.metadata.key_column)
    rows = ((name, named(row, inputs)) for name, row in rows)  # a JSON line of one text, for a model of one
    for name, row in bad_numbers_as_missing(warned(rows, path, model), path, numeric):
        yield name, model.numbers_signature, row


def _image_bytes(path: str) -> bytes:
    """A photo's file as the export's image input takes it: as it is, or as PNG, its transparency kept and turned
    upright, a WebP or HEIC file (TensorFlow 2.15 decodes neither) or a GIF (TensorFlow reads no GIF's transparency,
    which preprocessing puts on white). One that Pillow cannot read goes as it is, for the model to reject and
    qt-predict to name."""
    from preprocessing.photos import open_photo, undecodable, upright

    with storage.open_read(path) as file:
        data = file.read()
    if path.lower().endswith(AS_PNG):
        try:
            with open_photo(data) as image, io.BytesIO() as png:
                upright(image).save(png, format="PNG")  # the PNG keeps no EXIF orientation to turn it by
                return png.getvalue()
        except undecodable():
            pass
    return data


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


def _shard_requests(path: str, model: Model) -> Iterator[tuple[str, str, object]]:
    """A dataset's shard (records that may pack many examples), unpacked; each example with its stored key
    (--key-column) where it has one, else keyed by its place in the shard."""
    texts = [column.name for column in tables.columns_of(model.metadata.columns, tables.TEXT)]
    if texts:
        yield from _text_example_requests(path, model, texts)
        return
    i = 0
    for number, record in enumerate(_records(path)):
        try:
            example = parse_record(record)
            data, _ = decode_example(example, model.metadata, labeled=False)
        except UserError as error:
            raise UserError(f"{path}, record {number}: {error}") from None
        rows = data if model.metadata.is_table else model.values(data, path)
        keys = stored_keys(example, model.metadata)  # the examples' own keys (--key-column), where stored
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
    return tfrecord.records(path, "GZIP" if path.lower().endswith(".gz") else "")


UTF8_HEAD = 1 << 16  # bytes of a file whose decoding tells whether it is UTF-8


def in_utf8_if_so(path: str, options):
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
