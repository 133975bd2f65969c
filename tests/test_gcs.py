"""gs:// end to end against a real storage server on 127.0.0.1 (fake-gcs-server, see gcs_emulator/).

Preprocessing writes through google-cloud-storage; the trainer reads and writes through
TensorFlow's own gs:// filesystem, which reaches the emulator through a TLS proxy.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import subprocess
import sys
import time
import uuid
import zipfile

import numpy as np
import pytest
from gcs_emulator.server import BUCKET, TF_FAIL_FAST, child_env, client
from PIL import Image

from dataformat import lease
from dataformat.schema import METADATA_FILE
from preprocessing.cli import main as preprocess

pytestmark = pytest.mark.slow  # end to end: real processes, servers or pipelines


def objects(server, prefix: str) -> dict[str, bytes]:
    """Every object under gs://BUCKET/prefix/, by name relative to it."""
    blobs = client(server).list_blobs(BUCKET, prefix=prefix + "/")
    return {blob.name[len(prefix) + 1 :]: blob.download_as_bytes() for blob in blobs}


def upload_folder(server, folder, prefix: str) -> str:
    bucket = client(server).bucket(BUCKET)
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            bucket.blob(f"{prefix}/{os.path.relpath(path, folder)}").upload_from_filename(path)
    return f"gs://{BUCKET}/{prefix}"


def run(server, module, *args, env=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env or child_env(server),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def local_files(folder) -> dict[str, bytes]:
    """A local dataset's files, by name; the empty lease file a finished local run keeps is not data."""
    names = [name for name in os.listdir(folder) if name != lease.LEASE_NAME]
    return {name: open(os.path.join(folder, name), "rb").read() for name in names}  # noqa: SIM115


def assert_same_dataset(gcs_objects: dict[str, bytes], local: dict[str, bytes]) -> None:
    assert sorted(gcs_objects) == sorted(local)
    for name, data in local.items():
        if name == METADATA_FILE:  # equal but for the timings
            assert {**json.loads(data), "extra": 0} == {**json.loads(gcs_objects[name]), "extra": 0}
        else:
            assert gcs_objects[name] == data, name


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def test_preprocessing_to_gcs_is_byte_identical_to_local(gcs_server, digits_dir):
    prefix = unique("digits")
    result = run(gcs_server, "preprocessing", "--output", f"gs://{BUCKET}/{prefix}", "--workers", "2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"gs://{BUCKET}/{prefix}/metadata.json"
    assert_same_dataset(objects(gcs_server, prefix), local_files(digits_dir))


def write_raw(source: str, folder, mnist_images: int = 40) -> str:
    """A small raw input of each kind; returns the --input path relative to `folder`."""
    rng = np.random.default_rng(0)
    os.makedirs(folder)
    if source == "csv":
        rows = [",".join([*map(str, rng.normal(size=4).round(3)), str(i % 3)]) for i in range(60)]
        (folder / "t.csv").write_text("\n".join(rows) + "\n")
        return "t.csv"
    if source == "csv folder":  # named columns, strings, missing values, a .gz part and a .zip one
        rows = [f"{rng.normal():.3f},{'abc'[i % 3] if i % 7 else 'NA'},{i % 2}" for i in range(60)]
        parts = ["\n".join(["x,letter,label", *rows[start : start + 20]]) + "\n" for start in (0, 20, 40)]
        (folder / "a.csv").write_text(parts[0])
        (folder / "b.csv.gz").write_bytes(gzip.compress(parts[1].encode()))
        with zipfile.ZipFile(folder / "c.csv.zip", "w", zipfile.ZIP_DEFLATED) as archive:  # read by seeking on gs://
            archive.writestr("c.csv", parts[2])
        return "."
    if source == "csv parquet":  # BigQuery's exports: a folder of Parquet parts, and JSON lines
        import pyarrow as pa
        import pyarrow.parquet as pq

        for part in range(2):
            x = rng.normal(size=30).round(3)
            pq.write_table(pa.table({"x": x, "letter": ["abc"[i % 3] for i in range(30)], "label": x > 0}),
                           folder / f"part-{part}.parquet")  # fmt: skip
        return "."
    if source == "csv feather":  # a dataframe's to_feather
        import pyarrow as pa
        import pyarrow.feather as feather

        x = rng.normal(size=60).round(3)
        feather.write_feather(pa.table({"x": x, "letter": ["abc"[i % 3] for i in range(60)], "label": x > 0}),
                              folder / "t.feather", chunksize=25)  # fmt: skip
        return "t.feather"
    if source == "csv stats":  # a statistics package's files: Stata's (read by seeking), SPSS's (by a local copy)
        import pandas as pd
        import pyreadstat

        x = rng.normal(size=60).round(3)
        parts = pd.DataFrame({"x": x, "letter": ["abc"[i % 3] for i in range(60)], "label": (x > 0).astype(int)})
        parts[:30].to_stata(folder / "a.dta", write_index=False)
        pyreadstat.write_sav(parts[30:], folder / "b.sav")
        return "."
    if source == "csv sheets":  # workbooks: an .xlsx (openpyxl's) and an .ods (python-calamine's) in one folder
        import pandas as pd

        x = rng.normal(size=60).round(3)
        parts = pd.DataFrame({"x": x, "letter": ["abc"[i % 3] for i in range(60)], "label": (x > 0).astype(int)})
        parts[:30].to_excel(folder / "a.xlsx", index=False)
        parts[30:].to_excel(folder / "b.ods", engine="odf", index=False)
        return "."
    if source == "csv sqlite":  # an SQLite database: read by a local copy
        import sqlite3

        with contextlib.closing(sqlite3.connect(folder / "t.db")) as database, database:
            database.execute("CREATE TABLE t (x REAL, letter TEXT, label INTEGER)")
            rows = [(round(float(rng.normal()), 3), "abc"[i % 3], i % 2) for i in range(60)]
            database.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        return "t.db"
    if source == "csv partitions":  # a partitioned dataset: its letter=a/ folders give a column
        import pandas as pd

        x = rng.normal(size=60).round(3)
        parts = pd.DataFrame({"x": x, "letter": ["abc"[i % 3] for i in range(60)], "label": (x > 0).astype(int)})
        parts.to_parquet(folder, partition_cols=["letter"])
        return "."
    if source == "csv jsonl":
        rows = [
            json.dumps({"x": round(float(rng.normal()), 3), "letter": "abc"[i % 3], "label": i % 2}) for i in range(60)
        ]
        (folder / "t.jsonl").write_text("\n".join(rows) + "\n")
        return "t.jsonl"
    if source == "npz":
        np.savez(folder / "a.npz", x=rng.integers(0, 255, (60, 5, 5), dtype=np.uint8), y=np.arange(60) % 2)
        return "a.npz"
    if source == "mnist":
        images = rng.integers(0, 255, (mnist_images, 28, 28), dtype=np.uint8)
        labels = np.arange(mnist_images) % 10
        for name, array, code in (("images-idx3", images, 3), ("labels-idx1", labels, 1)):
            header = bytes([0, 0, 8, code]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
            (folder / f"t10k-{name}-ubyte.gz").write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))
        return "."
    if source == "text":  # a folder of texts, a sub-folder a class
        for label in ("neg", "pos"):
            os.makedirs(folder / label)
            for i in range(15):
                (folder / label / f"{i}.txt").write_text(f"A {label} text, number {i}: café 😀", encoding="utf-8")
        return "."
    for label in ("cats", "dogs"):
        os.makedirs(folder / label)
        for i in range(12):
            Image.fromarray(rng.integers(0, 255, (6, 6, 3), dtype=np.uint8)).save(folder / label / f"{i}.png")
    return "."


@pytest.mark.parametrize(
    "source",
    [
        *("csv", "csv folder", "csv parquet", "csv feather", "csv stats", "csv sheets", "csv partitions", "csv jsonl"),
        "csv sqlite",
        *("npz", "mnist", "images", "text"),
    ],
)
def test_every_source_reads_gcs_input(gcs_server, tmp_path, source):
    relative = write_raw(source, tmp_path / "raw")
    remote = upload_folder(gcs_server, tmp_path / "raw", unique(f"raw-{source.replace(' ', '-')}"))
    kind = source.split()[0]
    # The local reference in this process (the gs:// run is the command's own): a text folder's would load TensorFlow
    local = ["--source", kind, "--input", str(tmp_path / "raw" / relative), "--output", str(tmp_path / "out")]
    assert preprocess(local) == 0
    prefix = unique(f"from-gcs-{source.replace(' ', '-')}")
    remote_input = remote if relative == "." else f"{remote}/{relative}"
    result = run(gcs_server, "preprocessing", "--source", kind, "--input", remote_input,
                 "--output", f"gs://{BUCKET}/{prefix}")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert_same_dataset(objects(gcs_server, prefix), local_files(tmp_path / "out"))


def test_train_evaluate_resume_and_export_on_gcs(gcs_server, digits_dir):
    data = upload_folder(gcs_server, digits_dir, unique("data"))
    job_prefix = unique("job")
    job_dir = f"gs://{BUCKET}/{job_prefix}"
    first = run(gcs_server, "trainer.task", "--data-dir", data, "--job-dir", job_dir,
                "--train-steps", "100", "--save-checkpoints-steps", "50")  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    stored = objects(gcs_server, job_prefix)
    assert json.loads(stored["eval_metrics.json"])["global_step"] == 100
    assert any(name.startswith("export/latest/") and name.endswith("saved_model.pb") for name in stored)
    assert any(name.startswith("export/best/") and name.endswith("saved_model.pb") for name in stored)
    assert "model.ckpt-100.index" in stored and any(name.startswith("events.out.tfevents") for name in stored)
    assert f"metrics:        {job_dir}/eval_metrics.json" in first.stdout
    for name in ("latest", "best"):  # found on gs:// by trainer.config.newest_export
        assert re.search(rf"^{name} export: +{re.escape(job_dir)}/export/{name}/\d+$", first.stdout, re.M)

    # Resume, this time naming the shards by glob.
    second = run(gcs_server, "trainer.task", "--train-files", f"{data}/train-*", "--eval-files", f"{data}/eval-*",
                 "--job-dir", job_dir, "--train-steps", "150", "--save-checkpoints-steps", "50")  # fmt: skip
    assert second.returncode == 0, second.stderr[-3000:]
    assert "This task ran 50 training steps; the global step is 150" in second.stderr  # not 150 from scratch
    assert json.loads(objects(gcs_server, job_prefix)["eval_metrics.json"])["global_step"] == 150

    # Predictions of JSON lines on gs://, to gs://: written as a local file's are, {"instance", "prediction"}; the
    # output was written with open() (no such file), and a gs:// file's lines were taken for another format.
    rows = f"gs://{BUCKET}/{job_prefix}-rows.jsonl"
    client(gcs_server).bucket(BUCKET).blob(rows.split("/", 3)[3]).upload_from_string(
        json.dumps([[[0.0]] * 8] * 8) + "\n"
    )
    output = f"{job_dir}/predictions.jsonl"
    predicted = run(gcs_server, "trainer.predict", "--model-dir", job_dir, "--input", rows, "--output", output)
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    (line,) = objects(gcs_server, job_prefix)["predictions.jsonl"].decode().splitlines()
    assert set(json.loads(line)) == {"instance", "prediction"}


def test_upload_interrupted_by_the_server_stopping_is_never_a_partial_dataset(gcs_server, tmp_path):
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "big.npz", x=rng.normal(size=(30_000, 256)).astype(np.float32), y=rng.integers(0, 4, 30_000))
    args = ["--source", "npz", "--input", str(tmp_path / "big.npz"), "--shards", "6", "--workers", "2"]
    expected = run(gcs_server, "preprocessing", *args, "--output", str(tmp_path / "local"))
    assert expected.returncode == 0, expected.stderr[-2000:]

    prefix = unique("interrupted")
    process = subprocess.Popen(
        [sys.executable, "-m", "preprocessing", *args, "--output", f"gs://{BUCKET}/{prefix}"],
        env=child_env(gcs_server),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while not any(name.endswith(".tfrecord") for name in objects(gcs_server, prefix)):
        assert time.time() < deadline and process.poll() is None, "no shard appeared before the run ended"
        time.sleep(0.05)
    gcs_server.crash_and_restart()  # in the middle of the other uploads
    process.wait(timeout=300)

    stored = objects(gcs_server, prefix)
    if METADATA_FILE in stored:  # the retries carried the run through: then it must be whole
        metadata = json.loads(stored[METADATA_FILE])
        for split in metadata["splits"].values():
            for shard in split["shards"]:
                assert len(stored[shard["file"]]) == shard["bytes"]
    rerun = run(gcs_server, "preprocessing", *args, "--output", f"gs://{BUCKET}/{prefix}",
                *(["--overwrite"] if METADATA_FILE in stored else []))  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert_same_dataset(objects(gcs_server, prefix), local_files(tmp_path / "local"))


def last_line(result) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_missing_bucket_is_one_line(gcs_server):
    result = run(gcs_server, "preprocessing", "--output", "gs://no-such-bucket/x")
    assert result.returncode == 2
    assert "gs://no-such-bucket/x: not found (404); does the bucket exist?" in last_line(result)
    # TensorFlow's makedirs of a job dir in a missing bucket never returned, and Ctrl-C did not stop it.
    trainer = run(gcs_server, "trainer.task", "--data-dir", "data", "--job-dir", "gs://no-such-bucket/j", timeout=120)
    assert trainer.returncode == 2
    assert last_line(trainer).endswith("--job-dir gs://no-such-bucket/j: not found (404); does the bucket exist?")
    trainer = run(gcs_server, "trainer.task", "--data-dir", "gs://no-such-bucket/d", "--job-dir", f"gs://{BUCKET}/j")
    assert last_line(trainer).endswith("--data-dir gs://no-such-bucket/d: not found (404); does the bucket exist?")


def test_permission_denied_is_one_line(gcs_server):
    env = child_env(gcs_server, STORAGE_EMULATOR_HOST=gcs_server.denying_url)
    result = run(gcs_server, "preprocessing", "--output", "gs://denied-bucket/x", env=env)
    assert result.returncode == 2
    assert "gs://denied-bucket/x: permission denied (403); check the account's roles" in last_line(result)

    trainer = run(gcs_server, "trainer.task", "--data-dir", "gs://denied-bucket/d", "--job-dir",
                  f"gs://{BUCKET}/{unique('job')}", env={**env, **TF_FAIL_FAST})  # fmt: skip
    assert trainer.returncode == 2
    assert "--data-dir gs://denied-bucket/d: permission denied (403); check the account's roles" in last_line(trainer)
    assert "Traceback" not in trainer.stderr


def test_data_out_of_reach_names_the_flag(gcs_server, tmp_path):
    """Without a network, TensorFlow's words alone ended the run, with exit code 1."""
    env = child_env(gcs_server, https_proxy="http://127.0.0.1:9", **TF_FAIL_FAST)  # a port where nothing listens
    job = str(tmp_path / "job")
    trainer = run(gcs_server, "trainer.task", "--data-dir", f"gs://{BUCKET}/d", "--job-dir", job, env=env)
    assert trainer.returncode == 2
    assert f"--data-dir gs://{BUCKET}/d: cannot read it (" in last_line(trainer)


def test_unreachable_storage_is_said_while_the_client_retries(tmp_path):
    """The client library retries for 2 minutes; without a network, nothing was said until the error."""
    env = {**os.environ, "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9"}  # a port where nothing listens
    command = [sys.executable, "-m", "preprocessing", "--input", "gs://b/x.csv", "--output", str(tmp_path / "o")]
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as child:
        try:
            said = next((line for line in child.stderr if "WARNING" in line or "ERROR" in line), "")
        finally:
            child.kill()
    assert said.rstrip().endswith("Google Cloud failed (no network? busy?); retrying with backoff for up to 2 minutes")


def test_missing_credentials_say_what_to_do_and_print_no_secret(gcs_server, tmp_path):
    key = tmp_path / "key.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": "SECRET-KEY-MATERIAL", "client_email": "x"}))
    env = {k: v for k, v in child_env(gcs_server).items() if k not in gcs_server.env or k == "NO_GCE_CHECK"}
    for credentials in ({}, {"GOOGLE_APPLICATION_CREDENTIALS": str(key)}):
        env_now = {**env, "HOME": str(tmp_path), **credentials}
        for module, args in (
            ("preprocessing", ["--output", f"gs://{BUCKET}/x"]),
            ("trainer.task", ["--data-dir", f"gs://{BUCKET}/d", "--job-dir", f"gs://{BUCKET}/j"]),
        ):
            result = run(gcs_server, module, *args, env=env_now)
            assert result.returncode == 2, result.stderr[-2000:]
            if credentials:  # a key file that is set but cannot be used is named
                assert f"GOOGLE_APPLICATION_CREDENTIALS {key}: not a key file google-auth reads" in last_line(result)
            else:
                assert "gcloud auth application-default login" in last_line(result)
                assert "GOOGLE_APPLICATION_CREDENTIALS" in last_line(result)
            assert "SECRET-KEY-MATERIAL" not in result.stderr + result.stdout


def test_without_credentials_a_public_bucket_reads_anonymously(gcs_server, monkeypatch):
    """As TensorFlow's own gs:// reads do: `qt-predict` on a model in a public bucket, or `qt-preprocess` on
    public sample data into a local folder, needs no login; writing to gs:// still asks for one first."""
    from google.auth.credentials import AnonymousCredentials

    from dataformat import gcs, storage
    from dataformat.errors import UserError

    prefix = unique("public")
    client(gcs_server).bucket(BUCKET).blob(f"{prefix}/metadata.json").upload_from_string(b"{}")
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.env["STORAGE_EMULATOR_HOST"])  # where requests go
    monkeypatch.setattr(gcs, "_stood_in", lambda: False)  # as on a machine without the emulator...
    monkeypatch.setattr(gcs, "credentials_found", lambda: False)  # ... nor any login
    gcs._client.cache_clear()
    try:
        assert isinstance(gcs._client()._credentials, AnonymousCredentials)
        assert storage.list_names(f"gs://{BUCKET}/{prefix}") == ["metadata.json"]
        with storage.open_read(f"gs://{BUCKET}/{prefix}/metadata.json") as file:
            assert file.read() == b"{}"
        with pytest.raises(UserError, match="no Google Cloud credentials found"):
            gcs.check_credentials()
    finally:
        gcs._client.cache_clear()


def test_a_key_file_that_cannot_be_used_is_named(monkeypatch, tmp_path):
    """It was set, and the line said to set it."""
    from dataformat import gcs
    from dataformat.errors import UserError

    monkeypatch.setattr(gcs, "_stood_in", lambda: False)
    for path, why in ((tmp_path / "gone.json", "no such file"), (tmp_path / "key.json", "not a key file")):
        (tmp_path / "key.json").write_text("{}")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
        with pytest.raises(UserError, match=f"^GOOGLE_APPLICATION_CREDENTIALS {path}: {why}"):
            gcs.check_credentials()


def test_a_statistics_files_names_are_read_from_its_first_bytes(gcs_server, monkeypatch, tmp_path):
    """Every file of a table is asked for its column names (planning, then each file's pass): a gs:// SPSS or SAS
    file was copied whole for each, three copies of the file before its rows were read."""
    import contextlib

    import pandas as pd
    import pyreadstat

    from dataformat import gcs, storage
    from preprocessing import table_files
    from preprocessing.tables import TableOptions

    rows = 200_000
    table = pd.DataFrame(
        {"x": np.arange(rows) / 7, "city": ["Lyon", "Nantes"] * (rows // 2), "label": [0, 1] * (rows // 2)}
    )
    pyreadstat.write_sav(table, tmp_path / "big.sav")
    size = (tmp_path / "big.sav").stat().st_size
    remote = upload_folder(gcs_server, tmp_path, unique("names")) + "/big.sav"
    for name, value in gcs_server.env.items():
        monkeypatch.setenv(name, value)
    gcs._client.cache_clear()
    read = []
    opened = storage.open_read

    @contextlib.contextmanager
    def counted(path):  # the real reads, their bytes counted
        with opened(path) as file:
            real = file.read

            def read_counted(*size):
                data = real(*size)
                read.append(len(data))
                return data

            file.read = read_counted
            yield file

    monkeypatch.setattr(storage, "open_read", counted)
    try:
        assert table_files.dialect_of(remote, TableOptions()).names == ("x", "city", "label")
        assert size > 4 * table_files.packages.HEAD_BYTES and sum(read) == table_files.packages.HEAD_BYTES
        read.clear()
        # a header longer than the bytes copied: the whole file
        monkeypatch.setattr(table_files.packages, "HEAD_BYTES", 100)
        assert table_files.dialect_of(remote, TableOptions()).names == ("x", "city", "label")
        assert sum(read) == 100 + size
    finally:
        gcs._client.cache_clear()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_an_upload_stopped_midway_leaves_no_object(gcs_server, monkeypatch, stop):
    """google-cloud-storage 2.x's writer, closed by an error (Ctrl-C), uploaded what it held and finished the object:
    half a shard under its final name, which --train-files would read."""
    from dataformat import gcs, storage

    for name, value in gcs_server.env.items():
        monkeypatch.setenv(name, value)
    gcs._client.cache_clear()
    path = f"gs://{BUCKET}/{unique('stopped')}/train-00000-of-00001.tfrecord"
    with pytest.raises(stop), storage.atomic_writer(path) as file:
        file.write(b"x" * (2 * gcs.UPLOAD_CHUNK_BYTES + 5))  # two chunks uploaded already, five bytes held
        raise stop("stopped")
    assert not storage.exists(path)
    storage.write_text_atomically(path, "whole")  # a rerun writes it
    with storage.open_read(path) as file:
        assert file.read() == b"whole"
    gcs._client.cache_clear()


def test_a_refusal_while_writing_is_one_line(gcs_server, monkeypatch):
    """The upload's chunks are sent while the block writes: a bucket that is missing answers then."""
    from dataformat import gcs, storage
    from dataformat.errors import UserError

    for name, value in gcs_server.env.items():
        monkeypatch.setenv(name, value)
    gcs._client.cache_clear()
    path = "gs://no-such-bucket/x/train-00000-of-00001.tfrecord"
    refused = r"^gs://no-such-bucket/x/train-00000-of-00001.tfrecord: not found \(404\)"
    with pytest.raises(UserError, match=refused), storage.atomic_writer(path) as file:
        file.write(b"x" * (gcs.UPLOAD_CHUNK_BYTES + 5))  # a full chunk: sent now
    gcs._client.cache_clear()
