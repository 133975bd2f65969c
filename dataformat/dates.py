"""Date and timestamp columns: their formats, and the features a model gets from them.

A format is a strftime-like pattern (%Y %y %m %d %H %M %S %b %p, other characters as they are). It
becomes an RE2 regular expression and a rewrite template that put a value's fields in a fixed
order, year|month|day|hour|minute|second|AM-or-PM; a pattern without %H also takes an optional time of
day after the date (ISO 8601's 'T' or a space, seconds, fractions, AM or PM and a zone optional: the
zone is left out, so times are read as written); a pattern with %H takes a fraction and a zone after it
(20170105T103000.5Z, ISO 8601's basic form); and a weekday's name may come first (Tue, 05 Jan 2017).
A pattern of only a time of day (%H:%M) reads as that time on 1970-01-01, seconds, fractions and AM or
PM optional: a column of times ('14:30', '2:30 PM') gets its hour's cycle. The format %s alone reads Unix
times, numbers of seconds since 1970-01-01 UTC (see unix_seconds for larger units). Arrow (preprocessing)
and TensorFlow (training and serving) both use RE2 and IEEE float64, so one value gives the same fields in
both.

A date becomes DATE_FEATURES numbers: days since 1970-01-01 and the year (both standardized by the
training split's statistics), then month, day of month, day of week, day of year and hour of day,
each as the sine and cosine of its place in its cycle, so that December sits next to January. A
timestamp (a column whose training values have times of day) also gets its day as a category.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import tensorflow as tf

UNIX = "%s"  # the format of Unix times, as GNU date's %s: seconds since 1970-01-01 UTC
ISO = "%Y-%m-%d"  # ISO 8601, a time of day optional: read in a date column of any format too (also_iso)
# A Unix time as text: a decimal number, a fraction or an exponent allowed (1260759144, 1.26e9, -5.5).
UNIX_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
UNIX_UNIT_STEPS = (1e11, 1e14, 1e17)  # from each, a Unix time is in a unit 1000 times smaller (unix_seconds)
UNIX_LIMIT = 1e20  # a Unix time this large, in any unit, is past the year 5138: no time
# %y: the first of the hundred years that two digits read as. POSIX's (1969-2068), as strptime reads them, is what a
# dataset written before the column recorded its own read as; preprocessing now takes TWO_DIGIT_YEARS_BACK years
# before its own year (first_year_now), as Java's SimpleDateFormat does from the day: in 2026, 1946-2045, so that a
# birth date of 25/11/63 is 1963, not 2063 (which also put 1963-1968 after 1969-1999). --two-digit-years names another.
POSIX_FIRST_YEAR = 1969
TWO_DIGIT_YEARS_BACK = 80
FIELDS = "YmdHMSp"  # the order of the rewritten fields (p: "a" or "p" of a 12-hour clock's AM or PM)
DATE_FEATURES = 12
FEATURE_NAMES = ("days", "year", "month_sin", "month_cos", "day_sin", "day_cos", "weekday_sin", "weekday_cos")
FEATURE_NAMES += ("yearday_sin", "yearday_cos", "hour_sin", "hour_cos")
# Tried in order when a column is detected (the first that reads a value wins ties: m/d/Y before d/m/Y).
FORMATS = (
    ISO,
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%m/%d/%y",  # 1/5/17: a short date as US spreadsheets show it
    "%d/%m/%y",
    "%d.%m.%Y",
    "%d-%m-%Y",
    "%d %b %Y",
    "%d-%b-%Y",
    "%d-%b-%y",  # 05-JAN-17: Oracle's DD-MON-YY, as SQL exports write dates
    "%b %d, %Y",
    "%b %d %Y",
    "%b-%Y",
    "%b %Y",
    "%Y %b",  # 1939 Jan: a month as R's tsibble prints one
    "%Y-%m",
    "%Y/%m",
    "%m/%Y",
    "%Y%m%dT%H%M%S",  # ISO 8601's basic form: 20170105T103000Z
    "%Y%m%dT%H%M",
    "%H:%M",
)
# Formats that read the same text with day and month swapped: 11/08/2023 is either, 13/08/2023 only one.
SWAPPED = {"%m/%d/%Y": "%d/%m/%Y", "%d/%m/%Y": "%m/%d/%Y", "%m/%d/%y": "%d/%m/%y", "%d/%m/%y": "%m/%d/%y"}
# Every value that one of FORMATS reads has a digit beside a separator and a digit or a month's name ("2017-01",
# "5 Jan", "Sept. 5", "14:30", "20170105T1030"): a column whose values lack it is no dates, found with one
# expression where trying every format took 30 ms a column (most of it compiling them), as on a click log's
# columns of hashes.
FORMATS_MARK = r"\d[-/.:T]\d|\d[\s,-]+[A-Za-z]|[A-Za-z][\s.,-]+\d"
AM_PM = r"([AaPp])\.?[Mm]\.?"  # 11:59 PM, 8:05 a.m.
SECONDS_AND_AM_PM = r"(?::(\d{2})(?:[.,]\d+)?)?(?:\s*" + AM_PM + r")?"  # both optional: 14:30, 2:30:15 pm
ZONE_NAME = r"(?:\s*[A-Z]{3,4})?"  # after a time: 06:00:42 EST, as R prints its times
# After a time, an offset of hours alone too: PostgreSQL writes 2020-01-05 10:00:00+00.
HOURS_OFFSET = r"(?:[+-]\d{2}(?::?\d{2})?)?"
ZONE = r"\s*(?:Z|UTC|GMT|[+-]\d{2}:?\d{2})?"
TIME_OF_DAY = r"(?:[T ](\d{1,2}):(\d{2})" + SECONDS_AND_AM_PM + ZONE_NAME + HOURS_OFFSET + r")?" + ZONE
FRACTION_AND_ZONE = r"(?:[.,]\d+)?" + ZONE  # after a format's own time: 20170105T103000.5Z
WEEKDAY = r"(?:(?i:mon|tue|wed|thu|fri|sat|sun)[A-Za-z]*\.?,?\s+)?"  # before a date: Tue, 05 Jan 2017 (HTTP, e-mail)
DEFAULTS = {"Y": "1970", "m": "1", "d": "1"}  # a field the format lacks: a month's first day, a time's 1970-01-01
DIRECTIVES = {
    "Y": r"(\d{4})",
    "y": r"(\d{2})",
    "m": r"(\d{1,2})",
    "d": r"(\d{1,2})",
    "H": r"(\d{1,2})",
    "M": r"(\d{2})",
    "S": r"(\d{2})",
    "b": r"([A-Za-z]{3})[A-Za-z]*\.?",
    "p": AM_PM,
}
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS_PER_YEAR = 365.2425


def is_time_of_day(date_format: str) -> bool:
    """Whether a format reads a time of day alone, without a date."""
    return date_format != UNIX and not re.search(r"%[Yy]", date_format)


def check(date_format: str) -> None:
    """ValueError for a format this module cannot read."""
    if date_format != UNIX:
        pattern(date_format)


def pattern(date_format: str) -> tuple[str, str]:
    """(an RE2 expression matching a whole value, the template that rewrites it to Y|m|d|H|M|S), or
    ValueError for a format this module cannot read."""
    expression, groups = "", []
    parts = re.split(r"(%.)", date_format)
    for part in parts:
        if part.startswith("%") and len(part) == 2:
            directive = part[1]
            if directive not in DIRECTIVES:
                raise ValueError(f"%{directive} is not one of %{' %'.join(DIRECTIVES)}, nor %s alone (Unix time)")
            expression += DIRECTIVES[directive]
            groups.append(directive)
        else:
            expression += re.escape(part)
    if len(set(groups)) != len(groups):
        raise ValueError("a directive appears twice")
    if {"H", "M"} <= set(groups) <= set("HMSp"):  # a time of day alone
        if groups == ["H", "M"]:
            expression += SECONDS_AND_AM_PM
            groups += ["S", "p"]
    elif not ({"Y", "y"} & set(groups)) or "m" not in groups and "b" not in groups:
        raise ValueError("it needs a year (%Y or %y) and a month (%m or %b), or is a time of day alone (%H:%M)")
    elif "H" not in groups:
        expression = WEEKDAY + expression + TIME_OF_DAY
        groups += ["H", "M", "S", "p"]
    else:
        expression = WEEKDAY + expression + FRACTION_AND_ZONE
    field_of = {"b": "m", "y": "Y"}  # a month name is the month; two digits of a year are the year
    where = {field_of.get(directive, directive): i for i, directive in enumerate(groups)}
    slots = [f"\\{where[field] + 1}" if field in where else DEFAULTS.get(field, "") for field in FIELDS]
    return f"^\\s*{expression}\\s*$", "|".join(slots)


def days_from_civil(year, month, day, floor_divide, where):
    """Days since 1970-01-01 of proleptic Gregorian dates (Howard Hinnant's algorithm), for numpy or
    TensorFlow arrays alike (integers, through their floor_divide and where)."""
    year = where(month <= 2, year - 1, year)
    era = floor_divide(year, 400)
    year_of_era = year - era * 400
    day_of_year = floor_divide(153 * where(month > 2, month - 3, month + 9) + 2, 5) + day - 1
    day_of_era = year_of_era * 365 + floor_divide(year_of_era, 4) - floor_divide(year_of_era, 100) + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days, floor_divide, where):
    """(year, month, day) of integer days since 1970-01-01, proleptic Gregorian: days_from_civil's inverse,
    also Howard Hinnant's, for numpy or TensorFlow arrays alike."""
    shifted = days + 719468
    era = floor_divide(shifted, 146097)
    day_of_era = shifted - era * 146097
    year_of_era = day_of_era - floor_divide(day_of_era, 1460) + floor_divide(day_of_era, 36524)
    year_of_era = floor_divide(year_of_era - floor_divide(day_of_era, 146096), 365)
    day_of_year = day_of_era - (365 * year_of_era + floor_divide(year_of_era, 4) - floor_divide(year_of_era, 100))
    shifted_month = floor_divide(5 * day_of_year + 2, 153)  # March is 0
    day = day_of_year - floor_divide(153 * shifted_month + 2, 5) + 1
    month = where(shifted_month < 10, shifted_month + 3, shifted_month - 9)
    year = year_of_era + era * 400
    return where(month <= 2, year + 1, year), month, day


def unix_seconds(numbers, where):
    """Unix times as seconds. A number from 1e11 is read as milliseconds, from 1e14 as microseconds, from 1e17
    as nanoseconds (Java's and JavaScript's clocks count milliseconds, BigQuery's and Spark's microseconds,
    pandas' nanoseconds): each unit reads the times from 1973-03-03 to 5138. For numpy or TensorFlow alike."""
    size = abs(numbers)
    for step in UNIX_UNIT_STEPS:
        numbers = where(size >= step, numbers / 1000, numbers)
    return numbers


def split_seconds(seconds, floor):
    """(day, hour, minute, second) of seconds since 1970-01-01, each a whole number in float (numpy's or
    TensorFlow's floor): the day since 1970, then the time of that day."""
    day = floor(seconds / 86400)
    clock = seconds - day * 86400
    hour = floor(clock / 3600)
    minute = floor((clock - hour * 3600) / 60)
    return day, hour, minute, floor(clock - hour * 3600 - minute * 60)


def twelve_hour(hour, pm, has_letter, where):
    """A 12-hour clock's hour on a 24-hour clock (12 AM is 0, 12 PM is 12, 1 PM is 13), where the value
    has AM or PM (`pm`: 1 for PM, 0 for AM, in the hour's type); the hour as it is where not (numpy or
    TensorFlow's where)."""
    return where(has_letter, hour % 12 + 12 * pm, hour)


def in_range(fields):
    """Whether Y|m|d|H|M|S fields ([n, 6], numpy or TensorFlow) are a time of a day of the calendar: 2020-02-30 is
    none (it was read as 2020-03-01's neighbour, silently), 2020-02-29 is."""
    year, month, day, hour, minute, second = (fields[:, i] for i in range(6))
    leap = _is(year % 4, 0) & (~_is(year % 100, 0) | _is(year % 400, 0))
    short = _is(month, 4) | _is(month, 6) | _is(month, 9) | _is(month, 11)
    february = _is(month, 2)
    days = (day <= 31) & ~(short & (day > 30)) & ~(february & (day > 29)) & ~(february & _is(day, 29) & ~leap)
    return (month >= 1) & (month <= 12) & (day >= 1) & days & (hour <= 23) & (minute <= 59) & (second <= 60)


def _is(values, number: float):
    """Elementwise equality for numpy and TensorFlow alike (a graph's tensors compare by identity with ==)."""
    return (values >= number) & (values <= number)


# Arrow: preprocessing's detection and statistics.


def also_iso(date_format: str) -> bool:
    """Whether a column of this format also reads ISO 8601 (2017-01-05, 2017-01-05T10:30:00Z): a date in any
    format, as JSON clients send them (JavaScript's toISOString), where it was read as a missing date. Unix times
    too: pandas' to_json writes a datetime column as milliseconds, and the same rows as CSV, Parquet or a client's
    JSON hold ISO dates, which a model of those read as missing (8 of 300 predicted classes moved)."""
    return date_format != ISO and not is_time_of_day(date_format)


def fields_arrow(values, date_format: str, exact: bool = False, first_year: int = POSIX_FIRST_YEAR) -> np.ndarray:
    """A pyarrow string array to [n, 6] float64 Y|m|d|H|M|S, NaN rows where a value is no date (or null): in
    `date_format`, or else in ISO 8601 (also_iso) unless `exact`; %y's two digits in the hundred years from
    `first_year`."""
    import pyarrow as pa

    fields = _format_fields_arrow(values, date_format, first_year)
    unread = np.isnan(fields[:, 0])
    if not exact and also_iso(date_format) and unread.any():
        fields[unread] = _format_fields_arrow(values.filter(pa.array(unread)), ISO, first_year)
    return fields


def _format_fields_arrow(values, date_format: str, first_year: int) -> np.ndarray:
    """fields_arrow in `date_format` alone."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if date_format == UNIX:
        numbers = np.full(len(values), np.nan)
        read = pc.fill_null(pc.match_substring_regex(values, UNIX_NUMBER), False).to_numpy(zero_copy_only=False)
        numbers[read] = pc.cast(pc.utf8_trim_whitespace(values.filter(pa.array(read))), pa.float64()).to_numpy()
        return unix_fields(numbers)
    expression, template = pattern(date_format)
    matches = pc.fill_null(pc.match_substring_regex(values, expression), False)
    rewritten = pc.replace_substring_regex(pc.if_else(matches, values, pa.scalar("")), expression, template)
    rewritten = pc.if_else(matches, rewritten, pa.scalar("|" * (len(FIELDS) - 1)))  # empty fields
    parts = pc.list_flatten(pc.split_pattern(rewritten, "|"))
    fields = np.empty((len(values), 6))
    for i in range(6):
        column = parts.take(pa.array(np.arange(i, len(FIELDS) * len(values), len(FIELDS))))
        digits = pc.match_substring_regex(column, r"^\d+$")
        fields[:, i] = pc.cast(pc.if_else(digits, column, pa.scalar("0")), pa.float64()).to_numpy(zero_copy_only=False)
        if i == 1:  # a month may be a name
            prefix = pc.utf8_lower(pc.utf8_slice_codeunits(column, 0, 3))
            named = pc.fill_null(pc.index_in(prefix, value_set=pa.array(MONTHS)), -2).to_numpy(zero_copy_only=False)
            fields[:, i] = np.where(digits.to_numpy(zero_copy_only=False), fields[:, i], named + 1.0)
    if "%y" in date_format:
        fields[:, 0] = two_digit_years(fields[:, 0], first_year, np.where)
    letter = pc.utf8_lower(parts.take(pa.array(np.arange(6, len(FIELDS) * len(values), len(FIELDS)))))
    has_letter = pc.not_equal(letter, "").to_numpy(zero_copy_only=False)
    pm = pc.equal(letter, "p").to_numpy(zero_copy_only=False).astype(np.float64)
    fields[:, 3] = twelve_hour(fields[:, 3], pm, has_letter, np.where)
    ok = matches.to_numpy(zero_copy_only=False) & in_range(fields)
    fields[~ok] = np.nan
    return fields


def unix_fields(numbers: np.ndarray) -> np.ndarray:
    """Unix times ([n] float64, see unix_seconds) to [n, 6] float64 Y|m|d|H|M|S in UTC, seconds' fractions left
    out as other formats leave them; NaN rows where a number is NaN or past UNIX_LIMIT. unix_fields_tf's twin."""
    read = np.abs(numbers) < UNIX_LIMIT
    seconds = np.where(read, unix_seconds(numbers, np.where), 0.0)
    day, hour, minute, second = split_seconds(seconds, np.floor)
    year, month, day_of_month = civil_from_days(day.astype(np.int64), np.floor_divide, np.where)
    fields = np.stack([year, month, day_of_month, hour, minute, second], axis=1).astype(np.float64)
    fields[~read] = np.nan
    return fields


def days(fields: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01, fractional with the time of day, of [n, 6] fields (NaN stays NaN)."""
    present = ~np.isnan(fields[:, 0])
    whole = np.where(present[:, None], fields, 1).astype(np.int64)
    found = days_from_civil(whole[:, 0], whole[:, 1], whole[:, 2], np.floor_divide, np.where).astype(np.float64)
    found += (fields[:, 3] * 3600 + fields[:, 4] * 60 + fields[:, 5]) / 86400
    return np.where(present, found, np.nan)


def keys_of(fields: np.ndarray, values):
    """A pyarrow string array's values (their fields_arrow: `fields`) as a date column's vocabulary counts them:
    each date as ISO 8601 (2017-01-05, or 2017-01-05T10:30:00 with a time of day), so that one instant written
    two ways (2017-01-05 and 2017-01-05T00:00:00Z, as a JavaScript client sends it) is one value; a value that
    is no date as it is ("never"). keys_tf's twin."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = ~np.isnan(fields[:, 0])
    whole = np.where(present[:, None], fields, 0).astype(np.int64)

    def digits(i: int, width: int = 2):
        return pc.utf8_lpad(pc.cast(pa.array(whole[:, i]), pa.string()), width, "0")

    date = pc.binary_join_element_wise(digits(0, 4), digits(1), digits(2), "-")
    time = pc.binary_join_element_wise(digits(3), digits(4), digits(5), ":")
    timed = pa.array(np.any(whole[:, 3:] != 0, axis=1))
    iso = pc.if_else(timed, pc.binary_join_element_wise(date, time, "T"), date)
    return pc.if_else(pa.array(present), iso, values)


def two_digit_years(years, first_year: int, where):
    """%y's two digits as the years of the hundred from `first_year` (numpy or TensorFlow's where): from 1969,
    00-68 are 2000-2068 and 69-99 are 1969-1999, as POSIX strptime has it."""
    century, pivot = first_year - first_year % 100, first_year % 100
    return where(years < pivot, years + century + 100, years + century)


def first_year_now() -> int:
    """The first year that %y reads as in a dataset written today: TWO_DIGIT_YEARS_BACK years before this one."""
    import datetime

    return datetime.date.today().year - TWO_DIGIT_YEARS_BACK


# TensorFlow: training, evaluation and serving.


def fields_tf(
    strings: tf.Tensor, date_format: str, timed: bool = True, first_year: int = POSIX_FIRST_YEAR
) -> tf.Tensor:
    """[n] strings to [n, 6] float64 Y|m|d|H|M|S, NaN rows where a value does not read as a date: fields_arrow
    in TensorFlow. Not `timed` (a column whose training dates had no time of day), a value's time is left out:
    the model never saw one, and a client's 2020-05-23 10:00 for 2020-05-23 moved a prediction more than a day.
    `first_year` as fields_arrow's."""
    import tensorflow as tf

    fields = _format_fields_tf(strings, date_format, first_year)
    if also_iso(date_format):
        fields = tf.where(tf.math.is_nan(fields[:, :1]), _format_fields_tf(strings, ISO, first_year), fields)
    if not timed:
        fields = tf.concat([fields[:, :3], tf.zeros_like(fields[:, 3:])], axis=1)
    return fields


def _format_fields_tf(strings: tf.Tensor, date_format: str, first_year: int) -> tf.Tensor:
    """fields_tf in `date_format` alone."""
    import tensorflow as tf

    if date_format == UNIX:
        return unix_fields_tf(strings)
    expression, template = pattern(date_format)
    matches = tf.strings.regex_full_match(strings, expression)
    rewritten = tf.strings.regex_replace(tf.where(matches, strings, ""), expression, template)
    parts = tf.strings.split(rewritten, "|").to_tensor(default_value="", shape=[None, len(FIELDS)])
    digits = tf.strings.regex_full_match(parts, r"\d+")
    numbers = tf.strings.to_number(tf.where(digits, parts, "0"), tf.float64)
    with tf.control_dependencies(None):  # a table is initialized before any queue runs (see categorical.py)
        month_names = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(MONTHS), tf.constant(list(range(1, 13)), tf.int64)), -1
        )
    named = tf.cast(month_names.lookup(tf.strings.lower(tf.strings.substr(parts[:, 1], 0, 3))), tf.float64)
    month = tf.where(digits[:, 1], numbers[:, 1], named)
    year = numbers[:, 0]
    if "%y" in date_format:
        year = two_digit_years(year, first_year, tf.where)
    letter = tf.strings.lower(parts[:, 6])
    pm = tf.cast(tf.equal(letter, "p"), tf.float64)
    hour = twelve_hour(numbers[:, 3], pm, tf.not_equal(letter, ""), tf.where)
    fields = tf.stack([year, month, numbers[:, 2], hour, numbers[:, 4], numbers[:, 5]], axis=1)
    ok = matches & in_range(fields)
    return tf.where(ok[:, None], fields, tf.constant(np.nan, tf.float64))


def keys_tf(strings: tf.Tensor, date_format: str, timed: bool = True, first_year: int = POSIX_FIRST_YEAR) -> tf.Tensor:
    """[n] strings as a date column's vocabulary holds them: keys_of in TensorFlow (`timed`, `first_year`: as
    fields_tf's)."""
    return keys_of_fields_tf(fields_tf(strings, date_format, timed, first_year), strings)


def keys_of_fields_tf(fields: tf.Tensor, strings: tf.Tensor) -> tf.Tensor:
    """keys_tf of [n] strings whose fields_tf are `fields`."""
    import tensorflow as tf

    present = tf.logical_not(tf.math.is_nan(fields[:, 0]))
    whole = tf.cast(tf.where(present[:, None], fields, tf.zeros_like(fields)), tf.int64)

    def digits(i: int, width: int = 2) -> tf.Tensor:
        return tf.strings.as_string(whole[:, i], width=width, fill="0")

    date = tf.strings.join([digits(0, 4), digits(1), digits(2)], "-")
    time = tf.strings.join([digits(3), digits(4), digits(5)], ":")
    timed = tf.reduce_any(tf.not_equal(whole[:, 3:], 0), axis=1)
    return tf.where(present, tf.where(timed, tf.strings.join([date, time], "T"), date), strings)


def unix_fields_tf(strings: tf.Tensor) -> tf.Tensor:
    """[n] strings of Unix times to [n, 6] float64 Y|m|d|H|M|S: unix_fields in TensorFlow."""
    import tensorflow as tf

    matches = tf.strings.regex_full_match(strings, UNIX_NUMBER)
    numbers = tf.strings.to_number(tf.where(matches, tf.strings.strip(strings), "0"), tf.float64)
    read = matches & (tf.abs(numbers) < UNIX_LIMIT)
    seconds = tf.where(read, unix_seconds(numbers, tf.where), tf.zeros_like(numbers))
    day, hour, minute, second = split_seconds(seconds, tf.floor)
    year, month, day_of_month = civil_from_days(tf.cast(day, tf.int64), tf.math.floordiv, tf.where)
    whole = tf.cast(tf.stack([year, month, day_of_month], axis=1), tf.float64)
    fields = tf.concat([whole, tf.stack([hour, minute, second], axis=1)], axis=1)
    return tf.where(read[:, None], fields, tf.constant(np.nan, tf.float64))


def features_tf(
    strings: tf.Tensor,
    date_format: str,
    first_day: int = 0,
    day_count: int = 0,
    timed: bool = True,
    first_year: int = POSIX_FIRST_YEAR,
) -> tf.Tensor:
    """[n] strings to [n, DATE_FEATURES] float32 (see the module's docstring): NaN where no date, raw
    days and year (the network standardizes them); with `day_count`, then the day as a category index
    (day_index); `timed` and `first_year` as fields_tf's."""
    return features_of_fields_tf(fields_tf(strings, date_format, timed, first_year), first_day, day_count)


def features_of_fields_tf(fields: tf.Tensor, first_day=0, day_count=0) -> tf.Tensor:
    """features_tf of [n, 6] fields (fields_tf); `first_day` and `day_count` numbers, or [n] int64 tensors
    (a value for each row)."""
    import tensorflow as tf

    present = tf.logical_not(tf.math.is_nan(fields[:, 0]))
    whole = tf.cast(tf.where(present[:, None], fields, tf.ones_like(fields)), tf.int64)
    year, month, day = whole[:, 0], whole[:, 1], whole[:, 2]
    days = days_from_civil(year, month, day, tf.math.floordiv, tf.where)
    start_of_year = days_from_civil(year, tf.ones_like(month), tf.ones_like(day), tf.math.floordiv, tf.where)
    seconds = fields[:, 3] * 3600 + fields[:, 4] * 60 + fields[:, 5]
    cycles = [
        (tf.cast(month - 1, tf.float64), 12.0),
        (tf.cast(day - 1, tf.float64), 31.0),
        (tf.cast(tf.math.floormod(days + 3, 7), tf.float64), 7.0),  # 1970-01-01 was a Thursday: Monday is 0
        (tf.cast(days - start_of_year, tf.float64), 366.0),
        (seconds / 3600.0, 24.0),
    ]
    columns = [tf.cast(days, tf.float64) + seconds / 86400.0, fields[:, 0]]
    for value, period in cycles:
        angle = 2 * np.pi * value / period
        columns += [tf.sin(angle), tf.cos(angle)]
    features = tf.cast(tf.stack(columns, axis=1), tf.float32)
    features = tf.where(present[:, None], features, tf.constant(np.nan, tf.float32))
    if not tf.is_tensor(day_count) and not day_count:  # a number: 0 is no day index, as an int or numpy int
        return features
    return tf.concat([features, day_index(days, present, first_day, day_count)[:, None]], axis=1)


def columns_tf(values: dict[str, tf.Tensor], columns: list) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
    """Date columns' values ([n] strings each) to ({name: its features_tf, [n, DATE_FEATURES] and then a
    timestamp's day index}, {name: its values as keys_tf writes them, for each column whose vocabulary holds
    them so}). The columns of one format are read as one batch of n x k values: a read is some 400 ops, and ten
    date columns read one at a time, for their features and again for their keys, made a graph of 7,000 ops
    that took 2.5 s to build, once for training, once for evaluation and once for each export."""
    import tensorflow as tf

    groups: dict[tuple[str, bool, int], list] = {}
    for column in columns:
        groups.setdefault((column.date_format, column.timed, column.first_year), []).append(column)
    features, keys = {}, {}
    for (date_format, timed, first_year), group in groups.items():
        strings = tf.strings.strip(tf.stack([values[column.name] for column in group], axis=1))
        rows = tf.shape(strings)[0]
        flat = tf.reshape(strings, [-1])  # row by row: row i's value of column j is at i * k + j
        fields = fields_tf(flat, date_format, timed, first_year)
        first_day, day_count, width = 0, 0, DATE_FEATURES
        if any(column.day_count for column in group):  # each value gets its own column's span of days
            first_day = tf.tile(tf.constant([column.first_day for column in group], tf.int64), [rows])
            day_count = tf.tile(tf.constant([column.day_count for column in group], tf.int64), [rows])
            width += 1
        found = tf.reshape(features_of_fields_tf(fields, first_day, day_count), [rows, len(group), width])
        if any(column.iso_keys for column in group):
            written = tf.reshape(keys_of_fields_tf(fields, flat), [rows, len(group)])
        for j, column in enumerate(group):
            features[column.name] = found[:, j, : DATE_FEATURES + bool(column.day_count)]
            if column.iso_keys:
                keys[column.name] = written[:, j]
    return features, keys


def day_index(days: tf.Tensor, present: tf.Tensor, first_day, day_count) -> tf.Tensor:
    """A timestamp's day as a category index, float32: 1 + its place among the `day_count` days from
    `first_day` (days since 1970; numbers, or a value for each row), the training split's span; 0 for no date
    or a day outside the span, such as a day after training, whose weights were never learned. A day carries
    what its hour does not, such as the day's weather in a table of flights."""
    import tensorflow as tf

    place = days - first_day
    inside = present & (place >= 0) & (place < day_count)
    return tf.where(inside, tf.cast(place + 1, tf.float32), 0.0)
