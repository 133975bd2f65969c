"""What numbers look like as spreadsheets, locales and pandas write them, as regular expressions: one home for
preprocessing's reading (preprocessing/table_files/number_text.py, in pyarrow) and the serving graph's
(dataformat/numeric.numbers, in TensorFlow). Both run them with RE2, so each pattern means the same in both (the
sniffing of a file's decimal mark also runs a few with Python's re)."""

from __future__ import annotations

NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"  # what a number looks like once written plainly
COMMA_NUMBER = r"(\s*[+-]?\d*),(\d+(?:[eE][+-]?\d+)?\s*)"  # a number with a decimal comma: 3,14 -0,5 1,5E+03
POINT_NUMBER = r"[+-]?\d*\.\d+(?:[eE][+-]?\d+)?"
THOUSANDS = r"[+-]?\d{1,3}(?:,\d{3}){2,}"  # 1,234,567: commas between thousands, so no decimal comma
POINT_THOUSANDS = r"[+-]?\d{1,3}(?:\.\d{3}){2,}"  # 1.234.567: points between thousands, so no decimal point
# 1.234, 12.345.678 or 1 234: points or spaces (French, Excel's no-break ones too) between thousands, beside a decimal
# comma.
GROUPED = "\\s*[+-]?[1-9]\\d{0,2}(?:(?:\\.\\d{3})+|(?:[\u00a0\u202f ]\\d{3})+)"
THOUSANDS_MARKS = "[.\u00a0\u202f ]"
# 1,234.56 or 12,345: commas between thousands beside a decimal point (US and UK spreadsheets' formatted cells,
# quoted in a comma-separated file), or India's lakhs and crores (1,00,000 or 12,34,567.89).
POINT_GROUPED = r"\s*[+-]?(?:[1-9]\d{0,2}(?:,\d{3})+|[1-9]\d?(?:,\d{2})+,\d{3})(?:\.\d+)?\s*"
# 1'234.56: apostrophes between thousands (Swiss spreadsheets' formatted cells, beside a decimal point).
APOSTROPHE_GROUPED = "\\s*[+-]?[1-9]\\d{0,2}(?:['\u2019]\\d{3})+(?:\\.\\d+)?\\s*"
CURRENCIES = "$\u20ac\u00a3\u00a5\u20b9"  # $ € £ ¥ ₹: what spreadsheets write before or after an amount
# The bytes that say a column may hold such symbols: single ones, found at memchr's speed (€ and ₹ start with E2,
# £ and ¥ with C2).
DECORATION_BYTES = (b"$", b"%", b"\xe2", b"\xc2")
# A number with a currency symbol before it, or one or a percent sign after it ($1,234.56, -$5, $-5, 1.234,56 €,
# 12.5%): the sign and the number (\1 and \2 or \3) are kept. A value without a symbol is left as it is.
NUMBER_TEXT = "([+-]?[\\d.][\\d.,\u00a0\u202f ]*?)"
DECORATED = (
    f"^\\s*([+-]?)\\s*(?:[{CURRENCIES}]\\s*{NUMBER_TEXT}\\s*[{CURRENCIES}%]?|{NUMBER_TEXT}\\s*[{CURRENCIES}%])\\s*$"
)
# A negative amount as accounting formats write it, in parentheses, a currency symbol inside or outside them:
# (1,234.56), ($5), $(5), (1.234,56 €). It becomes the number after a minus (-1,234.56, -$5, -$5, -1.234,56 €).
PARENTHESIZED = (
    f"^\\s*([{CURRENCIES}]?)\\s*\\(\\s*([{CURRENCIES}]?\\s*(?:\\d|\\.\\d)[\\d.,\u00a0\u202f '\u2019]*?"
    f"(?:\\s*[{CURRENCIES}%])?)\\s*\\)\\s*([{CURRENCIES}]?)\\s*$"
)
# A number after the minus sign U+2212 (as typeset tables, Wikipedia's among them, write negatives): its number,
# after a hyphen-minus. A text that starts with the sign stays as written.
MINUS_SIGN = "^\\s*\u2212\\s*([\\d.][\\d.,\u00a0\u202f '\u2019]*?(?:\\s*[%])?)\\s*$"
# Zero as accounting formats show it: a dash beside a currency symbol ($ -, - €). A dash alone stays as written.
ACCOUNTING_ZERO = f"^\\s*(?:[{CURRENCIES}]\\s*[-\u2013\u2014]|[-\u2013\u2014]\\s*[{CURRENCIES}])\\s*$"
# A duration as pandas' to_csv writes a Timedelta: 0 days 00:12:34, 2 days 01:00:00.5, -1 days +23:59:50 (-10 s).
PANDAS_DURATION = (
    r"^\s*(?P<days>[+-]?\d+) days? \+?(?P<hours>\d{1,2}):(?P<minutes>\d{2}):(?P<seconds>\d{2}(?:\.\d+)?)\s*$"
)
# An ISO 8601 duration of days and a time (P0DT0H12M34S, as pandas' to_json writes a Timedelta, P-1DT23H59M50S a
# negative one; PT4M13S, as web APIs give a video's length); one of months or years (P1M) has no fixed length, and
# stays as written.
ISO_DURATION = (
    r"^\s*P(?:(?P<days>[+-]?\d+)D)?T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?\s*$"
)
DURATION_PARTS = (86400.0, 3600.0, 60.0, 1.0)  # the seconds of a duration's days, hours, minutes and seconds
