"""A folder of texts (`--source text`), as Keras's text_dataset_from_directory reads it: one sub-folder of `.txt`
files per class, read as a table of two columns (TEXT_COLUMNS), a file a row, many at a time (on gs:// each is a
request)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from dataformat import storage
from dataformat.errors import UserError
from preprocessing.sources import TEXT_SUFFIX, class_files
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.locate import encoding_of, without_bom

TEXT_COLUMNS = ("text", "label")  # a text folder's columns
TEXTS_A_BLOCK = 1024  # text files read into one block
READING_THREADS = 16  # text files read at once: on gs:// each is a request


def text_files(folder: str, warn: bool = True) -> list[tuple[str, str]]:
    """(path, class) of every .txt file in the folder's sub-folders, sorted (sources.class_files), what is left out
    warned of where `warn` (once a run: planning lists them, then reading); UserError for a folder with no
    sub-folder, or a sub-folder without a .txt file."""
    if not storage.is_folder(folder):
        raise UserError(f"--input {folder}: not a folder (--source text takes one sub-folder of .txt files a class)")
    classes, files = class_files(folder, (TEXT_SUFFIX,), "text", warn)
    if not classes:
        raise UserError(f"--input {folder}: no sub-folders; --source text takes one sub-folder of .txt files a class")
    return [(storage.join(folder, name), label) for name, label in files]


def text_folder_blocks(folder: str, dialect: Dialect) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    files = text_files(folder, warn=False)  # planning warned
    with ThreadPoolExecutor(READING_THREADS) as pool:
        for start in range(0, len(files), TEXTS_A_BLOCK):
            chosen = files[start : start + TEXTS_A_BLOCK]
            texts = list(pool.map(lambda path: read_text(path, dialect.encoding), [path for path, _ in chosen]))
            labels = [label for _, label in chosen]
            columns = [pa.array(texts, pa.string()), pa.array(labels, pa.string())]
            batch = pa.RecordBatch.from_arrays(columns, TEXT_COLUMNS)
            yield batch, np.arange(start + 1, start + 1 + len(chosen))


def read_text(path: str, encoding: str) -> str:
    """A text file's whole text (training's and qt-predict's), each file by its own bytes: in the encoding its
    byte-order mark names (UTF-16 or UTF-32, as Windows' Notepad saves "Unicode"), else in UTF-8 where it is UTF-8,
    else in `encoding` (--encoding): a folder where a few files are cp1252 reads its UTF-8 ones as UTF-8 still,
    where one encoding for all made them mojibake. A UserError names the first line that is none of these."""
    with storage.open_read(path) as file:
        data = file.read()
    for codec in dict.fromkeys((without_bom(encoding_of(data[:4], "utf-8")), without_bom(encoding))):
        try:
            return data.decode(codec)
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
    raise UserError(
        f"{path}: line {line} is not {encoding} text; pass --encoding with the file's encoding (latin-1, cp1252, ...: "
        "files in UTF-8 are read so still)"
    ) from None
