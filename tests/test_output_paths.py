"""Every output-path problem is one line and exit 2: not a folder, a file already, no permission, a
place that cannot be created, and a full disk, which leaves no metadata.json and lets a rerun finish."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from preprocessing.cli import main as preprocess
from trainer.predict import main as predict


def errors(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "output, message",
    [
        ("a-file/data", "a-file/data: cannot create this folder (a part of the path is a file, not a folder)"),
        ("a-file", "a-file: is a file, not a folder"),
        ("/proc/no-such-place/data", "/proc/no-such-place/data: cannot create this folder ("),
    ],
)
def test_preprocessing_output_that_cannot_be_a_folder_is_one_line(tmp_path, caplog, monkeypatch, output, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    assert preprocess(["--source", "digits", "--output", output]) == 2
    (error,) = errors(caplog)
    assert error.startswith(message)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_preprocessing_output_without_permission_is_one_line(tmp_path, caplog):
    (tmp_path / "locked").mkdir(mode=0o500)
    assert preprocess(["--source", "digits", "--output", str(tmp_path / "locked" / "data")]) == 2
    assert "Permission denied" in errors(caplog)[0]


def test_predict_output_under_a_file_is_one_line(tmp_path, caplog, monkeypatch):
    model = SimpleNamespace(metadata=SimpleNamespace(extra={}))  # a model of no recorded encoding
    monkeypatch.setattr("trainer.predict.Model", lambda model_dir: model)
    monkeypatch.setattr("trainer.predict.predictions", lambda *_, **__: iter([("x.csv:2", None, {"x": 1})]))
    (tmp_path / "a-file").write_text("")
    assert predict(["--model-dir", "m", "--input", "x.csv", "--output", str(tmp_path / "a-file" / "p.jsonl")]) == 2
    assert errors(caplog) == [
        f"--output {tmp_path}/a-file/p.jsonl: cannot write (a part of the path is a file, not a folder)"
    ]


def test_predict_output_that_is_an_input_is_refused_before_it_is_erased(tmp_path, caplog, monkeypatch):
    model = SimpleNamespace(metadata=SimpleNamespace(extra={}))
    monkeypatch.setattr("trainer.predict.Model", lambda model_dir: model)
    monkeypatch.setattr("trainer.predict.predictions", lambda *_, **__: iter([("x.csv:2", None, {"x": 1})]))
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    rows = str(tmp_path / "rows.csv")
    assert predict(["--model-dir", "m", "--input", rows, "--output", rows]) == 2  # it was emptied, and read empty
    assert errors(caplog) == [f"--output {rows}: it is --input {rows}, which writing it would erase; name another file"]
    assert (tmp_path / "rows.csv").read_text() == "a,b\n1,2\n"


def user_namespaces_work() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


def in_small_disk(script: str, tmp_path) -> subprocess.CompletedProcess:
    """Runs `script` (sh) with a 300 KB tmpfs mounted at tmp_path/disk, in a user and mount namespace
    of its own: a real filesystem that really fills up, without root."""
    (tmp_path / "disk").mkdir()
    mount = f"mount -t tmpfs -o size=300k tmpfs {tmp_path / 'disk'}"
    return subprocess.run(["unshare", "-rm", "sh", "-c", f"{mount} && {script}"], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.skipif(not user_namespaces_work(), reason="no user namespaces here to mount a small disk in")
def test_a_full_disk_while_preprocessing_leaves_no_dataset_and_a_rerun_with_room_finishes(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "big.npz", x=rng.normal(size=(4000, 64)).astype(np.float32), y=np.arange(4000) % 3)
    python = f"{sys.executable} -m preprocessing --source npz --input {tmp_path / 'big.npz'}"
    out = tmp_path / "disk" / "data"
    result = in_small_disk(
        f"{python} --output {out}; echo exit=$?; ls {out}; echo rerun; "
        f"mount -o remount,size=20m {tmp_path / 'disk'} && {python} --output {out} && ls {out}",
        tmp_path,
    )
    failed, _, rerun = result.stdout.partition("rerun")
    assert "exit=2" in failed and "metadata.json" not in failed, result.stdout  # no dataset after the failure
    (error,) = [line for line in result.stderr.splitlines() if " ERROR " in line]
    assert "cannot write (the disk is full; free some space and rerun)" in error and "Traceback" not in result.stderr
    assert result.returncode == 0 and "metadata.json" in rerun, result.stderr[-2000:]  # the rerun with room finished


@pytest.mark.slow
@pytest.mark.skipif(not user_namespaces_work(), reason="no user namespaces here to mount a small disk in")
def test_training_on_a_full_disk_says_so_in_one_line(tmp_path, digits_dir):
    job = tmp_path / "disk" / "job"
    result = in_small_disk(
        f"{sys.executable} -m trainer.task --data-dir {digits_dir} --job-dir {job} --train-steps 50", tmp_path
    )
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert f"--job-dir {job}: the disk is full" in last and "rerun the same command to resume" in last


def test_preprocessing_refuses_an_output_folder_another_run_writes(tmp_path, caplog):
    from dataformat import lease

    with lease.held(str(tmp_path / "data"), what="preprocessing", flag="--output"):
        assert preprocess(["--source", "digits", "--output", str(tmp_path / "data")]) == 2
    (error,) = errors(caplog)
    assert error.startswith(f"--output {tmp_path / 'data'} is in use by another preprocessing run (host ")
    assert preprocess(["--source", "digits", "--output", str(tmp_path / "data")]) == 0  # free again


def test_a_tilde_in_an_output_flag_is_the_home_folder(tmp_path, monkeypatch):
    """`qt-preprocess --output=~/data/x` (a shell leaves that ~ alone) wrote ./~/data/x."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert preprocess(["--source", "digits", "--output=~/data/digits"]) == 0
    assert (tmp_path / "home" / "data" / "digits" / "metadata.json").exists() and not (tmp_path / "~").exists()
