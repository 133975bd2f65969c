"""Date and timestamp columns: found in the common formats, read alike by preprocessing (Arrow) and by
training and serving (TensorFlow), and expanded into the features a model can use."""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import tensorflow as tf

from dataformat import dates, tables
from dataformat.categorical import OOV_INDEX
from dataformat.errors import UserError
from preprocessing.cli import main as preprocess
from preprocessing.cli import parse_args
from preprocessing.tables import TableOptions, build_table_dataset

AWKWARD = [
    "2013-01-01",
    "2013-01-01T10:00:00Z",
    " 2020-02-29 23:59:59.125+02:00 ",
    "1999-12-31 5:07",
    "2013-13-01",
    "2013-01-32",
    "2013-01-01 25:00",
    "01/02/2013",
    "31/12/2013",
    "12/31/2013 08:15:00",
    "2.3.2021",
    "5 Mar 2018",
    "05-mar-2018",
    "Mar 5, 2018",
    "March 5 2018",
    "Sept-2019",
    "Foo-2018",
    "jan 2017",
    "",
    "NA",
    "2013",
    "20130101",
    "20130101 1230",
    "2013/01/02",
    "3-4-2021",
    "31/12/99",
    "1/5/17",
    "05-JAN-17",
    "🙂 2013-01-01",
    "12/31/2013 11:59 PM",
    "1/2/2013 12:05 a.m.",
    "1/2/2013 12:30:15 pm",
    "1/2/2013 11:00 XM",
    "14:30",
    "2:30:15.5 pm",
    "38:31:00",
    "2017-01",
    "2017/01",
    "01/2017",
    "2017-01-01 06:00:42 EST",
    "Tue, 05 Jan 2017 10:00:00 GMT",
    "Thursday, January 5, 2017",
    "2017-01-01 TBD",
    "2020-01-05 10:00:00+00",
    "2020-01-05 10:00:00.123456-05",
    "20170105T103000Z",
    "20170105T1030",
    " 20170105T103000.25+0100",
    "20170105T1030000",
    "20171305T103000",
    "1939 Jan",
]


@pytest.mark.parametrize("date_format", [*dates.FORMATS, "%Y%m%d %H%M", "%m/%d/%Y %H:%M %p"])
def test_arrow_and_tensorflow_read_every_value_alike(date_format):
    from_arrow = dates.fields_arrow(pa.array(AWKWARD), date_format)
    from_tensorflow = dates.fields_tf(tf.constant(AWKWARD), date_format).numpy()
    np.testing.assert_array_equal(from_arrow, from_tensorflow)
    assert (~np.isnan(from_arrow[:, 0])).any()


@pytest.mark.parametrize("date_format", [*dates.FORMATS, "%s"])
def test_arrow_and_tensorflow_key_every_value_alike(date_format):
    values = pa.array(AWKWARD)
    from_arrow = dates.keys_of(dates.fields_arrow(values, date_format), values).to_pylist()
    assert [key.decode() for key in dates.keys_tf(tf.constant(AWKWARD), date_format).numpy()] == from_arrow


def test_one_instant_written_two_ways_is_one_value_of_a_date_columns_vocabulary(tmp_path):
    """A date's value is a category too, keyed on its text: the same day sent as 2020-01-05T00:00:00Z (JavaScript's
    toISOString) was outside the vocabulary where 2020-01-05 was in it. A model's metadata from before keys on the
    text as written, as its vocabulary holds it."""
    rows = [f"2020-01-{1 + i % 10:02d},{'ab'[i % 2]}" for i in range(200)]
    metadata = build_table_dataset(
        str(write(tmp_path / "t.csv", "day,label", rows)), str(tmp_path / "out"), TableOptions()
    )
    (day,) = metadata.columns
    assert day.iso_keys and "2020-01-05" in day.vocabulary
    written = ["2020-01-05", "2020-01-05T00:00:00Z", " 2020-01-05 00:00:00+00 ", "2020-01-05T01:00", "never"]
    slot = day.category_slot
    found = tables.to_vector({"day": tf.constant(written)}, (day,)).numpy()[:, slot]
    assert found[0] == found[1] == found[2] > OOV_INDEX and found[4] == OOV_INDEX
    assert found[3] == found[0]  # a time of day, which the column's dates never had, is left out
    before = tables.Column.from_json({k: v for k, v in day.to_json().items() if k != "iso_keys"})
    assert not before.iso_keys
    assert tables.to_vector({"day": tf.constant(written[:2])}, (before,)).numpy()[:, slot].tolist() == [
        found[0],
        OOV_INDEX,
    ]


def test_every_date_that_a_format_reads_bears_the_formats_mark():
    """What lets a column without it skip trying every format (find_date_format)."""
    values = pa.array(AWKWARD)
    read = np.any([~np.isnan(dates.fields_arrow(values, form)[:, 0]) for form in dates.FORMATS], axis=0)
    marked = pc.match_substring_regex(values, dates.FORMATS_MARK).to_numpy(zero_copy_only=False)
    assert read.sum() > 30 and not (read & ~marked).any()
    assert not pc.any(
        pc.match_substring_regex(pa.array(["daa66d13", "3c5120ce", "ab12", "7x"]), dates.FORMATS_MARK)
    ).as_py()


def test_a_day_the_calendar_lacks_is_no_date():
    """2020-02-30 read as a date, silently, and predicted otherwise than 2020-03-01."""
    values = ["2020-02-29", "2019-02-29", "2020-02-30", "2021-04-31", "2021-04-30", "1900-02-29", "2000-02-29"]
    read = dates.fields_arrow(pa.array(values), "%Y-%m-%d")
    np.testing.assert_array_equal(read, dates.fields_tf(tf.constant(values), "%Y-%m-%d").numpy())
    assert (~np.isnan(read[:, 0])).tolist() == [True, False, False, False, True, False, True]


def test_a_date_column_of_any_format_reads_iso_8601_too():
    """A model of dates written 01/05/2017 got 2017-01-05T10:30:00Z (JavaScript's toISOString) from a client and
    read it as a missing date; ISO 8601 is unambiguous, so every date format reads it, in Arrow and TensorFlow."""
    values = ["01/05/2017", "2017-01-05T10:30:00.000Z", "2017-01-05", "2017-13-05", "05/01/2017 10:30"]
    for date_format in ("%m/%d/%Y", "%d/%m/%Y", "%b %d, %Y"):
        read = dates.fields_arrow(pa.array(values), date_format)
        np.testing.assert_array_equal(read, dates.fields_tf(tf.constant(values), date_format).numpy())
        assert read[1].tolist() == [2017, 1, 5, 10, 30, 0] and read[2].tolist() == [2017, 1, 5, 0, 0, 0]
        assert np.isnan(read[3]).all()  # no month 13 in any format
    assert np.isnan(dates.fields_arrow(pa.array(values[1:2]), "%m/%d/%Y", exact=True)).all()  # as formats are found
    assert np.isnan(dates.fields_tf(tf.constant(values[1:2]), "%H:%M").numpy()).all()  # a time of day: no date
    # Unix times: pandas' to_json writes datetimes as milliseconds, where the same rows elsewhere hold ISO 8601.
    sent = ["1420114716000", "2015-01-01 12:18:36", "2015-01-01"]
    read = dates.fields_arrow(pa.array(sent), "%s")
    np.testing.assert_array_equal(read, dates.fields_tf(tf.constant(sent), "%s").numpy())
    assert read.tolist() == [[2015, 1, 1, 12, 18, 36]] * 2 + [[2015, 1, 1, 0, 0, 0]]


def test_formats_read_what_they_say():
    read = {text: row for text, row in zip(AWKWARD, dates.fields_arrow(pa.array(AWKWARD), "%Y-%m-%d"))}
    assert read["2013-01-01T10:00:00Z"].tolist() == [2013, 1, 1, 10, 0, 0]
    assert read[" 2020-02-29 23:59:59.125+02:00 "].tolist() == [2020, 2, 29, 23, 59, 59]  # the zone is left out
    assert all(np.isnan(read[text]).all() for text in ("2013-13-01", "2013-01-32", "2013-01-01 25:00", "2013", ""))
    day_first = dates.fields_arrow(pa.array(["31/12/2013", "12/31/2013"]), "%d/%m/%Y")
    assert day_first[0, :3].tolist() == [2013, 12, 31] and np.isnan(day_first[1]).all()
    named = dates.fields_arrow(pa.array(["Sept-2019", "Foo-2018"]), "%b-%Y")
    assert named[0, :3].tolist() == [2019, 9, 1] and np.isnan(named[1]).all()
    assert dates.fields_arrow(pa.array(["01/02/99", "01/02/05"]), "%d/%m/%y")[:, 0].tolist() == [1999, 2005]
    with pytest.raises(ValueError, match="needs a year"):
        dates.pattern("%d/%m")
    read = {text: row for text, row in zip(AWKWARD, dates.fields_arrow(pa.array(AWKWARD), "%Y-%m-%d"))}
    assert read["2017-01-01 06:00:42 EST"].tolist() == [2017, 1, 1, 6, 0, 42]  # R's times: a zone's name
    assert read["2020-01-05 10:00:00+00"].tolist() == [2020, 1, 5, 10, 0, 0]  # PostgreSQL's: an hour's offset
    assert np.isnan(read["2017-01-01 TBD"]).all()  # ... only after a time
    web = dates.fields_arrow(pa.array(["Tue, 05 Jan 2017 10:00:00 GMT"]), "%d %b %Y")  # HTTP's and e-mail's
    assert web[0].tolist() == [2017, 1, 5, 10, 0, 0]
    assert dates.fields_arrow(pa.array(["Thursday, January 5, 2017"]), "%b %d, %Y")[0, :3].tolist() == [2017, 1, 5]
    assert dates.fields_arrow(pa.array(["2017-01", "01/2017"]), "%Y-%m")[0, :3].tolist() == [2017, 1, 1]
    clock = dates.fields_arrow(pa.array(["14:30", "2:30:15.5 pm", "12:05 a.m.", "38:31:00", "24:00", "1:5"]), "%H:%M")
    assert clock[:3].tolist() == [[1970, 1, 1, 14, 30, 0], [1970, 1, 1, 14, 30, 15], [1970, 1, 1, 0, 5, 0]]
    assert np.isnan(clock[3:]).all()  # a duration past a day, and what no clock shows
    twelve = {text: row for text, row in zip(AWKWARD, dates.fields_arrow(pa.array(AWKWARD), "%m/%d/%Y"))}
    assert twelve["12/31/2013 11:59 PM"][3:5].tolist() == [23, 59] and twelve["1/2/2013 12:05 a.m."][3] == 0
    assert twelve["1/2/2013 12:30:15 pm"][3:].tolist() == [12, 30, 15] and np.isnan(twelve["1/2/2013 11:00 XM"]).all()
    basic = dates.fields_arrow(pa.array(AWKWARD[-6:-1]), "%Y%m%dT%H%M%S")  # ISO 8601's basic form
    assert basic[[0, 2]].tolist() == [[2017, 1, 5, 10, 30, 0]] * 2 and np.isnan(basic[[1, 3, 4]]).all()
    assert dates.fields_arrow(pa.array(["20170105T1030Z"]), "%Y%m%dT%H%M")[0].tolist() == [2017, 1, 5, 10, 30, 0]


def test_features_are_the_days_and_the_cycles():
    strings = ["2024-12-31 18:00", "1970-01-01", "1969-12-31", ""]
    features = dates.features_tf(tf.constant(strings), "%Y-%m-%d").numpy()
    assert features.shape == (4, dates.DATE_FEATURES)
    days, year = features[:, 0], features[:, 1]
    assert days[:3].tolist() == [20088.75, 0.0, -1.0] and year[:3].tolist() == [2024, 1970, 1969]
    named = dict(zip(dates.FEATURE_NAMES, features[0]))
    angle = {"month": 11 / 12, "day": 30 / 31, "weekday": 1 / 7, "yearday": 365 / 366, "hour": 18 / 24}
    for name, turn in angle.items():  # 2024-12-31 was a Tuesday (Monday is 0), the 366th day of a leap year
        assert named[f"{name}_sin"] == pytest.approx(np.sin(2 * np.pi * turn), abs=1e-6)
        assert named[f"{name}_cos"] == pytest.approx(np.cos(2 * np.pi * turn), abs=1e-6)
    assert dict(zip(dates.FEATURE_NAMES, features[1]))["weekday_sin"] == pytest.approx(np.sin(2 * np.pi * 3 / 7))
    assert np.isnan(features[3]).all()
    assert dates.days(dates.fields_arrow(pa.array(strings), "%Y-%m-%d"))[:3].tolist() == [20088.75, 0.0, -1.0]


def test_a_timestamps_day_is_a_category_of_the_training_days():
    strings = ["2024-12-31 00:00", "2024-12-31 23:59:59", "2025-01-01 00:00", "2024-12-30 23:00", "", "2025-01-02"]
    first = 20088  # 2024-12-31, days since 1970
    features = dates.features_tf(tf.constant(strings), "%Y-%m-%d", first_day=first, day_count=2).numpy()
    assert features.shape == (6, dates.DATE_FEATURES + 1)
    np.testing.assert_array_equal(
        features[:, : dates.DATE_FEATURES], dates.features_tf(tf.constant(strings), "%Y-%m-%d")
    )
    assert features[:, -1].tolist() == [1, 1, 2, 0, 0, 0]  # a day ends at midnight; before, after or none: 0
    assert dates.features_tf(tf.constant(strings), "%Y-%m-%d", day_count=np.int64(0)).shape == (6, dates.DATE_FEATURES)
    column = tables.Column("t", tables.DATE, date_format="%Y-%m-%d", first_day=first, day_count=2)
    assert column.day_labels()[1:] == ["2024-12-31", "2025-01-01"] and column.width == dates.DATE_FEATURES + 2
    assert tables.Column.from_json(column.to_json()) == column


def test_date_columns_of_one_format_are_read_as_one_batch_each_as_alone():
    """Several date columns, of two formats, with and without a day index or ISO keys: each column's features
    and keys are those it gets alone, and the graph reads each format once (ten dates read one at a time, for
    their features and again for their keys, made 7,000 ops that took 2.5 s to build for each graph)."""
    columns = [
        tables.Column("seen", tables.DATE, date_format="%Y-%m-%d", first_day=20088, day_count=2, iso_keys=True),
        tables.Column("born", tables.DATE, date_format="%Y-%m-%d", timed=False),
        tables.Column("left", tables.DATE, date_format="%Y-%m-%d", first_day=20000, day_count=200, iso_keys=True),
        tables.Column("paid", tables.DATE, date_format="%d/%m/%Y", iso_keys=True),
    ]
    rows = [["2024-12-31 10:00", "1980-02-29", " 2025-01-01 ", "31/12/2024"], ["", "never", "2024-13-01", "2024-12-31"]]
    values = {column.name: tf.constant([row[j] for row in rows]) for j, column in enumerate(columns)}
    features, keys = dates.columns_tf(values, columns)
    for column in columns:
        strings = tf.strings.strip(values[column.name])
        alone = dates.features_tf(strings, column.date_format, column.first_day, column.day_count, column.timed)
        np.testing.assert_array_equal(features[column.name].numpy(), alone.numpy())
        if column.iso_keys:
            assert keys[column.name].numpy().tolist() == dates.keys_tf(strings, column.date_format).numpy().tolist()
    assert set(keys) == {"seen", "left", "paid"} and features["seen"].shape == (2, dates.DATE_FEATURES + 1)
    empty, _ = dates.columns_tf({column.name: tf.constant([], tf.string) for column in columns}, columns)
    assert empty["seen"].shape == (0, dates.DATE_FEATURES + 1)  # a request of no rows

    def ops(count: int) -> int:
        graph = tf.Graph()
        with graph.as_default():
            many = [dataclasses.replace(columns[0], name=f"d{j}") for j in range(count)]
            tables.to_vector({column.name: tf.compat.v1.placeholder(tf.string, [None]) for column in many}, many)
        return len(graph.get_operations())

    assert ops(10) < 1.5 * ops(1)


def write(path, header, rows):
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_date_columns_are_found_in_their_format(tmp_path, caplog):
    rng = np.random.default_rng(0)
    days = np.datetime64("2010-01-01") + rng.integers(0, 3000, 400)
    rows = []
    for i, day in enumerate(days):
        year, month, dom = str(day).split("-")
        stamp = f"{day}T{i % 24:02d}:15:00Z"
        european = f"{dom}/{month}/{year}" if i != 7 else "soon"  # one bad cell
        basic = f"{year}{month}{dom}T{i % 24:02d}1500Z"  # ISO 8601's basic form
        rows.append(f"{stamp},{european},{['Jan', 'Feb', 'Mar'][i % 3]}-{year},{basic},{i % 4},{'ab'[i % 2]}")
    source = write(tmp_path / "t.csv", "stamp,european,month,basic,n,label", rows)
    with caplog.at_level(logging.INFO):
        metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    stamp, european, month, basic, n = metadata.columns
    assert [stamp.kind, european.kind, month.kind, basic.kind, n.kind] == [tables.DATE] * 4 + [tables.NUMERIC]
    assert [column.date_format for column in (stamp, european, month, basic)] == [
        "%Y-%m-%d",
        "%d/%m/%Y",
        "%b-%Y",
        "%Y%m%dT%H%M%S",
    ]
    assert stamp.day_count == european.day_count == month.day_count == 0  # times, but about one row a day
    assert abs(basic.mean - stamp.mean) < 1e-3 and abs(basic.std - stamp.std) < 1e-3  # the same times
    assert metadata.shape == (4 * (dates.DATE_FEATURES + 1) + 1,) and len(metadata.mean) == metadata.shape[0]
    every_day = (days - np.datetime64("1970-01-01")).astype(float)
    assert abs(european.mean - every_day.mean()) < 200 and abs(european.std - every_day.std()) < 200
    assert "column 2 ('european'): 1 value(s) are no dates in '%d/%m/%Y'" in caplog.text
    assert "stamp (date '%Y-%m-%d', 0 frequent values)" in caplog.text
    # Months as R's tsibble prints them (fpp3's us_employment: a categorical column of 969 values before).
    months = [f"{1939 + i // 12} {dates.MONTHS[i % 12].title()},{'ab'[i % 2]}" for i in range(240)]
    found = build_table_dataset(
        str(write(tmp_path / "m.csv", "Month,label", months)), str(tmp_path / "m"), TableOptions()
    )
    assert (found.columns[0].kind, found.columns[0].date_format) == (tables.DATE, "%Y %b")


def test_day_first_or_month_first_is_read_from_the_whole_block_and_a_guess_is_warned_of(tmp_path, caplog):
    """A file sorted with its days up to 12 first read month first on its first values, and its 13ths then made
    it a categorical column of rare values; a file of no day above 12 was read month first without a word."""
    days = sorted((np.datetime64("2015-01-01") + np.arange(0, 2000, 3)).tolist(), key=lambda d: (d.day > 12, d))
    rows = [f"{day:%d/%m/%Y},{i % 5},{'ab'[i % 2]}" for i, day in enumerate(days)]
    source = write(tmp_path / "sorted.csv", "when,n,label", rows)
    with caplog.at_level(logging.WARNING):
        column = build_table_dataset(str(source), str(tmp_path / "sorted"), TableOptions()).columns[0]
    assert (column.kind, column.date_format) == (tables.DATE, "%d/%m/%Y") and not caplog.text
    early = [day for day in days if day.day <= 12]
    rows = [f"{day:%m/%d/%Y},{i % 5},{'ab'[i % 2]}" for i, day in enumerate(early)]
    source = write(tmp_path / "early.csv", "when,n,label", rows)
    column = build_table_dataset(str(source), str(tmp_path / "early"), TableOptions()).columns[0]
    assert column.date_format == "%m/%d/%Y"
    said = "column 1 ('when'): no date has a day above 12, so '%m/%d/%Y' and '%d/%m/%Y' read them alike; read as"
    assert f"{said} '%m/%d/%Y': pass --date-format '%d/%m/%Y' if the day comes first" in caplog.text
    caplog.clear()
    build_table_dataset(str(source), str(tmp_path / "given"), TableOptions(date_format="%m/%d/%Y"))
    assert "read them alike" not in caplog.text  # the user said which


def test_dates_with_two_digit_years_are_found(tmp_path):
    """Excel's short US dates (1/5/17) and Oracle's DD-MON-YY (05-JAN-17) were categories."""
    days = np.datetime64("1995-01-01") + np.random.default_rng(2).integers(0, 9000, 300)
    rows = []
    for i, day in enumerate(days.tolist()):
        rows.append(f"{day.month}/{day.day}/{day:%y},{day:%d-%b-%y}".upper() + f",{i % 4},{'ab'[i % 2]}")
    source = write(tmp_path / "t.csv", "short,oracle,n,label", rows)
    metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    assert [(column.kind, column.date_format) for column in metadata.columns[:2]] == [
        (tables.DATE, "%m/%d/%y"),
        (tables.DATE, "%d-%b-%y"),
    ]
    every_day = (days - np.datetime64("1970-01-01")).astype(float)
    assert all(abs(column.mean - every_day.mean()) < 400 for column in metadata.columns[:2])  # 1995-2019, not 2095


def test_two_digit_years_read_as_the_hundred_years_from_eighty_before_preprocessing(tmp_path, caplog):
    """POSIX's 1969-2068 read a birth date of 25/11/63 (KMsurv's baboons, 1963) as 2063, which also put 1963-1968
    after 1969-1999. The dataset keeps its hundred years, so that training and serving read as preprocessing did,
    and a dataset written before it reads as POSIX's."""
    caplog.set_level(logging.INFO)
    first = datetime.date.today().year - 80
    days = np.datetime64(f"{first + 1}-01-01") + np.random.default_rng(3).integers(0, 365 * 60, 300)
    rows = [f"{day:%d/%m/%y},{day:%d-%b-%y}".upper() + f",{i % 4},{'ab'[i % 2]}" for i, day in enumerate(days.tolist())]
    source = write(tmp_path / "t.csv", "born,oracle,n,label", rows)
    metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    born, oracle = metadata.columns[:2]
    assert (born.date_format, oracle.date_format) == ("%d/%m/%y", "%d-%b-%y")
    assert born.first_year == oracle.first_year == first
    every_day = (days - np.datetime64("1970-01-01")).astype(float)
    assert all(abs(column.mean - every_day.mean()) < 1000 for column in (born, oracle))  # POSIX: 36 years later
    assert f"born (date '%d/%m/%y' (years {first}-{first + 99}), " in caplog.text
    with open(tmp_path / "out" / "metadata.json") as file:
        stored = {column["name"]: column for column in json.load(file)["columns"]}
    assert stored["born"]["first_year"] == first and "first_year" not in stored["n"]
    assert tables.Column.from_json(stored["born"]).first_year == first
    written_before = {key: value for key, value in stored["born"].items() if key != "first_year"}
    assert tables.Column.from_json(written_before).first_year == dates.POSIX_FIRST_YEAR
    # Serving reads as preprocessing did: the year feature of each value.
    values = ["25/11/63", f"01/01/{first % 100:02d}", f"31/12/{(first - 1) % 100:02d}"]
    features, _ = dates.columns_tf({"born": tf.constant(values)}, [born])
    assert features["born"][:, 1].numpy().tolist() == [1963, first, first + 99]
    assert dates.fields_arrow(pa.array(values), born.date_format, first_year=born.first_year)[:, 0].tolist() == [
        1963, first, first + 99,
    ]  # fmt: skip
    assert dates.fields_arrow(pa.array(values[:1]), born.date_format)[:, 0].tolist() == [2063]  # POSIX's
    # --two-digit-years names the first year: 1969 for POSIX's, where births of 1947-1968 read as 2047-2068.
    posix = build_table_dataset(str(source), str(tmp_path / "posix"), TableOptions(first_year=1969)).columns[0]
    assert posix.first_year == 1969 and posix.mean - born.mean > 10_000
    flags = ["--input", str(source), "--label-column", "label", "--output", str(tmp_path / "flag")]
    assert preprocess([*flags, "--two-digit-years", "1969"]) == 0
    with open(tmp_path / "flag" / "metadata.json") as file:
        assert json.load(file)["columns"][0]["first_year"] == 1969
    with pytest.raises(UserError, match="'19x9' is not a year"):
        parse_args([*flags, "--two-digit-years", "19x9"])


def test_dates_of_several_words_are_dates_not_free_text(tmp_path):
    """ "Mar 05, 2017" and "3/5/2017 11:59 PM" are three words, mostly distinct, as free text is."""
    rng = np.random.default_rng(1)
    days = np.datetime64("2015-01-01") + rng.integers(0, 2000, 300)
    named = [str(np.datetime_as_string(day)) for day in days]
    rows = []
    for i, day in enumerate(named):
        year, month, dom = day.split("-")
        spelt = f"{np.datetime64(day, 'M').astype(object).strftime('%b')} {dom}, {year}"  # the day's own month
        clock = f"{int(month)}/{int(dom)}/{year} {1 + i % 12}:{i % 60:02d} {'AP'[i % 2]}M"
        rows.append(f'"{spelt}",{clock},{"ab"[i % 2]}')
    source = write(tmp_path / "t.csv", "spelt,clock,label", rows)
    metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    found = [(column.kind, column.date_format) for column in metadata.columns]
    assert found == [(tables.DATE, "%b %d, %Y"), (tables.DATE, "%m/%d/%Y")]


def test_a_column_of_dates_and_one_word_is_dates_that_word_a_missing_date(tmp_path, caplog):
    """An end date's "present" or "never", beside dates in more than the 2% of bad cells and up to half the rows.
    Before, each made its column categorical: thousands of dates hashed, their order lost. Two words, or one in
    more than half the rows, do not."""
    days = np.datetime64("2005-01-01") + np.random.default_rng(3).integers(0, 4000, 400)
    rows = []
    for i, day in enumerate(np.datetime_as_string(days)):
        left = "present" if i % 10 < 3 else day  # in 30% of the rows
        ended = "Never" if i % 20 == 7 else day
        two = "never" if i % 20 == 3 else "soon" if i % 20 == 4 else day
        mostly = day if i % 5 == 0 else "unknown"
        rows.append(f"{left},{ended},{two},{mostly},{'ab'[i % 2]}")
    source = write(tmp_path / "t.csv", "left,ended,two,mostly,label", rows)
    with caplog.at_level(logging.INFO):
        metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    left, ended, two, mostly = metadata.columns
    assert [column.kind for column in metadata.columns] == [tables.DATE] * 2 + [tables.CATEGORICAL] * 2
    assert (left.date_format, ended.date_format) == ("%Y-%m-%d", "%Y-%m-%d")
    assert "column 1 ('left'): its 120 values 'present' are read as missing dates" in caplog.text
    assert "column 2 ('ended'): its 20 values 'Never' are read as missing dates" in caplog.text
    assert "are no dates in" not in caplog.text  # a spelling, not bad cells
    assert "present" in left.vocabulary  # a category of its own to the model, as it is at serving time
    every_day = (days - np.datetime64("1970-01-01")).astype(float)
    assert abs(left.mean - every_day.mean()) < 300  # the dates' statistics, the word left out of them


def test_qt_predict_warns_of_no_date_but_a_word_training_kept(caplog):
    from trainer.input_warnings import unreadable_dates_warned

    ended = tables.Column(
        "ended", tables.DATE, mean=18263, std=30, vocabulary=("never", "2020-01-02"), date_format="%Y-%m-%d"
    )  # dates about 2020-01-01
    rows = [("f:2", {"ended": "never"}), ("f:3", {"ended": "2020-01-05"}), ("f:4", {"ended": "soon"})]
    rows.append(("f:5", {"ended": None}))
    with caplog.at_level(logging.WARNING):
        assert list(unreadable_dates_warned(iter(rows), "f", [ended])) == rows
    assert [record.getMessage() for record in caplog.records] == [
        "f:4: column 'ended': 'soon' is no date in '%Y-%m-%d'; read as missing"
    ]
    caplog.clear()
    us = dataclasses.replace(ended, date_format="%m/%d/%Y")
    rows = [("f:2", {"ended": "01/05/2020"}), ("f:3", {"ended": "2020-01-05T10:00:00Z"}), ("f:4", {"ended": "soon"})]
    with caplog.at_level(logging.WARNING):
        assert list(unreadable_dates_warned(iter(rows), "f", [us])) == rows  # ISO 8601 reads in any format
    assert [record.getMessage() for record in caplog.records] == [
        "f:4: column 'ended': 'soon' is no date in '%m/%d/%Y' nor ISO 8601; read as missing"
    ]


def test_a_timestamp_with_many_rows_a_day_gets_its_training_days_as_categories(tmp_path, caplog):
    rows = [f"2013-03-{1 + i % 20:02d} {i % 24:02d}:00,2013-03-{1 + i % 20:02d},{'ab'[i % 2]}" for i in range(600)]
    source = write(tmp_path / "t.csv", "stamp,day,label", rows)
    with caplog.at_level(logging.INFO):
        stamp, day = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns
    assert (stamp.first_day, stamp.day_count, day.day_count) == (15765, 20, 0)  # 2013-03-01 to 20; dates alone: none
    assert "stamp (date '%Y-%m-%d', 116 frequent values, its 20 days as categories)" in caplog.text
    # A client's time of day for a column of dates alone is left out: the model never saw one (its hour's cycle
    # moved a prediction more than another day did). A timestamp column keeps it.
    assert (stamp.timed, day.timed) == (True, False) and tables.Column.from_json(day.to_json()) == day
    sent = tf.constant(["2013-03-05 10:00", "2013-03-05", "2013-03-05T18:30:00Z"])
    for function in (dates.features_tf, dates.keys_tf):
        alone, timed = (function(sent, day.date_format, timed=column.timed).numpy() for column in (day, stamp))
        assert np.all(alone[0] == alone[1]) and np.all(alone[2] == alone[1])
        assert not np.all(timed[0] == timed[1])


def test_a_column_of_times_of_day_gets_the_hours_cycle_and_no_day(tmp_path, caplog):
    rows = [f"{i % 24}:{i * 7 % 60:02d}{' PM' if i % 5 == 0 else ''},{'ab'[i % 24 >= 12]}" for i in range(300)]
    source = write(tmp_path / "t.csv", "at,label", rows)
    with caplog.at_level(logging.INFO):
        (at,) = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns
    assert (at.kind, at.date_format, at.day_count) == (tables.DATE, "%H:%M", 0)
    assert "at (time of day '%H:%M', " in caplog.text
    hours = dates.features_tf(tf.constant(["6:00", "6:00 PM", "18:00", "never"]), at.date_format).numpy()[:, -2:]
    np.testing.assert_allclose(hours[:3], [[1, 0], [-1, 0], [-1, 0]], atol=1e-6)  # the hour's sine and cosine
    assert np.isnan(hours[3]).all()


def test_the_flags_name_date_columns_and_their_format(tmp_path):
    rows = [f"{2000 + i % 20}{1 + i % 12:02d}{1 + i % 28:02d},{'ab'[i % 2]}" for i in range(100)]  # 20130101
    source = write(tmp_path / "t.csv", "day,label", rows)
    assert build_table_dataset(str(source), str(tmp_path / "a"), TableOptions()).columns[0].kind == tables.NUMERIC
    options = TableOptions(dates=("day",), date_format="%Y%m%d")
    column = build_table_dataset(str(source), str(tmp_path / "b"), options).columns[0]
    assert column.kind == tables.DATE and column.date_format == "%Y%m%d"
    found = build_table_dataset(str(source), str(tmp_path / "c"), TableOptions(dates=("day",))).columns[0]
    assert found.date_format == "%Y%m%d"  # numbers are tried as dates in a column the flag names
    counts = write(tmp_path / "n.csv", "day,label", [f"{i % 7},{'ab'[i % 2]}" for i in range(100)])
    with pytest.raises(
        UserError, match=r"column 1 \('day'\): no one format reads 50% of its first values as dates \(of "
    ):
        build_table_dataset(str(counts), str(tmp_path / "e"), TableOptions(dates=("day",)))
    with pytest.raises(UserError, match="--numeric-columns and --date-columns both name 'day'"):
        build_table_dataset(str(source), str(tmp_path / "d"), TableOptions(dates=("day",), numeric=("day",)))
    with pytest.raises(UserError, match="--date-columns and --ignore-columns both name 'day'"):  # it was left out
        build_table_dataset(str(source), str(tmp_path / "d"), TableOptions(dates=("day",), ignore=("day",)))
    # --date-format is the format of the columns it reads, and the others' are still found (an ISO column beside it
    # became a category of distinct values); a format that reads no column is refused (it was taken silently).
    rows = [f"2020-{1 + i % 12:02d}-{1 + i % 28:02d},{1 + i % 28:02d}/{1 + i % 12:02d}/20 10:{i % 60:02d},{'ab'[i % 2]}"
            for i in range(100)]  # fmt: skip
    two = write(tmp_path / "two.csv", "created,shipped,label", rows)
    found = build_table_dataset(str(two), str(tmp_path / "f"), TableOptions(date_format="%d/%m/%y %H:%M")).columns
    assert [(column.kind, column.date_format) for column in found] == [
        (tables.DATE, "%Y-%m-%d"),
        (tables.DATE, "%d/%m/%y %H:%M"),
    ]
    with pytest.raises(UserError, match=r"--date-format %Y-%d-%m: no column's values read as dates in it; the date "):
        build_table_dataset(str(two), str(tmp_path / "g"), TableOptions(date_format="%Y-%d-%m"))


def test_a_date_column_of_many_other_values_is_told_to_be_a_category_not_to_swap(tmp_path, caplog):
    """A column of dates and ranges ('09/20/2011 - 10/28/2011', 14%) was told to pass --date-format '%d/%m/%Y',
    which then "read no column"; the advice stands only where the other order reads the values that are no dates
    (dates whose later rows have a day above 12 are read in that order by themselves)."""
    good = [f"{1 + i % 12:02d}/{1 + i % 12:02d}/2011" for i in range(200)]  # either order: month first is guessed
    for name, later in (("ranges", [f"09/{10 + i % 9}/2011 - 10/28/2011" for i in range(100)]),
                        ("swapped", [f"{13 + i % 15}/0{1 + i % 9}/2011" for i in range(100)])):  # fmt: skip
        rows = [f"{day},{'ab'[i % 2]}" for i, day in enumerate(good + later)]
        source = write(tmp_path / f"{name}.csv", "when,label", rows)
        found = build_table_dataset(str(source), str(tmp_path / name), TableOptions()).columns[0]
    assert (found.kind, found.date_format) == (tables.DATE, "%d/%m/%Y")  # the swapped file's
    said = [record.getMessage() for record in caplog.records if "of its values are no dates" in record.getMessage()]
    assert len(said) == 1 and "100 of its values are no dates in it ('09/10/2011 - 10/28/2011'" in said[0]
    assert said[0].endswith(
        "): it is read as a category; pass --date-columns when to read its dates as dates and the rest as missing"
    )


def test_files_whose_dates_read_in_different_formats_are_refused_naming_both(tmp_path):
    """Each file's format is found in it: one file of days 1-12 read %m/%d/%Y, the next %d/%m/%Y, and the model kept
    the first format only, so half the dates were missing to it and the summary said none were."""
    (tmp_path / "months").mkdir()
    for name, days in (("a.csv", range(1, 13)), ("b.csv", range(13, 29))):
        write(
            tmp_path / "months" / name,
            "day,label",
            [f"{days[i % len(days)]:02d}/01/2024,{'ab'[i % 2]}" for i in range(60)],
        )
    refused = r"column 1 \('day'\): its dates are written as '%m/%d/%Y' reads them in .*a.csv, and as '%d/%m/%Y' "
    with pytest.raises(
        UserError, match=refused + r"does in .*b.csv; give the one format of every file with --date-format$"
    ):
        build_table_dataset(str(tmp_path / "months"), str(tmp_path / "out"), TableOptions(label_column="label"))
    options = TableOptions(label_column="label", date_format="%d/%m/%Y")
    column = build_table_dataset(str(tmp_path / "months"), str(tmp_path / "out"), options).columns[0]
    assert column.kind == tables.DATE and column.missing == 0


def test_unix_times_read_as_python_reads_them_in_every_unit():
    seconds = np.random.default_rng(3).integers(-5 * 10**9, 5 * 10**10, 5000)  # 1811 to 3554
    scaled = ["1500000000", "1500000000000", "1500000000000000", "1500000000000000000", " 1.5e9 ", "1500000000.9"]
    strings = [str(value) for value in seconds] + scaled + ["soon", "", "1e400", "12 34", "-1"]
    from_arrow = dates.fields_arrow(pa.array(strings), dates.UNIX)
    np.testing.assert_array_equal(from_arrow, dates.fields_tf(tf.constant(strings), dates.UNIX).numpy())
    epoch = datetime.datetime(1970, 1, 1)
    for value, row in zip(seconds.tolist(), from_arrow):
        time = epoch + datetime.timedelta(seconds=value)
        assert row.tolist() == [time.year, time.month, time.day, time.hour, time.minute, time.second]
    assert (from_arrow[len(seconds) : -5] == [2017, 7, 14, 2, 40, 0]).all()  # s, ms, µs, ns, exponent, fraction
    assert np.isnan(from_arrow[-5:-1]).all() and from_arrow[-1].tolist() == [1969, 12, 31, 23, 59, 59]
    assert not dates.is_time_of_day(dates.UNIX)
    with pytest.raises(ValueError, match="nor %s alone"):
        dates.check("%Y %s")


def test_numbers_in_columns_named_like_times_are_found_to_be_dates(tmp_path, caplog):
    """MovieLens' ratings have a `timestamp` of Unix seconds; exports write dates as 20180305."""
    rng = np.random.default_rng(4)
    stamps = rng.integers(1_400_000_000, 1_700_000_000, 300)
    rows = [
        f"{stamp},{stamp * 1000 + 7},{20000101 + i % 28},{rng.integers(0, 5000)},{'ab'[i % 2]}"
        for i, stamp in enumerate(stamps.tolist())
    ]
    source = write(tmp_path / "t.csv", "timestamp,moment_ms,date,time,label", rows)
    with caplog.at_level(logging.INFO):
        stamp, moment, day, time = build_table_dataset(str(source), str(tmp_path / "a"), TableOptions()).columns
    assert (stamp.kind, stamp.date_format, day.kind, day.date_format) == (tables.DATE, "%s", tables.DATE, "%Y%m%d")
    assert moment.kind == time.kind == tables.NUMERIC  # not named like a time; a duration, not in LIKELY_YEARS
    every_day = stamps / 86400
    assert abs(stamp.mean - every_day.mean()) < 100 and abs(stamp.std - every_day.std()) < 100
    assert "timestamp (Unix time '%s', " in caplog.text
    assert "column 2 ('moment_ms') holds integers that read as Unix times" in caplog.text
    options = TableOptions(dates=("moment_ms",), numeric=("timestamp",))
    stamp, moment, _, _ = build_table_dataset(str(source), str(tmp_path / "b"), options).columns
    assert (stamp.kind, moment.kind, moment.date_format) == (tables.NUMERIC, tables.DATE, "%s")


def test_a_dates_values_are_categories_only_where_they_tell_the_label_beyond_their_time(tmp_path, caplog):
    """COMPAS's ten dates as categories (a person's custody days, seen 3 or more times each) were memorized: ROC AUC
    0.841, and 0.869 without them. Flights' hours tell the hour's weather. Each date's values, and a timestamp's
    days, are checked on held-out folds of the training rows against the label shares of their stretch of time."""
    rng = np.random.default_rng(0)
    hours = [f"2024-{1 + h // 200:02d}-{1 + h % 200 // 8:02d}T{h % 8 + 8:02d}:00" for h in range(800)]
    storm = rng.random(len(hours)) < 0.3  # an hour's weather, for every row of that hour
    rows = []
    for _ in range(6000):
        hour = int(rng.integers(len(hours)))
        day = int(rng.integers(365))  # the custody day: later days recidivate more, the day itself tells nothing
        late = rng.random() < (0.7 if storm[hour] else 0.15)
        recid = rng.random() < 0.2 + 0.5 * day / 365
        custody = (datetime.date(2013, 1, 1) + datetime.timedelta(days=day)).isoformat()
        rows.append(f"{hours[hour]},{custody},{'yes' if late and recid else 'no' if not late and not recid else 'mid'}")
    source = write(tmp_path / "t.csv", "time_hour,in_custody,label", rows)
    with caplog.at_level(logging.INFO):
        hour, custody = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns
    assert hour.kind == custody.kind == tables.DATE
    assert len(hour.vocabulary) > 700  # the hours' weather: kept
    assert custody.vocabulary == () and custody.hashed == 1.0 and custody.mean > 0  # its date features stay
    said = [r.getMessage() for r in caplog.records if "dates are left out as categories" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("column 2 ('in_custody'): its 365 dates are left out as categories")
    # The hours' days, as categories, tell no more than their stretch of time: their hours differ, not their days.
    assert hour.day_count == 0 and "column 1 ('time_hour'): its 116 days are left out as categories" in caplog.text


def test_a_time_of_days_values_left_out_as_categories_are_said_to_be_times_of_day(tmp_path, caplog):
    rng = np.random.default_rng(0)
    rows = [f"{int(rng.integers(24)):02d}:{int(rng.integers(0, 60, 1)[0]) // 15 * 15:02d},{rng.integers(2)}"
            for _ in range(4000)]  # fmt: skip
    source = write(tmp_path / "t.csv", "opens,label", rows)
    with caplog.at_level(logging.INFO):
        (opens,) = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns
    assert opens.kind == tables.DATE and dates.is_time_of_day(opens.date_format) and opens.vocabulary == ()
    assert "column 1 ('opens'): its 96 times of day are left out as categories" in caplog.text
