"""The writer and `python -m preprocessing`, reading the shards back with TensorFlow."""

import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from dataformat.errors import UserError
from dataformat.schema import EXAMPLES_PER_RECORD, FORMAT_VERSION, Metadata, parse_examples, parse_records
from preprocessing.cli import main, parse_args
from preprocessing.sources import SourceOptions, read_digits, read_images
from preprocessing.writer import build_dataset, shard_counts


def read_split(folder: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    with open(os.path.join(folder, "metadata.json")) as file:
        metadata = Metadata.from_json(file.read(), "metadata.json")
    files = [os.path.join(folder, name) for name in metadata.splits[split].files]
    records = tf.data.TFRecordDataset(files, metadata.compression).as_numpy_iterator()
    serialized = tf.constant(list(records))
    data, labels = parse_records(serialized, metadata)
    return data.numpy(), labels.numpy()


def test_digits_dataset_holds_every_example_once(digits_dir):
    source = read_digits(None, SourceOptions())
    train_x, train_y = read_split(digits_dir, "train")
    eval_x, eval_y = read_split(digits_dir, "eval")
    assert len(train_y) + len(eval_y) == 1797
    assert len(eval_y) == pytest.approx(0.2 * 1797, abs=10)
    written = sorted(
        x.tobytes() + bytes([y]) for x, y in zip(np.concatenate([train_x, eval_x]), np.r_[train_y, eval_y])
    )
    original = sorted(x.tobytes() + bytes([y]) for x, y in zip(source.items, source.labels))
    assert written == original


def test_metadata_describes_the_shards(digits_dir):
    with open(os.path.join(digits_dir, "metadata.json")) as file:
        raw = json.load(file)
    assert raw["shape"] == [8, 8, 1] and raw["dtype"] == "uint8" and raw["format_version"] == FORMAT_VERSION
    assert raw["class_names"] == [str(i) for i in range(10)] and raw["num_classes"] == 10
    for split in ("train", "eval"):
        shards = raw["splits"][split]["shards"]
        for shard in shards:
            assert os.path.getsize(os.path.join(digits_dir, shard["file"])) == shard["bytes"]
            records = len(list(tf.data.TFRecordDataset(os.path.join(digits_dir, shard["file"]))))
            assert records == -(-shard["examples"] // EXAMPLES_PER_RECORD)  # full records, the last may hold fewer
        assert sum(shard["bytes"] for shard in shards) == raw["splits"][split]["bytes"]
    files = [shard["file"] for shard in raw["splits"]["train"]["shards"]]
    assert files == ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]
    train_x, _ = read_split(digits_dir, "train")
    assert raw["mean"][0] == pytest.approx(train_x.mean(), rel=1e-6)
    assert raw["std"][0] == pytest.approx(train_x.std(), rel=1e-6)


def test_parallel_workers_write_byte_identical_shards(tmp_path, digits_dir):
    output = str(tmp_path / "parallel")
    build_dataset(read_digits(None, SourceOptions()), output, source="digits", workers=2)
    for name in sorted(os.listdir(digits_dir)):
        if name.endswith(".tfrecord"):
            with open(os.path.join(digits_dir, name), "rb") as a, open(os.path.join(output, name), "rb") as b:
                assert a.read() == b.read(), name


@pytest.mark.slow
def test_image_folders_written_by_worker_processes_match_one_writer(tmp_path):
    rng = np.random.default_rng(0)
    for i in range(40):
        folder = tmp_path / "images" / ("cats" if i % 2 else "dogs")
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    data = read_images(str(tmp_path / "images"), SourceOptions())
    for workers in (1, 2):
        build_dataset(data, str(tmp_path / f"w{workers}"), source="images", shards=4, workers=workers)
    names = sorted(os.listdir(tmp_path / "w1"))
    assert names == sorted(os.listdir(tmp_path / "w2")) and len(names) == 6  # 4 train, 1 eval, metadata
    for name in names:
        if name.endswith(".tfrecord"):
            assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "w2" / name).read_bytes(), name


@pytest.mark.slow
def test_images_that_do_not_decode_stop_the_worker_processes_past_the_limit_naming_one(tmp_path):
    for i in range(8):
        folder = tmp_path / "images" / ("cats" if i % 2 else "dogs")
        folder.mkdir(parents=True, exist_ok=True)
        Image.new("L", (5, 6), color=i * 20).save(folder / f"{i}.png")
    for i in range(40):  # about 16 a training shard: past the 10 a shard may skip
        (tmp_path / "images" / "dogs" / f"broken-{i}.png").write_bytes(b"not a png")
    data = read_images(str(tmp_path / "images"), SourceOptions())
    with pytest.raises(UserError, match=r"broken-\d+.png: cannot decode image.*; and \d+ more of \d+ images") as stop:
        build_dataset(data, str(tmp_path / "out"), source="images", shards=2, workers=2)
    assert int(re.search(r"more of (\d+) images", str(stop.value))[1]) < 48  # a shard stopped, not the end
    assert not (tmp_path / "out" / "metadata.json").exists()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux-only")
def test_default_workers_count_the_cores_this_process_may_use():
    """Under taskset or a container's cpuset the machine has more cores than the job may use."""
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from preprocessing.sources import from_arrays; from preprocessing.writer import default_workers; "
        "import numpy as np; print(default_workers(from_arrays(np.zeros((4, 2), np.uint8), np.arange(4), 'x')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["1"]


def test_shard_counts():
    assert shard_counts(1000, 250, None, 64) == (2, 1)  # small: the minimum
    assert shard_counts(1000, 250, 8, 64) == (8, 2)
    assert shard_counts(3, 1, 8, 64) == (3, 1)  # never more shards than examples
    assert shard_counts(100_000, 25_000, None, 3 * 2**10) == (3, 1)  # ~100 MB each


def test_existing_dataset_needs_overwrite(tmp_path):
    data = read_digits(None, SourceOptions())
    output = str(tmp_path)
    build_dataset(data, output, source="digits", shards=4)
    with pytest.raises(UserError, match="already holds a dataset; pass --overwrite"):
        build_dataset(data, output, source="digits")
    build_dataset(data, output, source="digits", overwrite=True)
    assert sorted(n for n in os.listdir(output) if n.startswith("train")) == [
        "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord",
    ]


def test_a_tables_flags_are_refused_for_arrays_and_images(tmp_path):
    """--label-column foo, --column-names or --max-length on digits were ignored silently; --key-column names keys."""
    for flags in (["--label-column", "foo"], ["--column-names", "a,b"], ["--max-length", "30"]):
        with pytest.raises(UserError, match=f"{flags[0]}: a flag of (tables|text) .*, not of --source digits"):
            parse_args(["--source", "digits", "--output", str(tmp_path), *flags])
    assert parse_args(["--source", "digits", "--output", str(tmp_path), "--key-column", "k"]).key_column == "k"


def test_image_size_is_refused_for_other_sources(tmp_path):
    """Only images are resized: --image-size on a table or digits was ignored silently."""
    for source, given in (("csv", "t.csv"), ("npz", "x.npz"), ("digits", None)):
        where = ["--input", given] if given else []
        with pytest.raises(UserError, match=f"--image-size: a flag of --source images, not of --source {source}"):
            parse_args(["--source", source, *where, "--output", str(tmp_path), "--image-size", "8x8"])
    assert parse_args(["--source", "images", "--output", str(tmp_path), "--image-size", "8x8"]).image_size == (8, 8)


def test_foreign_files_need_overwrite(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="is not empty .*notes.txt"):
        build_dataset(read_digits(None, SourceOptions()), str(tmp_path), source="digits")
    assert (tmp_path / "notes.txt").exists()


def test_leftovers_of_an_interrupted_run_are_redone(tmp_path, digits_dir):
    (tmp_path / "train-00000-of-00002.tfrecord").write_bytes(b"half")
    (tmp_path / ".train-00001-of-00002.tfrecord.partial-12345").write_bytes(b"half")
    (tmp_path / "train-00000-of-00007.tfrecord").write_bytes(b"other run")
    (tmp_path / "comment.vocabulary.txt").write_text("a text column's, written before the shards\n")
    build_dataset(read_digits(None, SourceOptions()), str(tmp_path), source="digits")
    assert sorted(os.listdir(tmp_path)) == sorted(os.listdir(digits_dir))
    with open(os.path.join(digits_dir, "train-00000-of-00002.tfrecord"), "rb") as file:
        assert (tmp_path / "train-00000-of-00002.tfrecord").read_bytes() == file.read()


def test_cli_writes_a_dataset_and_prints_its_metadata_path(tmp_path, capsys):
    output = str(tmp_path / "out")
    np.savez(tmp_path / "a.npz", x=np.arange(200, dtype=np.float32).reshape(50, 4), y=np.arange(50) % 2)
    code = main(["--source", "npz", "--input", str(tmp_path / "a.npz"), "--output", output, "--shards", "3"])
    assert code == 0
    assert capsys.readouterr().out.strip() == os.path.join(output, "metadata.json")
    assert len([n for n in os.listdir(output) if n.startswith("train-")]) == 3


def test_ctrl_c_says_whether_the_output_holds_a_dataset(tmp_path, monkeypatch, caplog):
    """A Ctrl-C that landed just after metadata.json was written said no dataset was written, and to rerun, which
    then refused the folder as holding one."""
    import preprocessing.writer

    np.savez(tmp_path / "a.npz", x=np.arange(200, dtype=np.float32).reshape(50, 4), y=np.arange(50) % 2)
    written = preprocessing.writer.build_dataset

    def interrupted(after: bool):
        def build(*args, **kwargs):
            if after:
                written(*args, **kwargs)
            raise KeyboardInterrupt

        return build

    for after, said in ((False, "no metadata.json was written"), (True, "holds a whole dataset")):
        monkeypatch.setattr(preprocessing.writer, "build_dataset", interrupted(after))
        output = str(tmp_path / f"out-{after}")
        with caplog.at_level(logging.ERROR):
            assert main(["--source", "npz", "--input", str(tmp_path / "a.npz"), "--output", output]) == 130
        assert caplog.records[-1].getMessage().startswith("Interrupted: ") and said in caplog.records[-1].getMessage()


def test_cli_without_source_reads_a_table_file_or_a_npz_file_by_its_name(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(40)))
    np.savez(tmp_path / "a.npz", x=np.arange(80, dtype=np.float32).reshape(20, 4), y=np.arange(20) % 2)
    for name, expected in [("t.csv", "csv"), ("a.npz", "npz")]:
        output = tmp_path / f"out-{name}"
        label = ["--label-column", "y"] if expected == "csv" else []  # an npz's labels are its y
        assert main(["--input", str(tmp_path / name), "--output", str(output), *label]) == 0
        assert json.loads((output / "metadata.json").read_text())["source"] == expected


def test_without_source_the_input_tells_its_kind(tmp_path):
    kinds = {"table.csv": "csv", "rows.jsonl.gz": "csv", "list.csv": "images", "list.jsonl": "images"}
    kinds |= {"tables": "csv", "photos": "images", "tickets": "text", "mnist": "mnist", "a.npz": "npz"}
    (tmp_path / "table.csv").write_text("path,width,label\nimg1.jpg,3,a\n")  # names images, but a table
    (tmp_path / "rows.jsonl.gz").write_bytes(b"")
    (tmp_path / "list.csv").write_text("training,gs://b/daisy/1.jpg,daisy\n")
    (tmp_path / "list.jsonl").write_text('{"imageGcsUri": "gs://b/1.jpg", "classificationAnnotation": {}}\n')
    files = (("tables", "part-0.parquet"), ("tables", "._part-0.parquet"), ("photos/roses", "1.JPG"),
             ("photos", "._roses.csv"), ("tickets/billing", "1.txt"))  # fmt: skip
    for folder, name in files:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / name).write_bytes(b"")
    (tmp_path / "mnist").mkdir()
    (tmp_path / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(b"")
    assert {name: parse_args(["--input", str(tmp_path / name), "--output", "o"]).source for name in kinds} == kinds
    (tmp_path / "other").mkdir()
    with pytest.raises(UserError, match="other: name its kind with --source"):
        parse_args(["--input", str(tmp_path / "other"), "--output", "o"])
    (tmp_path / "photos" / "labels.csv").write_text("file,label\n1.JPG,roses\n")  # a table beside class folders
    with pytest.raises(UserError, match="photos: the folder holds table files and images class folders; name"):
        parse_args(["--input", str(tmp_path / "photos"), "--output", "o"])
    # A dataset written inside the folder of tables (--output tables/out): its vocabulary files are no text classes.
    (tmp_path / "tables" / "out").mkdir()
    for name in ("metadata.json", "review.vocabulary.txt"):
        (tmp_path / "tables" / "out" / name).write_text("")
    assert parse_args(["--input", str(tmp_path / "tables"), "--output", "o"]).source == "csv"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--source", "csv"], "--source csv needs --input"),
        (["--source", "npz", "--input", "/nonexistent.npz"], "--input /nonexistent.npz: no such file"),
        (["--source", "mnist", "--input", "/nonexistent"], "not a folder"),
        (["--source", "digits", "--input", "table.csv"], "--source digits is built in and reads no input"),
        (["--input", "/nonexistent/raw.bin"], "--input /nonexistent/raw.bin: no such file"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, caplog, args, message):
    assert main([*args, "--output", str(tmp_path / "out")]) == 2
    assert message in caplog.text
    assert not (tmp_path / "out" / "metadata.json").exists()


@pytest.mark.parametrize("flag", [["--eval-fraction", "1.5"], ["--shards", "0"], ["--image-size", "ax3"]])
def test_cli_nonsense_flag_values_exit_2(tmp_path, caplog, flag):
    assert main(["--output", str(tmp_path), *flag]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert error.startswith(f"argument {flag[0]}: ")  # one line naming the flag, no usage screen


@pytest.mark.slow
def test_module_runs_as_a_command(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "preprocessing",
            "--source",
            "digits",
            "--output",
            str(tmp_path / "d"),
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "Wrote 1797 examples" in result.stderr
    assert os.path.exists(tmp_path / "d" / "metadata.json")


def test_gzip_shards_hold_the_same_records_and_are_reproducible(tmp_path, digits_dir):
    data = read_digits(None, SourceOptions())
    for name in ("a", "b"):
        build_dataset(data, str(tmp_path / name), source="digits", compression="GZIP")
    with open(tmp_path / "a" / "metadata.json") as file:
        metadata = json.load(file)
    assert metadata["compression"] == "GZIP"
    for split in ("train", "eval"):
        for shard in metadata["splits"][split]["shards"]:
            assert shard["file"].endswith(".tfrecord.gz")
            path = tmp_path / "a" / shard["file"]
            assert path.stat().st_size == shard["bytes"]
            assert path.read_bytes() == (tmp_path / "b" / shard["file"]).read_bytes()
        plain = read_split(digits_dir, split)
        packed = read_split(str(tmp_path / "a"), split)
        np.testing.assert_array_equal(plain[0], packed[0])
        np.testing.assert_array_equal(plain[1], packed[1])
    with open(os.path.join(digits_dir, "metadata.json")) as file:
        uncompressed = json.load(file)["splits"]["train"]["bytes"]
    assert metadata["splits"]["train"]["bytes"] < 0.5 * uncompressed


def test_one_example_a_record_is_the_plain_layout_and_reads_the_same(tmp_path, digits_dir):
    build_dataset(read_digits(None, SourceOptions()), str(tmp_path), source="digits", examples_per_record=1)
    metadata = Metadata.from_json((tmp_path / "metadata.json").read_text(), "metadata.json")
    assert metadata.examples_per_record == 1
    files = [str(tmp_path / name) for name in metadata.splits["eval"].files]
    records = list(tf.data.TFRecordDataset(files).as_numpy_iterator())
    assert len(records) == metadata.splits["eval"].examples
    # Any reader of one tf.train.Example an example reads it, and it holds the packed dataset's examples.
    plain = parse_examples(tf.constant(records), metadata).numpy()
    np.testing.assert_array_equal(plain, read_split(digits_dir, "eval")[0])
    np.testing.assert_array_equal(read_split(str(tmp_path), "eval")[0], plain)
