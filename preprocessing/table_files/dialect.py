"""A table's Dialect: how its files are written (their columns, header, delimiter, encoding, ...), found in the first
file or given by flags, and shared by all of them; the flags that give it (add_reading_flags) for every command that
reads tables, and the columns that a partitioned dataset's folders add."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, replace

from dataformat import commandline
from dataformat.errors import UserError
from preprocessing.table_files.locate import CSV, partition_values, partitions_below
from preprocessing.table_files.rewrites import line_rewrite


@dataclass(frozen=True)
class Dialect:
    """How a table's files are written: found in the first file (or given by flags), shared by all."""

    names: tuple[str, ...]  # every column of the files
    has_header: bool
    delimiter: str  # CSV's
    encoding: str  # Python's name of it, as --encoding gives it (pyarrow transcodes from it)
    format: str = CSV
    decimal: str = "."  # CSV's numbers' decimal mark: "," in much of Europe's spreadsheets (3,14)
    skip_rows: int = 0  # CSV's lines before the header (--skip-rows): a report's title, an export's notes
    sheet: str = ""  # a workbook's sheet that holds the table, where it opens on another ("": that one); a database's
    escape: str = ""  # CSV's: a backslash where it escapes quotes in quoted fields (sniffing.sniff_escape)
    # CSV's: its first column is row names, under a header one name short (sniffing._unnamed_column).
    row_names: bool = False
    # CSV's: fields apart by runs of spaces and tabs, read as tab-separated (rewrites.tabbed); its delimiter is \t.
    spaced: bool = False
    # CSV's: blanks after a delimiter and before a quote, left out as the file is read (rewrites.unpadded).
    padded: bool = False
    quote: str = '"'  # CSV's quote character: ARFF's rows may quote with ' (sniffing.arff_dialect)
    comment: str = ""  # CSV's: a line that starts with it is no row (ARFF's %), left out as the file is read
    lists: tuple[str, ...] = ()  # columns of lists (Parquet's and Arrow's by type, JSON's in the first objects)
    header_lines: int = 1  # CSV's: the lines its header takes (a ruler under the names; Orange's types and flags)
    marked_label: str = ""  # the column the file marks as the class (Orange's flag `class`), the default label
    marked_weight: str = ""  # the column it marks as each row's weight (Orange's `weight`), the default weight column
    marked_out: tuple[str, ...] = ()  # the columns it marks to learn nothing from (Orange's `meta`, `ignore`)
    marked_categorical: tuple[str, ...] = ()  # the columns it types as categories (Orange's discrete), numbers or not
    # A partitioned dataset's file's columns that its folders give, each with its value: (("year", "2020"),) for
    # year=2020/part-0.parquet. Last among `names`; the file itself lacks them.
    partitions: tuple[tuple[str, str], ...] = ()

    @property
    def rewrite(self) -> Callable[[bytes], bytes] | None:
        return line_rewrite(self.spaced, self.padded, self.delimiter, self.quote, self.comment, self.escape)

    @property
    def lines_above_rows(self) -> int:
        """CSV's: the lines skipped, and the header's."""
        return self.skip_rows + (self.header_lines if self.has_header else 0)

    @property
    def first_line(self) -> int:
        return self.lines_above_rows + 1


def add_reading_flags(group, predicting: bool = False) -> None:
    """The flags of how CSV files are written that every command reading tables takes (qt-preprocess, and
    qt-predict when `predicting`): --delimiter, --skip-rows, --decimal, --encoding, --column-names and --sheet;
    reading_options gives their TableOptions fields."""
    encoding = (
        "the encoding the model's training files were read in, or utf-8 for a file that is UTF-8"
        if predicting
        else "utf-8, or utf-16 or utf-32 for a CSV file that starts with its byte-order mark, as Excel's Unicode "
        "text does"
    )
    wanted = "one of the model's columns" if predicting else "the label's column"
    unclear = "the model's training CSV files' mark, or '.'" if predicting else "'.'"
    group.add_argument(
        "--delimiter",
        type=commandline.delimiter,
        help="the character between fields, e.g. ';' or '\\t', or 'whitespace' for fields apart by runs of spaces "
        "and tabs, as R's read.table and pandas' sep=r'\\s+' read them (default: a tab for .tsv files that hold "
        "one, otherwise the one of comma, semicolon, tab and pipe that splits the first lines alike, else a space "
        "that does, else runs of whitespace; Excel's first line sep=; names it too)",
    )
    group.add_argument(
        "--skip-rows",
        type=commandline.non_negative_int,
        default=0,
        help="lines before a CSV file's header (or first row) to leave out: a report's title, an export's notes "
        "(default: 0)",
    )
    group.add_argument(
        "--decimal",
        choices=(".", ","),
        help="the numbers' decimal mark (default: ',' where the file is not comma-separated and its first lines "
        "hold numbers like 3,14 and none like 3.14 or 1,234,567, as spreadsheets write CSV in much of Europe; '.' "
        f"where they hold such numbers; where they hold neither (4.000), {unclear})",
    )
    group.add_argument(
        "--encoding",
        type=commandline.encoding,
        help=f"the files' text encoding, e.g. latin-1 or cp1252 (default: {encoding}; a byte-order mark is "
        "skipped, and says the encoding)",
    )
    group.add_argument(
        "--column-names",
        type=commandline.names,
        default=(),
        metavar="A,B",
        help="names for the columns of files without a header line (default: the first line's names, or "
        "column_1, column_2, ... when it holds a number and no name of a column it must have: the label's, a "
        "model's)",
    )
    group.add_argument(
        "--sheet",
        "--table",
        dest="sheet",
        default="",
        metavar="NAME",
        help="the worksheet of a spreadsheet (.xlsx, .xls, .ods, ...), or the table of an SQLite database (.sqlite, "
        f".db), that holds the data (default: the one whose header names {wanted}, else a spreadsheet's sheet it "
        "opens on (an .xlsx or .ods file's active sheet, an .xls file's first), a database's only table)",
    )


def reading_options(args, encoding: str = "utf-8", unclear_decimal: str = ".") -> dict:
    """The TableOptions fields of add_reading_flags' flags; `encoding` where --encoding is not given, and without
    --decimal, `unclear_decimal` where a file's first lines show no decimal mark."""
    return {
        "delimiter": args.delimiter or "",
        "skip_rows": args.skip_rows,
        "decimal": args.decimal or "",
        "unclear_decimal": unclear_decimal,
        "encoding": args.encoding or encoding,
        "column_names": args.column_names,
        "sheet": args.sheet,
    }


def with_partition_columns(dialect: Dialect, path: str, root: str) -> Dialect:
    """The file's dialect with the columns its partitions' folders give (below `root`, --input's folder), after
    its own."""
    if not root:
        return dialect
    partitions = partitions_below(path, root)
    both = [key for key, _ in partitions if key in dialect.names]
    if both:
        raise UserError(f"{path}: column {both[0]!r} is both in the file and in its folder's name ({both[0]}=...)")
    return _with_columns_of(dialect, partitions)


def with_model_partition_columns(dialect: Dialect, path: str, names: tuple[str, ...]) -> Dialect:
    """For predictions: the file's dialect with the model's columns (`names`) that its header lacks and a folder of
    its path gives (region=north/), as the partitioned dataset the model was trained on gave them."""
    found = partition_values(posixpath.dirname(path))
    return _with_columns_of(dialect, tuple(pair for pair in found if pair[0] in names and pair[0] not in dialect.names))


def _with_columns_of(dialect: Dialect, partitions: tuple[tuple[str, str], ...]) -> Dialect:
    """The dialect with the partitions' columns after the file's own."""
    if not partitions:
        return dialect
    return replace(dialect, names=dialect.names + tuple(key for key, _ in partitions), partitions=partitions)
