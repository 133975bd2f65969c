"""Text: free-text columns of tables and folders of .txt files, tokenized alike by preprocessing and by the
serving graph, stored as word IDs, trained with word bags or convolutions, and served from raw strings."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from dataformat import tables, text
from dataformat.errors import UserError
from dataformat.schema import METADATA_FILE, decode_record, parse_examples
from preprocessing.tables import TableOptions, build_table_dataset
from trainer import experiment
from trainer.config import Config
from trainer.export import latest_export
from trainer.exported_model import Model
from trainer.instances import respond

GOOD = ["great", "wonderful", "loved", "excellent", "superb"]
BAD = ["awful", "boring", "hated", "terrible", "dull"]
FILLER = ["the", "movie", "was", "and", "a", "plot", "actors", "it", "this", "film", "really", "quite"]
# Strings that tokenizers disagree on: markup, Unicode forms, emoji, quotes, control characters, nothing.
AWKWARD = [
    "<br /><br />Great!!",
    "Ｆｕｌｌｗｉｄｔｈ ＴＥＸＴ and ﬁne ligatures",
    "café naïve CAFÉ cafe\u0301",
    "emoji 😀👍🏽 and 👨\u200d👩\u200d👧 family",
    "tabs\tand\nnew\r\nlines\u00a0nbsp\u3000ideographic",
    "\"quoted, with commas\" and 'apostrophes' don't",
    "",
    "NA",
    "numbers 3.14 1,000 and 10/10",
    "Ελληνικά ΣΊΣΥΦΟΣ and Русский ТЕКСТ",
    "日本語のテキスト、句読点。",
    "<b>bold</b> &amp; <a href='x'>link</a>",
    " ".join(f"w{i}" for i in range(40)),  # longer than --max-length
    "x < y and y > z, if (a<b && c>d) I <3 it >_< <!-- a comment -->",  # no tags, but for the comment
    "don&#39;t &amp; &lt;b&gt; great\u200bwonderful \ufeffgreat soft\u00adhyphen s\u200fhalom",  # web text
]


def review_rows(count: int, seed: int = 0) -> list[list[str]]:
    """Reviews whose label follows their words, beside a category and a number that carry nothing."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        liked = bool(rng.random() < 0.5)
        words = list(rng.choice(FILLER, rng.integers(3, 25))) + list(rng.choice(GOOD if liked else BAD, 2))
        rng.shuffle(words)
        review = " ".join(words).capitalize() + ("!" if i % 3 else ".")
        rows.append([rng.choice(["web", "app"]), review, str(rng.integers(1, 100)), "pos" if liked else "neg"])
    return rows


def write_csv(path, rows, header=("channel", "review", "price", "label")):
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def build(tmp_path, source, name="data", **options):
    flags = {"label_column": "label", **options}
    return build_table_dataset(str(source), str(tmp_path / name), TableOptions(**flags), examples_per_record=1)


def record_ids(folder, metadata, column: str) -> list[list[int]]:
    """Every row's word IDs as the training shards hold them, both splits."""
    found = []
    for split in metadata.splits.values():
        for shard in split.shards:
            for record in tf.data.TFRecordDataset(str(folder / shard.file)).as_numpy_iterator():
                found += [row[column] for row in decode_record(record, metadata)[0]]
    return found


def serving_ids(strings: list[str], metadata) -> np.ndarray:
    """The serving graph's word IDs of raw strings, through its tf.Example input."""
    column = next(c for c in metadata.columns if c.kind == tables.TEXT)
    examples = [
        tf.train.Example(
            features=tf.train.Features(
                feature={column.name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[s.encode()]))}
            )
        ).SerializeToString()
        for s in strings
    ]
    start = tables.offsets(metadata.columns)[metadata.columns.index(column)]
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        vectors = parse_examples(tf.constant(examples), metadata)
        session.run(tf.compat.v1.tables_initializer())
        found = session.run(vectors)
    return found[:, start : start + column.width].astype(np.int64)


# Tokenizing.


def words(strings: list[str], max_length: int = 50) -> list[list[str]]:
    return [[w.decode() for w in row] for row in text.words(tf.constant(strings), max_length).to_list()]


def test_text_is_standardized_and_split_into_words():
    found = words(AWKWARD)
    assert found[0] == ["great", "!", "!"]  # markup gone, lower case, punctuation a word each
    assert found[1] == ["fullwidth", "text", "and", "ﬁne", "ligatures"]  # NFKC where it is one character
    assert found[2] == ["café", "naïve", "café", "café"]  # the last written decomposed: e and U+0301, composed
    assert "😀" in found[3] and "family" in found[3]
    assert found[4] == ["tabs", "and", "new", "lines", "nbsp", "ideographic"]  # every space and control character
    assert found[5][:5] == ['"', "quoted", ",", "with", "commas"] and found[5][-3:] == ["don", "'", "t"]
    assert found[6] == [] and found[7] == ["na"]  # tokenizing takes every string; a missing one is the reader's
    assert found[9] == ["ελληνικά", "σίσυφοσ", "and", "русский", "текст"]
    assert found[10] == ["日", "本", "語", "のテキスト", "、", "句", "読", "点", "。"]  # written without spaces
    assert found[11] == ["bold", "&", "link"]  # "&amp;" is "&"
    # Only tags are markup: "x < y and y > z" lost the words between its brackets, as one tag.
    assert found[13][:7] == ["x", "<", "y", "and", "y", ">", "z"] and found[13][-7:] == [
        "i",
        "<",
        "3",
        "it",
        ">",
        "_",
        "<",
    ]
    assert found[13][8:19] == ["if", "(", "a", "<", "b", "&", "&", "c", ">", "d", ")"]
    assert found[14] == ["don", "'", "t", "&", "<", "b", ">", "great", "wonderful", "great", "softhyphen", "shalom"]
    assert words(AWKWARD, max_length=4)[12] == ["w0", "w1", "w2", "w3"]


def test_decomposed_letters_read_as_the_composed_ones():
    """café typed as e and a combining accent (macOS's file names, some web text) was another word, unknown to a
    model trained on the composed form: 0.54 against 0.94. Vietnamese letters carry two marks."""
    composed = ["café naïve", "Việt Nam, tiếng Việt", "ελληνικά ά", "Ångström ñandú", "", "日本語"]
    decomposed = [unicodedata.normalize("NFD", line) for line in composed]
    assert decomposed != composed and words(decomposed) == words(composed)
    assert words(["e\u0301 a\u0301\u0301"]) == [["é", "á\u0301"]]  # a second accent on one letter stays a mark


def test_the_fold_table_maps_compatibility_forms_and_capitals_to_one_character():
    keys, values = text.fold()
    fold = dict(zip(keys.tolist(), values.tolist()))
    assert fold[ord("A")] == ord("a") and fold[ord("Ａ")] == ord("a") and fold[0xA0] == ord(" ")
    assert ord("a") not in fold and ord("ﬁ") not in fold  # already folded; two characters


def test_a_text_of_megabytes_reads_only_what_its_words_need(tmp_path, caplog):
    huge = "word " * 2_000_000  # 10 MB in one quoted CSV field
    source = write_csv(tmp_path / "huge.csv", [*review_rows(60), ["web", huge, "1", "pos"]])
    metadata = build(tmp_path, source, max_length=16)
    assert "huge.csv: line 62: a text of 10.0 MB (and 0 more in this block); its first 256 characters" in caplog.text
    column = next(c for c in metadata.columns if c.kind == tables.TEXT)
    assert column.max_length == 16 and column.cut > 0
    assert max(len(ids) for ids in record_ids(tmp_path / "data", metadata, "review")) == 16
    # In a folder of texts, a file is a row: the warning names the file ("raw: line 68" named none).
    folder = write_folder(tmp_path / "raw")
    (folder / "neg" / "huge.txt").write_text(huge)
    options = TableOptions(label_column="label", text=("text",), text_folder=True)
    build_table_dataset(str(folder), str(tmp_path / "folder-data"), options)
    assert f"{folder}/neg/huge.txt: a text of 10.0 MB (and 0 more in this block)" in caplog.text


def test_rows_whose_characters_outrun_max_length_count_as_cut(tmp_path, caplog):
    """A pasted blob of 6,000 characters before the words that decide: only max_length x 16 characters are read,
    and the summary said no row was cut (the model stayed at chance where --max-length 1000 reached 1.0)."""
    caplog.set_level("INFO")
    blob = "QUFB" * 1500  # base64, one long word
    rows = [[row[0], f"{blob} {row[1]}", *row[2:]] if i % 2 else row for i, row in enumerate(review_rows(60))]
    metadata = build(tmp_path, write_csv(tmp_path / "blobs.csv", rows), max_length=64)  # 1,024 characters read
    column = next(c for c in metadata.columns if c.kind == tables.TEXT)
    assert column.cut >= 0.4  # the rows with a blob, about half the training rows; before: 0
    assert "of rows cut at 64 words or 1,024 characters" in caplog.text


# Preprocessing.


def test_a_text_column_is_found_its_vocabulary_written_and_its_words_stored_as_ids(tmp_path):
    source = write_csv(tmp_path / "reviews.csv", review_rows(400))
    metadata = build(tmp_path, source, max_length=30)
    kinds = {column.name: column.kind for column in metadata.columns}
    assert kinds == {"channel": tables.CATEGORICAL, "review": tables.TEXT, "price": tables.NUMERIC}
    review = metadata.columns[1]
    vocabulary = (tmp_path / "data" / "review.vocabulary.txt").read_text().splitlines()
    assert len(vocabulary) == review.vocabulary_size and set(GOOD + BAD) <= set(vocabulary) and "!" in vocabulary
    saved = json.loads((tmp_path / "data" / METADATA_FILE).read_text())["columns"][1]
    assert saved["vocabulary_file"] == "review.vocabulary.txt" and "vocabulary" not in saved
    ids = record_ids(tmp_path / "data", metadata, "review")
    assert len(ids) == 400 and all(0 < len(row) <= 30 for row in ids)
    # No review is 30 words long: the input is as wide as the longest of the training rows.
    assert 20 < review.width < 30 and review.width == max(len(row) for row in ids)
    assert review.bigram_buckets == 0 and metadata.shape == (2 + review.width,)  # few words: no bigrams
    assert all(text.FIRST_ID <= i < text.FIRST_ID + len(vocabulary) for row in ids for i in row)


def test_a_column_of_short_texts_is_read_with_the_characters_of_max_length_words(tmp_path):
    """The input is as wide as the longest training text (one word here), but the tokenizer still reads
    --max-length words' characters: read with one word's 16, three of these words were cut, out of vocabulary."""
    words = ["internationalization", "telecommunications", "counterrevolutionary", "short"]
    rows = [["web", f"<p class='lead'>{words[i % 4]}</p>", "1", "ab"[i % 2]] for i in range(200)]
    metadata = build(tmp_path, write_csv(tmp_path / "w.csv", rows), text=("review",), min_frequency=1)
    review = metadata.columns[1]
    vocabulary = (tmp_path / "data" / "review.vocabulary.txt").read_text().splitlines()
    assert review.width == 1 and review.max_length == 300 and set(words) <= set(vocabulary)
    assert all(ids[0] >= text.FIRST_ID for ids in record_ids(tmp_path / "data", metadata, "review"))
    assert (serving_ids([f"  {words[0]}  "], metadata) >= text.FIRST_ID).all()


def test_preprocessing_and_the_serving_graph_agree_word_for_word(tmp_path):
    rows = [["web", value, "1", "pos" if i % 2 else "neg"] for i, value in enumerate(AWKWARD * 3)]
    source = write_csv(tmp_path / "awkward.csv", rows + review_rows(100))
    metadata = build(tmp_path, source, text=("review",), max_length=8, min_frequency=1)
    stored = record_ids(tmp_path / "data", metadata, "review")
    served = serving_ids([row[1] for row in rows + review_rows(100)], metadata)
    expected = {tuple(ids) for ids in stored}
    assert {tuple(i for i in row if i != text.PADDING) for row in served} == expected
    never_seen = serving_ids(["zzz unseen words ＺＺＺ"], metadata)[0]
    assert list(never_seen[:5]) == [text.OUT_OF_VOCABULARY] * 4 + [text.PADDING]


def test_a_column_of_chinese_reviews_is_text_though_it_has_no_spaces(tmp_path):
    rng = np.random.default_rng(0)
    good, bad = "好棒喜欢满意推荐", "差坏失望退货慢"
    rows = []
    for i in range(200):
        chars = rng.choice(list(good if i % 2 else bad), 4).tolist() + rng.choice(list("这个产品质量服务"), 4).tolist()
        name = "".join(rng.choice(list("王李张刘陈杨黄赵吴周"), 3))  # names of three characters: no text
        rows.append(["".join(chars) + "。", name, "ab"[i % 2]])
    metadata = build(tmp_path, write_csv(tmp_path / "t.csv", rows, header=("review", "name", "label")))
    assert [column.kind for column in metadata.columns] == [tables.TEXT, tables.CATEGORICAL]
    vocabulary = (tmp_path / "data" / metadata.columns[0].vocabulary_file).read_text(encoding="utf-8").split()
    assert set(vocabulary) <= set(good + bad + "这个产品质量服务。")  # a character a word


def test_columns_of_short_repeated_phrases_stay_categories_and_flags_decide(tmp_path):
    rng = np.random.default_rng(0)
    cities = ["New York City", "Los Angeles County", "San Francisco Bay Area"]
    rows = [[rng.choice(cities), review, "1", label] for _, review, _, label in review_rows(200)]
    source = write_csv(tmp_path / "t.csv", rows, header=("city", "review", "price", "label"))
    kinds = {c.name: c.kind for c in build(tmp_path, source).columns}
    assert kinds["city"] == tables.CATEGORICAL and kinds["review"] == tables.TEXT
    forced = build(tmp_path, source, "forced", text=("city",), categorical=("review",))
    assert {c.name: c.kind for c in forced.columns} == {"city": "text", "review": "categorical", "price": "numeric"}
    with pytest.raises(UserError, match="--categorical-columns and --text-columns both name 'city'"):
        build(tmp_path, source, "both", text=("city",), categorical=("city",))


def test_a_column_of_names_that_repeat_is_categories_though_its_first_values_look_like_text(tmp_path, caplog):
    """causaldata's restaurants: 1,618 business names of 17 rows each, a year's inspections after another's, so its
    first values were each name once, and it was read as text: accuracy 0.908, ROC AUC 0.914; as categories 0.934
    and 0.954. Where most training rows hold a value seen 10 times or more, it is categories; reviews stay text."""
    rng = np.random.default_rng(0)
    names = [
        f"{rng.choice(['Golden', 'Blue', 'Happy'])} {rng.choice(['Dragon', 'Garden'])} Cafe {i}" for i in range(600)
    ]
    dirty = rng.random(len(names)) < 0.3  # a business's own inspections, whatever its name's words
    rows = [[name, str(year), "low" if (rng.random() < 0.8) == dirty[i] else "ok"] for year in range(20)
            for i, name in enumerate(names)]  # fmt: skip
    source = write_csv(tmp_path / "t.csv", rows, header=("business_name", "year", "label"))
    with caplog.at_level(logging.INFO):
        name = build(tmp_path, source).columns[0]
    assert name.kind == tables.CATEGORICAL and len(name.vocabulary) == 600
    assert (
        "column 1 ('business_name'): 100% of its training rows hold a value seen 10 times or more (names?): read "
        in (caplog.text)
    )
    assert build(tmp_path, source, "forced", text=("business_name",)).columns[0].kind == tables.TEXT


def test_a_text_flag_on_a_table_without_text_is_refused_naming_it(tmp_path):
    """--bigram-buckets, --max-tokens and --max-length on a table of no text column were ignored silently."""
    rows = [[channel, "1", label] for channel, _, _, label in review_rows(60)]
    source = write_csv(tmp_path / "t.csv", rows, header=("channel", "price", "label"))
    for flag, option in (("--bigram-buckets 100", {"bigram_buckets": 100}), ("--max-length 20", {"max_length": 20})):
        with pytest.raises(UserError, match=f"^{flag}: a flag of text columns, and no column of this table is text"):
            build(tmp_path, source, **option)
    assert not (tmp_path / "data").exists()  # refused before anything is written


def test_the_vocabulary_keeps_the_most_frequent_words_seen_min_frequency_times(tmp_path):
    source = write_csv(tmp_path / "reviews.csv", review_rows(300))
    metadata = build(tmp_path, source, max_tokens=5, min_frequency=2)
    vocabulary = (tmp_path / "data" / "review.vocabulary.txt").read_text().splitlines()
    assert len(vocabulary) == 5 and metadata.columns[1].hashed > 0.3  # most words are now outside it


def test_a_text_column_of_no_word_seen_twice_is_left_out_or_refused_in_one_line(tmp_path, caplog):
    """A small table's column of unique phrases (frbny's series names: 5 rows) kept an empty vocabulary, and
    writing the shards stopped in a TensorFlow traceback ("Read less bytes than requested")."""
    rows = [[f"north{i} road{i} unit{i}", f"Code {i} of {i * 7}", str(i % 9), "ab"[i % 2]] for i in range(40)]
    source = write_csv(tmp_path / "t.csv", rows, header=("address", "code", "n", "label"))
    metadata = build(tmp_path, source, text=("address", "code"))
    assert [(c.name, c.kind) for c in metadata.columns] == [("code", "text"), ("n", "numeric")]  # "of" recurs
    assert "column(s) 1 ('address') are text, and no word of theirs is seen 2 or more times in training" in caplog.text
    with pytest.raises(UserError, match=r"t.csv: column\(s\) 1 \('address'\) are text, and .* no feature column is"):
        build(tmp_path, source, "alone", text=("address",), ignore=("code", "n"))
    buckets = build(tmp_path, source, "buckets", text=("address", "code"), bigram_buckets=16)  # its pairs as rare
    assert [c.name for c in buckets.columns] == ["code", "n"]


# A folder of texts.


def write_folder(root, classes=("neg", "pos"), per_class=30):
    """A folder of reviews, a sub-folder a class: filler words and two of the class's own."""
    rng = np.random.default_rng(len(classes))
    for label in classes:
        (root / label).mkdir(parents=True)
        for i in range(per_class):
            words = list(rng.choice(FILLER, rng.integers(3, 25))) + list(rng.choice(GOOD if label == "pos" else BAD, 2))
            rng.shuffle(words)
            (root / label / f"{i}.txt").write_text(" ".join(words) + "!\n<br />Second line.", encoding="utf-8")
    return root


def test_a_folder_of_texts_is_a_table_of_text_and_label(tmp_path, caplog, monkeypatch):
    folder = write_folder(tmp_path / "raw")
    (folder / "pos" / "empty.txt").write_text("")  # an empty text is a missing value
    (folder / "pos" / "notes.md").write_text("not a text of the set")
    (folder / "pos" / "._0.txt").write_bytes(b"\x00\x05\x16\x07")  # macOS's copy of attributes: skipped
    (folder / "pos" / "more").mkdir()
    (folder / "pos" / "more" / "nested.txt").write_text("left out, and named")
    options = TableOptions(label_column="label", text=("text",), text_folder=True)
    with caplog.at_level(logging.WARNING):
        metadata = build_table_dataset(str(folder), str(tmp_path / "data"), options)
    assert (
        "left out 2 file(s) or folder(s), as only the text files at the top of each class folder are read: pos/more, "
        "pos/notes.md" in caplog.text
    )
    assert caplog.text.count("left out 2 file(s)") == 1  # said once, where planning and reading each said it
    assert metadata.class_names == ("neg", "pos") and metadata.source == "text"
    assert sum(split.examples for split in metadata.splits.values()) == 61
    monkeypatch.chdir(tmp_path)  # a bare folder name, which --input's partitions once took for a file's folder
    assert build_table_dataset("raw", str(tmp_path / "again"), options).class_names == ("neg", "pos")
    assert [c.name for c in metadata.columns] == ["text"] and metadata.columns[0].kind == tables.TEXT


def test_table_flags_are_refused_for_a_folder_of_texts(tmp_path, caplog):
    """--text-columns foo with --source text was ignored, silently."""
    from preprocessing.cli import main as preprocess

    folder = write_folder(tmp_path / "raw")
    for flag, value in (("--text-columns", "foo"), ("--label-column", "class"), ("--ignore-columns", "text"),
                        ("--key-column", "path")):  # fmt: skip
        caplog.clear()
        assert (
            preprocess(["--source", "text", "--input", str(folder), "--output", str(tmp_path / "o"), flag, value]) == 2
        )
        assert f"{flag}: not for --source text" in caplog.text


def test_a_folder_of_texts_names_what_is_wrong(tmp_path):
    options = TableOptions(label_column="label", text=("text",), text_folder=True)
    folder = write_folder(tmp_path / "raw")
    (folder / "other").mkdir()
    with pytest.raises(UserError, match=r"raw/other: class folder has no text files \(\.txt\)"):
        build_table_dataset(str(folder), str(tmp_path / "a"), options)
    (folder / "other" / "latin.txt").write_bytes("first line\ncaf\xe9 au lait".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin\.txt: line 2 is not utf-8 text; pass --encoding"):
        build_table_dataset(str(folder), str(tmp_path / "b"), options)
    for i in range(6):  # a vocabulary word is seen twice in the training split
        (folder / "other" / f"utf16-{i}.txt").write_bytes("Notepad's \u201cUnicode\u201d".encode("utf-16"))  # a BOM
        (folder / "pos" / f"accents-{i}.txt").write_text("tr\u00e8s bon, great", encoding="utf-8")
    latin = TableOptions(label_column="label", text=("text",), text_folder=True, encoding="latin-1")
    assert build_table_dataset(str(folder), str(tmp_path / "c"), latin).num_classes == 3
    # Each file by its own bytes: the UTF-8 ones stay UTF-8 beside a latin-1 one (they became mojibake: "trã¨s").
    words = (tmp_path / "c" / "text.vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert {"très", "unicode"} <= set(words) and not any("\u00c3" in word for word in words)
    with pytest.raises(UserError, match="no sub-folders"):
        build_table_dataset(str(folder / "pos"), str(tmp_path / "d"), options)


# Training and serving.


@pytest.fixture(scope="module")
def text_job(tmp_path_factory):
    """A folder of texts through the command lines a user types: preprocessing, then training (text network)."""
    folder = tmp_path_factory.mktemp("texts")
    write_folder(folder / "raw", per_class=150)
    run = [sys.executable, "-m", "preprocessing", "--source", "text", "--input", str(folder / "raw")]
    flags = ["--max-length", "20", "--bigram-buckets", "1000"]
    subprocess.run([*run, "--output", str(folder / "data"), *flags], check=True, timeout=300)
    config = Config(data_dir=str(folder / "data"), job_dir=str(folder / "job"), train_steps=300)
    metrics = experiment.run(config)
    return config, metrics


def test_a_folder_of_texts_trains_fasttexts_bag_and_serves_raw_strings(text_job):
    config, metrics = text_job
    assert metrics["accuracy"] > 0.9
    variables = [name for name, _ in tf.train.list_variables(config.job_dir)]
    assert any("/bigrams/" in name for name in variables) and not any("conv1d" in name for name in variables)
    model = Model(latest_export(config, "latest"))
    reviews = ["Really great and wonderful, loved it!", "<br />An awful, boring film.", "", "😀 ＡＷＦＵＬ"]
    answers = [
        model.predict("serving_default", [{"text": review} for review in reviews]),
        model.predict("csv_lines:serving_default", [f'"{r}"' for r in reviews]),  # quoted: commas, the empty one
        model.predict("examples:serving_default", [_example({"text": review}) for review in reviews]),
    ]
    assert [answer["classes"] for answer in answers[0][:2]] == ["pos", "neg"] and answers[0][3]["classes"] == "neg"
    # A request of bare texts, as TF Serving takes them for a signature of one input, and a JSON line of one.
    answers.append(respond(model, {"instances": reviews})["predictions"])
    for other in answers[1:]:
        np.testing.assert_allclose([o["probabilities"] for o in other], [o["probabilities"] for o in answers[0]])
    with pytest.raises(UserError, match=r"instance 0: 'text': a server takes a string there, not 7"):
        respond(model, {"instances": [7]})


def test_a_text_longer_than_the_model_reads_is_warned_of(text_job, caplog):
    """Words after the model's width (the longest training text's, at most --max-length) were left out silently."""
    config, _ = text_job
    model = Model(latest_export(config, "latest"))
    width = model.metadata.columns[0].width
    respond(model, {"instances": ["great " * width, "awful " * width + " great"]})
    assert "instance 0" not in caplog.text
    assert f"instance 1: column 'text': a text of more than {width} words; the model reads its first {width}" in (
        caplog.text
    )
    caplog.clear()
    respond(model, {"instances": ["awful " * width + " great"] * 5})  # three named, then one count
    assert "instance 2: column 'text'" in caplog.text and "instance 3: column 'text'" not in caplog.text
    assert "--instances-json: 5 texts in all are longer than the model reads" in caplog.text


def test_the_predict_cli_takes_a_folder_models_text_files_one_document_each(text_job, tmp_path):
    """A .txt file was read as a CSV table whose first line named its columns."""
    config, _ = text_job
    (tmp_path / "liked.txt").write_text("Really great,\nand wonderful: loved it!")
    (tmp_path / "hated.txt").write_text("An awful, boring film.")
    (tmp_path / "junk.txt").write_bytes(b"caf\xe9 \x80 not text")  # one bad file stopped the whole batch
    command = [sys.executable, "-m", "trainer.predict", "--model-dir", latest_export(config, "latest"), "--input"]
    inputs = [str(tmp_path / name) for name in ("liked.txt", "junk.txt", "hated.txt")]
    done = subprocess.run([*command, *inputs], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]  # the others predicted, the bad one named, and the run failed
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["input"], line["classes"]) for line in lines] == [
        (str(tmp_path / "liked.txt"), "pos"),
        (str(tmp_path / "hated.txt"), "neg"),
    ]
    assert "junk.txt: line 1 is not utf-8 text" in done.stderr


def _example(values: dict) -> bytes:
    feature = {k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode()])) for k, v in values.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_text_cnn_trains_on_the_same_records_resumes_and_warm_starts(text_job, tmp_path, caplog):
    """Its weights were named outside classifier/, and every resume and warm start of it ended in KeyError ''."""
    caplog.set_level("INFO")
    config, _ = text_job
    cnn = Config(data_dir=config.data_dir, job_dir=str(tmp_path / "cnn"), model="text_cnn", train_steps=200)
    metrics = experiment.run(cnn)
    assert metrics["accuracy"] > 0.8
    assert "classifier/conv1d/kernel" in dict(tf.train.list_variables(cnn.job_dir))
    assert experiment.run(dataclasses.replace(cnn, train_steps=210))["global_step"] >= 210
    warm = dataclasses.replace(cnn, job_dir=str(tmp_path / "warm"), warm_start_from=cnn.job_dir, train_steps=10)
    assert experiment.run(warm)["accuracy"] > 0.8  # ten steps from the first run's weights
    assert re.search(r"Warm start from .* (\d+) weight\(s\) taken, 0 remapped by value, 0 left fresh", caplog.text)


def test_the_predict_cli_takes_tf_examples_of_texts_and_refuses_a_text_tables_shards(text_job, tmp_path):
    """A TFRecord file of tf.Examples that hold the texts (as the examples signature and Vertex AI's tf-record
    instances take them) was refused as a shard; a shard holds word IDs, and is refused in one line."""
    config, _ = text_job
    command = [sys.executable, "-m", "trainer.predict", "--model-dir", latest_export(config, "latest")]
    reviews = ["Really great and wonderful, loved it!", "An awful, boring film.", "awful awful"]
    with tf.io.TFRecordWriter(str(tmp_path / "reviews.tfrecord")) as writer:
        for review in reviews:
            writer.write(_example({"text": review}))
    done = subprocess.run([*command, "--input", str(tmp_path / "reviews.tfrecord")], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["input"], line["classes"]) for line in lines] == [
        (f"{tmp_path / 'reviews.tfrecord'}#{i}", label) for i, label in enumerate(["pos", "neg", "neg"])
    ]
    expected = Model(latest_export(config, "latest")).predict("serving_default", [{"text": r} for r in reviews])
    np.testing.assert_allclose([line["probabilities"] for line in lines], [e["probabilities"] for e in expected])
    with tf.io.TFRecordWriter(str(tmp_path / "named.tfrecord")) as writer:
        writer.write(_example({"review": reviews[0], "stars": "5"}))  # another name: predicted from no text before
    shard = next(Path(config.data_dir).glob("eval-*.tfrecord"))
    for path, said in ((tmp_path / "named.tfrecord", "record 0: no feature 'text' (it holds review, stars)"),
                       (shard, "a text table's shards hold word IDs")):  # fmt: skip
        done = subprocess.run([*command, "--input", str(path)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and said in done.stderr.strip().splitlines()[-1]


def test_a_table_with_a_text_column_trains_its_bag_beside_the_other_columns(tmp_path):
    source = write_csv(tmp_path / "reviews.csv", review_rows(600))
    build(tmp_path, source, max_length=30)
    config = Config(data_dir=str(tmp_path / "data"), job_dir=str(tmp_path / "job"), train_steps=300)
    metrics = experiment.run(config)
    variables = [name for name, _ in tf.train.list_variables(config.job_dir)]
    assert any("/text/text_logits/" in name for name in variables) and any("wide_logits" in name for name in variables)
    assert metrics["accuracy"] > 0.8  # the words decide (half the rows are each class); the others carry nothing


def test_class_folders_are_classes_by_their_names_as_they_are(tmp_path):
    """Folders NA and null were left out as rows without a label, and 1 beside 1.0, or True beside true, were merged:
    six folders made four classes. A folder's name is its class, as Keras's text_dataset_from_directory takes it."""
    for name in ("1", "1.0", "NA", "null", "True", "true"):
        (tmp_path / "texts" / name).mkdir(parents=True)
        for i in range(4):
            (tmp_path / "texts" / name / f"{i}.txt").write_text(f"words of {name} number {i}")
    metadata = build_table_dataset(
        str(tmp_path / "texts"), str(tmp_path / "data"), TableOptions(text_folder=True, label_column="label")
    )
    assert metadata.class_names == ("1", "1.0", "NA", "True", "null", "true")
    assert metadata.splits["train"].examples + metadata.splits["eval"].examples == 24
