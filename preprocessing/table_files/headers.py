"""A table's column names, whatever its format: a header's names made distinct and usable (renamed, with a
warning), and which of them is --label-column's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from dataformat import tables
from dataformat.errors import UserError
from dataformat.schema import LABEL_KEY

if TYPE_CHECKING:
    from preprocessing.tables import TableOptions


log = logging.getLogger(__name__)

SHOWN_RENAMES = 3  # a header's renamed columns a warning names at most


LAST_COLUMN = "-1"  # --label-column's default: the last column, unless one is named LABEL_KEY


def named_label(options: TableOptions, width: int) -> str:
    """The name --label-column gives the label in a line of `width` fields: its own, or by default LABEL_KEY (a
    column so named is the label); "" where it gives a place."""
    if options.label_column == LAST_COLUMN:
        return LABEL_KEY
    return options.label_column if is_a_name(options.label_column, width) else ""


def label_of(options: TableOptions, names: list[str]) -> str:
    """The name, in a header of `names`, of --label-column's column: named, or by its place (the last by default)."""
    return options.label_column if is_a_name(options.label_column, len(names)) else names[int(options.label_column)]


def is_a_name(label_column: str, width: int) -> bool:
    """Whether --label-column names a column rather than giving its index in a line of `width` fields (an
    index past the last is a name: a header of years, "1970,1971,...")."""
    try:
        return not -width <= int(label_column) < width
    except ValueError:
        return True


def distinct_names(names, where: str) -> tuple[str, ...]:
    """The column names, each once: two columns of one name (in a flag, or a typed file's schema) are a UserError.
    Columns without a name may be many (a spreadsheet's empty columns after the last); they are left out."""
    seen: dict[str, int] = {}
    for number, name in enumerate(names, 1):
        if name and name in seen:
            raise UserError(f"{where}: columns {seen[name]} and {number} are both named {name!r}; rename one")
        seen[name] = number
    return tuple(names)


def header_names(names, where: str, label: str = "") -> tuple[str, ...]:
    """A header line's or row's column names, each once: a name that an earlier column has gets ".1" (".2", ...)
    as pandas' read_csv and R's read.csv give it, said in one warning (ProPublica's COMPAS file names two columns
    decile_score and two priors_count; it was refused). A suffix is skipped where another column's name becomes the
    same in TensorFlow's signatures (tables.parameter_name: "a.1" and "a_1"). Two columns named as the `label` are
    a UserError (named, or by --label-column's place): the other may copy it, a feature that gives it away."""
    taken = {tables.parameter_name(name) for name in names if name}
    first: dict[str, int] = {}
    suffixes: dict[str, int] = {}  # the last suffix each repeated name took
    renamed, found = [], []
    for number, name in enumerate(names, 1):
        if name and name in first:
            if name == label:
                raise UserError(
                    f"{where}: columns {first[name]} and {number} are both named {name!r}, the label's name "
                    "(--label-column); rename one"
                )
            suffix = suffixes.get(name, 0) + 1
            while tables.parameter_name(f"{name}.{suffix}") in taken:
                suffix += 1
            suffixes[name] = suffix
            copy = f"{name}.{suffix}"
            taken.add(tables.parameter_name(copy))
            renamed.append(f"column {number} ({name!r}, as column {first[name]}) as {copy!r}")
            name = copy
        first.setdefault(name, number)
        found.append(name)
    if renamed:
        more = f", and {len(renamed) - SHOWN_RENAMES} more" if len(renamed) > SHOWN_RENAMES else ""
        log.warning("%s: two columns of one name; read %s%s", where, ", ".join(renamed[:SHOWN_RENAMES]), more)
    return tuple(found)
