"""Spreadsheets (.xlsx, .xlsm, .xls, .xlsb, .ods), read through calamine: the sheet that holds the table (--sheet,
the one whose header names the label, else the one the workbook opens on), its header, and its rows in blocks of
text, each named by its row in the sheet."""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import html
import io
import itertools
import logging
import re
import zipfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa

from dataformat import storage
from dataformat.errors import UserError, quoted
from preprocessing.table_files import locate
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.headers import distinct_names, header_names, label_of
from preprocessing.table_files.json_objects import as_text, objects_batch
from preprocessing.table_files.locate import WORKBOOK, plain_name
from preprocessing.table_files.typed import rows_per_block

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions

log = logging.getLogger(__name__)

XLSX = (".xlsx", ".xlsm")  # Office Open XML workbooks, which name the sheet they open on
ACTIVE_TAB = re.compile(rb"<(?:\w+:)?workbookView\b[^>]*\bactiveTab=\"(\d+)\"")  # in an .xlsx's workbook.xml
ACTIVE_TABLE = re.compile(rb"config:name=\"ActiveTable\"[^>]*>([^<]*)<")  # in an .ods file's settings.xml


class Sheet(NamedTuple):
    """A worksheet: its title, and its rows from its first, each a tuple of values from its first column (None
    where a cell is empty; numbers, text, booleans, and dates as datetimes). Each call of rows() reads the sheet
    again, but for the one sheet last loaded (_sheet_values)."""

    title: str
    rows: Callable[[], Iterator[tuple]]


@contextlib.contextmanager
def _workbook(path: str) -> Iterator[list[Sheet]]:
    """A workbook's worksheets (a chart sheet has no rows) as python-calamine (pandas' fastest Excel engine) reads
    them, the one it opens on first: an `.xlsx` or `.ods` file's active sheet (its first worksheet where that is
    a chart), another format's first. The values are the ones the cells hold, never what a format shows. A sheet is read
    whole, about 100 bytes a cell: 1.4 s and 176 MB for a sheet of 300,000 rows and 6 columns, where openpyxl's rows
    one at a time took 25.7 s and 70 MB."""
    import python_calamine  # only for workbooks

    with storage.open_read(path) as file:
        data = file.read()
    digest = hashlib.blake2b(data, digest_size=16).digest()  # which workbook a kept sheet is of (_sheet_values)
    try:
        book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
    except Exception as error:  # calamine's errors (of Rust) have no common Python class
        raise UserError(f"{path}: {_cannot_read_sheets(error)}") from None
    try:
        every = book.sheets_metadata
        active = _active_sheet(data, plain_name(path), [sheet.name for sheet in every])
        first = sorted(range(len(every)), key=lambda index: index != active)
        names = [every[i].name for i in first if every[i].typ == python_calamine.SheetTypeEnum.WorkSheet]
        if not names:
            raise UserError(f"{path}: the workbook has no worksheet")
        yield [Sheet(name, functools.partial(_sheet_values, book, (digest, name), path)) for name in names]
    finally:
        book.close()


def _active_sheet(data: bytes, name: str, titles: list[str]) -> int:
    """The place among a workbook's sheets (`titles`) of the one it opens on: an `.xlsx` file's workbook.xml names
    it by place (activeTab), an `.ods` file's settings.xml by title (ActiveTable); 0 where neither does."""
    member, view = ("xl/workbook.xml", ACTIVE_TAB) if name.endswith(XLSX) else ("settings.xml", ACTIVE_TABLE)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            found = view.search(archive.read(member))
    except (zipfile.BadZipFile, KeyError):  # an .xls (no ZIP archive), or a file that names none
        return 0
    if found is None:
        return 0
    if view is ACTIVE_TAB:
        return int(found[1])
    title = html.unescape(found[1].decode("utf-8", "replace"))
    return titles.index(title) if title in titles else 0


# The sheet last loaded, by (its workbook's digest, its title), till its rows are read: planning reads a sheet's
# header, pass 1 its rows next, and calamine loads a whole sheet for either (0.85 s of a 200,000-row sheet's 3.8 s).
_loaded_sheet: dict = {}


def forget_kept_sheet() -> None:
    """Lets go of the sheet _sheet_values keeps for its next read, where that read will not come in this process."""
    _loaded_sheet.clear()


def _sheet_values(book, key: tuple[bytes, str], path: str) -> Iterator[tuple]:
    """A sheet's rows from its first, each from its first column, None where a cell is empty (calamine leaves out
    the columns before the first that holds a value, and writes an empty cell as ''); what calamine cannot read (a
    damaged sheet) a UserError. `key` is (the workbook's digest, the sheet's title)."""
    name = key[1]
    try:
        sheet = _loaded_sheet.get(key)  # one get: Beam's threads may clear it meanwhile
        if sheet is None:
            sheet = book.get_sheet_by_name(name)
        _loaded_sheet.clear()  # one sheet kept at most
        _loaded_sheet[key] = sheet
        before = (None,) * (sheet.start[1] if sheet.start else 0)
        for row in sheet.iter_rows():
            yield before + tuple(map(_sheet_cell, row))
    except Exception as error:  # calamine's errors (of Rust) have no common Python class
        raise UserError(f"{path}: sheet {name!r}: {_cannot_read_sheets(error)}") from None


def _sheet_cell(value):
    """A cell's value as openpyxl reads it, and so as a CSV export writes it: an empty cell None, and a whole number
    an integer (calamine reads an `.xlsx` file's 57 as 57.0, and a column of codes would read "57.0" where its CSV
    reads "57"; from 1e16 on, a float's text has an exponent in both)."""
    if value == "":
        return None
    if type(value) is float and value.is_integer() and abs(value) < 1e16:
        return int(value)
    return value


def _cannot_read_sheets(error: Exception) -> str:
    return f"cannot read as a spreadsheet ({str(error).splitlines()[0] if str(error) else type(error).__name__})"


@contextlib.contextmanager
def _sheet_rows(path: str, name: str) -> Iterator[Iterator[tuple[int, tuple]]]:
    """The rows of the sheet `name` (or of the one the workbook opens on), each with its row number."""
    with _workbook(path) as sheets:
        yield enumerate((_named_sheet(sheets, name, path) if name else sheets[0]).rows(), 1)


def _named_sheet(sheets: list[Sheet], name: str, path: str) -> Sheet:
    """The sheet `name`, or a UserError naming the workbook's sheets."""
    found = next((sheet for sheet in sheets if sheet.title == name), None)
    if found is None:
        titles = ", ".join(repr(sheet.title) for sheet in sheets)
        raise UserError(f"{path}: the workbook has no worksheet {name!r} (--sheet); its worksheets: {titles}")
    return found


class Header(NamedTuple):
    """A sheet's header: its row number, its names, whether one is a known name, and the value of the row of one
    value above it that was passed over as a title ("" for none)."""

    number: int
    names: list[str]
    known: bool
    title: str = ""


def workbook_dialect(path: str, options: TableOptions, known: tuple[str, ...]) -> Dialect:
    """The column names of a workbook's sheet: --column-names, or its header, the first row after --skip-rows that
    holds a `known` name (the label's), else the first that holds two values or more, else the first that holds a
    value: sheets often have a title and empty rows above their header. The sheet is the one the workbook opens on,
    unless only another holds a known name (a workbook that opens on its notes), or it is empty and another is not."""
    with _workbook(path) as sheets:
        if options.sheet:
            sheets = [_named_sheet(sheets, options.sheet, path)]
        title, header = _table_sheet(sheets, path, options, known)
    title = "" if title == sheets[0].title and not options.sheet else title
    if header is None:
        raise UserError(
            f"{path}: sheet {title or sheets[0].title!r} has no row of values in its first "
            f"{options.skip_rows + locate.SNIFF_LINES}"
        )
    number, names = header.number, header.names
    if header.title:
        log.info("%s: its header is row %d, below a title (%s); --skip-rows %d says so, or names another row", path,
                 number, quoted(header.title), number - 1)  # fmt: skip
    while names and not names[-1]:  # the sheet's empty columns after the last
        names.pop()
    if options.column_names:
        names = distinct_names(options.column_names, "--column-names")
        return Dialect(names, False, "", "", WORKBOOK, skip_rows=number - 1, sheet=title)
    return Dialect(
        header_names(names, f"{path}: row {number}", label_of(options, names)),
        True,
        "",
        "",
        WORKBOOK,
        skip_rows=number - 1,
        sheet=title,
    )


def _table_sheet(
    sheets: list[Sheet], path: str, options: TableOptions, known: tuple[str, ...]
) -> tuple[str, Header | None]:
    """(the title, the header) of the sheet that holds the table: the first whose header holds a `known` name, else
    the first with a row of values. Sheets are read one at a time, and no further than needed: each is read whole."""
    fallback = None
    for sheet in sheets:
        header = _sheet_header(sheet, path, options.skip_rows, known, titled=not options.column_names)
        if header and header.known:
            return sheet.title, header
        if fallback is None and header:
            fallback = sheet.title, header
        if fallback and not any(known):  # no name to look for in the other sheets
            break
    return fallback or (sheets[0].title, None)


def _sheet_header(sheet, path: str, skip_rows: int, known: tuple[str, ...], titled: bool) -> Header | None:
    """A sheet's header, as workbook_dialect finds it; None for a sheet of no values in its first rows. Where it may
    be `titled` (it has a header: no --column-names), a row of one value above a row of more is a title: a header of
    one name makes no table to learn from."""
    first = wide = None
    rows = enumerate(sheet.rows(), 1)
    for number, row in itertools.islice(rows, skip_rows, skip_rows + locate.SNIFF_LINES):
        names = [as_text(_cell_value(value), path, number, "").strip() for value in row]
        if any(name in names for name in known if name):
            return Header(number, names, True)
        if first is None and any(names):
            first = Header(number, names, False)
        if titled and wide is None and sum(map(bool, names)) > 1:
            wide = Header(number, names, False, "" if first.number == number else next(filter(None, first.names)))
    return wide or first


def workbook_blocks(path: str, dialect: Dialect, names: tuple[str, ...]) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """A sheet's rows below its header (empty rows left out) in blocks, each row's line its row number."""
    rows_a_block = rows_per_block(names)
    with _sheet_rows(path, dialect.sheet) as rows:
        objects = (
            (number, _row_values(row, dialect, path, number))
            for number, row in rows
            if number >= dialect.first_line and any(value is not None for value in row)
        )
        try:
            while piece := list(itertools.islice(objects, rows_a_block)):
                yield objects_batch(piece, path, names)
        finally:
            forget_kept_sheet()  # read: its memory is not kept for the passes after


def _cell_value(value):
    """A cell's value as a JSON object would hold it: a date or time as ISO 8601 text, a date without its midnight
    (Excel keeps dates as date-times), a duration as its seconds."""
    if isinstance(value, datetime.timedelta):  # a duration ([h]:mm:ss): its seconds
        return value.total_seconds()
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    return value


# The sheets whose values beyond their header's columns were told of: once a sheet, though each pass reads it.
_told_beyond: set = set()


def _row_values(row: tuple, dialect: Dialect, path: str, number: int) -> dict:
    """A sheet's row as {column: value} of the header's columns: a value beyond them (a note beside the table) is
    left out, as the columns a CSV header leaves unnamed are, and told of once."""
    names = dialect.names
    beyond = next((i for i, value in enumerate(row[len(names) :], len(names) + 1) if value is not None), 0)
    if beyond and (path, dialect.sheet) not in _told_beyond:
        _told_beyond.add((path, dialect.sheet))
        log.warning("%s: row %d has a value in column %d (%s), beyond the %d columns its header names: values outside "
                    "them are left out (a name in the header reads its column)", path, number, beyond,
                    quoted(row[beyond - 1]), len(names))  # fmt: skip
    return dict(zip(names, map(_cell_value, row)))
