"""A CSV file's dialect, read from its first lines as a user would: the delimiter (comma, semicolon, tab, pipe, a
space or runs of whitespace), the escape, the decimal mark, the header or its absence, Excel's sep= line, blank and
comment lines above the header, and ARFF's @attribute header. Also the hints of errors about those lines: a table
below notes, lines that split unevenly."""

from __future__ import annotations

import codecs
import io
import itertools
import logging
import re
from typing import TYPE_CHECKING

import pyarrow as pa

from dataformat import commandline
from dataformat.errors import UserError, shortened
from dataformat.number_patterns import COMMA_NUMBER, GROUPED, POINT_GROUPED, POINT_NUMBER, POINT_THOUSANDS, THOUSANDS
from dataformat.numeric import parses_as_float
from preprocessing.table_files import locate
from preprocessing.table_files.dialect import Dialect
from preprocessing.table_files.headers import distinct_names, header_names, label_of, named_label
from preprocessing.table_files.locate import (
    CSV,
    ascii_based,
    encoding_of,
    not_text,
    opened,
    plain_name,
    read_head,
    table_name,
    whole_lines,
    without_bom,
)
from preprocessing.table_files.number_text import plain_number_texts, undecorated
from preprocessing.table_files.rewrites import csv_reader, line_rewrite, rewritten_text, tabbed

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions

log = logging.getLogger(__name__)
DELIMITERS = ",;\t|"  # what delimiter sniffing chooses from
WHITESPACE = commandline.WHITESPACE  # fields apart by runs of spaces and tabs (tabbed), a tab-separated file once read
BACKSLASH, ESCAPED_QUOTE = "\\", '\\"'  # a quote escaped by a backslash (sniff_escape)
# A line under a header that rules it off, as reports, Markdown and psql print tables: one unbroken rule (-----,
# |---|:--:|, ---+---), or a rule under each named column (----  -----, ====,=====, | --- | ---: |).
UNBROKEN_RULER = re.compile(r"\s*[-=|+:]*(?:---|===)[-=|+:]*\s*")
COLUMN_RULE = re.compile(r"\s*:?(?:-{3,}|={3,}):?\s*")
# Orange's .tab header (_orange_header): a type, or a discrete column's values (words apart by spaces); flags.
ORANGE_TYPES = ("c", "d", "s", "t", "continuous", "discrete", "string", "time")
ORANGE_DISCRETE = ("d", "discrete")  # as is a type that lists the values: categories, numbers or not (heart's "0 1")
ORANGE_TYPE = re.compile(r"(?:c|d|s|t|continuous|discrete|string|time)?|\S+(?: +\S+)+")
ORANGE_ROLES = {"class": "class", "c": "class", "weight": "weight", "w": "weight"}
ORANGE_ROLES.update({"ignore": "out", "i": "out", "meta": "meta", "m": "meta"})
ORANGE_PREFIX = re.compile(r"(?=[cmiwCDST])([cmiw]*)([CDST]?)#(.+)")  # its one-line header's: cD#iris, C#age
ORANGE_FLAGS = re.compile(r"(?:(?:class|meta|ignore|weight|[cmiw])\b)?(?:\s*[\w.-]+=\S*)*")
EXCEL_SEPARATOR = re.compile(r"sep=(.)\r?\n")  # a first line Excel reads (and writes) to say the delimiter: sep=;
ARFF_ATTRIBUTE = re.compile(r"""@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)\s*(.*)""", re.IGNORECASE)


def csv_dialect(path: str, head: bytes, encoding: str, options: TableOptions, known: tuple[str, ...]) -> Dialect:
    """A CSV file's dialect, from its `head` (its first bytes): the delimiter (--delimiter; a tab for .tsv files that
    hold one; otherwise sniffed), and the column names: --column-names for a file without a header, else its first
    line, which is a header unless it holds a number and neither --label-column's name nor one of the `known` names
    (then the columns are named column_1, column_2, ...)."""
    every_line = _head_text(path, head, encoding).splitlines(keepends=True)  # --skip-rows' and 4 more at least
    lines = every_line[options.skip_rows :]
    text, blank = _below_blank_lines(lines)
    skip_rows = options.skip_rows + blank
    if excel := EXCEL_SEPARATOR.match(text):  # a line above the header that says the delimiter, as Excel reads it
        text, blank = _below_blank_lines(text[excel.end() :].splitlines(keepends=True))
        skip_rows += 1 + blank
    backslash = BACKSLASH if ESCAPED_QUOTE in text else ""  # the escape that sniffing quotes allows for
    if _marked_header(text, backslash):  # numpy's savetxt: "# a,b,label"
        text = text[1:].lstrip(" \t")
    text, ruled = _without_ruler(text)  # a ruler of one field would unsettle the sniffing
    # A .tsv (or Orange's .tab) file of no tab is sniffed as any other.
    tsv = plain_name(table_name(path)).endswith((".tsv", ".tab")) and "\t" in text
    delimiter = options.delimiter or (excel and excel.group(1)) or ("\t" if tsv else "")
    delimiter = delimiter or sniff_delimiter(text, backslash)
    spaced, padded = _padding(path, text, delimiter, encoding)
    if rewrite := line_rewrite(spaced, padded, delimiter):
        read_as = "\t" if spaced else delimiter
        rewritten = rewritten_text(text, rewrite)
        escape = sniff_escape(rewritten, read_as)  # then the rewrite passes over \" too
        text = rewritten_text(text, line_rewrite(spaced, padded, delimiter, escape=escape)) if escape else rewritten
        delimiter = read_as
    else:
        escape = sniff_escape(text, delimiter)
    decimal = options.decimal or sniff_decimal(text, delimiter, options.unclear_decimal)
    header = csv_reader(io.StringIO(text, newline=""), delimiter=delimiter, escapechar=escape or None)
    first = [name.strip() for name in next(header, [])]  # split at line breaks only (splitlines splits at \x85 too)
    if not first and options.skip_rows and any(line.strip() for line in every_line[: options.skip_rows]):
        raise UserError(f"{path}: --skip-rows {options.skip_rows} skips every line it has ({len(every_line)})")
    if not first:
        raise UserError(f"{path}: empty file")
    named = named_label(options, len(first))
    if options.column_names:
        if len(options.column_names) != len(first):
            raise UserError(
                f"{path}: --column-names names {len(options.column_names)} columns, and its first line has "
                f"{len(first)} (delimiter {delimiter!r})"
            )
        rows = _head_rows(text, delimiter, escape)
        names, has_header = _given_names(f"{path}: line {skip_rows + 1}", first, rows, decimal, options.column_names)
        header_lines, roles, discrete = 1, (), ()
    elif _is_header(first, (*known, named), decimal):
        orange = plain_name(table_name(path)).endswith(".tab")
        prefixed = _orange_prefixed(first) if orange else None
        first = prefixed[0] if prefixed else first
        names, has_header = header_names(first, f"{path}: line {skip_rows + 1}", label_of(options, first)), True
        rows = _head_rows(text, delimiter, escape)
        unnamed = _unnamed_column(rows)  # a column without a name: left out
        names = ("", *names) if unnamed == "first" else (*names, "") if unnamed == "last" else names
        if _header_one_longer(rows):  # a delimiter after the header's last name only, as some exports write it
            names = names[:-1]
        if prefixed:
            header_lines, roles, discrete = 1, prefixed[1], prefixed[2]
        else:
            header_lines, roles, discrete = (2, (), ()) if ruled else _header_lines(text, delimiter, len(names), orange)
    else:
        names, has_header = tuple(f"column_{i + 1}" for i in range(len(first))), False
    if not has_header:
        header_lines, roles, discrete = 1, (), ()
    marked = {}  # each role's first column: the label, where Orange's flags mark more than one class
    for name, role in zip(names, roles):
        marked.setdefault(role, name)
    row_names = has_header and not names[0] and len(names) > len(first)
    return Dialect(
        names,
        has_header,
        delimiter,
        encoding,
        CSV,
        decimal,
        skip_rows,
        escape=escape,
        row_names=row_names,
        spaced=spaced,
        padded=padded,
        header_lines=header_lines,
        marked_label=marked.get("class", ""),
        marked_weight=marked.get("weight", ""),
        marked_out=tuple(name for name, role in zip(names, roles) if role == "out"),
        marked_categorical=tuple(name for name, is_discrete in zip(names, discrete) if is_discrete),
    )


def _without_ruler(text: str) -> tuple[str, bool]:
    """The head without an unbroken ruler under its first line (UNBROKEN_RULER: one field, which would unsettle the
    sniffing), and whether it had one."""
    lines = text.splitlines(keepends=True)
    if len(lines) > 1 and UNBROKEN_RULER.fullmatch(lines[1].rstrip("\r\n")):
        return lines[0] + "".join(lines[2:]), True
    return text, False


def _is_ruler(names: str, line: str, delimiter: str) -> bool:
    """Whether `line` rules off the header line `names` above it: one unbroken rule, or a COLUMN_RULE under each
    named column (two at least) and nothing under an unnamed one (Markdown's edges)."""
    if UNBROKEN_RULER.fullmatch(line):
        return True
    rows = _head_rows(f"{names}\n{line}\n", delimiter)
    if len(rows) != 2 or len(rows[0]) != len(rows[1]):
        return False
    pairs = list(zip(*rows))
    ruled = [field for name, field in pairs if name.strip()]
    return (
        len(ruled) > 1
        and all(map(COLUMN_RULE.fullmatch, ruled))
        and not any(f.strip() for n, f in pairs if not n.strip())
    )


def _header_lines(text: str, delimiter: str, width: int, orange: bool) -> tuple[int, tuple[str, ...], tuple[bool, ...]]:
    """(the lines the header takes, each column's role as its flags give it, whether its type says discrete; or
    none): the names, and a ruler under them (_is_ruler), or in an Orange file (`orange`: a .tab file) its two lines
    (_orange_header)."""
    lines = whole_lines(text)
    if len(lines) > 1 and _is_ruler(lines[0], lines[1], delimiter):
        return 2, (), ()
    return _orange_header(lines[1:3], delimiter, width) if orange else (1, (), ())


def _orange_header(lines: list[str], delimiter: str, width: int) -> tuple[int, tuple[str, ...], tuple[bool, ...]]:
    """(the lines the header takes, each column's role by its flags: ORANGE_ROLES', whether its type says discrete).
    Orange's .tab files, the format of Orange Data Mining, have two more `lines` under the names: each column's type
    (continuous, discrete, string or time, or a discrete column's values) and its flags (class, meta, ignore,
    weight, key=value; empty where there are none, but never a blank line)."""
    if delimiter != "\t" or len(lines) < 2 or not lines[1]:
        return 1, (), ()
    types, flags = ([field.strip() for field in line.split("\t")] for line in lines)
    if len(types) != width or len(flags) > width:  # Orange writes every field; a flags line may end early
        return 1, (), ()
    if not any(kind in ORANGE_TYPES for kind in types) or not all(map(ORANGE_TYPE.fullmatch, types)):
        return 1, (), ()
    if not all(map(ORANGE_FLAGS.fullmatch, flags)):
        return 1, (), ()
    roles = tuple(_orange_role(marks) for marks in flags + [""] * (width - len(flags)))
    return 3, roles, tuple(kind in ORANGE_DISCRETE or bool(kind) and kind not in ORANGE_TYPES for kind in types)


def _orange_prefixed(names: list[str]) -> tuple[list[str], tuple[str, ...], tuple[bool, ...]] | None:
    """Orange's one-line header, whose names carry their flags and type before a # (cD#iris: the class, discrete;
    mS#name: meta, string; C#age: continuous; ORANGE_PREFIX): (the names without them, each column's role as
    _orange_role gives it, whether its type says discrete); None where no name has them."""
    found = [ORANGE_PREFIX.fullmatch(name) for name in names]
    if not any(found):
        return None
    bare = [match.group(3) if match else name for match, name in zip(found, names)]
    roles = tuple(_orange_role(match.group(1)[:1]) if match else "" for match in found)
    return bare, roles, tuple(bool(match) and match.group(2) == "D" for match in found)


def _orange_role(marks: str) -> str:
    """A column's role by its Orange flags: "class", "weight", "out" (ignore, or meta: names, IDs and notes that
    Orange learns nothing from, but where include=True says a text add-on's text column is one), or ""."""
    words = marks.split()
    flag = ORANGE_ROLES.get(words[0], "") if words else ""
    return "" if flag == "meta" and "include=True" in words else "out" if flag == "meta" else flag


def arff_dialect(path: str, encoding: str) -> Dialect:
    """An ARFF file's dialect: its columns named by its @attribute lines, its rows the CSV after @data (quoted
    with ' where its first rows are: Weka writes them so); `?`, its missing value, is one here too."""
    names, data_line = [], 0
    with opened(path) as stream:
        lines = io.TextIOWrapper(stream, encoding=without_bom(encoding), newline=None)
        for number, text in enumerate(lines, 1):
            text = text.strip()
            if text.lower().startswith("@data"):
                data_line = number
                break
            if attribute := ARFF_ATTRIBUTE.match(text):
                name = attribute[1]
                names.append(name[1:-1] if name[0] in "'\"" else name)
                if attribute[2].lower().startswith("relational"):
                    raise UserError(f"{path}: line {number}: a relational attribute (multi-instance ARFF) is not read")
        else:
            raise UserError(f"{path}: an ARFF file without a line @data")
        rows = [text.strip() for text in itertools.islice(lines, locate.SNIFF_LINES) if not text.startswith("%")]
    if not names:
        raise UserError(f"{path}: an ARFF file without @attribute lines")
    if any(row.startswith("{") for row in rows):
        raise UserError(f"{path}: a sparse ARFF file ({{index value, ...}} rows); save it as dense ARFF or CSV")
    quote = "'" if any(re.search(r"(^|,)\s*'", row) for row in rows) else '"'
    padded = _padded_quote("\n".join(rows), ",", quote)
    names = distinct_names(names, path)
    return Dialect(names, False, ",", encoding, CSV, skip_rows=data_line, padded=padded, quote=quote, comment="%")


def _padding(path: str, text: str, delimiter: str, encoding: str) -> tuple[bool, bool]:
    """Whether the file's fields are apart by runs of blanks (--delimiter whitespace, or sniffed so), and else
    whether blanks pad its fields after a delimiter and before a quote (`"a",   "b"`, as tables aligned by hand
    are): both are rewritten as the file is read (Dialect.rewrite), which takes a newline of one byte."""
    spaced = delimiter == WHITESPACE
    # Between tabs or spaces, a blank is an empty field: no padding is told there.
    padded = delimiter not in " \t" and _padded_quote(text, delimiter, '"')
    if spaced and not ascii_based(encoding):
        raise UserError(
            f"{path}: fields apart by whitespace are read in UTF-8 and other ASCII-based encodings, not {encoding}; "
            "save the file as UTF-8"
        )
    return spaced, padded and ascii_based(encoding)


def _padded_quote(text: str, delimiter: str, quote: str) -> bool:
    """Whether blanks pad a field after a delimiter and before its quote (`"a",   "b"`)."""
    return re.search(re.escape(delimiter) + "[ \t]+" + re.escape(quote), text) is not None


def _given_names(where: str, first: list[str], rows: list[list[str]], decimal: str, given: tuple) -> tuple:
    """--column-names: (the names, whether the first line is a header). A first line of those names, in any order,
    is the file's own header after all (a command that names the columns run on a file with them): read by name,
    where it was a row (a class 'label', a missing number each column, a key swapped with a column). One that looks
    like another header (no number, where the next line has one) is warned of, and read as the row the flag says."""
    if sorted(first) == sorted(name.strip() for name in given):
        return distinct_names(first, "--column-names"), True
    if len(rows) > 1 and _is_header(first, (), decimal) and not _is_header(rows[1], (), decimal):
        log.warning("%s (%s) looks like a header, and is read as a row: --column-names names the columns of a file "
                    "without one; to rename a header's columns, pass --skip-rows 1 too", where,
                    shortened(",".join(first)))  # fmt: skip
    return distinct_names(given, "--column-names"), False


def _is_header(first: list[str], known: tuple[str, ...], decimal: str) -> bool:
    """Whether a file's first line names its columns: it holds no number of digits ("inf" names inflation in a
    header more often than it starts a row), one of its fields is a `known` column name (a header of years
    with the label's name, "2019,2020,label"), or it is pandas' names of unnamed columns."""
    if any(name in first for name in known if name) or _pandas_default_names(first):
        return True
    texts = plain_number_texts(pa.array(first, pa.string()), decimal).to_pylist()
    return not any(parses_as_float(text) and re.search(r"\d", text) for text in texts)


def _pandas_default_names(first: list[str]) -> bool:
    """Whether a first line is the names pandas gives a frame's columns when none were given (a numpy array's
    frame written by to_csv): 0, 1, 2, ... after its index's empty name (",0,1"), or, without the index, from three
    columns on ("0,1,2"; "0,1" may well be a row)."""
    names = first[1:] if first[:1] == [""] else first if len(first) >= 3 else []
    return bool(names) and names == [str(number) for number in range(len(names))]


def _marked_header(text: str, escape: str) -> bool:
    """Whether the header is written after a comment mark, as numpy's savetxt writes it ("# a,b,label"; its
    loadtxt and genfromtxt read it so): the first line starts with '#', and without it the first lines split
    alike, where they did not with it or its first name is one word ("# of items,price" keeps its name)."""
    if not text.startswith("#"):
        return False
    bare = text[1:].lstrip(" \t")
    delimiter = sniff_delimiter(bare, escape)
    rows = _head_rows(bare, delimiter, escape)
    if len(rows) < 2 or len(rows[0]) < 2 or _rows_width(rows) != len(rows[0]):
        return False
    return " " not in rows[0][0].strip() or _rows_width(_head_rows(text, delimiter, escape)) != len(rows[0])


def sniff_decimal(text: str, delimiter: str, unclear: str = ".") -> str:
    """The decimal mark of the numbers in a file's first lines: "," where some are written with a decimal
    comma, or with points between thousands twice or more (1.234.567: German integers), and none with a decimal
    point or commas between thousands (Excel's CSV where the comma is the decimal mark: "3,14;blue"); "." where some
    are; `unclear` where none is either (4.000;red), in files whose delimiter is not the comma."""
    if delimiter == ",":
        return "."
    rows = csv_reader(io.StringIO("\n".join(whole_lines(text))), delimiter=delimiter)
    fields = undecorated(pa.array([field.strip() for row in rows for field in row], pa.string())).to_pylist()
    shown = f"{COMMA_NUMBER}|{GROUPED},\\d+"  # 3,14 and 1.234,5
    comma = any(re.fullmatch(shown, field, re.ASCII) or _point_thousands(field) for field in fields)
    point = any(_has_decimal_point(field) or re.fullmatch(THOUSANDS, field) for field in fields)
    if comma or point:
        return "," if comma and not point else "."
    return unclear


def _point_thousands(field: str) -> bool:
    """Whether a field is an integer with points between thousands twice or more (1.234.567), which no decimal point
    writes; not an IPv4 address (10.134.245.116: four parts of at most 255)."""
    if not re.fullmatch(POINT_THOUSANDS, field, re.ASCII):
        return False
    parts = field.lstrip("+-").split(".")
    return len(parts) != 4 or any(int(part) > 255 for part in parts)


def _has_decimal_point(field: str) -> bool:
    """Whether a field is a number with a decimal point: 0.5, 1,234.5; not 1.234, which may be a thousand and more
    beside decimal commas."""
    if re.fullmatch(POINT_GROUPED, field):
        return "." in field
    return bool(re.fullmatch(POINT_NUMBER, field, re.ASCII)) and not re.fullmatch(GROUPED, field)


def _below_blank_lines(lines: list[str]) -> tuple[str, int]:
    """The text of `lines` from the first that is not blank, and the number of blank lines above it."""
    blank = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return "".join(lines[blank:]), blank


def line_naming(path: str, encoding: str, name: str) -> int:
    """The first of the file's first lines that holds `name` as a field (in any delimiter, or between blanks), or 0:
    where a header sits below a report's title lines."""
    lines = _first_lines(path, encoding)
    for split in (lambda line: re.split(f"[{re.escape(DELIMITERS)}]", line), str.split):  # blanks: a title's words too
        for number, line in enumerate(lines, 1):
            if name in (field.strip().strip('"') for field in split(line)):
                return number
    return 0


def table_below_notes(path: str, encoding: str, after: int = 0) -> str:
    """The hint at a table that starts below line `after` under notes (_line_of_columns), or ""."""
    below = _line_of_columns(path, encoding)
    if below <= after:
        return ""
    return f"line {below} starts a table: if the lines above are notes, pass --skip-rows {below - 1}"


def _line_of_columns(path: str, encoding: str) -> int:
    """The first of the file's first lines below its first from which the lines split alike into two or more
    fields, or 0: where a table sits below notes ("# exported by ..."), of which one at most (a header, over a
    ruler line) splits as wide as its rows (where more do, they are rows of a table whose lines split unevenly).
    A header over a ruler line is the table's first line: the ruler is the header's (_header_lines)."""
    lines = _first_lines(path, encoding)
    for number in range(2, len(lines)):
        if not lines[number - 1].strip():
            continue
        below = "\n".join(lines[number - 1 :]) + "\n"
        delimiter = sniff_delimiter(below)
        width = _rows_width(_head_rows(below, delimiter))
        if width > 1:
            above = _head_rows("\n".join(lines[: number - 1]) + "\n", delimiter)
            if sum(len(row) == width for row in above) > 1:
                return 0
            ruler, names = lines[number - 2], lines[number - 3] if number > 2 else ""
            ruled = _is_ruler(names, ruler, delimiter)
            header = _head_rows(names + "\n", delimiter) if number > 2 and ruled else []
            return number - 2 if [len(row) for row in header] == [width] else number
    return 0


def uneven_lines(path: str, encoding: str) -> str:
    """Where no delimiter splits a file's first lines alike, which splits its first line into fields and the first
    line it splits otherwise ("at runs of whitespace, line 1 has 6 fields and line 2 has 7"), or "": a table
    printed in aligned columns with spaces inside its values, or a field with a delimiter that is not quoted."""
    numbered = [(number, line) for number, line in enumerate(_first_lines(path, encoding), 1) if line.strip()]
    head = "\n".join(line for _, line in numbered) + "\n"
    for delimiter, name in (*((d, repr(d)) for d in DELIMITERS), (WHITESPACE, "runs of whitespace")):
        widths = [len(row) for row in _head_rows(head, delimiter)]  # a row a line, blank lines left out
        other = next((i for i, width in enumerate(widths) if width != widths[0]), 0)
        if widths and widths[0] > 1 and other:
            first, line = numbered[0][0], numbered[other][0]  # the file's numbers of the lines
            return f"at {name}, line {first} has {widths[0]} fields and line {line} has {widths[other]}"
    return ""


def splits_none(path: str, encoding: str, delimiter: str) -> bool:
    """Whether `delimiter` (--delimiter's) splits none of the file's first lines: the flag names another file's."""
    lines = [line.strip() for line in _first_lines(path, encoding)]
    if delimiter == WHITESPACE:
        return not any(re.search(r"\s", line) for line in lines)
    return not any(delimiter in line for line in lines)


def _first_lines(path: str, encoding: str) -> list[str]:
    """A CSV file's first SNIFF_LINES lines, as text (what cannot be decoded replaced), for hints in errors."""
    head = read_head(path)
    return whole_lines(head.decode(without_bom(encoding_of(head, encoding)), "replace"))[: locate.SNIFF_LINES]


def _head_text(path: str, head: bytes, encoding: str) -> str:
    """A CSV file's `head` as text; a UserError naming the line where it is not text in `encoding` (decoded with
    replacements, its header became names no flag could name: "no column 'label' (its columns: caf\ufffd, ...)")."""
    try:  # incrementally: a character that the head's end cuts in two waits for bytes not read here
        return codecs.getincrementaldecoder(without_bom(encoding))().decode(head)
    except UnicodeDecodeError:
        raise UserError(f"{path}: {not_text(path, encoding)}") from None


def sniff_escape(text: str, delimiter: str) -> str:
    """A backslash where the first lines hold a quote after one (\\") and split alike only where it escapes
    quotes, as MySQL's exports and PHP's fputcsv write them ("he said \\"hi\\""), not RFC 4180's doubled quotes;
    else "", as in a field that ends with a backslash ("C:\\temp\\")."""
    if ESCAPED_QUOTE not in text:
        return ""
    escaped, plain = (_rows_width(_head_rows(text, delimiter, escape)) for escape in (BACKSLASH, ""))
    return BACKSLASH if escaped > 1 and not plain else ""


def sniff_delimiter(text: str, escape: str = "") -> str:
    """The delimiter among DELIMITERS that splits the first lines into the same number of fields, the
    most of them (quoted fields read as the csv module reads them); else a space, where one does (as R's
    write.table and many scientific tables separate columns); else WHITESPACE, where runs of spaces and tabs do
    (columns aligned by padding, as UCI's .data files and R's read.table have them). Where none does, the same
    with a header one field short of the rows (_unnamed_column), then with a header one empty field longer
    (_header_one_longer); a comma when none splits them."""
    for header_shape in ("alike", "short", "longer"):
        best, widest = ",", 1
        for delimiter in (*DELIMITERS, " ", WHITESPACE):
            if delimiter in (" ", WHITESPACE) and widest > 1:  # spaces sit inside other delimiters' fields
                break
            width = _width(_head_rows(text, delimiter, escape), header_shape)
            if width > widest:
                best, widest = delimiter, width
        if widest > 1:
            return best
    return ","


def _width(rows: list[list[str]], header_shape: str) -> int:
    """The number of columns a header names (an empty last name is none) where the rows under it split as
    `header_shape` says, else 0."""
    if header_shape == "alike":
        return _rows_width(rows)
    if header_shape == "short":
        return len(rows[0]) if len(rows) > 1 and _rows_width(rows[1:]) == len(rows[0]) + 1 else 0
    return len(rows[0]) - 1 if _header_one_longer(rows) else 0


def _header_one_longer(rows: list[list[str]]) -> bool:
    """Whether the header ends in an empty field that the rows below it lack: a delimiter after its last name."""
    return len(rows) > 1 and len(rows[0]) > 2 and not rows[0][-1] and _rows_width(rows[1:]) == len(rows[0]) - 1


def _head_rows(text: str, delimiter: str, escape: str = "") -> list[list[str]]:
    """The whole rows of a file's head (its first SNIFF_LINES lines), blank lines left out: where those lines end
    inside a quoted field, its row is left out (cut at one of the field's line breaks, it would read short)."""
    head = "\n".join(whole_lines(text)[: locate.SNIFF_LINES])
    cut = (head.count('"') - (head.count(escape + '"') if escape else 0)) % 2 == 1  # an odd number of quotes
    if delimiter == WHITESPACE:
        head, delimiter = rewritten_text(head, tabbed), "\t"
    rows = [row for row in csv_reader(io.StringIO(head), delimiter=delimiter, escapechar=escape or None) if row]
    return rows[:-1] if cut and len(rows) > 1 else rows


def _rows_width(rows: list[list[str]]) -> int:
    """The number of fields in every row; 0 where they differ, or for no rows."""
    widths = {len(row) for row in rows}
    return widths.pop() if len(widths) == 1 else 0


def _unnamed_column(rows: list[list[str]]) -> str:
    """Where the rows after the header hold one field more than it names: "last" if that field is empty in
    every row (a delimiter after each row's last field), else "first": R's write.table writes its row names
    so, and R's read.csv and pandas read them back as row names. "" where the header names every field, or
    only one (a title, as likely)."""
    if len(rows) < 2 or len(rows[0]) < 2 or _rows_width(rows[1:]) != len(rows[0]) + 1:
        return ""
    if not any(row[-1] for row in rows[1:]):
        return "last"
    return "first" if len({row[0] for row in rows[1:]}) == len(rows) - 1 else ""  # row names are distinct
