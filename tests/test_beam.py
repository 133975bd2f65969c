"""The Beam runner (DirectRunner) makes the same dataset as the local writer."""

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("apache_beam", reason="the beam extra is not installed")

from dataformat.errors import UserError  # noqa: E402
from dataformat.schema import METADATA_FILE, Metadata, decode_record, encode_record  # noqa: E402
from preprocessing.beam import build_dataset_with_beam, build_table_dataset_with_beam  # noqa: E402
from preprocessing.sources import SourceOptions, read_digits  # noqa: E402
from preprocessing.tables import TableOptions, build_table_dataset  # noqa: E402

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines

DIRECT = ["--runner", "DirectRunner"]
ROOT = Path(__file__).resolve().parents[1]


def split_records(read_file, folder: str, scratch) -> tuple[dict, dict]:
    """(metadata, {split: sorted examples, each re-encoded alone}) of a dataset, through
    `read_file(path) -> bytes` (each split copied into the `scratch` folder to be read): records
    pack examples, and which ones share a record depends on the shard an example landed in."""
    text = read_file(f"{folder}/metadata.json")
    metadata, parsed = json.loads(text), Metadata.from_json(text, folder)
    records = {}
    for split, info in metadata["splits"].items():
        data = b"".join(read_file(f"{folder}/{shard['file']}") for shard in info["shards"])
        local = str(scratch / f"{split}.tfrecord")
        with open(local, "wb") as file:
            file.write(data)
        examples = []
        for record in tf.data.TFRecordDataset(local).as_numpy_iterator():
            data, labels = decode_record(record, parsed)
            examples.extend(encode_record(data[i : i + 1], labels[i : i + 1]) for i in range(len(labels)))
        records[split] = sorted(examples)
    return metadata, records


def read_local(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def assert_same_dataset(beam: tuple[dict, dict], local: tuple[dict, dict], float_stats: bool = False) -> None:
    (beam_meta, beam_records), (local_meta, local_records) = beam, local
    assert beam_records == local_records  # per split, the same serialized examples
    for meta in (beam_meta, local_meta):
        meta.pop("extra")
        for split in meta["splits"].values():
            split.pop("shards")
            split.pop("bytes")  # shards that hold other numbers of examples end in other partial records
    if float_stats:  # sums of floats in another order differ in the last bits
        for key in ("mean", "std"):
            np.testing.assert_allclose(beam_meta.pop(key), local_meta.pop(key), rtol=1e-9)
    assert beam_meta == local_meta


def test_beam_on_the_digits_writes_the_local_writers_shards(tmp_path, digits_dir):
    """Byte for byte. Beam placed an example in a shard by a hash of its key, so 10 training images in 2
    shards could all fall in one, leaving the other empty, which a cluster's worker then read alone."""
    beam = tmp_path / "beam"
    build_dataset_with_beam(read_digits(None, SourceOptions()), str(beam), source="digits", pipeline_args=DIRECT)
    beam_meta, local_meta = (json.loads((folder / METADATA_FILE).read_text()) for folder in (beam, Path(digits_dir)))
    assert {**beam_meta, "extra": None} == {**local_meta, "extra": None}
    shards = [shard["file"] for split in local_meta["splits"].values() for shard in split["shards"]]
    assert len(shards) > 2 and all(read_local(beam / name) == read_local(Path(digits_dir) / name) for name in shards)


def test_beam_on_csv_tables_writes_the_local_writers_shards(tmp_path):
    rng = np.random.default_rng(3)
    colors = np.array(["red", "green", "blue", "NA"])
    words = np.array([f"word{i}" for i in range(60)] + ["Great!", "<br />", "café", "😀"])
    (tmp_path / "parts").mkdir()
    for part in range(3):
        days = rng.integers(1, 11, 300)  # a timestamp of 10 days, whose odd days are mostly y: its days are kept
        rows = [
            f"{rng.normal():.4f},{colors[rng.integers(0, 4)]},{'' if rng.random() < 0.1 else rng.integers(0, 9)},"
            f"u{rng.zipf(1.3) % 2000},{' '.join(rng.choice(words, rng.integers(3, 9)))},"  # user: hundreds of values
            f"2024-05-{day:02d}T{rng.integers(0, 24):02d}:30,2023-{rng.integers(1, 13):02d}-{rng.integers(1, 29):02d},"
            f"{rng.integers(0, 3) / 2},"  # a weight; the label:
            f"{'yn'[int(rng.random() < (0.2 if day % 2 else 0.8))] if rng.random() > 0.05 else ''}"
            for day in days
        ]
        header = "x,color,count,user,note,when,seen,w,label"  # seen: random days, whose values are left out
        (tmp_path / "parts" / f"{part}.csv").write_text("\n".join([header, *rows]) + "\n")
    # A vocabulary too small for every user seen thrice: the rest of those hash.
    options = TableOptions(label_column="label", max_categories=20, min_frequency=3, weight="w")
    local = build_table_dataset(str(tmp_path / "parts"), str(tmp_path / "local"), options, shards=3)
    beam = build_table_dataset_with_beam(str(tmp_path / "parts"), str(tmp_path / "beam"), options, DIRECT, shards=3)
    for split in ("train", "eval"):
        for shard in local.splits[split].shards:
            assert (tmp_path / "beam" / shard.file).read_bytes() == (tmp_path / "local" / shard.file).read_bytes()
    assert not [name for name in os.listdir(tmp_path / "beam") if name.startswith(".")]
    assert 800 < beam.splits["train"].examples + beam.splits["eval"].examples < 900  # rows without a label left out
    assert [c.vocabulary for c in beam.columns] == [c.vocabulary for c in local.columns]
    assert [(c.hash_buckets, c.hashed) for c in beam.columns] == [(c.hash_buckets, c.hashed) for c in local.columns]
    assert local.columns[3].hash_buckets > 0  # the users outside the vocabulary hash, in both
    assert [(c.first_day, c.day_count) for c in beam.columns] == [(c.first_day, c.day_count) for c in local.columns]
    assert local.columns[5].day_count == 10  # the timestamp's days, counted in blocks and combined alike
    assert local.columns[6].kind == "date" and local.columns[6].vocabulary == ()  # checked on the shards alike
    assert local.columns[4].kind == "text" and local.columns[4].vocabulary_size > 50  # the notes' words, in both
    vocabulary = "note.vocabulary.txt"
    assert (tmp_path / "beam" / vocabulary).read_text() == (tmp_path / "local" / vocabulary).read_text()
    for ours, theirs in zip(beam.columns, local.columns):  # sums of floats in another order: the last bits
        assert ours.kind == theirs.kind and ours.missing == theirs.missing and ours.boundaries == theirs.boundaries
        np.testing.assert_allclose([ours.mean, ours.std], [theirs.mean, theirs.std], rtol=1e-9)
    assert beam.splits == local.splits and beam.class_names == local.class_names
    assert beam.weight_column == local.weight_column == "w"


def test_beam_on_a_partitioned_dataset_writes_the_local_writers_shards(tmp_path):
    """The columns a partitioned dataset's folders give (region=north/), in Beam's workers as in the local run."""
    import pandas as pd

    rng = np.random.default_rng(4)
    x = rng.normal(size=400).round(3)
    table = pd.DataFrame(
        {"x": x, "region": rng.choice(["north", "south east"], 400), "label": x + rng.normal(size=400) > 0}
    )
    table.to_parquet(tmp_path / "parts", partition_cols=["region"])
    options = TableOptions(label_column="label")
    local = build_table_dataset(str(tmp_path / "parts"), str(tmp_path / "local"), options, shards=2)
    beam = build_table_dataset_with_beam(str(tmp_path / "parts"), str(tmp_path / "beam"), options, DIRECT, shards=2)
    assert [c.name for c in local.columns] == ["x", "region"] and local.columns[1].vocabulary == ("north", "south east")
    assert [c.vocabulary for c in beam.columns] == [c.vocabulary for c in local.columns]
    for split in ("train", "eval"):
        for shard in local.splits[split].shards:
            assert (tmp_path / "beam" / shard.file).read_bytes() == (tmp_path / "local" / shard.file).read_bytes()


def test_beam_names_a_bad_table_in_one_line(tmp_path, caplog):
    """As the local runner does: Beam's runner logged the step's traceback and added the step's name to the line."""
    (tmp_path / "t.csv").write_text("a,b,label\n1,x,y\n2,x,y,z\n")
    with pytest.raises(UserError, match=r"t.csv: line 3 has 4 columns; expected 3$"):
        build_table_dataset_with_beam(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions(), DIRECT)
    assert "Traceback" not in caplog.text and "while running" not in caplog.text
    rows = [f'{{"a": {i}, "label": "{"xy"[i % 2]}"}}\n' for i in range(3000)]  # past the first objects' keys:
    (tmp_path / "t.jsonl").write_text("".join(rows) + '{"a": 1, "late": 2, "label": "x"}\n')  # restarts locally
    with pytest.raises(UserError, match=r"t.jsonl: line 3001 has a column 'late' that .* --runner local, which"):
        build_table_dataset_with_beam(str(tmp_path / "t.jsonl"), str(tmp_path / "json"), TableOptions(), DIRECT)


def test_beam_in_worker_processes_names_a_bad_table_in_one_line(tmp_path, caplog):
    """In worker processes (as on Dataflow), a step's UserError reached the user as a RuntimeError holding the
    worker's traceback: some 380 lines, exit 1."""
    (tmp_path / "t.csv").write_text("a,b,label\n1,x,y\n2,x,y,z\n")
    # One worker process: with two, a pipeline that failed before the second had connected (a loaded machine, at
    # Beam 2.x) left Beam's runner waiting for it to stop, for good: once in a full run, pytest's 900 s timeout.
    processes = ["--runner", "DirectRunner", "--direct_num_workers", "1", "--direct_running_mode", "multi_processing"]
    with pytest.raises(UserError, match=r"t.csv: line 3 has 4 columns; expected 3$"):
        build_table_dataset_with_beam(str(tmp_path / "t.csv"), str(tmp_path / "out"), TableOptions(), processes)


def test_beam_refuses_what_it_would_ignore_and_a_bad_runner_before_clearing_the_output(tmp_path, caplog):
    """Beam warned of an argument none of its options know and ran on without it (an unquoted glob's second file,
    --weight for --weight-column: exit 0); an unknown runner, or Dataflow without its options, cleared --output
    (a dataset there was lost) and then ended in a traceback."""
    from preprocessing.cli import main as preprocess

    rows = "".join(f"{i},{'xy'[i % 2]}\n" for i in range(40))
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("n,label\n" + rows)
    argv = ["--input", str(tmp_path / "a.csv"), "--label-column", "label", "--output", str(tmp_path / "out")]
    assert preprocess([*argv, "--runner", "beam"]) == 0
    kept = (tmp_path / "out" / "metadata.json").read_text()
    caplog.clear()
    assert preprocess([*argv, "--overwrite", "--beam-runner", "DataflowRunner"]) == 2  # without --runner beam
    assert "--beam-runner DataflowRunner: only with --runner beam (this run is local)" in caplog.text
    for more, said in [
        ([str(tmp_path / "b.csv")], f"unrecognized arguments: {tmp_path / 'b.csv'} (neither qt-preprocess's"),
        (["--weight", "n"], "unrecognized arguments: --weight n (neither qt-preprocess's flags nor Beam's)"),
        (["--beam-runner", "Bogus"], "--beam-runner Bogus: Valid values are DataflowRunner,"),
        (["--beam-runner", "DataflowRunner"], "--beam-runner DataflowRunner needs --project, --region, --temp_"),
        (["--beam-runner", "dataflow", "--project", "p", "--region", "r"], "--beam-runner dataflow needs --temp_"),
        (["--workers", "2"], "--workers: the local runner's; Beam's runner decides its own"),
    ]:
        caplog.clear()
        assert preprocess([*argv, "--runner", "beam", "--overwrite", *more]) == 2
        (error,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
        assert error.startswith(said), error
        assert (tmp_path / "out" / "metadata.json").read_text() == kept  # the dataset there stays


def test_ctrl_c_in_a_beam_step_is_an_interruption():
    """Beam's runner wraps a step's KeyboardInterrupt in a RuntimeError: a 156-line traceback, exit 1."""
    from preprocessing.beam import quiet_beam

    with pytest.raises(KeyboardInterrupt), quiet_beam():
        raise RuntimeError("KeyboardInterrupt [while running 'Read/ParDo(_ReadTable)']")
    with pytest.raises(RuntimeError, match="something else"), quiet_beam():
        raise RuntimeError("something else")


def test_beam_writes_to_gcs(gcs_server, digits_dir, tmp_path):
    from gcs_emulator.server import BUCKET, child_env, client

    result = subprocess.run(
        [sys.executable, "-m", "preprocessing", "--runner", "beam", "--output", f"gs://{BUCKET}/beam-digits"],
        env=child_env(gcs_server),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    bucket = client(gcs_server).bucket(BUCKET)

    def read_gcs(path: str) -> bytes:
        return bucket.blob(path.split(f"gs://{BUCKET}/", 1)[1]).download_as_bytes()

    names = [blob.name for blob in bucket.list_blobs(prefix="beam-digits/")]
    assert not any(name.endswith(".stats.json") for name in names)  # the launcher cleaned up
    assert_same_dataset(
        split_records(read_gcs, f"gs://{BUCKET}/beam-digits", tmp_path), split_records(read_local, digits_dir, tmp_path)
    )


def test_a_dataflow_job_is_built_and_staged_without_running(gcs_server, tmp_path):
    from gcs_emulator.server import BUCKET, child_env, client

    template = tmp_path / "job.json"
    dataflow = ["--beam-runner", "DataflowRunner", "--project", "test-project", "--region", "us-central1"]
    dataflow += ["--temp_location", f"gs://{BUCKET}/dataflow-tmp", "--setup_file", "./setup.py", "--no_auth"]
    started = time.time()
    result = subprocess.run(
        [sys.executable, "-m", "preprocessing", "--runner", "beam", "--output", f"gs://{BUCKET}/df-digits"]
        + [*dataflow, "--template_location", str(template)],
        env=child_env(gcs_server, NO_GCE_CHECK="True"),  # no metadata server to ask for credentials
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Wrote the Dataflow job to {template} without running it" in result.stderr
    job = json.loads(template.read_text())
    assert f"{BUCKET}/dataflow-tmp/beamapp-" in job["environment"]["tempStoragePrefix"]
    bucket = client(gcs_server).bucket(BUCKET)
    staged = {blob.name.rsplit("/", 1)[-1]: blob for blob in bucket.list_blobs(prefix="dataflow-tmp/")}
    assert "workflow.tar.gz" in staged  # this package, for the workers (--setup_file)
    pipeline = staged["pipeline.pb"].download_as_bytes()
    assert all(step in pipeline for step in (b"Shards", b"Spread", b"Write"))
    assert not list(bucket.list_blobs(prefix="df-digits/"))  # built, not run: no shards, no metadata
    print(f"built and staged in {time.time() - started:.1f} s")


def test_leftovers_of_an_interrupted_beam_run_are_redone(tmp_path, digits_dir):
    output = tmp_path / "beam"
    output.mkdir()
    # What a killed run leaves: a finished shard, its statistics, a shard half written.
    (output / "train-00001-of-00002.tfrecord").write_bytes(b"half")
    (output / ".train-00001-of-00002.tfrecord.stats.json").write_text('{"examples": 1}')
    (output / ".eval-00000-of-00001.tfrecord.partial-4242").write_bytes(b"half")
    build_dataset_with_beam(read_digits(None, SourceOptions()), str(output), source="digits", pipeline_args=DIRECT)
    assert not [name for name in os.listdir(output) if name.startswith(".")]
    assert_same_dataset(
        split_records(read_local, str(output), tmp_path), split_records(read_local, digits_dir, tmp_path)
    )


def test_beams_own_spellings_of_runners_and_dataflows_locations_are_taken(monkeypatch):
    """Beam takes a runner's name in any case, without "Runner", a staging location for the temporary one, and a
    region from $CLOUDSDK_COMPUTE_REGION; the checks compared the name as written."""
    from apache_beam.options.pipeline_options import StandardOptions

    from preprocessing.beam import pipeline_options

    assert pipeline_options(["--runner", "direct"]).view_as(StandardOptions).runner == "FnApiRunner"  # no Prism wait
    monkeypatch.setenv("CLOUDSDK_COMPUTE_REGION", "europe-west4")
    dataflow = pipeline_options(["--runner", "dataflow", "--project", "p", "--staging_location", "gs://b/s"])
    assert dataflow.view_as(StandardOptions).runner == "DataflowRunner"
