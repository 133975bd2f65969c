"""Numbers as spreadsheets, locales and pandas write them, made plain text that reads as a number: decimal commas,
thousands marks (1,234,567; 1.234.567; 1 234 567; 1'234'567), currencies and percent signs, accounting's
parentheses, the Unicode minus, and durations (pandas' Timedelta text, ISO 8601's P1DT2H) as seconds. Each step
runs only where a column's bytes hold its marks."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataformat.number_patterns import (
    ACCOUNTING_ZERO,
    APOSTROPHE_GROUPED,
    COMMA_NUMBER,
    DECORATED,
    DECORATION_BYTES,
    DURATION_PARTS,
    GROUPED,
    ISO_DURATION,
    MINUS_SIGN,
    NUMBER,
    PANDAS_DURATION,
    PARENTHESIZED,
    POINT_GROUPED,
    THOUSANDS_MARKS,
)


def plain_numbers(batch: pa.RecordBatch, decimal: str, verbatim: str) -> pa.RecordBatch:
    """Every value that is a number as a spreadsheet formats it, written as the rest of preprocessing reads
    numbers: "1,234.56", "$1,234.56", "12.5%" and, where the decimal mark is a comma, "1.234,56 €" and "-3,14" as
    "1234.56", "1234.56", "0.125", "1234.56" and "-3.14"; other values, and the `verbatim` column's, as they are."""
    columns = [
        column if name == verbatim else plain_number_texts(column, decimal)
        for name, column in zip(batch.schema.names, batch.columns)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def plain_number_texts(column: pa.Array, decimal: str) -> pa.Array:
    """One column of text as plain_numbers writes it. Each step runs only where the column's bytes hold its marks:
    most columns hold none, and a regular expression over a million values costs a tenth of a second."""
    text = column_bytes(column)
    plain = _plain_texts(column, text, decimal)
    if b"(" in text:
        # Accounting's negatives, (1,234.56), only where the value then reads as a number: "(1, 2)" stays as written.
        negated = _plain_texts(pc.replace_substring_regex(column, PARENTHESIZED, r"-\1\2\3"), text, decimal)
        read = pc.and_(pc.match_substring_regex(column, PARENTHESIZED), pc.match_substring_regex(negated, NUMBER))
        plain = pc.if_else(pc.fill_null(read, False), negated, plain)
    return _hundredths(column, plain) if b"%" in text else plain


def _hundredths(column: pa.Array, plain: pa.Array) -> pa.Array:
    """The values that a percent sign ends (12.5%, 12,5 %, (3%)) as hundredths where they read as numbers: 0.125, as
    a spreadsheet's cell holds what it shows as 12.5%, so that a workbook and its CSV export read alike."""
    percent = pc.and_(pc.match_substring_regex(column, r"%\s*\)?\s*$"), pc.match_substring_regex(plain, NUMBER))
    percent = pc.fill_null(percent, False)
    if not pc.any(percent).as_py():
        return plain
    numbers = pc.cast(pc.if_else(percent, plain, "0"), pa.float64())
    return pc.if_else(percent, pc.cast(pc.divide(numbers, 100.0), pa.string()), plain)


def column_bytes(column: pa.Array) -> bytes:
    """A text column's values' bytes, to look for marks in at memchr's speed: only its own where it is a slice of a
    larger array."""
    if not pa.types.is_string(column.type) or column.buffers()[2] is None:
        return b""
    _, offsets, data = column.buffers()
    start, end = np.frombuffer(offsets, np.int32)[[column.offset, column.offset + len(column)]]
    return data.slice(start, end - start).to_pybytes()


def _plain_texts(column: pa.Array, text: bytes, decimal: str) -> pa.Array:
    """plain_number_texts but for accounting's parentheses; `text` is the column's bytes."""
    if any(mark in text for mark in DECORATION_BYTES):
        column = undecorated(column)
    if b" day" in text:
        column = durations(column, PANDAS_DURATION)
    if has_iso_durations(text):
        column = durations(column, ISO_DURATION)
    if decimal == ",":
        return _with_decimal_point(column)
    if b"'" in text or b"\xe2\x80\x99" in text:
        column = _without_apostrophes(column)
    return _without_thousands_commas(column) if b"," in text else column


def has_iso_durations(text: bytes) -> bool:
    """Whether a column's bytes may hold an ISO 8601 duration: a T first, one memchr (most columns hold none)."""
    return b"T" in text and (b"PT" in text or b"DT" in text)


def durations(column: pa.Array, pattern: str) -> pa.Array:
    """Durations that `pattern` matches (its groups: days, hours, minutes, seconds, each "" where a value lacks it) as
    their seconds, as a workbook's or a Parquet file's duration is: pandas' `0 days 00:12:34` (PANDAS_DURATION) and
    ISO 8601's `PT12M34S` (ISO_DURATION) as 754. A match of no part (a bare "PT", Portugal's code) stays as written."""
    parts = pc.extract_regex(column, pattern)  # null where a value is none
    if parts.null_count == len(parts):
        return column
    fields = [parts.field(i) for i in range(len(DURATION_PARTS))]
    given = functools.reduce(pc.or_, [pc.not_equal(field, "") for field in fields])
    numbers = (pc.cast(pc.if_else(pc.equal(field, ""), "0", field), pa.float64()) for field in fields)
    total = functools.reduce(pc.add, map(pc.multiply, numbers, DURATION_PARTS))
    read = pc.fill_null(pc.and_(parts.is_valid(), given), False)
    return pc.if_else(read, pc.cast(total, pa.string()), column)


def _without_apostrophes(column: pa.Array) -> pa.Array:
    """1'234.56 as 1234.56 (an apostrophe between digits is never a decimal mark); O'Brien as it is."""
    grouped = pc.match_substring_regex(column, f"^{APOSTROPHE_GROUPED}$")
    if not pc.any(grouped).as_py():
        return column
    return pc.if_else(grouped, pc.replace_substring_regex(column, "['\u2019]", ""), column)


def undecorated(column: pa.Array) -> pa.Array:
    """$1,234.56 as 1,234.56, 12.5% as 12.5, $ - as 0 and −7.5 as -7.5: a number's currency symbol and percent
    sign left out, accounting's zero read, and the minus sign written as a hyphen-minus."""
    column = pc.replace_substring_regex(column, MINUS_SIGN, r"-\1")
    column = pc.replace_substring_regex(column, ACCOUNTING_ZERO, "0")
    return pc.replace_substring_regex(column, DECORATED, r"\1\2\3")


def _without_thousands_commas(column: pa.Array) -> pa.Array:
    """1,234.56, 12,345 and 1,00,000 as 1234.56, 12345 and 100000 where the column's values show that their commas
    stand between thousands (US and UK spreadsheets' formatted cells, quoted in a comma-separated file; India's
    lakhs), and 1,250 may otherwise be 1.25 in a German spreadsheet's export, which quotes its decimal commas:
    - more of them have two such commas (1,234,567) or a decimal point after them (1,234.5) than read as numbers with
      a decimal comma (3,14 or 0,125);
    - or none reads so, and one starts with two or three digits (12,345: a fixed three decimals on numbers of 10 and
      more is far rarer than thousands), or one is a whole number below 1,000 without a comma (950 beside 1,250,
      where three fixed decimals would write 950,000).
    So a block of a column that lacks the first sign (a salary's: 20,000 to 200,000) reads as one that has it, and
    a file to predict for as its training rows. 10,20,300, a list maybe, stays as written."""
    grouped = pc.match_substring_regex(column, f"^{POINT_GROUPED}$")
    if not pc.any(grouped).as_py():
        return column
    shown = pc.and_(grouped, pc.match_substring_regex(column, r",\d{3},|\."))
    comma_numbers = pc.and_not(pc.match_substring_regex(column, f"^{COMMA_NUMBER}$"), grouped)
    decimal_commas = pc.sum(comma_numbers).as_py() or 0
    if (pc.sum(shown).as_py() or 0) <= decimal_commas:
        wide = pc.match_substring_regex(column, r"^\s*[+-]?[1-9]\d{1,2}(?:,\d{3})+\s*$")  # not 10,20,300
        below_a_thousand = pc.match_substring_regex(column, r"^\s*[+-]?\d{1,3}\s*$")
        if decimal_commas or not (pc.any(wide).as_py() or pc.any(below_a_thousand).as_py()):
            return column
    return pc.if_else(grouped, pc.replace_substring(column, ",", ""), column)


def _with_decimal_point(column: pa.Array) -> pa.Array:
    grouped = pc.match_substring_regex(column, f"^{GROUPED}(?:,\\d+)?\\s*$")
    if pc.any(grouped).as_py():
        column = pc.if_else(grouped, pc.replace_substring_regex(column, THOUSANDS_MARKS, ""), column)
    return pc.replace_substring_regex(column, f"^{COMMA_NUMBER}$", r"\1.\2")


def iso_duration_text(text: str) -> str | None:
    """One value's ISO 8601 duration as the text of its seconds that preprocessing reads a JSON file's as (by
    durations itself, so a vocabulary's "253" is met as "253"), None where the text is none: for qt-predict's JSON
    instances."""
    if not has_iso_durations(text.encode()):
        return None
    read = durations(pa.array([text], pa.string()), ISO_DURATION)[0].as_py()
    return None if read == text else read
