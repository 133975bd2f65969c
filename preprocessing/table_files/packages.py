"""Statistics packages' files (Stata's, SPSS's and SAS's), read through pandas and pyreadstat in chunks of rows,
their values' labels applied where the file keeps them; a gs:// file is copied to local disk (its first bytes alone
for its column names)."""

from __future__ import annotations

import codecs
import contextlib
import functools
import importlib
import importlib.util
import posixpath
import re
import warnings
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from dataformat import gcs, storage
from dataformat.errors import UserError
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.headers import distinct_names
from preprocessing.table_files.locate import PACKAGE, PACKAGE_FILES, PackageFile, compression, local_copy, plain_name
from preprocessing.table_files.typed import rows_per_block, typed_text

HEAD_BYTES = 1 << 20  # a gs:// statistics package's file's bytes copied to read its names: its header and first row


def _package_file(path: str) -> PackageFile:
    return PACKAGE_FILES[posixpath.splitext(plain_name(path))[1]]


@contextlib.contextmanager
def _package_chunks(
    path: str, rows: int, encoding: str, names: tuple[str, ...] = (), first_bytes: int | None = None
) -> Iterator[Iterator]:
    """A statistics package's file's rows, `rows` at a time, as DataFrames: labelled values as their labels, dates as
    datetimes (but Stata's %tC times, which pandas leaves as numbers and warns of); only the `names` columns where
    given. pyreadstat's files are read in the encoding they state, or in --encoding where it is not UTF-8; of a
    gs:// one, its `first_bytes` alone, where given. What the reader cannot read is a UserError naming the file."""
    kind = _package_file(path)
    library = "pyreadstat" if kind.reader else "pandas"
    try:
        module = importlib.import_module(library)  # only for these files: not every install has it
    except ImportError as error:
        if importlib.util.find_spec(library) is None:
            raise UserError(f"{path}: reading {kind.what} takes {library}: pip install {library}") from None
        older = " (on Python 3.9: pip install 'pyreadstat<1.3.4'; later ones need 3.10)" * (library == "pyreadstat")
        raise UserError(
            f"{path}: reading {kind.what} takes {library}, which is installed but fails ({error}){older}"
        ) from None
    if compression(path):
        raise UserError(f"{path}: decompress it first ({kind.what} is read as it is: its reader seeks)")
    columns = list(names) or None
    if not kind.reader:
        # Its chunks' categories differ where some values have no label: package_blocks reads them as text.
        warnings.filterwarnings("ignore", category=module.errors.CategoricalConversionWarning)
        with storage.open_read(path) as file, module.read_stata(file, chunksize=rows, columns=columns) as chunks:
            yield _package_read(chunks, path, kind.what)
        return
    flags = {"apply_value_formats": True} if kind.labels else {}
    encoding = codecs.lookup(encoding).name  # Python's name, which iconv knows too: iso8859-1, cp1252
    if encoding != "utf-8" and not kind.portable:  # the default trusts the file's own
        flags["encoding"] = encoding
    with local_copy(path, first_bytes) as local:  # pyreadstat reads a file by its path
        read = getattr(module, kind.reader)
        if kind.portable:
            chunks = _portable_chunks(functools.partial(read, local, usecols=columns, **flags), rows)
        else:
            chunks = (chunk for chunk, _ in module.read_file_in_chunks(read, local, rows, usecols=columns, **flags))
        yield _package_read(chunks, path, kind.what)


def _portable_chunks(read: Callable, rows: int) -> Iterator:
    """A portable file's rows, `rows` at a time: its first chunk (all its names need), then the rest read whole and
    handed on in chunks, as pyreadstat reads each chunk of one from its start again."""
    first, _ = read(row_limit=rows)
    yield first
    if len(first) == rows:
        rest, _ = read(row_offset=rows)
        yield from (rest.iloc[start : start + rows].copy() for start in range(0, len(rest), rows))  # written to


def _package_read(chunks, path: str, what: str) -> Iterator:
    """The chunks, the reader's errors (what is no such file) a UserError naming the file. Not `yield from`: closing
    this would close pandas' reader by its deprecated close()."""
    while True:
        try:
            chunk = next(chunks, None)
        except Exception as error:  # pandas' and pyreadstat's errors for what is no such file have no common class
            said = (str(error).splitlines() or [""])[0]
            said = said if re.search("[A-Za-z]{3}", said) else "damaged, or of another kind"  # a KeyError: 0
            hint = "; pass --encoding with its strings' encoding" if "encoding" in said else ""
            raise UserError(f"{path}: cannot read as {what} ({said}){hint}") from None
        if chunk is None:
            return
        yield chunk


def package_dialect(path: str, encoding: str) -> Dialect:
    """A statistics package's file's dialect: its columns' names (its values are typed: no header, no delimiter)."""
    return Dialect(_package_names(path, encoding), False, "", encoding, PACKAGE)


def _package_names(path: str, encoding: str) -> tuple[str, ...]:
    """The columns of a statistics package's file, as its first row has them. Of a gs:// SPSS or SAS file, its first
    HEAD_BYTES are copied for them, where its header and first row lie (the whole file where they do not): a file
    is asked for its names twice (planning, then its pass), and copying it whole for each tripled what a conversion
    downloaded. pandas reads a Stata file by seeking in it, copying nothing."""
    first = None
    kind = _package_file(path)
    if gcs.is_gcs(path) and kind.reader and kind.named_first:
        with contextlib.suppress(UserError), _package_chunks(path, 1, encoding, first_bytes=HEAD_BYTES) as chunks:
            first = next(chunks, None)
    if first is None:
        with _package_chunks(path, 1, encoding) as chunks:
            first = next(chunks, None)
    if first is None:
        raise UserError(f"{path}: {kind.what} of no rows")
    return distinct_names([str(name) for name in first.columns], path)


def package_blocks(path: str, names: tuple[str, ...], encoding: str) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    row = 1
    with _package_chunks(path, rows_per_block(names), encoding, names) as chunks:
        for chunk in chunks:
            # Labels (with the values no label names: 3), and pyreadstat's dates (Python objects), as text.
            labelled = chunk.select_dtypes(["category", "object"]).columns
            chunk[labelled] = chunk[labelled].astype("string")
            batch = pa.RecordBatch.from_pandas(chunk, preserve_index=False)
            texts = [typed_text(batch.column(name), path, name) for name in names]
            yield pa.RecordBatch.from_arrays(texts, names), np.arange(row, row + batch.num_rows)
            row += batch.num_rows
