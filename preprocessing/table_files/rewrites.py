"""CSV lines rewritten as the file streams, so that pyarrow's reader can parse them: fields apart by runs of blanks
made tab-separated (tabbed), blanks between a delimiter and a quote left out (unpadded), comment lines left out
(_uncommented). Each rewrite keeps the lines' newlines, so errors still name the file's own lines."""

from __future__ import annotations

import csv
import functools
import re
import sys
from collections.abc import Callable, Iterable

from preprocessing.table_files import locate


def csv_reader(lines: Iterable[str], **dialect):
    """Python's csv.reader of `lines`, a NUL byte in them read as nothing where it must be: the csv module of
    Python 3.9 and 3.10 stops at one ("line contains NUL"), 3.11's reads it, as pyarrow does."""
    if sys.version_info < (3, 11):
        lines = (line.replace("\x00", "") for line in lines)
    return csv.reader(lines, **dialect)


def line_rewrite(
    spaced: bool, padded: bool, delimiter: str, quote: str = '"', comment: str = "", escape: str = ""
) -> Callable[[bytes], bytes] | None:
    """How a CSV file's lines are rewritten before pyarrow and the csv module parse them, if they are: comments
    left out, then its fields apart by blanks made tab-separated, or its padding before quotes left out (quoted
    fields passed over whole, with quotes escaped by `escape` inside)."""
    steps = [functools.partial(_uncommented, mark=comment)] if comment else []
    if spaced:
        steps.append(functools.partial(tabbed, escape=escape))
    elif padded:
        steps.append(functools.partial(unpadded, delimiter=delimiter, quote=quote, escape=escape))
    return functools.partial(_in_turn, steps=tuple(steps)) if steps else None


def _in_turn(lines: bytes, steps: tuple[Callable[[bytes], bytes], ...]) -> bytes:
    for step in steps:
        lines = step(lines)
    return lines


class Rewritten:
    """A CSV file as its rows are parsed, whole lines at a time rewritten by `rewrite` (bytes to bytes, every
    newline kept, so that line numbers count the file's own lines): line_rewrite's steps."""

    def __init__(self, file, rewrite: Callable[[bytes], bytes]):
        self.file, self.rewrite = file, rewrite
        self._carried, self._out, self._ended = b"", b"", False

    def read(self, size: int = -1) -> bytes:
        while not self._ended and (size < 0 or len(self._out) < size):
            chunk = self.file.read(size if size > 0 else -1)
            text, self._ended = self._carried + chunk, not chunk or size < 0
            cut = len(text) if self._ended else _whole_lines_end(text)
            self._carried, self._out = text[cut:], self._out + self.rewrite(text[:cut])
        taken = len(self._out) if size < 0 else size
        data, self._out = self._out[:taken], self._out[taken:]
        return data

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()


EDGE_BLANKS = rb"(?:^|(?<=\r))[ \t]+|[ \t]+(?=\r|$)"  # a line's first or last blanks; a lone \r ends a line too


def _quoted_field(quote: str = '"', escape: str = "") -> bytes:
    """The pattern of a field quoted by `quote`, that quote doubled inside it (RFC 4180), or after `escape`."""
    mark = re.escape(quote.encode())
    if not escape:
        return mark + b"(?:[^" + mark + b"]|" + mark + mark + b")*" + mark
    escaped = re.escape(escape.encode())
    return mark + b"(?:[^" + mark + escaped + b"]|" + escaped + rb"[\s\S]|" + mark + mark + b")*" + mark


FIELD_START = rb"(?<![^ \t\r\n])"  # where a field of a whitespace-separated line may start: a quote elsewhere is text


def tabbed(lines: bytes, escape: str = "") -> bytes:
    """Lines of fields apart by runs of spaces and tabs as tab-separated ones: each run between two fields one
    tab, the blanks that begin or end a line left out; quoted fields keep theirs."""
    if b'"' not in lines and lines.count(b"\r") == lines.count(b"\r\n"):  # most such files: 16x faster than re
        return b"\n".join(b"\t".join(line.split()) for line in lines.split(b"\n"))
    pattern = FIELD_START + _quoted_field('"', escape) + b"|(" + EDGE_BLANKS + rb")|[ \t]+"
    return re.sub(pattern, _tab_between_fields, lines, flags=re.MULTILINE)


def _tab_between_fields(found: re.Match) -> bytes:
    """tabbed's replacement: a quoted field as it is, blanks at a line's edge left out, others one tab."""
    return found[0] if found[0][:1] == b'"' else b"" if found[1] is not None else b"\t"


def unpadded(lines: bytes, delimiter: str, quote: str = '"', escape: str = "") -> bytes:
    """Lines whose quoted fields are padded after their delimiter (`a,   "b, c"`) with the blanks there left out,
    so that the quote quotes its field, as Python's csv module reads with skipinitialspace. A field quoted where
    it starts is passed over whole, its text as it is."""
    mark, field = re.escape(delimiter.encode()), _quoted_field(quote, escape)
    at_start = rb"(?<![^" + mark + rb"\r\n])" + field
    padded = rb"(" + mark + rb")[ \t]+(" + field + rb")"
    return re.sub(at_start + b"|" + padded, lambda found: found[0] if found[1] is None else found[1] + found[2], lines)


def _uncommented(lines: bytes, mark: str) -> bytes:
    """Lines with those that start with `mark` (ARFF's %) left empty: no rows, still lines."""
    return re.sub(rb"(?m)^[ \t]*" + re.escape(mark.encode()) + rb"[^\r\n]*", b"", lines)


def rewritten_text(text: str, rewrite: Callable[[bytes], bytes]) -> str:
    """`rewrite` for text already read (a file's head, as it is sniffed)."""
    return rewrite(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")


def _whole_lines_end(text: bytes) -> int:
    """Where the last line of `text` that ends outside quotes ends (after its line break: \\n, or an old Mac's
    \\r), or 0 to wait for more text. A newline inside a quoted field ends no line; but a quote that quotes
    nothing (an inch mark, 5'11") upsets the count, so a few lines back, or past PARSE_BYTES, the last does."""
    end = max(text.rfind(b"\n"), text.rfind(b"\r"))
    for _ in range(8):
        if end < 0 or not text.count(b'"', 0, end) % 2:
            return end + 1
        end = max(text.rfind(b"\n", 0, end), text.rfind(b"\r", 0, end))
    return max(text.rfind(b"\n"), text.rfind(b"\r")) + 1 if len(text) > locate.PARSE_BYTES else 0
