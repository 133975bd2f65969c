"""A CSV file's rows in blocks, as pyarrow's streaming reader parses them: quoted newlines and fields of any length,
each record's first line (blank lines counted, as a text editor numbers them), lines that repeat the header or
hold only empty fields left out, and an error about a row or the file's bytes given by its line."""

from __future__ import annotations

import bisect
import contextlib
import csv
import io
import itertools
import logging
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from dataformat.errors import UserError
from dataformat.numeric import parses_as_float
from preprocessing.table_files import locate
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.locate import (
    ascii_based,
    block_pieces,
    not_text,
    opened,
    read_head,
    unreadable,
    without_bom,
)
from preprocessing.table_files.rewrites import Rewritten, csv_reader
from preprocessing.table_files.sniffing import table_below_notes

log = logging.getLogger(__name__)

# A row cut short at a carriage return: pandas' to_csv writes a text's lone \r unquoted (its lines end in \n), and
# every CSV reader (pyarrow's, pandas' own) ends a row there.
LONE_CR = (
    " (a carriage return, \\r, ends it inside a field that is not quoted, as pandas' to_csv writes a text that holds "
    "one: quote the field, or replace the \\r)"
)
# A quoted value of this many lines, this share of them with as many delimiters as a row has, is rows taken into one
# value by a quote never closed; a multi-line value of a table's own (an address, a comment) holds few such lines.
UNCLOSED_LINES, ROWS_SHARE = 20, 0.9
BLANK_LINE = re.compile(rb"\n(?=\r?\n)")  # a newline that ends the line before a blank one
LONE_CR_BYTE = re.compile(rb"\r(?!\n)")
HEADER_MARKS = " \t\ufeff"  # what a repeated header line may hold around a name: blanks, a byte-order mark
# Short rows held till a parsed row follows them (pyarrow hands on no block of only skipped rows): about 500 bytes
# each, so a file of nearly only short rows is refused past this many, where it would hold them all in memory.
MAX_WAITING_SHORT_ROWS = 200_000


@contextlib.contextmanager
def _opened_csv(path: str, dialect: Dialect) -> Iterator[pa.NativeFile]:
    """The CSV file's bytes as its rows are parsed: rewritten where its fields are apart by runs of blanks, are
    padded before their quotes, or lie among comment lines (Dialect.rewrite)."""
    with opened(path) as stream:
        rewrite = dialect.rewrite
        yield pa.PythonFile(Rewritten(stream, rewrite), mode="r") if rewrite else stream


def csv_rows(path: str, dialect: Dialect) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """A CSV file's blocks of rows, each with its lines; a line that repeats the header, or of only empty fields, is
    no row."""
    line, blank_lines, warned = dialect.first_line, [], False
    for batch in _csv_blocks(path, dialect, blank_lines):
        lines, end = _record_lines(batch, line, blank_lines)
        _refuse_unclosed_quotes(batch, np.diff(np.append(lines, end)) - 1, lines, path, dialect)
        line = end
        repeats = _header_repeats(batch) if dialect.has_header else None
        if repeats is not None and not warned:
            log.warning(
                "%s: line %d repeats the header (files joined together?); lines that do are left out",
                path,
                lines[np.argmax(repeats)],
            )
            warned = True
        no_rows = [found for found in (repeats, _empty_rows(batch)) if found is not None]
        if no_rows:
            kept = ~np.logical_or.reduce(no_rows)
            batch, lines = batch.filter(pa.array(kept)), lines[kept]
        yield batch, lines


def _refuse_unclosed_quotes(batch: pa.RecordBatch, spans: np.ndarray, lines: np.ndarray, path: str, dialect) -> None:
    """A UserError where a quoted value runs over UNCLOSED_LINES lines or more (`spans`: each record's line breaks)
    that are mostly rows of this table (_row_like): a quote never closed, which took every row after it into one
    value, silently (4,899 rows of 5,000 left out, and the run exited 0)."""
    long = np.flatnonzero(spans >= UNCLOSED_LINES)
    if not len(long):
        return
    numbers = [j for j, column in enumerate(batch.columns) if _mostly_numbers(column)]
    for i in long:
        for j, column in enumerate(batch.columns):
            value = column[int(i)].as_py()
            inside = value.split("\n")[1:] if isinstance(value, str) else []
            rows = sum(_row_like(line, dialect.delimiter, batch.num_columns, numbers) for line in inside)
            if len(inside) >= UNCLOSED_LINES and rows >= ROWS_SHARE * len(inside):
                raise UserError(
                    f"{path}: line {lines[i]}, column {j + 1} ({batch.schema.names[j]!r}): a quoted value runs over "
                    f"{len(inside) + 1:,} lines, most of them rows of this table: is its quote never closed? (a quote "
                    'inside a quoted value is written twice, "")'
                )


def _mostly_numbers(column: pa.Array) -> bool:
    """Whether a block's column holds numbers in ROWS_SHARE of its rows (plain ones: digits, a sign, marks)."""
    found = pc.match_substring_regex(column.cast(pa.string()), r"^\s*[-+]?[\d.,]+\s*$")
    return (pc.sum(found).as_py() or 0) >= ROWS_SHARE * len(column)


def _row_like(line: str, delimiter: str, columns: int, numbers: list[int]) -> bool:
    """Whether a line inside a quoted value reads as a row of the table: as many fields, a number where the table's
    rows hold one (a letter's lines of two commas do not, under a number's column)."""
    fields = line.split(delimiter)
    return len(fields) == columns and all(re.fullmatch(r"\s*[-+]?[\d.,]*\s*", fields[j]) for j in numbers)


def _header_repeats(batch: pa.RecordBatch) -> np.ndarray | None:
    """Which rows repeat the header, each of the block's (two or more) columns holding its own name, as the
    files that `cat a.csv b.csv` joins give (a byte-order mark and blanks around a name allowed); None where
    none does."""
    named = [name for name in batch.schema.names if name]
    if len(named) < 2 or all(parses_as_float(name) for name in named):
        return None  # one column's value, or a row of numbers, may well be what the header says
    return _rows_where_all(
        pc.is_in(pc.utf8_trim(batch.column(name), HEADER_MARKS), _header_spellings(name, named)) for name in named
    )


def _header_spellings(name: str, names: list[str]) -> pa.Array:
    """How a header line may write column `name`, blanks and a byte-order mark around it aside: as it is, and where
    header_names made it "x.1" of an earlier "x", as x."""
    base, dot, number = name.rpartition(".")
    spellings = [name, base] if dot and number.isdigit() and base in names else [name]
    return pa.array([spelling.strip(HEADER_MARKS) for spelling in spellings], pa.string())


def _empty_rows(batch: pa.RecordBatch) -> np.ndarray | None:
    """Which rows are only empty fields (`,,,`, as a spreadsheet exports the rows below a table that once held
    values): no rows, as blank lines are none, and as a workbook's empty rows are left out; None where none is."""
    return _rows_where_all(pc.equal(pc.binary_length(column), 0) for column in batch.columns)


def _rows_where_all(tested: Iterator[pa.Array]) -> np.ndarray | None:
    """Which rows every one of `tested` (a column's test, each computed only while a row is left) is true in; None
    where none is. The first column alone rules out most blocks."""
    found = None
    for test in tested:
        found = test if found is None else pc.and_(found, test)
        if not pc.any(found).as_py():
            return None
    return None if found is None else found.fill_null(False).to_numpy(zero_copy_only=False)


def _csv_options(dialect: Dialect, block_size: int, threads: bool, on_invalid_row) -> dict:
    return {
        "read_options": pacsv.ReadOptions(
            column_names=list(dialect.names),
            skip_rows=dialect.lines_above_rows,
            block_size=block_size,
            use_threads=threads,
            encoding=dialect.encoding,
        ),
        # Quoted fields may hold newlines (RFC 4180): addresses, comments.
        "parse_options": pacsv.ParseOptions(
            delimiter=dialect.delimiter,
            quote_char=dialect.quote,
            escape_char=dialect.escape or False,
            newlines_in_values=True,
            invalid_row_handler=on_invalid_row,
        ),
        "convert_options": pacsv.ConvertOptions(
            column_types={name: pa.string() for name in dialect.names}, strings_can_be_null=False
        ),
    }


class _ShortRow(Exception):
    """A row of fewer values than the header, met while reading with threads, which do not number rows."""


class _ShortRows:
    """A file's rows of fewer values than the header names, as one thread's read skips them: those waiting to be put
    back in their places (pyarrow's InvalidRow, numbered from 1 with the lines above the rows), how many in all, and
    whether the first was told of."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:  # the file read again from its start
        self.waiting, self.count, self.told = [], 0, False

    def add(self, row) -> None:
        self.waiting.append(row)
        self.count += bool(row.text.strip())  # a line of blanks is no row: as a blank line, left out untold


def _csv_blocks(path: str, dialect: Dialect, blank_lines: list[int]) -> Iterator[pa.RecordBatch]:
    """A CSV file's rows in blocks; a row with more values than the header is a UserError naming its line, one with
    fewer has the rest missing (as pandas, R's read.csv and spreadsheets read it), which a warning tells. A record
    longer than a block (a field of megabytes), or skipped lines above the first longer than one, makes the file
    read again with blocks 8 times larger, from the record it stopped at; a short row, read again with one thread,
    which numbers the rows, from there. The file's blank lines (which pyarrow leaves out) are added to `blank_lines`
    before any block after them."""
    done, block_size, short = 0, locate.PARSE_BYTES, None
    while True:
        try:
            for batch in _csv_blocks_of_size(path, dialect, block_size, done, blank_lines, short):
                done += batch.num_rows
                yield batch
            if short is not None:
                log.warning("%s: %d row(s) in all had fewer values than the header names; theirs are missing", path,
                            short.count)  # fmt: skip
            return
        except _ShortRow:
            short = _ShortRows()
        except pa.ArrowInvalid as error:
            if "skip initial" in str(error) and _ends_above_rows(path, dialect):
                return  # a file of only its header, without a newline after it: no rows, as tables.py says
            if not re.search("straddl|skip initial", str(error)) or block_size >= locate.MAX_PARSE_BYTES:
                raise UserError(f"{path}: cannot read as CSV ({str(error).splitlines()[0]})") from None
            block_size = min(8 * block_size, locate.MAX_PARSE_BYTES)  # pyarrow takes a block size of up to 2 GiB
        except OSError as error:  # a compressed file cut short
            raise unreadable(path, error) from None


def _ends_above_rows(path: str, dialect: Dialect) -> bool:
    """Whether the file ends within the lines above its rows (its header, or the lines skipped)."""
    above = dialect.lines_above_rows
    head = read_head(path, above + 1)
    return len(head) < locate.MAX_FIRST_LINE and max(head.count(b"\n"), head.count(b"\r")) < above


def _csv_blocks_of_size(
    path: str, dialect: Dialect, block_size: int, skip: int, blank_lines: list[int], short: _ShortRows | None
) -> Iterator[pa.RecordBatch]:
    """_csv_blocks with one block size, leaving out the first `skip` rows. Where `short` is given, with one thread:
    a short row is added to it and read with the rest of its values missing; else it raises _ShortRow."""
    ragged = []

    def on_invalid_row(row) -> str:
        if short is not None and row.actual_columns < row.expected_columns:
            short.add(row)
            # put back, its values completed, by _with_short_rows
            return "skip" if len(short.waiting) <= MAX_WAITING_SHORT_ROWS else "error"
        ragged.append(row)
        return "error"

    try:
        with _opened_csv(path, dialect) as file:
            blank_lines.clear()  # read again from the start
            if short is not None:
                short.clear()
            stream = pa.PythonFile(_BlankLines(file, blank_lines), mode="r") if ascii_based(dialect.encoding) else file
            options = _csv_options(dialect, block_size, short is None, on_invalid_row)
            # The reader closes before the stream: its threads read ahead from it, also when a row stops the run.
            with pacsv.open_csv(stream, **options) as reader:
                pieces = reader if short is None else _with_short_rows(reader, short, path, dialect)
                pieces_a_block = block_pieces(len(dialect.names), block_size)
                while group := list(itertools.islice(pieces, pieces_a_block)):
                    batch = pa.Table.from_batches(group).combine_chunks().to_batches()[0]
                    if skip >= batch.num_rows:
                        skip -= batch.num_rows
                        continue
                    yield batch.slice(skip)
                    skip = 0
    except pa.ArrowInvalid as error:
        if "UTF8" in str(error) or "UTF-8" in str(error):
            raise UserError(f"{path}: {not_text(path, dialect.encoding)}") from None
        if short is not None and len(short.waiting) > MAX_WAITING_SHORT_ROWS:
            line = _record_line(path, dialect, short.waiting[0].number)
            raise UserError(
                f"{path}: from line {line} on, more than {MAX_WAITING_SHORT_ROWS:,} rows one after another have fewer "
                "values than the header names: too many to complete; write each row's missing values as empty fields "
                "(a,b,, for a,b of four columns)"
            ) from None
        if not ragged:
            raise
        if short is None and ragged[0].actual_columns < ragged[0].expected_columns:
            raise _ShortRow from None
        row = _first_ragged_row(path, dialect) if ragged[0].number is None else ragged[0]
        line = _record_line(path, dialect, row.number)
        title = line == dialect.skip_rows + 2  # the line under the first one read, which may be a title
        below = table_below_notes(path, dialect.encoding, line - 1)  # notes that split as the file's first line does
        raise UserError(
            f"{path}: line {line} has {row.actual_columns} columns; expected {row.expected_columns}"
            + (f" (as line {line - 1} has; if it is a title, --skip-rows {line - 1} leaves it out)" if title else "")
            + (f"; {below}" if below else "")
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read ({error})") from None


def _tell_short_row(path: str, dialect: Dialect, row) -> None:
    """The warning for a file's first row of fewer values than the header names; a UserError where it may be no row
    of its own: the first under a first line that is no header (a title wider than the table, maybe), or one of a
    file whose lines end in \n and that holds a lone carriage return, which ends a row inside a field."""
    line = _record_line(path, dialect, row.number)
    columns = f"{row.actual_columns} columns; expected {row.expected_columns}"
    if line == dialect.skip_rows + 2 and not dialect.has_header:
        raise UserError(f"{path}: line {line} has {columns} (as line {line - 1} has; if it is a title, --skip-rows "
                        f"{line - 1} leaves it out)")  # fmt: skip
    lone = _lone_cr_line(path)
    if lone == line:
        raise UserError(f"{path}: line {line} has {columns}{LONE_CR}")
    if lone and b"\n" in read_head(path):  # old Mac files end every line in \r alone: their rows are whole
        raise UserError(
            f"{path}: line {line} has {columns}, and line {lone} a carriage return (\\r) inside a field that is not "
            "quoted, which ends a row there, as pandas' to_csv writes a text that holds one: quote the field, or "
            "replace the \\r"
        )
    log.warning("%s: line %d has %d values, and the header names %d columns: the values it lacks are missing, as in "
                "every row cut short", path, line, row.actual_columns, row.expected_columns)  # fmt: skip


def _with_short_rows(
    pieces: Iterator[pa.RecordBatch], short: _ShortRows, path: str, dialect: Dialect
) -> Iterator[pa.RecordBatch]:
    """The pieces one thread parses, each with the short rows that it skipped put back in their places, their missing
    values empty; the first told of (_tell_short_row). Short rows after a piece's last go before the next piece's
    first, and those after the last piece, in a piece of their own. Rows put back are let go: a file of a million short
    rows holds a piece's at a time."""
    start = dialect.lines_above_rows + 1  # the record the next piece starts at
    empty = pa.RecordBatch.from_arrays([pa.array([], pa.string())] * len(dialect.names), dialect.names)
    for piece in itertools.chain(pieces, [empty]):
        waiting, mine = short.waiting, 0  # mine: the short rows within this piece's records
        while mine < len(waiting) and waiting[mine].number - start < piece.num_rows + mine:
            mine += 1
        if piece is empty:  # the file's end: the short rows after the last piece's
            mine = len(waiting)
        first = next((row for row in waiting[:mine] if row.text.strip()), None)
        if first and not short.told:
            _tell_short_row(path, dialect, first)
            short.told = True
        if mine:
            piece = _put_back(piece, waiting[:mine], start, dialect)
            del waiting[:mine]
        start += piece.num_rows
        if piece.num_rows:
            yield piece


def _put_back(piece: pa.RecordBatch, rows: list, start: int, dialect: Dialect) -> pa.RecordBatch:
    """The piece (its records from `start` on) with the short `rows` in their places, their values read as
    Python's csv module reads the dialect, and completed with empty ones."""
    width, quoting = len(dialect.names), {"quotechar": dialect.quote, "escapechar": dialect.escape or None}
    texts = (row.text if row.text.strip() else "" for row in rows)  # a line of blanks: no values, as a blank line
    fields = (next(csv_reader([text], delimiter=dialect.delimiter or ",", **quoting), []) for text in texts)
    values = [(row + [""] * width)[:width] for row in fields]
    added = pa.RecordBatch.from_arrays([pa.array(column, pa.string()) for column in zip(*values)], dialect.names)
    places = np.array([row.number - start for row in rows])
    order = np.delete(np.arange(piece.num_rows + len(rows)), places)  # the parsed rows' places, then the short ones'
    whole = pa.Table.from_batches([piece, added]).combine_chunks()
    return whole.take(np.argsort(np.concatenate([order, places]), kind="stable")).to_batches()[0]


def _lone_cr_line(path: str) -> int:
    """The line (counted by newlines) of the file's first carriage return that no newline follows, or 0."""
    line, carried = 1, b""
    with opened(path) as stream:
        while True:
            chunk = stream.read(1 << 20)
            text = carried + chunk
            found = LONE_CR_BYTE.search(text)
            if found and (found.end() < len(text) or not chunk):  # a CR that ends the bytes read waits for the next
                return line + text.count(b"\n", 0, found.start())
            if not chunk:
                return 0
            line += text.count(b"\n", 0, len(text) - 1)
            carried = text[-1:]


def _first_ragged_row(path: str, dialect: Dialect):
    """The file's first row of another width, read again with one thread: only then does pyarrow
    number the rows (its numbers count records: see _record_line)."""
    ragged = []

    def on_invalid_row(row) -> str:
        ragged.append(row)
        return "skip"

    with _opened_csv(path, dialect) as stream:
        for _ in pacsv.open_csv(stream, **_csv_options(dialect, locate.PARSE_BYTES, False, on_invalid_row)):
            if ragged:
                break
    return ragged[0]


def _record_line(path: str, dialect: Dialect, number: int) -> int:
    """The line that pyarrow's row `number` begins on. pyarrow counts records (the skipped and header lines
    among them), not the newlines inside their quoted fields, nor blank lines below the skipped ones; read again by
    Python's csv module, which keeps the count of lines. Only where a row is wrong: it reads the file up to that
    row."""
    csv.field_size_limit(locate.MAX_PARSE_BYTES)  # Python's limit is 128 KiB a field; pyarrow reads longer ones
    with _opened_csv(path, dialect) as stream:
        text = io.TextIOWrapper(stream, encoding=without_bom(dialect.encoding), newline="")
        reader = csv_reader(
            text, delimiter=dialect.delimiter or ",", quotechar=dialect.quote, escapechar=dialect.escape or None
        )
        records, before = 0, 0  # records read, and the lines they and the blank lines between them took
        for fields in reader:
            records += bool(fields) or reader.line_num <= dialect.skip_rows  # pyarrow counts skipped blank lines
            if records == number:
                return before + 1
            before = reader.line_num
    return number


def _record_lines(batch: pa.RecordBatch, first_line: int, blank_lines: list[int]) -> tuple[np.ndarray, int]:
    """(each record's first line in the file, the line after the last record), from the line the block
    begins on: one line a record, one more for each newline inside its quoted fields, and the `blank_lines`
    (sorted) between them."""
    inside = np.zeros(batch.num_rows, np.int64)
    for column in batch.columns:
        data = column.buffers()[2]  # all its text: a line break anywhere in it is rare, and cheap to look for
        text = data.to_pybytes() if data is not None else b""
        if text.find(b"\n") >= 0:
            inside += pc.count_substring(column, "\n").to_numpy(zero_copy_only=False)
        if text.find(b"\r") >= 0:  # a lone carriage return breaks a line too, as in old Mac files: \r\n once
            lone = pc.subtract(pc.count_substring(column, "\r"), pc.count_substring(column, "\r\n"))
            inside += lone.to_numpy(zero_copy_only=False)
    starts = first_line + np.arange(batch.num_rows) + np.cumsum(inside) - inside  # as if there were no blank lines
    blanks = np.array(blank_lines[bisect.bisect_left(blank_lines, first_line) :], np.int64)
    if len(blanks):  # a record is as many lines further as there are blank lines before it
        starts += np.searchsorted(blanks - np.arange(len(blanks)), starts, side="right")
    return starts, int(starts[-1] + 1 + inside[-1]) if batch.num_rows else first_line


class _BlankLines:
    """A CSV file as pyarrow reads it, its blank lines noted in `found` (their numbers, counted by newlines):
    pyarrow leaves them out, and the lines of the records after them must count them. A newline inside quotes
    (an odd number of quotes before it) begins no line of the file's rows."""

    def __init__(self, file, found: list[int]):
        self.file, self.found = file, found
        self._line, self._quoted, self._carried = 1, False, b""  # where the bytes read so far end

    def read(self, size: int = -1) -> bytes:
        chunk = self.file.read(size)
        text = self._carried + chunk
        end = max(0, len(text) - 2) if chunk else len(text)  # the last 2 bytes wait for what follows them
        at, quotes = 0, b'"' in text  # most tables quote nothing: then no quote is counted
        for blank in BLANK_LINE.finditer(text):
            if blank.start() >= end:
                break
            self._count(text, at, blank.start() + 1, quotes)
            at = blank.start() + 1
            if not self._quoted:
                self.found.append(self._line)
        self._count(text, at, end, quotes)
        self._carried = text[end:]
        return chunk

    def _count(self, text: bytes, start: int, stop: int, quotes: bool) -> None:
        self._quoted ^= quotes and bool(text.count(b'"', start, stop) % 2)
        self._line += text.count(b"\n", start, stop)

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()
