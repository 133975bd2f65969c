"""--warm-start-from: a new run on new rows starts from an earlier table model; a category or word that
kept its name keeps its weights, wherever its index and its column now are, and new ones start fresh."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from test_text import review_rows, write_csv

from dataformat import tables
from dataformat.errors import UserError
from dataformat.tables import DAY
from preprocessing.tables import TableOptions, build_table_dataset
from trainer import experiment, networks, warm_start
from trainer.columns.categorical import EmbeddingTable, categorical_inputs, embedding_tables
from trainer.config import Config
from trainer.export import latest_export

OLD_CITIES = [f"city-{i}" for i in range(30)]
NEW_CITIES = [f"city-{i}" for i in range(10, 40)]  # 20 kept, 10 gone, 10 new
OLD_DAYS, NEW_DAYS = range(0, 30), range(10, 40)  # days after 2024-01-01: 20 in both spans


def table(
    folder, cities, seed, header=("city", "channel", "review", "price", "seen", "label"), label=str, days=OLD_DAYS
):
    """A table of reviews with a city column of many values (an embedding), a channel (one-hot) and a
    timestamp, whose days are categories too (an embedding)."""
    rng = np.random.default_rng(seed)
    rows = []
    for row in review_rows(400, seed):
        named = dict(zip(("channel", "review", "price", "label"), row), city=str(rng.choice(cities)))
        # A day's parity follows the label, mostly: its days carry more than their time, and stay categories.
        parity = (named["label"] == "pos") == (rng.random() < 0.8)
        named["seen"] = f"{np.datetime64('2024-01-01') + int(rng.choice(days[parity::2]))} 08:30"
        named["label"] = label(named["label"])
        rows.append([named[name] for name in header])
    source = write_csv(folder.parent / f"{folder.name}.csv", rows, header=header)
    options = TableOptions(label_column="label", min_frequency=1)
    return build_table_dataset(str(source), str(folder), options, examples_per_record=1)


@pytest.fixture(scope="module")
def old_job(tmp_path_factory):
    root = tmp_path_factory.mktemp("warm")
    table(root / "old", OLD_CITIES, seed=0)
    config = Config(data_dir=str(root / "old"), job_dir=str(root / "job"), train_steps=60, model="wide_deep")
    experiment.run(config)
    return config


def _weights(job_dir: str) -> tf.train.CheckpointReader:
    return tf.train.load_checkpoint(tf.train.latest_checkpoint(job_dir))


def test_rows_move_to_their_values_new_index_and_new_values_start_fresh(old_job, tmp_path, caplog):
    # The new table's columns come in another order, so the city's layers have other names too.
    header = ("channel", "city", "review", "price", "seen", "label")
    metadata = table(tmp_path / "new", NEW_CITIES, seed=1, header=header, days=NEW_DAYS)
    config = Config(
        data_dir=str(tmp_path / "new"),
        job_dir=str(tmp_path / "job"),
        model="wide_deep",
        train_steps=1,
        learning_rate=1e-9,
        warm_start_from=old_job.job_dir,
    )  # fmt: skip: one step that moves nothing, so the checkpoint holds the starting weights
    with caplog.at_level(logging.INFO, logger="trainer"):
        experiment.run(config)
    old, new = _weights(old_job.job_dir), _weights(config.job_dir)
    old_metadata = warm_start.locate(old_job.job_dir).metadata
    old_labels = networks.row_labels(old_metadata, old_job.hidden_units)
    new_labels = networks.row_labels(metadata, config.hidden_units)
    # The city's, the timestamp's and its days' embeddings, a table a width, a row "<column> value"; each column's at
    # its new offset, the city's after the channel moved ahead of it.
    embedded = [name for name in new_labels if name.startswith("classifier/embeddings_of_width_")]
    assert embedded and embedded == [name for name in old_labels if name.startswith("classifier/embeddings_of_width_")]
    day = "2024-01-20"  # in both spans, at another index in each
    day_rows = [[(name, label) for name in embedded for label in found[name] if label == f"<seen{DAY}> {day}"]
                for found in (new_labels, old_labels)]  # fmt: skip
    assert len(day_rows[0]) == 1 and day_rows[0] == day_rows[1]  # the day's embedding
    day_table, day_label = day_rows[0][0]
    assert new_labels[day_table].index(day_label) != old_labels[day_table].index(day_label)
    linear = "classifier/linear/wide_categories/embeddings"  # every column's linear weights, a row "<column> value"
    assert sum(label.endswith(f"> {day}") for label in new_labels[linear]) == 1  # the day's, among them
    checked = 0
    for name, before_name in (
        *((name, name) for name in embedded),
        (linear, linear),  # the city's, the channel's and the days' rows, each column's at its new offset
        ("classifier/dense/kernel", "classifier/dense/kernel"),  # its rows: numbers, one-hot channel, city
        ("classifier/text/words_2/words/embeddings", "classifier/text/words_2/words/embeddings"),
    ):
        before, after = old.get_tensor(before_name), new.get_tensor(name)
        was = {label: k for k, label in enumerate(old_labels[before_name])}
        for k, label in enumerate(new_labels[name]):
            if label in was:
                np.testing.assert_allclose(after[k], before[was[label]], atol=1e-6, err_msg=f"{name} {label}")
                checked += 1
            elif name.startswith("classifier/linear/"):
                # The linear part starts at zero, as a fresh one does (the one step moves it by 1e-9 at most).
                assert np.abs(after[k]).max() < 1e-6, f"{name} {label}"
            else:
                assert np.abs(after[k]).max() <= warm_start.NEW_ROWS_RANGE
                # No old row copied. One number of it may equal one of the old ones: float32's uniform draws
                # have 2^23 values, so among thousands that happens (it failed a CI run so).
                assert after[k].size == 1 or not (before == after[k]).all(axis=-1).any(), f"{name} {label}"
    city = f"<city> {json.dumps('city-39')}"  # a new city: checked above to start fresh
    assert [name for name in embedded if city in new_labels[name]] and not [
        n for n in embedded if city in old_labels[n]
    ]
    assert checked > 120
    np.testing.assert_allclose(new.get_tensor("classifier/logits/kernel"), old.get_tensor("classifier/logits/kernel"),
                               atol=1e-6)  # fmt: skip
    assert ("remapped classifier/embeddings_of_width_11/embeddings: 65 of its 95 rows kept their value's weights, 30 "
            "start fresh (city 22 of 32, seen 22 of 32, seen/day 21 of 31)") in caplog.text  # fmt: skip
    # A rerun in the same job dir resumes from its own checkpoint; the earlier model is not read again.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainer"):
        experiment.run(config.__class__(**{**config.__dict__, "train_steps": 2}))
    assert "Resuming from" in caplog.text and "Warm start from" not in caplog.text


def test_a_remapped_tables_line_names_what_its_columns_kept_those_with_fresh_rows_first():
    new = [f"<c{k}> {value}" for k in range(12) for value in ("a", "b")]
    old = [label for label in new if label != "<c11> b"]
    assert warm_start._by_column(new, old) == (
        " (c11 1 of 2, c0 2 of 2, c1 2 of 2, c2 2 of 2, c3 2 of 2, c4 2 of 2, c5 2 of 2, c6 2 of 2, c7 2 of 2, "
        "c8 2 of 2, and 2 more columns)"
    )
    assert warm_start._by_column(["<padding>", "word"], ["word"]) == ""  # a text column's words: no columns


def without_rank_rows(job_dir: str) -> None:
    """Rewrites the job's checkpoint as a model trained before the quantile ranks would have it: no rows for
    them in the first dense layer's kernel (nor in its optimizer's slots)."""
    path = tf.train.latest_checkpoint(job_dir)
    labels = networks.row_labels(warm_start.locate(job_dir).metadata, (256,))["classifier/dense/kernel"]
    kept = [k for k, label in enumerate(labels) if not label.endswith(" rank>")]
    assert len(kept) < len(labels)
    reader = tf.train.load_checkpoint(path)
    with tf.Graph().as_default():
        variables = []
        for name, _ in tf.train.list_variables(path):
            value = reader.get_tensor(name)
            if name.startswith("classifier/dense/kernel"):
                value = value[kept]
            variables.append(tf.compat.v1.Variable(value, name=name))
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(session, path, write_meta_graph=False)


def test_a_model_from_before_the_quantile_ranks_keeps_its_rows_and_the_ranks_start_fresh(old_job, tmp_path, caplog):
    earlier = shutil.copytree(old_job.job_dir, tmp_path / "earlier")
    without_rank_rows(str(earlier))
    table(tmp_path / "new", NEW_CITIES, seed=1, days=NEW_DAYS)  # new vocabularies: the kernel's rows move
    config = Config(data_dir=str(tmp_path / "new"), job_dir=str(tmp_path / "job"), model="wide_deep", train_steps=1,
                    learning_rate=1e-9, warm_start_from=str(earlier))  # fmt: skip
    with caplog.at_level(logging.INFO, logger="trainer"):
        experiment.run(config)
    assert "remapped classifier/dense/kernel" in caplog.text
    before = _weights(str(earlier)).get_tensor("classifier/dense/kernel")
    after = _weights(config.job_dir).get_tensor("classifier/dense/kernel")
    labels = networks.row_labels(warm_start.locate(config.job_dir).metadata, (256,))["classifier/dense/kernel"]
    earlier_labels = networks.row_labels(warm_start.locate(str(earlier)).metadata, (256,))["classifier/dense/kernel"]
    earlier_labels = [label for label in earlier_labels if not label.endswith(" rank>")]  # as rewritten
    rank = labels.index("<price rank>")
    assert np.abs(after[rank]).max() <= warm_start.NEW_ROWS_RANGE
    # Drawn, not copied: no earlier row (a number here may equal one of the earlier 12,800 by chance).
    assert not any(np.allclose(after[rank], row, atol=1e-6) for row in before)
    price = labels.index("<price 0>"), earlier_labels.index("<price 0>")
    np.testing.assert_allclose(after[price[0]], before[price[1]], atol=1e-6)  # the price's number, kept


def with_a_table_a_column(job_dir: str) -> None:
    """Rewrites the job's checkpoint as jobs trained before 2026-12-07 kept it: a table a categorical input of
    linear weights and of embeddings (and of their averages and optimizer's slots), each named after its place."""
    path = tf.train.latest_checkpoint(job_dir)
    categories = categorical_inputs(warm_start.locate(job_dir).metadata)
    every = list(range(len(categories)))
    linear = EmbeddingTable("", 0, every, [sum(c.size for c in categories[:j]) for j in every], 0)
    split = {f"classifier/{table.name}": (table, "classifier/embedding_") for table in embedding_tables(categories)}
    split["classifier/linear/wide_categories"] = (linear, "classifier/linear/wide_")
    reader = tf.train.load_checkpoint(path)
    with tf.Graph().as_default():
        variables = []
        for name, _ in tf.train.list_variables(path):
            value = reader.get_tensor(name)
            match = re.fullmatch(r"(averaged/)?(.+?)(/embeddings(?:/.+)?)", name)  # (averaged/)LAYER/embeddings(/SLOT)
            averaged, layer, rest = match.groups(default="") if match else ("", "", "")
            if layer not in split:
                variables.append(tf.compat.v1.Variable(value, name=name))
                continue
            table, renamed = split[layer]
            for j, offset in zip(table.members, table.offsets):
                part = value[offset : offset + categories[j].size]
                variables.append(tf.compat.v1.Variable(part, name=f"{averaged}{renamed}{categories[j].place}{rest}"))
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(session, path, write_meta_graph=False)


def test_a_job_that_kept_a_table_a_column_resumes_so_and_a_warm_start_from_it_moves_their_rows_by_value(
    old_job, tmp_path, caplog
):
    earlier = str(shutil.copytree(old_job.job_dir, tmp_path / "earlier"))
    with_a_table_a_column(earlier)
    stored = [name for name, _ in tf.train.list_variables(earlier)]
    assert "classifier/embedding_0/embeddings" in stored and not any("embeddings_of_width" in n for n in stored)
    with caplog.at_level(logging.INFO, logger="trainer"):
        experiment.run(Config(**{**old_job.__dict__, "job_dir": earlier, "train_steps": 70}))
    assert "Resuming from the checkpoint of step 60" in caplog.text
    before = _weights(earlier)
    assert before.get_tensor("global_step") == 70 and before.has_tensor("classifier/linear/wide_0/embeddings")
    table(tmp_path / "new", NEW_CITIES, seed=1, days=NEW_DAYS)
    config = Config(data_dir=str(tmp_path / "new"), job_dir=str(tmp_path / "job"), model="wide_deep", train_steps=1,
                    learning_rate=1e-9, warm_start_from=earlier)  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainer"):
        experiment.run(config)
    assert "keeps a table a categorical column, as jobs trained before 2026-12-08 did: its 7 tables are joined into " \
           "today's 2 for the warm start" in caplog.text  # fmt: skip
    assert "remapped classifier/embeddings_of_width_11/embeddings: 65 of its 95 rows kept" in caplog.text
    assert "remapped classifier/linear/wide_categories/embeddings: 69 of its 99 rows kept" in caplog.text
    assert "0 left fresh" in caplog.text
    # Each kept row holds its value's weights from the earlier job's table of its column.
    was = {}
    for category in categorical_inputs(warm_start.locate(earlier).metadata):
        for layer in (f"embedding_{category.place}", f"linear/wide_{category.place}"):
            if before.has_tensor(f"classifier/{layer}/embeddings"):
                rows = before.get_tensor(f"classifier/{layer}/embeddings")
                for label, row in zip([f"<{category.name}> {v}" for v in category.labels()], rows):
                    was[(layer.startswith("linear"), label)] = row
    after, labels = _weights(config.job_dir), networks.row_labels(warm_start.locate(config.job_dir).metadata, (256,))
    checked = 0
    for name in ("classifier/embeddings_of_width_11/embeddings", "classifier/linear/wide_categories/embeddings"):
        for label, row in zip(labels[name], after.get_tensor(name)):
            if (name.startswith("classifier/linear"), label) in was:
                np.testing.assert_allclose(row, was[(name.startswith("classifier/linear"), label)], atol=1e-6)
                checked += 1
    assert checked == 65 + 69


def test_a_source_that_kept_a_table_a_column_and_whose_data_changed_since_is_refused_in_one_line(tmp_path):
    from tiny import VECTORS

    values = tuple(map(str, range(40)))  # 42 rows with missing and out-of-vocabulary values; the checkpoint has 32
    column = tables.Column("q", tables.CATEGORICAL, vocabulary=values)
    metadata = dataclasses.replace(VECTORS, shape=(1,), columns=(column,), mean=(0.0,), std=(1.0,))
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("classifier/embedding_0/embeddings", [32, 11])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            prefix = tf.compat.v1.train.Saver().save(session, str(tmp_path / "job" / "model.ckpt"))
    source = warm_start.Source("runs/old", prefix, metadata, None)
    said = r"^--warm-start-from runs/old: its classifier/embedding_0/embeddings does not hold the 42 rows .* since"
    with pytest.raises(UserError, match=said):
        warm_start.in_todays_layout(source, str(tmp_path / "joined"))


def test_an_export_is_a_source_too(old_job):
    export = latest_export(old_job, "latest")
    source = warm_start.locate(export)
    assert source.checkpoint.endswith("variables/variables") and source.config.model == "wide_deep"
    assert [c.name for c in source.metadata.columns] == ["city", "channel", "review", "price", "seen"]
    words = source.metadata.columns[2].index_labels()  # the text vocabulary, from the export's assets
    assert words[:2] == ["<padding>", "<out of vocabulary>"] and len(words) > 10


@pytest.mark.parametrize(
    "flags, labels, message",
    [
        ({"model": "table"}, str, r"its network \(--model\) is wide_deep; these settings make table"),
        ({"model": "wide_deep", "hidden_units": (64,)}, str, "its --hidden-units is 256; these settings make 64"),
        ({"model": "wide_deep"}, str.upper, "its classes are neg, pos; this data's are NEG, POS"),
    ],
)
def test_a_model_that_cannot_fit_is_refused_in_one_line(old_job, tmp_path, flags, labels, message):
    table(tmp_path / "new", NEW_CITIES, seed=1, label=labels, days=NEW_DAYS)
    config = Config(data_dir=str(tmp_path / "new"), job_dir=str(tmp_path / "job"), warm_start_from=old_job.job_dir,
                    **flags)  # fmt: skip
    with pytest.raises(UserError, match=message):
        experiment.run(config)


def test_a_cut_export_is_refused_in_one_line(old_job, tmp_path):
    """An export whose variables' data file was cut short ended in an IndexError's traceback."""
    import shutil

    cut = tmp_path / "cut"
    shutil.copytree(latest_export(old_job, "latest"), cut)
    (data,) = (cut / "variables").glob("variables.data-*")
    data.write_bytes(data.read_bytes()[:100])
    table(tmp_path / "new", NEW_CITIES, seed=1, days=NEW_DAYS)
    config = Config(data_dir=str(tmp_path / "new"), job_dir=str(tmp_path / "job"), warm_start_from=str(cut))
    with pytest.raises(UserError, match=rf"--warm-start-from {cut}: its checkpoint .*: its data file is truncated"):
        experiment.run(config)


def test_a_folder_without_a_model_is_named(tmp_path):
    with pytest.raises(UserError, match="neither an export .* nor a job dir with a checkpoint"):
        warm_start.locate(str(tmp_path))


def test_a_rerun_on_data_whose_values_moved_is_refused_as_a_warm_start_would_remap_them(old_job, tmp_path):
    """Vocabularies of the same sizes passed the checkpoint's shape checks, and a rerun trained on with every
    city's rows standing for another city."""
    shutil.copytree(old_job.job_dir, tmp_path / "job")
    table(tmp_path / "moved", [f"town-{i}" for i in range(30)], seed=0)  # the same rows, the cities renamed
    rerun = Config(data_dir=str(tmp_path / "moved"), job_dir=str(tmp_path / "job"), train_steps=80, model="wide_deep")
    with pytest.raises(UserError, match=r"--job-dir .*job: its model was trained on other values than this data's \("):
        experiment.run(rerun)
    same = Config(data_dir=old_job.data_dir, job_dir=str(tmp_path / "job"), train_steps=70, model="wide_deep")
    assert experiment.run(same)["global_step"] >= 70  # its own data resumes


def test_bigram_buckets_start_fresh_where_their_columns_words_moved():
    """Bigram buckets hash pairs of word IDs: after a vocabulary change a bucket stands for other pairs, and its old
    weights took a model that word order alone solves from 1.0 to 0.43."""
    bigrams, words = "classifier/text/words_0/bigrams/embeddings", "classifier/text/words_0/words/embeddings"
    moved = warm_start.Plan(taken=[bigrams, "classifier/logits/kernel"], remapped={words: (7, 9)})
    warm_start._bigrams_fresh_where_words_moved(moved)
    assert moved.taken == ["classifier/logits/kernel"] and "moved" in moved.fresh[bigrams]
    kept = warm_start.Plan(taken=[bigrams, words])  # the same vocabulary: words and bigrams taken as they are
    warm_start._bigrams_fresh_where_words_moved(kept)
    assert kept.taken == [bigrams, words] and not kept.fresh


def test_cross_weights_are_taken_only_where_their_columns_and_values_are_the_same(old_job, tmp_path, caplog):
    """A cross's buckets hash its columns' indices: taken by place, a city's cross weights went to other cities."""
    crosses = "city:price,channel:price"
    settings = {**old_job.__dict__, "job_dir": str(tmp_path / "crossed"), "crosses": crosses, "train_steps": 20}
    crossed = Config(**settings)
    experiment.run(crossed)
    new = table(tmp_path / "new", NEW_CITIES, seed=0, days=NEW_DAYS)  # the cities move; the channels stay
    assert [c.vocabulary for c in new.columns if c.name == "channel"] == [
        c.vocabulary for c in warm_start.locate(crossed.job_dir).metadata.columns if c.name == "channel"
    ]
    for crosses, fresh in (("city:price,channel:price", {0: "city's indices"}),
                           ("channel:price,city:price", {0: "other columns", 1: "other columns"})):  # fmt: skip
        config = Config(data_dir=str(tmp_path / "new"), job_dir=str(tmp_path / crosses), model="wide_deep",
                        train_steps=1, learning_rate=1e-9, warm_start_from=crossed.job_dir,
                        crosses=crosses)  # fmt: skip
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="trainer"):
            experiment.run(config)
        for k in range(2):
            name = f"classifier/linear/cross_{k}/embeddings"
            after = _weights(config.job_dir).get_tensor(name)
            if k in fresh:
                assert f"fresh {name} (" in caplog.text and fresh[k] in caplog.text
                assert np.abs(after).max() < 1e-6  # zero, as a fresh linear part starts
            else:
                np.testing.assert_allclose(after, _weights(crossed.job_dir).get_tensor(name), atol=1e-6)
                assert np.abs(after).max() > 0
    # A rerun in the crossed job with other crosses would restore them by place too: refused.
    swapped = Config(**{**crossed.__dict__, "train_steps": 25, "crosses": "channel:price,city:price"})
    with pytest.raises(UserError, match=r"--crosses channel:price,city:price: its model crossed city:price,"):
        experiment.run(swapped)
